"""Ticks driving Databricks jobs through the Jobs API test server: trigger files start runs, every run
is tracked to its end, failed jobs wait for a later success, ranges heal, API errors become events."""

from __future__ import annotations

import itertools
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from harness.tick import inbox
from tests.jobs_api_server import FakeRun, JobsApiServer
from tests.support import HeartbeatHarness, control_row, status_output, use_databricks


def row_of(heartbeat: HeartbeatHarness, job_id: str) -> dict[str, Any]:
    (row,) = [r for r in heartbeat.tables.control_table() if r["trigger_job_id"] == job_id]
    return row


def event_table_text(heartbeat: HeartbeatHarness) -> str:
    return "\n".join(json.dumps(e, default=str) for e in heartbeat.events())


def ctime_ns(path: Path) -> int:
    return os.stat(path).st_ctime_ns


def to_ns(watermark: dict[str, Any] | None) -> int:
    return -1 if watermark is None else int(watermark["changed_ns"])


def test_runs_are_tracked_to_completed_failed_or_stuck_and_failed_jobs_wait_for_a_later_success(
    heartbeat: HeartbeatHarness, jobs_api: JobsApiServer
) -> None:
    # GIVEN four Databricks jobs fed by one trigger folder, and a file in it
    jobs = ["101", "102", "103", "104"]
    for job in jobs:
        jobs_api.add_job(int(job))
    heartbeat.write_controls([control_row("trigger_file", "orders", job) for job in jobs])
    use_databricks(heartbeat, stuck_after_seconds=0)
    heartbeat.drop_trigger_file("orders", "batch-1.done")

    # WHEN a tick starts them and the runs end as SUCCESS / FAILED / CANCELED / still running
    first = heartbeat.tick()
    assert sorted(first.started) == jobs
    run = {job: jobs_api.runs_of(int(job))[0] for job in jobs}
    assert jobs_api.change_range(run["101"])["upstreams"][0]["to"]["recent"] == ["batch-1.done"]
    jobs_api.end_run(run["101"].run_id, "SUCCESS")
    jobs_api.end_run(run["102"].run_id, "FAILED", "Notebook raised ValueError: bad row")
    jobs_api.end_run(run["103"].run_id, "CANCELED", "Run cancelled by alice@example.com")
    heartbeat.drop_trigger_file("orders", "batch-2.done")
    second = heartbeat.tick()

    # THEN each row shows how its run ended (its termination code and message); the running one is flagged stuck
    assert second.runs_succeeded == 1 and second.runs_failed == 2 and second.runs_running == 1
    assert heartbeat.job_status("102") == {"FAILED"} and heartbeat.job_status("103") == {"FAILED"}
    assert "Notebook raised ValueError: bad row" in row_of(heartbeat, "102")["last_error"]
    assert "USER_CANCELED: Run cancelled by alice@example.com" in row_of(heartbeat, "103")["last_error"]
    (stuck,) = heartbeat.events("RUN_STUCK")
    assert stuck["run_id"] == str(run["104"].run_id)
    assert (
        f"run {stuck['run_id']} still running after " in stuck["message"] and " s (runs.stuck_after" in stuck["message"]
    )
    # AND only the completed job took the new file: the failed ones are neither sensed nor started
    assert second.started == ["101"]
    assert {job: len(jobs_api.runs_of(int(job))) for job in jobs} == {"101": 2, "102": 1, "103": 1, "104": 1}

    # WHEN 102 is reported complete (as a job's last task would) and 103 succeeds by hand in the workspace
    inbox.submit(heartbeat.config.state_dir, inbox.new_request("complete", "102"))
    by_hand = jobs_api.run_by_hand(103, "SUCCESS")
    third = heartbeat.tick()

    # THEN both leave FAILED and start again with the new file, from the range their failed run consumed
    assert sorted(third.started) == ["102", "103"]
    (recovered,) = [e for e in heartbeat.events("MANUAL_COMPLETE") if e["trigger_job_id"] == "103"]
    assert recovered["run_id"] == str(by_hand)
    # AND the run found by hand closes 103's failure with its own end, as the workspace says it
    ended_by_hand = datetime.fromtimestamp(cast(int, jobs_api.runs[by_hand].end_time) / 1000, UTC)
    assert json.loads(recovered["details"])["run_ended_at"] == ended_by_hand.isoformat()
    for job in ("102", "103"):
        newest = jobs_api.started_runs(int(job))[-1]
        (upstream,) = jobs_api.change_range(newest)["upstreams"]
        assert upstream["from"]["recent"] == ["batch-1.done"] and "batch-2.done" in upstream["to"]["recent"]
    assert jobs_api.token not in event_table_text(heartbeat)


def test_api_errors_become_events_naming_the_job_and_the_tick_stays_bounded(
    heartbeat: HeartbeatHarness, jobs_api: JobsApiServer
) -> None:
    # GIVEN a job unknown to the workspace, one the heartbeat may not run, and a rate-limit storm
    jobs_api.add_job(202)
    jobs_api.add_job(203)
    jobs_api.add_job(204)
    heartbeat.write_controls([control_row("trigger_file", "orders", job) for job in ("201", "202", "203")])
    use_databricks(heartbeat, unreachable_cooldown_seconds=0)  # the next tick may call the workspace at once
    heartbeat.drop_trigger_file("orders", "batch-1.done")
    jobs_api.fail("/run-now", 403, job_id=202, error_code="PERMISSION_DENIED", message="User may not run job 202")
    jobs_api.fail("/run-now", 429, job_id=203, times=10_000, retry_after=60, error_code="TOO_MANY_REQUESTS")

    # WHEN a tick tries to start them
    report = heartbeat.tick()

    # THEN each failure is an event naming the job and the cause; the storm ended with the retry budget
    # (how long that takes is measured by bench/, not asserted here)
    refused = {e["trigger_job_id"]: e["message"] for e in heartbeat.events("RUN_START_FAILED")}
    assert "Databricks job 201" in refused["201"] and "does not exist" in refused["201"]
    assert "CAN MANAGE RUN" in refused["202"]
    (unconfirmed,) = heartbeat.events("RUN_START_UNCONFIRMED")
    assert unconfirmed["trigger_job_id"] == "203" and "retry_timeout_seconds=3" in unconfirmed["message"]
    assert report.start_unconfirmed == ["203"] and sorted(report.start_refused) == ["201", "202"]
    assert jobs_api.token not in event_table_text(heartbeat)

    # WHEN the storm is over
    jobs_api.faults.clear()
    heartbeat.tick()

    # THEN the unconfirmed start is re-sent with the same token: one run; the refused rows are back as they were
    (run,) = jobs_api.runs_of(203)
    assert run.token == unconfirmed["idempotency_token"]
    assert {c.body["idempotency_token"] for c in jobs_api.calls("/run-now") if c.body["job_id"] == 203} == {run.token}
    assert heartbeat.job_status("203") == {"IN_PROGRESS"}
    assert heartbeat.job_status("201") == {"NEW_EVENT_AVAILABLE"}


def test_an_api_throttling_half_the_starts_starts_each_job_once_and_loses_none(
    heartbeat: HeartbeatHarness, jobs_api: JobsApiServer
) -> None:
    # GIVEN 16 Databricks jobs, each fed by a trigger folder of its own with a new file; the Jobs API
    # answers the first run-now of every other job with 429 + Retry-After, and every run-now of two more
    # for longer than the retry budget
    jobs = [str(300 + j) for j in range(16)]
    for job in jobs:
        jobs_api.add_job(int(job))
    heartbeat.write_controls([control_row("trigger_file", f"in{job}", job) for job in jobs])
    use_databricks(heartbeat, unreachable_cooldown_seconds=0)  # the storm's end lets the next tick call at once
    for job in jobs:
        heartbeat.drop_trigger_file(f"in{job}", "batch-1.done")
    throttled, storm = jobs[::2], jobs[1:5:2]
    for job in throttled:
        jobs_api.fail("/run-now", 429, job_id=int(job), retry_after=1, error_code="TOO_MANY_REQUESTS")
    storms = [
        jobs_api.fail("/run-now", 429, job_id=int(job), times=10_000, retry_after=60, error_code="TOO_MANY_REQUESTS")
        for job in storm
    ]

    # WHEN a tick starts them, and the next tick once the storm is over
    first = heartbeat.tick()
    for fault in storms:
        fault.times = 0
    second = heartbeat.tick()

    # THEN each throttled start was sent again after its wait and started in the first tick; the two the
    # storm left unconfirmed were re-sent by the second with their first token and started then
    assert sorted(first.started) == sorted(set(jobs) - set(storm)) and sorted(first.start_unconfirmed) == storm
    assert second.starts_repaired == 2 and second.started == []
    for job in throttled:
        sent = [c.body["idempotency_token"] for c in jobs_api.calls("/run-now") if c.body["job_id"] == int(job)]
        assert len(sent) == 2 and len(set(sent)) == 1, f"job {job}: {sent}"
    # AND each job has one run, started with the token its intent recorded: none lost, none twice
    runs = {job: jobs_api.started_runs(int(job)) for job in jobs}
    assert {job: len(found) for job, found in runs.items()} == {job: 1 for job in jobs}
    intents = {e["trigger_job_id"]: e["idempotency_token"] for e in heartbeat.events("TRIGGER_REQUESTED")}
    assert {job: found[0].token for job, found in runs.items()} == intents
    assert all(heartbeat.job_status(job) == {"IN_PROGRESS"} for job in jobs)


def test_failing_twice_then_succeeding_by_hand_covers_every_change_exactly_once(
    heartbeat: HeartbeatHarness, jobs_api: JobsApiServer
) -> None:
    # GIVEN a job fed by a trigger folder, with files landing throughout
    jobs_api.add_job(301)
    heartbeat.write_controls([control_row("trigger_file", "sales", "301")])
    use_databricks(heartbeat)
    files = [heartbeat.drop_trigger_file("sales", "f1")]

    # WHEN its run fails, a retry fails again, and someone then runs it by hand successfully
    heartbeat.tick()  # run A
    jobs_api.end_run(jobs_api.runs_of(301)[-1].run_id, "FAILED", "A failed")
    files.append(heartbeat.drop_trigger_file("sales", "f2"))
    failed = heartbeat.tick()  # A -> FAILED; the job waits
    assert failed.runs_failed == 1 and failed.started == [] and len(jobs_api.runs_of(301)) == 1
    inbox.submit(heartbeat.config.state_dir, inbox.new_request("retry", "301"))
    heartbeat.tick()  # run B, handed the failed range
    jobs_api.end_run(jobs_api.runs_of(301)[-1].run_id, "TIMEDOUT", "B timed out")
    files.append(heartbeat.drop_trigger_file("sales", "f3"))
    again = heartbeat.tick()  # B -> FAILED; the job waits
    assert again.started == [] and heartbeat.job_status("301") == {"FAILED"}
    hand = jobs_api.run_by_hand(301, "SUCCESS")
    healed = heartbeat.tick()  # hand success found; f2, f3 -> run C
    jobs_api.end_run(jobs_api.runs_of(301)[-1].run_id, "SUCCESS")
    files.append(heartbeat.drop_trigger_file("sales", "f4"))
    heartbeat.tick()  # C -> COMPLETED; f4 -> run D

    # THEN the runs are A, B (both failed, same range), C and D; the hand success consumed A's range
    assert healed.started == ["301"]
    started: list[FakeRun] = jobs_api.started_runs(301)
    ranges = [jobs_api.change_range(r)["upstreams"][0] for r in started]
    assert len(started) == 4 and ranges[0] == ranges[1]
    (manual,) = heartbeat.events("MANUAL_COMPLETE")
    assert manual["run_id"] == str(hand)
    consumed = [(None, json.loads(manual["watermark_after"]))] + [(r["from"], r["to"]) for r in ranges[2:]]
    # consecutive successful ranges meet end to end, from no watermark at all ...
    for (_, before_to), (after_from, _) in itertools.pairwise(consumed):
        assert after_from == before_to
    # ... and every file falls in exactly one of them
    for path in files:
        holders = [i for i, (lo, hi) in enumerate(consumed) if to_ns(lo) < ctime_ns(path) <= to_ns(hi)]
        assert len(holders) == 1, (path.name, holders)
    assert ranges[0]["from"] is None and ranges[2]["from"] == ranges[0]["to"]
    assert jobs_api.token not in event_table_text(heartbeat)


def test_a_run_that_cannot_be_read_is_recorded_once_not_on_every_tick(
    heartbeat: HeartbeatHarness, jobs_api: JobsApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a started run whose state the workspace refuses to give (runs/get answers 400 every time)
    jobs_api.add_job(401)
    heartbeat.write_controls([control_row("trigger_file", "orders", "401")])
    use_databricks(heartbeat)
    heartbeat.drop_trigger_file("orders", "batch-1.done")
    assert heartbeat.tick().started == ["401"]
    jobs_api.fail("/runs/get", 400, times=10_000, error_code="INVALID_STATE", message="run is archived")

    # WHEN three ticks poll it
    for _ in range(3):
        assert heartbeat.tick().error is None

    # THEN the failure is one event naming the run and the cause, and the row says so; it is still polled
    (failed,) = heartbeat.events("RUN_POLL_FAILED")
    assert failed["message"].count("cannot read run") == 1 and "run is archived" in failed["message"]
    assert "run is archived" in row_of(heartbeat, "401")["last_error"]
    assert len(jobs_api.calls("/runs/get")) >= 3

    assert "run is archived" in status_output(heartbeat, capsys)

    # WHEN the workspace answers again while the run goes on, THEN that is recorded once, and the row's
    # error is cleared: `status` no longer shows a failure that is over
    jobs_api.faults.clear()
    for _ in range(2):
        assert heartbeat.tick().runs_running == 1
    (recovered,) = heartbeat.events("RUN_POLL_RECOVERED")
    assert recovered["message"].endswith("reads again: still running")
    assert row_of(heartbeat, "401")["last_error"] is None
    assert "run is archived" not in status_output(heartbeat, capsys)
    # AND the same failure once more is recorded at once (not an hour after the first)
    jobs_api.fail("/runs/get", 400, times=1, error_code="INVALID_STATE", message="run is archived")
    heartbeat.tick()
    assert len(heartbeat.events("RUN_POLL_FAILED")) == 2

    # WHEN the workspace answers again and the run succeeded, THEN the next tick records it
    jobs_api.faults.clear()
    jobs_api.end_run(jobs_api.runs_of(401)[0].run_id, "SUCCESS")
    assert heartbeat.tick().runs_succeeded == 1
    assert heartbeat.job_status("401") == {"COMPLETED"}


def test_a_run_the_workspace_skipped_is_no_failure_and_its_range_is_started_again(
    heartbeat: HeartbeatHarness, jobs_api: JobsApiServer
) -> None:
    # GIVEN a job whose start the workspace skipped: a run of it started by hand was going
    # (max_concurrent_runs: 1; MAX_CONCURRENT_RUNS_EXCEEDED)
    jobs_api.add_job(501)
    heartbeat.write_controls([control_row("trigger_file", "orders", "501")])
    use_databricks(heartbeat)
    heartbeat.with_sections(
        runs={
            "stuck_after_seconds": 3600.0,
            "refused_start_retry_seconds": 3600,
            "refused_start_retry_max_seconds": 3600,
        }
    )
    heartbeat.drop_trigger_file("orders", "batch-1.done")
    assert heartbeat.tick().started == ["501"]
    (skipped_run,) = jobs_api.runs_of(501)
    jobs_api.end_run(
        skipped_run.run_id,
        "MAXIMUM_CONCURRENT_RUNS_REACHED",
        "Skipping this run because the limit of 1 maximum concurrent runs has been reached.",
        life_cycle_state="SKIPPED",
    )

    # WHEN the next tick reads its end
    report = heartbeat.tick()

    # THEN it is not a failure: the row is back to waiting, the job is not locked out, and status says why
    assert report.runs_failed == 0 and report.runs_skipped == 1
    assert heartbeat.events("RUN_FAILED") == []
    (skipped,) = heartbeat.events("RUN_SKIPPED")
    assert "skipped" in skipped["message"] and "MAX_CONCURRENT_RUNS_EXCEEDED" in skipped["message"]
    assert heartbeat.job_status("501") == {"NEW_EVENT_AVAILABLE"}
    assert "skipped" in heartbeat.decisions()["501"].reason

    # WHEN the wait before starting it again is over (shortened here) and a later tick starts it
    heartbeat.with_sections(
        runs={"stuck_after_seconds": 3600.0, "refused_start_retry_seconds": 1, "refused_start_retry_max_seconds": 1}
    )
    time.sleep(1.5)
    assert heartbeat.tick().started == ["501"]

    # THEN a new run (a new token: the skipped run's token would only return the skipped run) gets the
    # same range
    runs = jobs_api.runs_of(501)
    assert len(runs) == 2 and runs[1].token != skipped_run.token
    assert jobs_api.change_range(runs[1])["upstreams"] == jobs_api.change_range(skipped_run)["upstreams"]
    assert heartbeat.job_status("501") == {"IN_PROGRESS"}
