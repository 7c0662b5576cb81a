"""A rewind's arguments and rules before any tick (harness.commands.ranges, harness.tick.rewind): what the
command refuses at once, what the tick refuses, and the events it records."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from harness.commands.ranges import backfill_request, rewind_request
from harness.core.errors import HeartbeatError
from harness.core.vocabulary import EventType, SensorSource, Status
from harness.sensors.trigger_file import TriggerFileSensor
from harness.tick import inbox
from harness.tick.backfill import BackfillArgs, part_token, plan_of, planned_events
from harness.tick.rewind import (
    RangeRequestRefused,
    RewindArgs,
    parse_time,
    parse_watermarks,
    positions,
    refusal,
    rewound_events,
)
from tests.fixtures_sources import check_context, sensed_row

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=timezone.utc)
FRIDAY = datetime(2026, 12, 4, 17, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "text",
    ["2026-12-04T17:00", "2026-12-04 17:00:00", "2026-12-04T17:00:00Z", "2026-12-04T18:00+01:00"],
)
def test_a_time_is_iso_8601_and_utc_unless_it_names_an_offset(text: str) -> None:
    assert parse_time(text) == FRIDAY


def test_a_time_that_is_not_one_says_how_to_write_it() -> None:
    with pytest.raises(RangeRequestRefused, match=r"--to 'last friday' is not a time; write it as ISO 8601"):
        parse_time("last friday")


def test_a_rewind_to_a_future_time_is_refused_by_the_command_and_nothing_is_queued(tmp_path: Path) -> None:
    with pytest.raises(HeartbeatError, match=r"after now \(2026-12-07 09:00:00 UTC\): a rewind goes back"):
        rewind_request("j", "2026-12-08T00:00", None, [], NOW)
    assert inbox.pending(tmp_path) == []


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["kafka:orders"], "expected UPSTREAM=VALUE"),
        (["kafka:orders={offsets"], "the value is not JSON"),
        (["kafka:orders=[1]"], "the value is a JSON object"),
    ],
)
def test_a_bad_watermark_option_says_what_is_expected(given: list[str], said: str) -> None:
    with pytest.raises(RangeRequestRefused, match=said):
        parse_watermarks(given)


def test_a_queued_rewind_keeps_its_arguments_and_who_asked(tmp_path: Path) -> None:
    # GIVEN a rewind queued as the command queues it
    request, args = rewind_request("j", "2026-12-04T17:00", " bad deploy ", ['kafka:orders={"offsets": {"0": 5}}'], NOW)
    inbox.submit(tmp_path, request)

    # WHEN the tick reads the queue
    (queued,) = inbox.pending(tmp_path)

    # THEN the request says the same: the time, the reason, the OS user, the positions given
    assert queued.command == "rewind" and queued.job_id == "j"
    assert RewindArgs.of(queued) == args
    assert args.reason == "bad deploy" and args.watermarks == {"kafka:orders": {"offsets": {"0": 5}}}
    assert args.said().startswith("rewound to 2026-12-04 17:00:00 UTC by ") and args.said().endswith(" (bad deploy)")


def test_the_tick_refuses_an_unknown_job_a_time_after_the_request_and_a_watermark_of_another_upstream() -> None:
    rows = [sensed_row("trigger_file", "in", "j")]
    request = replace(inbox.new_request("rewind", "j"), requested_at=NOW)
    args = RewindArgs(FRIDAY, None, "ops", {})

    assert refusal(request, [], args) is not None and "not in the control table" in str(refusal(request, [], args))
    later = replace(args, to=NOW + timedelta(minutes=1))
    assert "is after the request" in str(refusal(request, rows, later))
    other = replace(args, watermarks={"kafka:orders": {"offsets": {}}})
    assert "--watermark names kafka:orders, not an upstream of job j (trigger_file:in)" == refusal(request, rows, other)
    assert refusal(request, rows, args) is None


def test_an_upstream_no_time_maps_to_asks_for_its_watermark_and_one_given_is_taken_as_is(tmp_path: Path) -> None:
    rows = [sensed_row("upstream_sensor_table", "other.sensors", "j"), sensed_row("trigger_file", "in", "j")]
    (tmp_path / "in").mkdir()
    sensors = {SensorSource.TRIGGER_FILE: TriggerFileSensor(tmp_path)}

    with pytest.raises(
        RangeRequestRefused, match="upstream_sensor_table upstream maps no time to a position; give it with"
    ):
        positions(rows, FRIDAY, {}, sensors, check_context())

    given = {"other.sensors": {"timestamp": "2026-12-04T17:00:00"}}
    found = positions(rows, FRIDAY, given, sensors, check_context())
    assert found == {
        "upstream_sensor_table:other.sensors": {"timestamp": "2026-12-04T17:00:00"},
        "trigger_file:in": {"changed_ns": 0, "recent": []},
    }


def test_a_rewind_is_one_event_a_row_new_data_from_the_position_with_ids_of_the_request() -> None:
    rows = [
        sensed_row("trigger_file", "in", "j", last_success_watermark='{"changed_ns": 9}'),
        sensed_row("trigger_file", "in2", "j"),
    ]
    request = inbox.new_request("rewind", "j")
    args = RewindArgs(FRIDAY, "bad deploy", "ops", {})
    at = {"trigger_file:in": {"changed_ns": 1}, "trigger_file:in2": {"changed_ns": 2}}

    first, again = rewound_events(request, rows, args, at), rewound_events(request, rows, args, at)

    assert [e.event_type for e in first] == [EventType.REWOUND] * 2
    assert [e.status for e in first] == [Status.NEW_EVENT_AVAILABLE.value] * 2
    assert [(e.watermark_before, e.watermark_after) for e in first] == [
        ('{"changed_ns": 9}', '{"changed_ns":1}'),
        (None, '{"changed_ns":2}'),
    ]
    assert first[0].message == "job j: rewound to 2026-12-04 17:00:00 UTC by ops (bad deploy)"
    assert [e.event_id for e in first] == [e.event_id for e in again]


# --- backfill -----------------------------------------------------------------------------------------
def test_a_backfill_range_is_cut_into_consecutive_parts_of_at_most_max_range_the_last_to_its_end() -> None:
    _, args = backfill_request("j", "2026-12-01T00:00", "2026-12-03T12:00", "1d", None, NOW)

    assert [(a.isoformat(), b.isoformat()) for a, b in args.parts()] == [
        ("2026-12-01T00:00:00+00:00", "2026-12-02T00:00:00+00:00"),
        ("2026-12-02T00:00:00+00:00", "2026-12-03T00:00:00+00:00"),
        ("2026-12-03T00:00:00+00:00", "2026-12-03T12:00:00+00:00"),
    ]
    whole = backfill_request("j", "2026-12-01T00:00", "2026-12-03T12:00", None, None, NOW)[1]
    assert len(whole.parts()) == 1


@pytest.mark.parametrize(
    ("start", "end", "max_range", "said"),
    [
        (
            "2026-12-02T00:00",
            "2026-12-01T00:00",
            None,
            "is not before --to 2026-12-01 00:00:00 UTC: the range is empty",
        ),
        ("2026-12-01T00:00", "2026-12-08T00:00", None, "a backfill covers a past range"),
        ("2026-12-01T00:00", "2026-12-02T00:00", "10", "--max-range '10' is not a length of time"),
        ("2026-12-01T00:00", "2026-12-02T00:00", "1s", "into more than 1000 parts"),
    ],
)
def test_a_bad_backfill_is_refused_by_the_command_saying_what_to_change(
    start: str, end: str, max_range: str | None, said: str, tmp_path: Path
) -> None:
    with pytest.raises(HeartbeatError, match=re.escape(said)):
        backfill_request("j", start, end, max_range, None, NOW)
    assert inbox.pending(tmp_path) == []


def test_a_backfill_plans_each_part_on_each_row_with_its_own_token_and_the_request_keeps_its_arguments(
    tmp_path: Path,
) -> None:
    # GIVEN a backfill in two parts queued as the command queues it, read back as the tick reads it
    request, args = backfill_request("j", "2026-12-01T00:00", "2026-12-02T00:00", "12h", "bad deploy", NOW)
    inbox.submit(tmp_path, request)
    (queued,) = inbox.pending(tmp_path)
    assert BackfillArgs.of(queued) == args
    rows = [sensed_row("trigger_file", "in", "j"), sensed_row("trigger_file", "in2", "j")]
    bounds = [{r.label: {"changed_ns": k} for r in rows} for k in range(3)]

    # WHEN it is planned
    planned = planned_events(queued, rows, args, bounds)

    # THEN each part is one token on every row, its range from one bound to the next, the same ids again
    assert [(e.idempotency_token, e.watermark_before, e.watermark_after) for e in planned] == [
        (part_token(queued, 1), '{"changed_ns":0}', '{"changed_ns":1}'),
        (part_token(queued, 1), '{"changed_ns":0}', '{"changed_ns":1}'),
        (part_token(queued, 2), '{"changed_ns":1}', '{"changed_ns":2}'),
        (part_token(queued, 2), '{"changed_ns":1}', '{"changed_ns":2}'),
    ]
    assert part_token(queued, 1) != part_token(queued, 2)
    assert [e.event_id for e in planned] == [e.event_id for e in planned_events(queued, rows, args, bounds)]
    (part1, part2) = plan_of([e.as_record() for e in planned], queued)
    assert (part1.backfill["part"], part2.backfill["parts"], part2.backfill["reason"]) == (1, 2, "bad deploy")
