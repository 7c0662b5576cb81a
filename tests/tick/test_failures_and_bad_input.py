"""A failed job waits for a success; bad input becomes a clear message and never stops the others."""

from __future__ import annotations

import logging
import time

import pytest

from harness.core.vocabulary import EventType
from harness.state.tables import TRIGGER_SET
from harness.tick import inbox
from tests.support import HeartbeatHarness, control_row, status_output


def test_failed_job_is_neither_sensed_nor_started_until_completed_by_hand(
    heartbeat: HeartbeatHarness, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a job whose command fails
    heartbeat.write_controls([control_row("trigger_file", "in", "f")])
    heartbeat.define_jobs("f")
    heartbeat.set_exit_code("f", 1)
    heartbeat.drop_trigger_file("in", "batch1")
    assert heartbeat.tick().started == ["f"]
    heartbeat.wait_for_runs()

    # WHEN its run fails and more data arrives
    with caplog.at_level(logging.WARNING, logger="harness"):
        failed = heartbeat.tick()
        heartbeat.drop_trigger_file("in", "batch2")
        blocked = heartbeat.tick()

    # THEN it stays FAILED with the command's message, and the new file is not sensed nor the job started
    assert failed.runs_failed == 1
    assert heartbeat.job_status("f") == {"FAILED"}
    assert blocked.upstreams_checked == 0 and blocked.started == []
    reason = heartbeat.decisions()["f"].reason
    assert reason.startswith("last run failed: job f: run local-") and "exit code 1" in reason
    # and the tick that found the failure (not the next one) warns in its log, saying what the job waits for
    (warned,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned.startswith("job f: run local-") and "exit code 1" in warned, warned
    assert warned.endswith(
        "until it is retried or completed by hand, or a later run of it succeeds (`python -m harness why --job f`)"
    )

    # WHEN it is completed by hand (`python -m harness complete --job-id f`) and the command is fixed
    heartbeat.set_exit_code("f", 0)
    heartbeat.request("complete", "f")
    resumed = heartbeat.tick()
    heartbeat.wait_for_runs()
    heartbeat.tick()

    # THEN the next run covers only what came after the failed run's range
    assert resumed.started == ["f"]
    runs = heartbeat.job_runs("f")
    assert len(runs) == 2
    (first,), (second,) = runs[0]["range"]["upstreams"], runs[1]["range"]["upstreams"]
    assert second["from"] == first["to"] and second["to"]["recent"] == ["batch1", "batch2"]
    assert heartbeat.job_status("f") == {"COMPLETED"}


def test_retry_hands_the_failed_range_to_the_next_run(heartbeat: HeartbeatHarness) -> None:
    # GIVEN a job whose first run failed
    heartbeat.given_failed_job("g", exit_code=2)

    # WHEN a retry is requested (`python -m harness retry --job-id g`) once the command is fixed
    heartbeat.set_exit_code("g", 0)
    heartbeat.request("retry", "g")
    heartbeat.tick_until_settled()

    # THEN the second run covers the failed run's range again, from the last success (none yet)
    first, second = heartbeat.job_runs("g")
    assert second["range"]["upstreams"][0]["from"] is None
    assert second["range"]["upstreams"][0]["to"] == first["range"]["upstreams"][0]["to"]
    assert heartbeat.job_status("g") == {"COMPLETED"}


def test_a_retry_queued_while_its_run_was_succeeding_leaves_the_success_standing(
    heartbeat: HeartbeatHarness, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a job whose run started, and ended well before the next tick saw it
    heartbeat.given_working_job("r")
    heartbeat.drop_trigger_file("in", "batch1")
    assert heartbeat.tick().started == ["r"]
    heartbeat.wait_for_runs()

    # WHEN a retry is queued for it (`python -m harness retry --job-id r`: the job still showed IN_PROGRESS)
    inbox.submit(heartbeat.config.state_dir, inbox.new_request("retry", "r"))
    with caplog.at_level(logging.WARNING, logger="harness"):
        report = heartbeat.tick()

    # THEN the tick records the run's success and drops the retry, saying why: no second run of the range
    assert report.error is None and report.runs_succeeded == 1 and report.started == []
    assert any("retry of job r" in r.getMessage() and "succeeded" in r.getMessage() for r in caplog.records)
    assert heartbeat.events("RETRY_REQUESTED") == []
    (dropped,) = heartbeat.events("REQUEST_DROPPED")  # recorded on the job's row, for `status` and `why`
    assert dropped["trigger_job_id"] == "r" and "succeeded" in dropped["message"]
    assert len(heartbeat.job_runs("r")) == 1 and heartbeat.job_status("r") == {"COMPLETED"}
    assert not list(heartbeat.config.layout.inbox.glob("*.json"))


def test_a_retry_of_a_run_still_going_is_dropped_and_the_run_is_followed_to_its_end(
    heartbeat: HeartbeatHarness, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a job whose run is going (it waits for a file the test writes)
    release = heartbeat.root / "release"
    heartbeat.write_controls([control_row("trigger_file", "in", "long")])
    heartbeat.define_jobs("long", command=f"while [ ! -e {release} ]; do sleep 0.1; done")
    heartbeat.drop_trigger_file("in", "batch1")
    assert heartbeat.tick().started == ["long"]

    # WHEN a retry is queued for it (`python -m harness retry --job-id long`) and the next tick applies it
    inbox.submit(heartbeat.config.state_dir, inbox.new_request("retry", "long"))
    try:
        with caplog.at_level(logging.WARNING, logger="harness"):
            report = heartbeat.tick()
    finally:
        release.touch()  # whatever the tick did, no run of the job is left waiting for the test

    # THEN the retry is dropped, saying why: the job is not started a second time beside its run
    assert report.error is None and report.runs_running == 1 and report.started == [] and report.requests_applied == 0
    assert any("still running" in r.getMessage() and "retry of job long" in r.getMessage() for r in caplog.records)
    assert heartbeat.events("RETRY_REQUESTED") == [] and heartbeat.job_status("long") == {"IN_PROGRESS"}
    # AND recorded on the job's row: `status` says it was dropped and why while the run goes on
    (dropped,) = heartbeat.events("REQUEST_DROPPED")
    assert dropped["trigger_job_id"] == "long" and "still running" in dropped["message"]
    said = [line.strip() for line in status_output(heartbeat, capsys).splitlines() if "request dropped" in line]
    assert len(said) == 1 and "retry of job long" in said[0] and "still running" in said[0], said
    # AND the run's end is recorded when it ends
    heartbeat.wait_for_runs()
    assert heartbeat.tick().runs_succeeded == 1
    assert heartbeat.job_status("long") == {"COMPLETED"} and len(heartbeat.events("TRIGGER_REQUESTED")) == 1
    assert "request dropped" not in status_output(heartbeat, capsys)  # the row moved on since


def test_requests_queued_together_close_the_run_once_the_first_standing(
    heartbeat: HeartbeatHarness, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a failed job, then `complete` twice and a `retry` queued before the next tick
    heartbeat.given_failed_job("g")
    for command in ("complete", "complete", "retry"):
        inbox.submit(heartbeat.config.state_dir, inbox.new_request(command, "g"))

    # WHEN the tick applies them
    with caplog.at_level(logging.WARNING, logger="harness"):
        report = heartbeat.tick()

    # THEN the first completes the run; the others find it closed, are said and dropped: no run starts
    assert report.error is None and report.requests_applied == 1 and report.started == []  # two dropped
    assert len(heartbeat.events("MANUAL_COMPLETE")) == 1 and heartbeat.events("RETRY_REQUESTED") == []
    dropped = [r.getMessage() for r in caplog.records if "its run was closed by the complete" in r.getMessage()]
    assert len(dropped) == 2 and dropped[1].startswith("retry of job g")
    assert heartbeat.job_status("g") == {"COMPLETED"} and len(heartbeat.job_runs("g")) == 1


def test_a_model_an_operator_dropped_is_built_again_at_the_next_tick_of_the_same_process(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN a process whose first tick built the models
    heartbeat.given_working_job("j")

    # WHEN an operator drops the trigger set (a view over the control table) and a file lands
    heartbeat.spark.sql(f"DROP VIEW {heartbeat.config.table(TRIGGER_SET)}")
    heartbeat.drop_trigger_file("in", "batch1")
    report = heartbeat.tick()

    # THEN the tick builds the models again and starts the job (it does not read an empty trigger set)
    assert report.error is None and report.started == ["j"]
    assert heartbeat.spark.catalog.tableExists(heartbeat.config.table(TRIGGER_SET))


def test_bad_csv_is_refused_once_and_the_last_good_controls_keep_running(
    heartbeat: HeartbeatHarness, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a working heartbeat
    heartbeat.given_working_job("ok")

    # WHEN the CSV is edited into a bad one and data arrives
    heartbeat.write_controls([control_row("trigger_file", "in", "ok"), control_row("trigger_fil", "other", "new_job")])
    heartbeat.drop_trigger_file("in", "batch1")
    refused = heartbeat.tick()
    with caplog.at_level(logging.WARNING, logger="harness"):
        again = heartbeat.tick()

    # THEN the tick names the line and the problem, records it once, and the old controls still start jobs
    assert refused.controls_error is not None
    assert "line 3 (trigger_fil 'other' -> job new_job): unknown sensor_source 'trigger_fil'" in refused.controls_error
    assert refused.started == ["ok"] and refused.error is None
    assert again.controls_error == refused.controls_error
    # and every tick while the file stays refused says so in its log (it exits 1 for it)
    assert any("still refused" in r.getMessage() and "line 3" in r.getMessage() for r in caplog.records)
    assert len(heartbeat.events("CONFIG_REJECTED")) == 1
    assert set(heartbeat.decisions()) == {"ok"}


@pytest.mark.parametrize(
    ("gone", "said"),
    [
        ("missing", "file not found"),
        ("a folder", "is a folder, not a file"),
        ("a link to nothing", "a link to /nowhere/heartbeat_controls.csv, which does not exist"),
    ],
)
def test_a_missing_or_unreadable_csv_is_refused_like_a_bad_one_and_the_last_good_controls_keep_running(
    heartbeat: HeartbeatHarness, gone: str, said: str
) -> None:
    # GIVEN a working heartbeat
    heartbeat.given_working_job("ok")

    # WHEN the controls CSV goes missing (a deploy that moved it), a folder takes its name (a deploy that
    # unpacked one there) or it links to a file no longer there (a release folder removed; dbt reads
    # every seed file it finds as it parses), and data arrives; then the run ends
    csv = heartbeat.config.controls_csv
    csv.unlink()
    if gone == "a folder":
        csv.mkdir()
    if gone == "a link to nothing":
        csv.symlink_to("/nowhere/heartbeat_controls.csv")
    heartbeat.drop_trigger_file("in", "batch1")
    refused = heartbeat.tick()
    heartbeat.wait_for_runs()
    ended = heartbeat.tick()

    # THEN the ticks name the file and what is wrong with it, record it once, and the last good controls
    # start the job and record its end (before, every fold failed: dbt found no seed to refer to, or the
    # validator's read of a folder raised, or dbt's parse of the link to nothing)
    assert refused.controls_error is not None and f"heartbeat_controls.csv: {said}" in refused.controls_error
    assert refused.started == ["ok"] and refused.error is None
    assert ended.runs_succeeded == 1 and ended.error is None and ended.controls_error == refused.controls_error
    assert len(heartbeat.events("CONFIG_REJECTED")) == 1
    assert heartbeat.job_status("ok") == {"COMPLETED"}

    # WHEN the file is back, with a row more
    if gone == "a folder":
        csv.rmdir()
    if gone == "a link to nothing":
        csv.unlink()
    heartbeat.write_controls([control_row("trigger_file", "in", "ok"), control_row("trigger_file", "in", "new_job")])
    back = heartbeat.tick()

    # THEN it is loaded
    assert back.controls_error is None and back.controls_applied and back.error is None
    assert set(heartbeat.decisions()) == {"ok", "new_job"}


def test_a_first_tick_without_a_controls_csv_says_what_to_write_and_builds_nothing(heartbeat: HeartbeatHarness) -> None:
    report = heartbeat.tick()
    assert report.error is not None and "heartbeat_controls.csv: file not found" in report.error
    assert "the metastore holds no controls loaded before" in report.error and "harness validate" in report.error
    assert report.dbt_builds == 0 and heartbeat.events("CONFIG_REJECTED") == []


def test_missing_trigger_root_and_unknown_job_become_errors_and_the_tick_carries_on(
    heartbeat: HeartbeatHarness, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a job that is not defined for the local runner, and a trigger root that does not exist
    heartbeat.write_controls([control_row("trigger_file", "in", "ghost")])
    heartbeat.drop_trigger_file("in", "batch1")
    heartbeat.define_jobs("real")
    real_root = heartbeat.config.trigger_root
    heartbeat.with_config(trigger_root=heartbeat.root / "no-such-root")

    # WHEN ticks run
    missing_root = heartbeat.tick()
    heartbeat.with_config(trigger_root=real_root)
    with caplog.at_level(logging.WARNING, logger="harness"):
        refused = heartbeat.tick()

    # THEN each problem is an error event with a message saying what to change, and no tick failed
    assert missing_root.error is None and missing_root.check_errors == 1
    (check_failed,) = heartbeat.events("CHECK_FAILED")
    assert "trigger_file:in: trigger root" in check_failed["message"] and "does not exist" in check_failed["message"]
    assert missing_root.failed_checks == [check_failed["message"]]  # what `status` shows in its top lines
    assert refused.error is None and refused.start_refused == ["ghost"]
    (start_failed,) = heartbeat.events(EventType.RUN_START_FAILED.value)
    assert "job ghost is not defined in local_runner.jobs" in start_failed["message"]
    # and the tick's own log (cron's mail) warns with the same words, as for a failed check
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned.count(start_failed["message"]) == 1, warned
    # the data is kept: the row is still waiting with its new data
    assert heartbeat.job_status("ghost") == {"NEW_EVENT_AVAILABLE"}


def test_an_upstream_that_stays_down_is_recorded_once_and_again_when_it_fails_anew(heartbeat: HeartbeatHarness) -> None:
    # GIVEN a job on a trigger folder that does not exist
    heartbeat.write_controls([control_row("trigger_file", "in", "j")])
    heartbeat.define_jobs("j")

    # WHEN ticks run while it stays missing
    first = heartbeat.tick()
    folded = heartbeat.config.layout.fold_id.read_text()  # a new id after every fold
    second = heartbeat.tick()

    # THEN the failure is one event, when it began; every tick still names it (status's top lines), and
    # the tick after the first has nothing to record or fold
    (failed,) = heartbeat.events("CHECK_FAILED")
    assert first.failed_checks == second.failed_checks == [failed["message"]]
    assert heartbeat.config.layout.fold_id.read_text() == folded and second.check_errors == 1

    # WHEN the folder appears for a tick, then is gone again
    folder = heartbeat.config.trigger_root / "in"  # type: ignore[operator]
    folder.mkdir()
    recovered = heartbeat.tick()
    folder.rmdir()
    heartbeat.tick()

    # THEN the new outage is recorded again
    assert recovered.failed_checks == []
    assert [e["message"] for e in heartbeat.events("CHECK_FAILED")] == [failed["message"]] * 2


def test_refused_start_shows_in_the_reason_and_is_retried_after_a_wait_not_on_every_tick(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN a job the local runner does not know, refused at its first start; refusals retried after 20 s
    # (longer than a tick takes on a busy machine)
    heartbeat.with_sections(runs={"refused_start_retry_seconds": 20, "refused_start_retry_max_seconds": 20})
    heartbeat.write_controls([control_row("trigger_file", "in", "ghost")])
    heartbeat.drop_trigger_file("in", "batch1")
    assert heartbeat.tick().start_refused == ["ghost"]
    refused_by = time.monotonic()

    # WHEN the next tick comes within the wait
    waiting = heartbeat.tick()

    # THEN it does not try again, and the reason (what `status` prints) names the refusal and the next attempt
    assert waiting.start_refused == [] and waiting.started == [] and waiting.dbt_builds == 0
    decision = heartbeat.decisions()["ghost"]
    assert not decision.should_start
    assert decision.reason.startswith("start refused at ")
    assert (
        "job ghost is not defined in local_runner.jobs" in decision.reason
        and "; next attempt after " in decision.reason
    )
    assert len(heartbeat.events(EventType.RUN_START_FAILED.value)) == 1

    # WHEN the cause is fixed and the wait has passed
    heartbeat.define_jobs("ghost")
    time.sleep(max(0.0, refused_by + 20.5 - time.monotonic()))
    assert heartbeat.decisions()["ghost"].reason.startswith("ready: new data on trigger_file:in; retrying the start")

    # THEN the next tick starts it, and the reason no longer mentions the refusal
    assert heartbeat.tick().started == ["ghost"]
    assert heartbeat.decisions()["ghost"].reason == "a run is in progress"
