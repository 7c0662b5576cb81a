"""A recent day of the event log crowded with small files (one an append) is rewritten as one file at
the end of a tick: every event is kept once, the control table does not move, and a stop at any point
of the rewrite loses no event and leaves none twice once the next tick has begun."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from harness.core.faults import Stopped, stopping_at
from harness.core.vocabulary import EventType
from harness.state import event_compaction
from harness.state.event_files import PARTITION_PREFIX
from harness.state.event_log import Event
from harness.state.event_reader import EventQuery, events_folder, read_events
from harness.state.tables import CONTROL_TABLE
from harness.tick import fold
from tests.support import HeartbeatHarness, control_row

pytestmark = pytest.mark.scenario


def _today_folder(heartbeat: HeartbeatHarness) -> Path:
    config = heartbeat.config
    folder = events_folder(config.state_dir, config.schema_folder)
    return folder / f"{PARTITION_PREFIX}{datetime.now(timezone.utc).date().isoformat()}"


def _files(heartbeat: HeartbeatHarness) -> list[str]:
    return sorted(p.name for p in _today_folder(heartbeat).iterdir() if not p.name.startswith(("_", ".")))


def _events(heartbeat: HeartbeatHarness) -> list[dict[str, Any]]:
    return sorted(heartbeat.events(), key=lambda e: e["event_id"])


def crowd(heartbeat: HeartbeatHarness, monkeypatch: pytest.MonkeyPatch, *, max_range: bool) -> None:
    """A job that ran, its appends left as they were written (a file each); then a day of 3 files counts
    as crowded. With `max_range`, two files landed at once and were handed in two runs (the row's range
    steps are read from its detections)."""
    heartbeat.write_controls([control_row("trigger_file", "in", "job") | ({"max_range": "1"} if max_range else {})])
    heartbeat.define_jobs("job")
    monkeypatch.setattr(event_compaction, "MAX_FILES", 10**6)
    heartbeat.drop_trigger_file("in", "b1")
    if max_range:
        heartbeat.drop_trigger_file("in", "b2")
        heartbeat.tick_until_settled()  # the first part, then the second part started
        heartbeat.wait_for_runs()
        heartbeat.tick()
    else:
        heartbeat.tick_until_settled()
    assert len(heartbeat.job_runs("job")) == (2 if max_range else 1) and len(_files(heartbeat)) > 3
    monkeypatch.setattr(event_compaction, "MAX_FILES", 3)


def test_a_crowded_day_is_rewritten_as_one_file_and_nothing_else_changes(
    heartbeat: HeartbeatHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    crowd(heartbeat, monkeypatch, max_range=True)
    events, table = _events(heartbeat), heartbeat.tables.control_table()

    # WHEN a tick ends with the day crowded
    report = heartbeat.tick()

    # THEN the day is one file holding every event once, and the control table is as it was
    assert report.error is None and "compaction" in report.seconds
    assert len(_files(heartbeat)) == 1
    assert _events(heartbeat) == events
    read = read_events(heartbeat.config.state_dir, EventQuery(since=datetime(2000, 1, 1, tzinfo=timezone.utc)))
    assert sorted(e["event_id"] for e in read) == [e["event_id"] for e in events]  # the readers without Spark
    assert heartbeat.tables.control_table() == table
    # AND a rebuild of the control table from the compacted day gives the same table
    heartbeat.spark.sql(f"DROP TABLE {heartbeat.config.table(CONTROL_TABLE)}")
    runtime = heartbeat.runtime()
    runtime.views_built = False
    fold.fold(runtime, with_seed=True)
    assert heartbeat.tables.control_table() == table

    # AND the heartbeat carries on: the next landing starts the job with the range after the last one
    heartbeat.drop_trigger_file("in", "b3")
    heartbeat.tick_until_settled()
    runs = heartbeat.job_runs("job")
    assert len(runs) == 3
    assert runs[-1]["range"]["upstreams"][0]["from"] == runs[-2]["range"]["upstreams"][0]["to"]


@pytest.mark.parametrize("point", ["events compaction:journal written", "events compaction:new file moved"])
def test_a_compaction_stopped_midway_loses_no_event_and_repeats_none(
    heartbeat: HeartbeatHarness, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    crowd(heartbeat, monkeypatch, max_range=False)
    events, table = _events(heartbeat), heartbeat.tables.control_table()

    # WHEN the process stops inside the rewrite (before or after the new file is in the day's folder)
    with stopping_at(point), pytest.raises(Stopped):
        heartbeat.tick()
    assert heartbeat.config.layout.events_compaction.exists()

    # THEN the next tick, before it reads the log, finishes or undoes it: every event once
    heartbeat.restart()
    report = heartbeat.tick()
    assert report.error is None
    assert not heartbeat.config.layout.events_compaction.exists()
    assert _events(heartbeat) == events
    assert heartbeat.tables.control_table() == table
    assert len(_files(heartbeat)) == 1  # and the day was compacted by that tick


def test_a_compacted_day_is_in_row_groups_by_time_which_a_reader_from_a_time_on_skips(
    heartbeat: HeartbeatHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a crowded day with a thousand more events, and a compaction's row groups made small
    crowd(heartbeat, monkeypatch, max_range=False)
    events = heartbeat.runtime().events
    for _ in range(4):
        events.append([Event(EventType.CHANGE_PUBLISHED, upstream=("published", "lake.t")) for _ in range(250)])
    monkeypatch.setattr(event_compaction, "ROW_GROUP_BYTES", 16 * 1024)

    # WHEN a tick ends with the day crowded
    assert heartbeat.tick().error is None

    # THEN the day is one file of several row groups, each after the one before in time: a reader of the
    # events from a time on (a fold, the open runs) skips the earlier ones by their statistics
    (name,) = _files(heartbeat)
    metadata = pq.ParquetFile(_today_folder(heartbeat) / name).metadata
    column = metadata.schema.to_arrow_schema().get_field_index("event_time")
    spans = [
        (group.column(column).statistics.min, group.column(column).statistics.max)
        for group in (metadata.row_group(i) for i in range(metadata.num_row_groups))
    ]
    assert len(spans) > 3
    assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:]))
