"""The Databricks backend called directly, with databricks-sdk talking HTTP to the Jobs API test server:
idempotent starts, job parameters, each error mapped to refused / uncertain, bounded time, run states."""

from __future__ import annotations

import json
import os
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from harness.backends.base import RunRequest, RunState, StartRefused, StartUncertain
from harness.backends.databricks import PARAMETER_LIMIT_BYTES, DatabricksBackend
from harness.core.config import PROJECT_DIR, Config, config_from_mapping
from harness.core.errors import BackendError, ConfigError
from harness.core.redact import redact
from harness.core.vocabulary import RowKey, dumps
from harness.platform import databricks_target
from harness.refresh.change_range import ChangeRangeError, parse
from harness.sensors.change_events import MAX_EVENTS, ChangeEvent, described
from harness.tick.triggering import TriggeredRow, change_range
from tests.jobs_api_server import FAST, JobsApiServer

TOKEN_A = "hb-" + "a" * 48


def backend(tmp_path: Path, **section: Any) -> DatabricksBackend:
    config = config_from_mapping(
        {"state_dir": str(tmp_path), "backend": "databricks", "catalog": "main", "databricks": {**FAST, **section}},
        base=tmp_path,
    )
    return DatabricksBackend(config)


def request(job_id: str = "123", token: str = TOKEN_A) -> RunRequest:
    return RunRequest(
        job_id,
        "orders-refresh",
        token,
        {"job_id": job_id, "run_context_id": token, "upstreams": [{"sensor_id": "orders"}]},
    )


def refused_message(b: DatabricksBackend, req: RunRequest) -> str:
    with pytest.raises(StartRefused) as info:
        b.start(req)
    return str(info.value)


# --- starting --------------------------------------------------------------------------------------
def test_same_token_twice_returns_the_same_run_and_starts_one(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    jobs_api.add_job(123)
    b = backend(tmp_path)
    first, second = b.start(request()), b.start(request())
    assert first == second
    assert len(jobs_api.runs_of(123)) == 1 and len(jobs_api.calls("/run-now")) == 2


def test_run_receives_run_context_id_and_change_range_as_job_parameters(
    jobs_api: JobsApiServer, tmp_path: Path
) -> None:
    jobs_api.add_job(123, parameters=["heartbeat_run_context_id", "heartbeat_change_range"])
    backend(tmp_path).start(request())
    (call,) = jobs_api.calls("/run-now")
    assert call.body["job_id"] == 123 and call.body["idempotency_token"] == TOKEN_A
    (run,) = jobs_api.runs_of(123)
    assert run.job_parameters["heartbeat_run_context_id"] == TOKEN_A
    assert jobs_api.change_range(run)["upstreams"] == [{"sensor_id": "orders"}]


def test_job_without_parameters_starts_when_configured_to_receive_none(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    jobs_api.add_job(123, parameters=[])
    b = backend(tmp_path, jobs={"123": {"job_parameters": False}})
    b.start(request())
    assert "job_parameters" not in jobs_api.calls("/run-now")[0].body
    assert len(jobs_api.runs_of(123)) == 1


def test_job_parameter_names_can_be_mapped_per_job(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    jobs_api.add_job(7, parameters=["ctx"])
    backend(tmp_path, jobs={7: {"job_parameters": {"run_context_id": "ctx", "change_range": None}}}).start(request("7"))
    assert jobs_api.runs_of(7)[0].job_parameters == {"ctx": TOKEN_A}


def test_job_declaring_no_parameters_is_refused_with_the_setting_to_change(
    jobs_api: JobsApiServer, tmp_path: Path
) -> None:
    jobs_api.add_job(123, parameters=[])
    message = refused_message(backend(tmp_path), request())
    assert "Databricks job 123 (orders-refresh)" in message
    assert 'databricks.jobs."123".job_parameters: false' in message
    assert jobs_api.runs_of(123) == []


def test_unknown_job_is_refused_naming_the_job_and_the_csv_column(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    message = refused_message(backend(tmp_path), request("999"))
    assert "Databricks job 999" in message and "does not exist" in message and "trigger_job_id" in message


def test_not_found_answer_is_refused(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    jobs_api.add_job(123)
    jobs_api.fail("/run-now", 404, error_code="RESOURCE_DOES_NOT_EXIST", message="Job 123 was deleted")
    assert "check trigger_job_id" in refused_message(backend(tmp_path), request())


def test_permission_denied_is_refused_asking_for_can_manage_run(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    jobs_api.add_job(123)
    jobs_api.fail("/run-now", 403, error_code="PERMISSION_DENIED", message="no permission to run job 123")
    message = refused_message(backend(tmp_path), request())
    assert "CAN MANAGE RUN" in message and jobs_api.runs_of(123) == []


def test_wrong_token_is_refused_and_the_token_never_appears(
    jobs_api: JobsApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs_api.add_job(123)
    monkeypatch.setenv("DATABRICKS_TOKEN", "dapi-wrong-secret-value")
    message = refused_message(backend(tmp_path), request())
    assert "DATABRICKS_TOKEN" in message and "dapi-wrong-secret-value" not in message
    assert redact("x dapi-wrong-secret-value y") == "x *** y"  # registered: masked in every event
    assert "Config: host=" not in message  # the SDK's description of its configuration is left out
    # a token from token_env: the message names that variable to renew
    monkeypatch.setenv("HB_TEST_DBX_TOKEN", "dapi-wrong-as-well")
    message = refused_message(backend(tmp_path, token_env="HB_TEST_DBX_TOKEN"), request())
    assert "renew HB_TEST_DBX_TOKEN" in message and "DATABRICKS_TOKEN" not in message


def test_a_token_env_unset_in_crons_environment_refuses_each_call_and_fails_no_tick(
    jobs_api: JobsApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN heartbeat.yml naming a token variable the cron process's environment does not set
    monkeypatch.delenv("HB_TEST_DBX_TOKEN", raising=False)
    b = backend(tmp_path, token_env="HB_TEST_DBX_TOKEN", host=jobs_api.url)
    # WHEN a run is started, polled, or a later success looked for, THEN each is the backend's error
    # (a refused start, a failed poll: events the tick records), naming the variable, and nothing is sent
    assert "environment variable HB_TEST_DBX_TOKEN is not set" in refused_message(b, request())
    for call in (lambda: b.poll("123", "1000"), lambda: b.successful_run_after("123", datetime.now(UTC), "1000")):
        with pytest.raises(BackendError, match="databricks.token_env: environment variable HB_TEST_DBX_TOKEN"):
            call()
    assert jobs_api.requests == []


def test_non_numeric_job_id_is_refused_without_any_request(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    message = refused_message(backend(tmp_path), request("orders_job"))
    assert "numeric id" in message and "trigger_job_id" in message
    assert jobs_api.requests == []


def test_missing_auth_is_refused_with_what_to_set(
    jobs_api: JobsApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABRICKS_HOST")
    monkeypatch.delenv("DATABRICKS_TOKEN")
    b = backend(tmp_path)
    assert "DATABRICKS_HOST" in refused_message(b, request())
    with pytest.raises(BackendError, match="authentication is not configured"):
        b.poll("123", "1000")


def test_token_named_by_token_env_is_used_and_secrets_in_the_file_are_refused(
    jobs_api: JobsApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs_api.add_job(123)
    monkeypatch.setenv("DATABRICKS_TOKEN", "dapi-not-this-one")
    monkeypatch.setenv("HB_TEST_DBX_TOKEN", jobs_api.token)
    assert backend(tmp_path, token_env="HB_TEST_DBX_TOKEN", host=jobs_api.url).start(request())
    assert redact(jobs_api.token) == "***"
    with pytest.raises(ConfigError, match="secrets never go in heartbeat.yml"):
        backend(tmp_path, token="dapi-in-the-file")


def test_server_error_is_uncertain_and_resending_the_token_starts_one_run(
    jobs_api: JobsApiServer, tmp_path: Path
) -> None:
    jobs_api.add_job(123)
    jobs_api.fail("/run-now", 500, message="backend hiccup")
    b = backend(tmp_path)
    with pytest.raises(StartUncertain, match="InternalError: backend hiccup"):
        b.start(request())
    run_id = b.start(request())
    assert [str(r.run_id) for r in jobs_api.runs_of(123)] == [run_id]


def test_timed_out_start_that_did_create_the_run_yields_one_run(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    # GIVEN a run-now that creates the run but answers after the client's HTTP timeout
    jobs_api.add_job(123)
    jobs_api.fail("/run-now", delay=1.5, then_serve=True)
    # WHEN the SDK times out and retries with the same token
    run_id = backend(tmp_path).start(request())
    # THEN the retry returns the run the first request created: one run
    assert [str(r.run_id) for r in jobs_api.runs_of(123)] == [run_id]
    assert len(jobs_api.calls("/run-now")) >= 2


def test_rate_limit_with_a_long_retry_after_is_retried_within_bounded_time(
    jobs_api: JobsApiServer, tmp_path: Path
) -> None:
    jobs_api.add_job(123)
    jobs_api.fail("/run-now", 429, times=2, retry_after=3600, error_code="TOO_MANY_REQUESTS")
    started = time.monotonic()
    backend(tmp_path).start(request())
    assert time.monotonic() - started < 60  # Retry-After asked for an hour, twice
    assert len(jobs_api.runs_of(123)) == 1 and len(jobs_api.calls("/run-now")) == 3


def test_rate_limit_storm_is_uncertain_after_the_retry_budget_and_later_calls_fail_fast(
    jobs_api: JobsApiServer, tmp_path: Path
) -> None:
    jobs_api.add_job(123)
    jobs_api.fail("/run-now", 429, times=1000, retry_after=30, error_code="TOO_MANY_REQUESTS")
    b = backend(tmp_path)
    started = time.monotonic()
    with pytest.raises(StartUncertain, match="retry_timeout_seconds=3"):
        b.start(request())
    first = time.monotonic() - started
    with pytest.raises(BackendError, match="no answer from .* calls wait databricks.unreachable_cooldown_seconds"):
        b.poll("123", "1000")
    assert first < 30 and time.monotonic() - started - first < 5  # the storm asked for 30 s waits, 1000 times


def test_a_run_polled_in_the_cooldown_and_after_it_fails_with_one_message(
    jobs_api: JobsApiServer, tmp_path: Path
) -> None:
    # GIVEN a workspace that answers every poll with 429 (a poll error is recorded when its message changes)
    jobs_api.add_job(123)
    jobs_api.fail("/runs/get", 429, times=1000, retry_after=30, error_code="TOO_MANY_REQUESTS")
    b = backend(tmp_path, unreachable_cooldown_seconds=1, retry_timeout_seconds=1)

    # WHEN a run is polled (the budget runs out), in the cooldown (not sent), then after it (tried again)
    messages = []
    for wait in (0, 0, 1.1):
        time.sleep(wait)
        with pytest.raises(BackendError) as failed:
            b.poll("123", "1000")
        messages.append(str(failed.value))

    # THEN each poll says the same: the run's failure is one event, not one a tick (the `run` loop's ticks
    # alternated between "no answer" and "not sent", and each was recorded as new)
    assert len(set(messages)) == 1 and "no answer from" in messages[0]
    # AND a look for a later successful run in the cooldown says it was not sent (only logged, never recorded)
    with pytest.raises(BackendError) as skipped:
        b.successful_run_after("123", datetime.now(UTC))
    assert "its runs not listed (not sent: no answer from" in str(skipped.value)


def test_unreachable_host_is_uncertain_within_the_retry_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("DATABRICKS_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("DATABRICKS_TOKEN", "dapi-unreachable")
    started = time.monotonic()
    b = backend(tmp_path)
    with pytest.raises(StartUncertain, match="no answer from"):
        b.start(request())
    assert time.monotonic() - started < 30  # the test's retry budget is 3 s
    # AND a run polled then, and another in the cooldown, are each told of as themselves (the call that
    # found the workspace down named its own run in its URL)
    polled, b = [], backend(tmp_path)
    for run_id in ("1000", "1001"):
        with pytest.raises(BackendError) as failed:
            b.poll("123", run_id)
        polled.append(str(failed.value))
    assert "cannot read run 1001" in polled[1] and "1000" not in polled[1]


def test_default_budget_is_bounded(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    config = Config(config_path=None, project_dir=PROJECT_DIR, state_dir=tmp_path, backend="databricks")
    client = DatabricksBackend(config).client()
    assert client.config.retry_timeout_seconds == 30 and client.config.http_timeout_seconds == 15


# --- polling ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "life, result, expected",
    [
        ("TERMINATED", "SUCCESS", RunState.SUCCEEDED),
        ("TERMINATED", "SUCCESS_WITH_FAILURES", RunState.SUCCEEDED),
        ("TERMINATED", "FAILED", RunState.FAILED),
        ("TERMINATED", "TIMEDOUT", RunState.FAILED),
        ("TERMINATED", "CANCELED", RunState.FAILED),
        ("SKIPPED", "MAXIMUM_CONCURRENT_RUNS_REACHED", RunState.SKIPPED),  # nothing ran: not a failure
        ("INTERNAL_ERROR", "FAILED", RunState.FAILED),
    ],
)
@pytest.mark.parametrize("answers", [("status",), ("state",)], ids=["status", "state-only workspace"])
def test_run_end_states_map_to_succeeded_failed_or_skipped_with_the_message(
    jobs_api: JobsApiServer, tmp_path: Path, life: str, result: str, expected: RunState, answers: tuple[str, ...]
) -> None:
    # GIVEN a workspace answering runs with `status` only, or with the deprecated `state` only
    jobs_api.run_fields = answers
    jobs_api.add_job(123)
    b = backend(tmp_path)
    run_id = b.start(request())
    # WHEN the run ends
    jobs_api.end_run(int(run_id), result, f"the run says {result}", life_cycle_state=life)
    status = b.poll("123", run_id)
    # THEN its end is read from what the workspace answered, with its message
    assert status.state is expected and f"the run says {result}" in status.message
    assert status.ended_at is not None


def test_the_termination_code_of_status_names_a_failure(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    jobs_api.add_job(123)
    b = backend(tmp_path)
    run_id = b.start(request())
    jobs_api.end_run(int(run_id), "FAILED", "Task ingest failed")
    assert b.poll("123", run_id).message == "RUN_EXECUTION_ERROR (CLIENT_ERROR): Task ingest failed"


@pytest.mark.parametrize("answers", [("status",), ("state",)], ids=["status", "state-only workspace"])
def test_running_run_is_running(jobs_api: JobsApiServer, tmp_path: Path, answers: tuple[str, ...]) -> None:
    jobs_api.run_fields = answers
    jobs_api.add_job(123)
    b = backend(tmp_path)
    assert b.poll("123", b.start(request())).state is RunState.RUNNING


def test_resending_the_token_of_a_deleted_run_is_refused_saying_so(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    # GIVEN a start whose run was then deleted in the workspace
    jobs_api.add_job(123)
    b = backend(tmp_path)
    jobs_api.delete_run(int(b.start(request())))
    # WHEN the same request is sent again (as after an unconfirmed start)
    message = refused_message(b, request())
    # THEN it is refused, saying the token's run was deleted and that the next start sends a new token
    assert f"(idempotency token {TOKEN_A}) was deleted in the workspace" in message
    assert "the next start of the job sends a new token" in message
    assert jobs_api.runs_of(123) == []


def test_unknown_run_cannot_be_read_and_the_error_says_what_to_do(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="run 4242 not found.*harness complete --job-id 123"):
        backend(tmp_path).poll("123", "4242")


@pytest.mark.parametrize("answers", [("status",), ("state",)], ids=["status", "state-only workspace"])
def test_successful_run_after_finds_only_a_success_started_after_the_failure(
    jobs_api: JobsApiServer, tmp_path: Path, answers: tuple[str, ...]
) -> None:
    # GIVEN a success before the failure, then many failed runs by hand (more than one page)
    jobs_api.run_fields = answers
    jobs_api.add_job(123)
    b = backend(tmp_path)
    jobs_api.run_by_hand(123, "SUCCESS")
    time.sleep(0.01)
    failed_at = datetime.now(UTC)
    assert b.successful_run_after("123", failed_at - timedelta(seconds=1)) is not None
    for _ in range(3):
        jobs_api.run_by_hand(123, "FAILED")
    assert b.successful_run_after("123", failed_at) is None
    # WHEN a run succeeds by hand, followed by 25 more failed runs
    success = jobs_api.run_by_hand(123, "SUCCESS")
    for _ in range(25):
        jobs_api.run_by_hand(123, "CANCELED")
    # THEN it is found, through the pages of runs/list, with its own end (the workspace's clock)
    found = b.successful_run_after("123", failed_at)
    assert found is not None and found.run_id == str(success)
    assert found.ended_at == datetime.fromtimestamp(cast(int, jobs_api.runs[success].end_time) / 1000, UTC)
    lists = jobs_api.calls("/runs/list")
    assert lists[-1].query["completed_only"] == "true" and "page_token" in lists[-1].query


def test_a_failed_run_repaired_in_the_workspace_is_found_whatever_its_start_time(
    jobs_api: JobsApiServer, tmp_path: Path
) -> None:
    # GIVEN the heartbeat's run of a job, failed; the workspace's clock 3 s behind the heartbeat's
    jobs_api.add_job(123)
    b = backend(tmp_path)
    run_id = b.start(request())
    jobs_api.runs[int(run_id)].start_time -= 3000
    jobs_api.end_run(int(run_id), "FAILED")
    intent_at = datetime.now(UTC) - timedelta(seconds=1)  # the heartbeat's time of the start, by its clock
    assert b.successful_run_after("123", intent_at, run_id) is None
    # WHEN the run is repaired in the workspace and succeeds (it keeps its start time)
    jobs_api.end_run(int(run_id), "SUCCESS")
    # THEN it is found by its id, not by a start time the two clocks disagree on
    assert b.successful_run_after("123", intent_at) is None
    repaired = b.successful_run_after("123", intent_at, run_id)
    assert repaired is not None and repaired.run_id == run_id and repaired.ended_at is not None


# --- dbt's databricks target where the job sets no environment (serverless) ----------------------
def test_dbt_gets_the_host_and_its_token_from_the_secret_scope_when_the_environment_has_none(
    jobs_api: JobsApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a heartbeat authenticated by its own identity, with no host nor dbt token in the environment
    jobs_api.secrets[("heartbeat", "dbt_token")] = "dapi-dbt-0123456789"
    monkeypatch.delenv("DATABRICKS_HOST")
    monkeypatch.delenv("DATABRICKS_TOKEN")
    monkeypatch.setenv("HEARTBEAT_IDENTITY_TOKEN", jobs_api.token)
    monkeypatch.setenv("DBT_ENV_SECRET_DATABRICKS_TOKEN", "")
    config = backend(
        tmp_path, host=jobs_api.url, token_env="HEARTBEAT_IDENTITY_TOKEN", dbt_token_secret="heartbeat/dbt_token"
    ).config
    # WHEN dbt's connection is prepared
    databricks_target.prepare(config)
    # THEN dbt finds the workspace's host and the secret's value, which is masked wherever the harness writes
    assert os.environ["DATABRICKS_HOST"] == jobs_api.url
    assert os.environ["DBT_ENV_SECRET_DATABRICKS_TOKEN"] == "dapi-dbt-0123456789"
    assert "dapi-dbt-0123456789" not in redact("token dapi-dbt-0123456789")


def test_inside_the_databricks_runtime_dbts_token_is_read_with_the_runtimes_dbutils(
    jobs_api: JobsApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a job on Databricks, where the Secrets API's get_secret answers BAD_REQUEST outside a notebook
    # and the runtime's dbutils reads secrets (a stand-in: the runtime cannot run here)
    import databricks.sdk

    class RuntimeSecrets:
        def get(self, scope: str, key: str) -> str:
            return {("heartbeat", "dbt_token"): "dapi-runtime-42"}[(scope, key)]

    class RuntimeDbutils:
        secrets = RuntimeSecrets()

    monkeypatch.setattr(databricks.sdk, "_make_dbutils", lambda config: RuntimeDbutils())
    jobs_api.fail("/secrets/get", 400, times=10_000, error_code="BAD_REQUEST", message="not supported here")
    monkeypatch.delenv("DATABRICKS_TOKEN")
    monkeypatch.setenv("HEARTBEAT_IDENTITY_TOKEN", jobs_api.token)
    monkeypatch.setenv("DBT_ENV_SECRET_DATABRICKS_TOKEN", "")
    config = backend(
        tmp_path, host=jobs_api.url, token_env="HEARTBEAT_IDENTITY_TOKEN", dbt_token_secret="heartbeat/dbt_token"
    ).config
    # WHEN dbt's connection is prepared
    databricks_target.prepare(config)
    # THEN the token is the one the runtime's dbutils read, and it is masked
    assert os.environ["DBT_ENV_SECRET_DATABRICKS_TOKEN"] == "dapi-runtime-42"
    assert redact("token dapi-runtime-42") == "token ***"


def test_an_unreadable_dbt_token_secret_names_the_setting_and_the_grant(
    jobs_api: JobsApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBT_ENV_SECRET_DATABRICKS_TOKEN", "")
    monkeypatch.delenv("DATABRICKS_TOKEN")
    monkeypatch.setenv("HEARTBEAT_IDENTITY_TOKEN", jobs_api.token)
    config = backend(
        tmp_path, host=jobs_api.url, token_env="HEARTBEAT_IDENTITY_TOKEN", dbt_token_secret="heartbeat/missing"
    ).config
    with pytest.raises(
        BackendError,
        match="databricks.dbt_token_secret heartbeat/missing: cannot read the secret.*"
        "grant the heartbeat's identity READ on the secret scope 'heartbeat'",
    ):
        databricks_target.prepare(config)


# --- the change range and the job parameter's size limit ------------------------------------------
def large_range(job_id: str, token: str, upstreams: int = 5, events: int = MAX_EVENTS) -> dict[str, Any]:
    """The range of a job reading `upstreams` Delta tables, each with `events` commits in it, built with the
    project's own classes (as a run with many changes since its last success is handed)."""
    rows = [
        TriggeredRow(
            RowKey("delta_table", f"main.sales.orders_{u}", job_id),
            dumps({"version": 10}),
            dumps({"version": 10 + events}),
            "NEW_EVENT_AVAILABLE",
            True,
        )
        for u in range(upstreams)
    ]
    change_events = {
        row.key: {
            "events_complete": True,
            **described(
                [
                    ChangeEvent(
                        event_time=f"2026-01-05T10:{v % 60:02d}:00+00:00",
                        table=row.key.sensor_id,
                        table_format="delta",
                        snapshot_id=10 + v,
                        snapshot_time=f"2026-01-05T10:{v % 60:02d}:00+00:00",
                        previous_snapshot_id=9 + v,
                        operation="APPEND",
                        partition_values=({"ds": f"2026-01-{1 + v % 28:02d}", "region": "emea"},),
                    )
                    for v in range(1, events + 1)
                ]
            ),
        }
        for row in rows
    }
    return change_range(job_id, token, rows, change_events)


def test_a_range_too_large_for_a_job_parameter_is_handed_by_reference_and_read_whole(
    jobs_api: JobsApiServer, tmp_path: Path
) -> None:
    # GIVEN a job whose range holds 5 upstreams x 100 change events (far beyond 10,000 bytes as JSON)
    jobs_api.add_job(123)
    whole = large_range("123", TOKEN_A)
    assert len(dumps(whole).encode()) > 10 * PARAMETER_LIMIT_BYTES
    # WHEN the run is started
    run_id = backend(tmp_path).start(RunRequest("123", "orders-refresh", TOKEN_A, whole))
    # THEN its parameters stay under the limit, the range parameter names a file in the state folder ...
    (run,) = jobs_api.runs_of(123)
    assert str(run.run_id) == run_id
    assert len(json.dumps(run.job_parameters).encode()) < PARAMETER_LIMIT_BYTES
    handed = run.job_parameters["heartbeat_change_range"]
    assert json.loads(handed)["range_file"] == str(tmp_path / "ranges" / f"{TOKEN_A}.json")
    # ... and the job reads the whole range from it, as `harness.consume` does
    parsed = parse(handed)
    assert parsed.run_context_id == TOKEN_A and len(parsed.upstreams) == 5
    assert [u.end for u in parsed.upstreams] == [u["to"] for u in whole["upstreams"]]
    assert parse(dumps(whole)) == parsed


def test_a_small_range_is_handed_inline(jobs_api: JobsApiServer, tmp_path: Path) -> None:
    jobs_api.add_job(123)
    small = large_range("123", TOKEN_A, upstreams=1, events=3)
    backend(tmp_path).start(RunRequest("123", "orders-refresh", TOKEN_A, small))
    (run,) = jobs_api.runs_of(123)
    assert json.loads(run.job_parameters["heartbeat_change_range"]) == json.loads(dumps(small))
    assert not (tmp_path / "ranges").exists()


def test_a_range_file_that_cannot_be_read_names_the_grant(tmp_path: Path) -> None:
    reference = dumps({"job_id": "123", "run_context_id": TOKEN_A, "range_file": str(tmp_path / "gone.json")})
    with pytest.raises(ChangeRangeError, match="handed by reference.*READ VOLUME"):
        parse(reference)
