"""The times and watermarks `status` and `why` print, said the same by their quick paths (a UTC time written
as a tick writes it is sliced, not parsed and formatted again; a watermark read once per text) as by
reading each time into a datetime."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from harness.views import status
from harness.views.watermarks import describe, when

# Every form of time a snapshot, a health record or a watermark may hold: what `isoformat()` of a UTC time
# gives (with and without microseconds), naive times (UTC here), other offsets, and what else
# `datetime.fromisoformat` reads.
TEXTS = [
    "2026-11-22T12:00:00+00:00",
    "2026-11-22T12:00:00.123456+00:00",
    "2026-11-22T12:00:59.999999+00:00",
    "2026-11-22T12:00:00",
    "2026-11-22T12:00:00.654321",
    "2026-11-22 12:00:00",
    "2026-11-22 12:00:00.5+00:00",
    "2026-11-22T12:00:00Z",
    "2026-11-22T12:00:00-00:00",
    "2026-11-22T12:00:00.123+00:00",
    "2026-11-22T13:30:00+01:30",
    "2026-11-22T13:30:00.5+01:30",
    "2026-11-21T22:15:07-05:00",
    "2026-11-22T17:45:00+05:45",
    "2026-12-31T23:30:00-01:00",
    "2026-11-22T23:59:59.999999-00:30",
    "2026-11-22T12:00+00:00",
    "2026-11-22T12:00",
    "2026-11-22",
    "20261122T120000",
    "20261122T120000+0100",
    "2026-W47-1T12:00:00",
    "0999-01-01T00:00:00+00:00",
    "0001-01-01T00:30:00+00:30",
]
MOMENTS = [
    datetime(2026, 11, 22, 12, 0, 0, 7),
    datetime(2026, 11, 22, 12, tzinfo=timezone.utc),
    datetime(2026, 11, 22, 13, 30, tzinfo=timezone(timedelta(hours=1, minutes=30))),
    datetime(999, 1, 1, 0, 0, 1, tzinfo=timezone.utc),
    datetime(2026, 11, 22, 12, 0, 0, 5).astimezone(),
]


def when_by_datetime(value: Any) -> str:
    """The general path: the time read into a datetime, moved to UTC, formatted."""
    if not value:
        return "-"
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if moment.tzinfo:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


@pytest.mark.parametrize("value", TEXTS + MOMENTS + [None, ""], ids=str)
def test_a_time_in_every_form_reads_as_the_datetime_it_is_read_into_says(value: Any) -> None:
    # GIVEN a time as a text in any form fromisoformat reads, or a datetime
    # WHEN it is put in words
    # THEN the words are those of the time read into a datetime and moved to UTC
    assert when(value) == when_by_datetime(value)


@pytest.mark.parametrize("text", ["2026-13-01T00:00:00+00:00", "2026-11-22T24:00:00", "yesterday", "2026-11-22T1"])
def test_a_text_that_is_no_time_is_refused_as_before(text: str) -> None:
    # GIVEN a text fromisoformat refuses; WHEN it is put in words; THEN it is refused, not sliced into words
    with pytest.raises(ValueError):
        when(text)


def test_a_utc_time_as_a_tick_writes_it_is_its_own_date_and_second() -> None:
    # GIVEN a UTC time as status_files writes it, with microseconds and without
    written = datetime(2026, 11, 22, 21, 40, 7, 250000, tzinfo=timezone.utc)
    # THEN its words are its date and its time to the second
    assert when(written.isoformat()) == "2026-11-22 21:40:07"
    assert when(written.replace(microsecond=0).isoformat()) == "2026-11-22 21:40:07"


WATERMARKS = [
    {"offsets": {str(p): 1000 + p for p in range(12)}},
    {"offsets": {str(p): 1000 + p for p in reversed(range(12))}},
    {"offsets": {"10": 3, "2": 5, "x": 1, "1": 4, "y": 2}},
    {"offsets": {"0": 1, "1": 2}},
    {"key": "updated_at", "max": {"type": "timestamp", "value": "2026-11-22T10:00:00.5+02:00"}},
    {"key": "updated_at", "max": {"type": "timestamp", "value": "2026-11-22T10:00:00"}},
    {"changed_ns": 1795241417889429472, "recent": ["a.done", "b.done", "c.done"]},
    {"published_at": "2026-11-22T08:00:00.250000+00:00", "recent": ["p1"]},
    {"status_change_timestamp": "2026-11-22T08:00:00.75+03:00"},
    {"fingerprint": "ab12", "modified_ms": 1795241417889},
]


@pytest.mark.parametrize("watermark", WATERMARKS, ids=lambda w: ",".join(w))
def test_a_watermark_reads_the_same_the_second_time_and_in_any_partition_order(watermark: dict[str, Any]) -> None:
    # GIVEN a watermark of each shape, put in words once
    text = json.dumps(watermark)
    first = describe(text)
    # THEN the same text reads the same again (kept), and as it read before anything was kept
    assert describe(text) == first == describe.__wrapped__(text)
    # AND Kafka's offsets read by partition number whatever order they are written in
    if "offsets" in watermark and all(p.isdigit() for p in watermark["offsets"]):
        shuffled = dict(sorted(watermark["offsets"].items(), key=lambda kv: -int(kv[0])))
        assert describe(json.dumps({"offsets": shuffled})) == first


def test_kafka_offsets_show_six_partitions_by_number_and_count_the_rest() -> None:
    offsets = {str(p): 100 + p for p in (11, 3, 0, 7, 1, 2, 10, 4, 5, 6, 8, 9)}
    assert (
        describe(json.dumps({"offsets": offsets})) == "offsets p0=100 p1=101 p2=102 p3=103 p4=104 p5=105 +6 partitions"
    )
    # a partition not a number sorts first, in the order written
    assert describe(json.dumps({"offsets": {"2": 5, "b": 1, "1": 4, "a": 2}})) == "offsets pb=1 pa=2 p1=4 p2=5"


@pytest.mark.parametrize(
    "start, end",
    [
        ("2026-11-22T12:00:00+00:00", "2026-11-22T12:00:03.100000+00:00"),
        ("2026-11-22T12:00:00", "2026-11-22T13:00:03.5+01:00"),
        ("2026-11-22T13:30:00+01:30", "2026-11-22 12:45:00"),
        ("2026-11-22T12:00:00.000001+00:00", None),
        ("2026-11-22T12:00:00Z", "2026-11-22T11:00:00+00:00"),  # an earlier run's end
        (None, "2026-11-22T12:00:00+00:00"),
    ],
)
def test_a_runs_line_says_its_times_as_the_datetimes_read_from_them(start: str | None, end: str | None) -> None:
    # GIVEN a row whose run started and ended at times written in any form
    row = {"status": "COMPLETED", "latest_run_id": "r1", "run_started_timestamp": start, "run_ended_at": end}
    # WHEN its run line is made
    line = status.run_line(row)
    # THEN it names the times the datetimes read from them say
    started, ended = status.run_times(row)
    assert line.startswith(f"run r1 started {when_by_datetime(started)}, ")
    assert (f"ended {when_by_datetime(ended)}" in line) if ended else line.endswith("no end recorded yet")


def test_a_start_its_backend_has_not_confirmed_is_not_said_to_be_the_earlier_run_still_running() -> None:
    # GIVEN a job whose run r1 ended, then a start requested at 13:00 that its backend did not confirm
    row = {
        "sensor_source": "trigger_file",
        "sensor_id": "orders",
        "trigger_job_id": "j",
        "is_hard_dependency": True,
        "status": "IN_PROGRESS",
        "job_state": "UNPAUSED",
        "status_change_timestamp": "2026-11-22T13:00:00+00:00",
        "watermark": None,
        "latest_run_id": "r1",
        "run_started_timestamp": "2026-11-22T12:00:00+00:00",
        "job_start_timestamp": "2026-11-22T13:00:00+00:00",
        "run_ended_at": "2026-11-22T12:05:00+00:00",
    }
    # WHEN status says the row, THEN it says the request waits for confirmation, not that r1 still runs
    lines = "\n".join(status._row_lines(row))
    assert "start requested" in lines and "not confirmed by its backend yet" in lines
    assert "r1" not in lines
    assert status.run_json(row) == {
        "run_id": None,
        "requested_at": "2026-11-22T13:00:00+00:00",
        "confirmed": False,
        "going": True,
    }
    # AND once confirmed (a run id recorded after the request), the run is said as before
    confirmed = row | {"latest_run_id": "r2", "run_started_timestamp": "2026-11-22T13:00:01+00:00"}
    assert "run r2 started" in "\n".join(status._row_lines(confirmed))
