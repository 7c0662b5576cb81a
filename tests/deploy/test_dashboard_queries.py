"""The dashboard and the alerts the bundle deploys show the truth `python -m harness status --json` tells:
every dataset, every widget's query over it and every alert query, parsed as Databricks SQL and run as
Spark SQL on the test session's Spark, over a state built by real ticks (a job that succeeded, one that
failed, jobs waiting for data, for time and paused, an upstream gone stale, one whose check fails; then a
tick that refuses the controls CSV and fails), equal what `status --json` (and the harness's own readers of the
tick log and the event log) say of the same state.

The bundle is resolved for its prod target with the catalog and schema of the test's heartbeat, as its
variables: that is the one substitution (a workspace's catalog is the session's `spark_catalog` here).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pyspark.sql import Row

from harness.commands import cli
from harness.state.status_files import read_ticks
from harness.tick import run as tick_run
from harness.views.status import stale
from tests.bundle_queries import Dashboard, alert_sql, dashboard
from tests.bundle_resolution import ResolvedBundle, resolve
from tests.support import HeartbeatHarness, control_row

RUN_EVENTS = {
    "RUN_STARTED": "started",
    "RUN_SUCCEEDED": "succeeded",
    "MANUAL_COMPLETE": "completed by hand",
    "RUN_FAILED": "failed",
    "RUN_SKIPPED": "skipped",
    "RUN_START_FAILED": "start refused",
}


def bundle_for(heartbeat: HeartbeatHarness) -> ResolvedBundle:
    return resolve(
        "prod",
        {
            "catalog": heartbeat.config.catalog,
            "schema": heartbeat.config.schema,
            "warehouse_id": "local",
            "heartbeat_identity": "local-principal",
            "alert_destination_id": "local-destination",
        },
    )


def cli_json(heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str], *command: str) -> Any:
    """What `python -m harness <command>` prints (run in this process), read as JSON."""
    capsys.readouterr()
    cli.main(["--config", str(heartbeat.write_config_file()), *command])
    out = capsys.readouterr().out
    return json.loads(out) if command[0] == "status" else [json.loads(line) for line in out.splitlines() if line]


def utc(value: Any) -> datetime | None:
    """A time as Spark returns it (naive, the session's UTC) or as the state files write it (ISO text)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def rows(heartbeat: HeartbeatHarness, sql: str) -> list[Row]:
    return heartbeat.spark.sql(sql).collect()


def shows(heartbeat: HeartbeatHarness, board: Dashboard) -> dict[str, list[Row]]:
    """What every widget shows (every widget's query runs), by widget name."""
    return {w.name: rows(heartbeat, board.widget_sql(w)) for w in board.widgets}


def alert_values(heartbeat: HeartbeatHarness, bundle: ResolvedBundle) -> dict[str, Any]:
    """Each alert's value (its source column, on its one row), and whether it fires."""
    out = {}
    for key, alert in bundle.resources["alerts"].items():
        evaluation = alert["evaluation"]
        found = rows(heartbeat, alert_sql(bundle, key))
        assert len(found) <= 1, key
        value = found[0][evaluation["source"]["name"]] if found else None
        assert evaluation["comparison_operator"] == "GREATER_THAN", key
        fires = value is not None and value > evaluation["threshold"]["value"]["double_value"]
        out[key] = (value, fires)
    return out


def assert_the_dashboard_says_what_status_says(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str], bundle: ResolvedBundle
) -> dict[str, Any]:
    board = dashboard(bundle)
    status = cli_json(heartbeat, capsys, "status", "--json")
    snapshot, health = status["snapshot"], status["health"]
    last = health["last_tick"]
    shown = shows(heartbeat, board)

    # jobs by state, and each job's state, reason and earliest start
    assert {r["state"]: r["count(*)"] for r in shown["jobs_by_state"]} == {
        view: n for view, n in snapshot["summary"].items() if n
    }
    jobs = {r["job_id"]: r for r in rows(heartbeat, board.dataset_sql("jobs"))}
    assert {j: (r["state"], r["reason"], utc(r["earliest_start_at"])) for j, r in jobs.items()} == {
        j["job_id"]: (j["view"], j["reason"], utc(j["earliest_start_at"])) for j in snapshot["jobs"]
    }
    assert {r["job_id"] for r in shown["jobs_table"]} == set(jobs)

    # stale upstreams
    status_rows = [r for j in snapshot["jobs"] for r in j["rows"]]
    assert sorted((r["upstream"], r["job_id"]) for r in shown["stale_table"]) == sorted(
        (r["upstream_label"], r["trigger_job_id"]) for r in status_rows if stale(r)
    )

    # failed checks, the last tick's health
    assert sorted(r["failed_check"] for r in shown["checks_table"]) == sorted(last["failed_checks"])
    (tick,) = rows(heartbeat, board.dataset_sql("tick_health"))
    assert tick["last_tick_id"] == last["tick_id"] and utc(tick["last_tick_ended_at"]) == utc(last["ended_at"])
    assert (tick["last_tick_error"], tick["last_tick_failed_step"]) == (last["error"], last["step"])
    assert tick["last_tick_seconds"] == last["seconds"] and tick["controls_error"] == last["controls_error"]
    assert utc(tick["last_success_at"]) == utc(health.get("last_success_at"))
    assert tick["failures_in_a_row"] == health["failures_in_a_row"] == shown["failures_in_a_row"][0][0]
    assert tick["failed_checks"] == last["failed_check_count"] == shown["failed_check_count"][0][0]

    # the ticks and their seconds per step: the tick log as `report` reads it
    logged = read_ticks(heartbeat.config.state_dir, datetime.now(timezone.utc) - timedelta(days=7))
    ticks = rows(heartbeat, board.dataset_sql("ticks"))
    assert sorted((r["tick_id"], r["seconds"], r["outcome"]) for r in ticks) == sorted(
        (t["tick_id"], t["seconds"], "ok" if t["error"] is None else "failed") for t in logged
    )
    steps = rows(heartbeat, board.dataset_sql("tick_steps"))
    assert sorted((r["tick_id"], r["step"], r["seconds"]) for r in steps) == sorted(
        (t["tick_id"], step, seconds) for t in logged for step, seconds in t["steps"].items()
    )

    # starts and run outcomes: one a run, as `events --json` lists the runs' events
    events = cli_json(heartbeat, capsys, "events", "--json", "--since", "14d", "--limit", "0")
    runs = Counter(
        RUN_EVENTS[e["event_type"]]
        for e in {
            (e["event_type"], e["trigger_job_id"], e["run_id"] or e["idempotency_token"] or e["event_id"]): e
            for e in events
            if e["event_type"] in RUN_EVENTS
        }.values()
    )
    charted: Counter[str] = Counter()
    for r in shown["outcomes_chart"]:  # a bar an hour and outcome
        charted[r["outcome"]] += r["sum(runs)"]
    assert charted == runs and runs["started"] >= 2

    # detection to start, for each job's latest run: from the rows' last new data to the run's start
    latest: dict[str, Row] = {}
    for r in rows(heartbeat, board.dataset_sql("start_latency")):
        if r["job_id"] not in latest or r["started_at"] > latest[r["job_id"]]["started_at"]:
            latest[r["job_id"]] = r
    expected = {}
    for job in snapshot["jobs"]:
        started = {utc(r["latest_run"]["started_at"]) for r in job["rows"] if (r["latest_run"] or {}).get("started_at")}
        if started:
            (start,) = started
            detected = max(
                utc(r["latest_event_fetched_timestamp"])
                for r in job["rows"]
                if r["latest_event_fetched_timestamp"] and utc(r["latest_event_fetched_timestamp"]) <= start
            )
            expected[job["job_id"]] = (start, (start - detected).total_seconds())
    assert {j: utc(r["started_at"]) for j, r in latest.items()} == {j: start for j, (start, _) in expected.items()}
    assert {j: r["seconds"] for j, r in latest.items()} == pytest.approx({j: s for j, (_, s) in expected.items()})

    # the alerts
    before = datetime.now(timezone.utc)
    alerts = alert_values(heartbeat, bundle)
    after = datetime.now(timezone.utc)
    ended = utc(last["ended_at"])
    assert ended is not None
    assert int((before - ended).total_seconds()) - 1 <= alerts["no_tick"][0] <= (after - ended).total_seconds() + 1
    assert alerts["tick_failing"][0] == health["failures_in_a_row"]
    assert alerts["job_failed"][0] == snapshot["summary"]["failed"]
    assert alerts["upstream_stale"][0] == sum(1 for r in status_rows if stale(r))
    assert alerts["controls_refused"][0] == (1 if last["controls_error"] else 0)
    return {"alerts": alerts, "status": status, "shown": shown}


def test_the_dashboard_and_alerts_show_what_status_says_of_a_state_built_by_ticks(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a heartbeat whose ticks left: a job that ran and succeeded, one whose run failed, one waiting for
    # its hard upstream, one with new data waiting for its start window (hours from now), one paused, an
    # upstream that was expected within 2 s and delivered nothing, and one whose check fails (no folder)
    opens = datetime.now(timezone.utc) + timedelta(hours=6)
    window = f"{opens:%H}:00-{opens + timedelta(hours=1):%H}:00"
    heartbeat.write_controls(
        [
            control_row("trigger_file", "orders", "ok_job"),
            control_row("trigger_file", "payments", "bad_job"),
            control_row("trigger_file", "stock", "waiting_job"),
            control_row("trigger_file", "prices", "waiting_job", hard=False),
            control_row("trigger_file", "rates", "window_job") | {"start_window": window},
            control_row("trigger_file", "archive", "paused_job", paused=True),
            control_row("trigger_file", "feed", "stale_job") | {"expected_within": "2s"},
            control_row("trigger_file", "gone", "broken_job"),
        ]
    )
    heartbeat.define_jobs("ok_job", "bad_job", "waiting_job", "window_job", "paused_job", "stale_job", "broken_job")
    heartbeat.set_exit_code("bad_job", 1)
    for folder in ("stock", "feed"):
        (heartbeat.config.trigger_root / folder).mkdir()  # type: ignore[operator]
    for folder, name in (("orders", "o1"), ("payments", "p1"), ("prices", "x1"), ("rates", "r1"), ("archive", "a1")):
        heartbeat.drop_trigger_file(folder, name)
    heartbeat.tick_until_settled()
    time.sleep(2.1)
    heartbeat.tick()
    assert heartbeat.job_status("ok_job") == {"COMPLETED"} and heartbeat.job_status("bad_job") == {"FAILED"}
    bundle = bundle_for(heartbeat)

    # WHEN the dashboard's and the alerts' queries run over that state
    # THEN each says what status --json says
    first = assert_the_dashboard_says_what_status_says(heartbeat, capsys, bundle)
    summary = first["status"]["snapshot"]["summary"]
    assert summary == {"failed": 1, "ready": 0, "running": 0, "waiting": 5, "paused": 1}
    assert first["status"]["health"]["last_tick"]["failed_checks"]  # the missing folder's check
    assert {k: fires for k, (_, fires) in first["alerts"].items()} == {
        "no_tick": False,
        "tick_failing": False,
        "job_failed": True,
        "upstream_stale": True,
        "controls_refused": False,
    }
    waiting = {r["job_id"]: r for r in first["shown"]["jobs_table"]}["window_job"]
    assert waiting["state"] == "waiting" and waiting["earliest_start_at"] is not None
    assert waiting["reason"].startswith(f"outside its start window ({window})")

    # WHEN the next tick refuses the controls CSV and then fails (its snapshot step raises, as a full disk would)
    (heartbeat.config.controls_csv).write_text(
        heartbeat.config.controls_csv.read_text().replace("trigger_file,orders", "trigger_fil,orders")
    )

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tick_run, "snapshot", full_disk)
    assert heartbeat.tick().error is not None
    failing = assert_the_dashboard_says_what_status_says(heartbeat, capsys, bundle)

    # THEN the refusal and the failing tick show, and their alerts fire
    last = failing["status"]["health"]["last_tick"]
    assert "No space left on device" in last["error"] and "trigger_fil" in last["controls_error"]
    assert failing["alerts"]["controls_refused"] == (1, True) and failing["alerts"]["tick_failing"] == (1, True)
