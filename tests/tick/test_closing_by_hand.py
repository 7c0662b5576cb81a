"""Closing a job's latest run by hand (harness.tick.triggering.manual_events, which `complete`, `retry`
and a later successful run found on the backend use): which rows move, and the run's end it records."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from harness.core.vocabulary import ControlRow, EventType, RowKey, Status
from harness.tick.inbox import new_request
from harness.tick.triggering import manual_events

pytestmark = pytest.mark.unit

FAILED_AT = datetime(2026, 11, 27, 3, 15, tzinfo=timezone.utc)


def _row(sensor_id: str, status: str, ended: datetime | None = None) -> ControlRow:
    return ControlRow(
        RowKey("trigger_file", sensor_id, "j"),
        None,
        None,
        None,
        True,
        "UNPAUSED",
        status,
        '{"changed_ns": 2}',
        '{"changed_ns": 1}',
        '{"changed_ns": 2}',
        "token-1",
        "run-1",
        FAILED_AT,
        run_ended_at=ended,
    )


def test_completing_a_failed_run_keeps_the_end_it_had_and_a_run_going_ends_when_closed() -> None:
    # GIVEN a job whose run failed at 03:15 on one row, is still going on another, and a row with nothing
    rows = [_row("a", Status.FAILED.value, FAILED_AT), _row("b", Status.IN_PROGRESS.value), _row("c", "COMPLETED")]

    # WHEN the run is completed by hand
    events = manual_events(rows, EventType.MANUAL_COMPLETE, "job j: completed by hand")

    # THEN the failed row's event carries the run's own end; the running row's has none (it ends now)
    assert [e.row.sensor_id for e in events if e.row] == ["a", "b"]
    assert [e.details for e in events] == [{"run_ended_at": FAILED_AT.isoformat()}, {}]
    assert all(e.status == Status.COMPLETED.value and e.watermark_after == '{"changed_ns": 2}' for e in events)


def test_a_later_successful_run_found_on_the_backend_is_not_given_the_failed_runs_end() -> None:
    # GIVEN a failed run; WHEN the backend shows another run of the job that succeeded after it
    (event,) = manual_events([_row("a", Status.FAILED.value, FAILED_AT)], EventType.MANUAL_COMPLETE, "m", "run-2")

    # THEN the event is that run's, with no end borrowed from the failed one
    assert event.run_id == "run-2" and event.details == {}


def test_a_queued_complete_keeps_the_failed_runs_end_and_its_ids_are_the_requests() -> None:
    request = new_request("complete", "j")
    rows = [_row("a", Status.FAILED.value, FAILED_AT)]

    first, again = request.events(rows, "requested at 03:20"), request.events(rows, "requested at 03:20")

    assert first[0].details == {"run_ended_at": FAILED_AT.isoformat()}
    assert (
        first[0].event_id == again[0].event_id and first[0].message == "job j: completed by hand (requested at 03:20)"
    )
