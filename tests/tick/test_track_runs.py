"""Tracking open run requests (harness.tick.triggering.track_runs) against a backend that does not answer:
what is recorded, and how often."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from harness.backends.base import JobBackend, RunRequest, RunState, RunStatus, StartUncertain
from harness.core.errors import BackendError
from harness.core.vocabulary import EventType, RowKey
from harness.tick.triggering import OpenRun, TriggeredRow, track_runs

pytestmark = pytest.mark.unit


class Unanswering(JobBackend):
    """A workspace that does not answer: every start is unconfirmed, every poll fails, always alike."""

    name = "databricks"

    def start(self, request: RunRequest) -> str:
        raise StartUncertain("no answer from https://example within databricks.retry_timeout_seconds=30")

    def poll(self, job_id: str, run_id: str) -> RunStatus:
        raise BackendError("no answer from https://example within databricks.retry_timeout_seconds=30")


def unconfirmed(last_error: str | None = None, at: datetime | None = None) -> OpenRun:
    row = TriggeredRow(RowKey("trigger_file", "in", "j"), None, '{"v": 1}', "NEW_EVENT_AVAILABLE", True)
    return OpenRun("t1", "j", "J", datetime.now(timezone.utc), [row], last_poll_error=last_error, last_poll_error_at=at)


def test_a_start_sent_again_and_unconfirmed_alike_is_recorded_once_an_hour() -> None:
    backend = Unanswering()

    # WHEN a start is sent again and the workspace does not answer, THEN that is recorded
    (first,) = track_runs([unconfirmed()], backend, 3600).events
    assert first.event_type is EventType.RUN_START_UNCONFIRMED and first.message

    # WHEN the next ticks send it again and get the same silence, THEN nothing new is recorded (each tick
    # recorded it and folded for as long as the outage lasted) until an hour has passed
    minute_ago = datetime.now(timezone.utc) - timedelta(minutes=1)
    assert track_runs([unconfirmed(first.message, minute_ago)], backend, 3600).events == []
    hours_ago = datetime.now(timezone.utc) - timedelta(hours=2)
    assert len(track_runs([unconfirmed(first.message, hours_ago)], backend, 3600).events) == 1
    # AND another failure is recorded at once
    assert len(track_runs([unconfirmed("refused: quota", minute_ago)], backend, 3600).events) == 1


class Answering(Unanswering):
    """The same workspace once it answers again: the run is still going."""

    def poll(self, job_id: str, run_id: str) -> RunStatus:
        return RunStatus(RunState.RUNNING)


def test_a_run_that_reads_again_after_a_failed_poll_clears_the_error_once() -> None:
    minute_ago = datetime.now(timezone.utc) - timedelta(minutes=1)
    started = unconfirmed("job j: cannot read run r1: no answer", minute_ago)
    started.run_id = "r1"
    # WHEN a run whose last poll failed reads again, still running, THEN that is recorded on its row
    done = track_runs([started], Answering(), 3600)
    (recovered,) = done.events
    assert recovered.event_type is EventType.RUN_POLL_RECOVERED and recovered.run_id == "r1"
    assert recovered.message == "job j: run r1 reads again: still running" and done.running == 1
    # WHEN it reads fine again (the recovery folded: no poll error left), THEN nothing more is recorded
    started.last_poll_error = None
    assert track_runs([started], Answering(), 3600).events == []
    # AND, with no poll error left (the open runs' model forgets it once the run reads again: its dbt unit
    # test), a failure after it is recorded at once
    assert len(track_runs([started], Unanswering(), 3600).events) == 1


def test_an_unconfirmed_start_of_a_job_removed_from_the_controls_csv_is_said_when_sent_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from harness.tick.run import say_removed_jobs

    # GIVEN a start whose outcome is unknown, of a job whose rows left the controls CSV since
    # WHEN the tick sends it again, THEN its log says so, and where to see the job's events
    say_removed_jobs([unconfirmed()], {"other"})
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith("job j is no longer in the controls CSV, but its start requested at ")
    assert "`python -m harness why --job j`" in said
    # AND nothing is said of a job still in it
    caplog.clear()
    say_removed_jobs([unconfirmed()], {"j"})
    assert caplog.records == []
