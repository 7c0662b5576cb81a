"""The event index (harness.state.event_index): the readers without Spark get from it exactly the events
the event log's files hold, whatever it holds (current, lagging, ahead of the files, stopped in the
middle of a refresh, damaged, of another folder), and open no parquet file for the files it holds."""

from __future__ import annotations

import logging
import os
import sqlite3
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.core.faults import Stopped, stopping_at
from harness.core.state_layout import StateLayout
from harness.state import event_index, event_reader
from harness.state.event_files import PARTITION_PREFIX

NOW = datetime.now(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)  # the log's "now": mid-day,
TODAY = NOW.date()  # so that its days do not depend on the hour the tests run


def write_file(folder: Path, name: str, events: list[dict[str, Any]]) -> Path:
    """One append as Spark writes it: a file in the folder of its events' day, written after them."""
    day = folder / f"{PARTITION_PREFIX}{events[0]['event_time'].date().isoformat()}"
    day.mkdir(parents=True, exist_ok=True)
    columns = ["event_id", "event_type", "sensor_source", "sensor_id", "trigger_job_id", "status", "message"]
    table = pa.table(
        {
            "event_id": [e["event_id"] for e in events],
            "event_time": pa.array([e["event_time"].replace(tzinfo=None) for e in events], pa.timestamp("us")),
            **{c: pa.array([e.get(c) for e in events], pa.string()) for c in columns[1:]},
        }
    )
    path = day / name
    pq.write_table(table, path)
    written = max(e["event_time"] for e in events).timestamp()
    os.utime(path, (written, written))
    return path


def event(event_id: str, minutes_ago: float, event_type: str = "DATA_CHANGED", **columns: str | None) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "event_time": NOW - timedelta(minutes=minutes_ago),
        "event_type": event_type,
        "sensor_source": "kafka",
        "sensor_id": "orders",
        "trigger_job_id": "j1",
        **columns,
    }


@pytest.fixture
def log(tmp_path: Path) -> tuple[Path, Path]:
    """A state folder and its event log: three appends today (two events at the same instant in two
    files, an event of no row, a second job), one yesterday, one nine days ago."""
    state, folder = tmp_path / "state", tmp_path / "warehouse" / "heartbeat_events"
    state.mkdir()
    folder.mkdir(parents=True)
    event_reader.record_location(state, folder.as_uri())
    write_file(folder, "part-0-a.parquet", [event("old", 9 * 24 * 60)])
    write_file(folder, "part-1-b.parquet", [event("y1", 24 * 60 + 5), event("y2", 24 * 60 + 4, "RUN_STARTED")])
    write_file(
        folder,
        "part-2-c.parquet",
        [event("t1", 30), event("t2", 20, "CHECK_FAILED", trigger_job_id=None), event("tie-c", 10)],
    )
    write_file(
        folder,
        "part-3-d.parquet",
        [event("tie-d", 10, sensor_id="payments", trigger_job_id="j2"), event("t3", 5, "RUN_ENDED", status="FAILED")],
    )
    return state, folder


QUERIES = [
    event_reader.EventQuery(NOW - timedelta(days=30), limit=0),
    event_reader.EventQuery(NOW - timedelta(hours=2)),
    event_reader.EventQuery(NOW - timedelta(days=7), job_id="j1", limit=3),
    event_reader.EventQuery(NOW - timedelta(days=7), event_types=("RUN_STARTED", "RUN_ENDED")),
    event_reader.EventQuery(NOW - timedelta(days=7), upstream="kafka:pay"),
    event_reader.EventQuery(NOW - timedelta(days=7), upstream="orders", job_id="j1", event_types=("DATA_CHANGED",)),
    event_reader.EventQuery(NOW - timedelta(minutes=10), limit=1),
]


def files_alone(state: Path, query: event_reader.EventQuery) -> list[dict[str, Any]]:
    """What the reader returns from the log's files, with no index."""
    index = StateLayout(state).events_index
    moved = index.with_name("moved-aside")
    if index.exists():
        index.rename(moved)
    try:
        return event_reader.read_events(state, query)
    finally:
        if moved.exists():
            moved.rename(index)


def ids(events: list[dict[str, Any]]) -> list[str]:
    return [e["event_id"] for e in events]


def no_parquet(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every file the reader opens as parquet (a spy: the reads themselves are real)."""
    opened: list[str] = []
    real = event_reader.file_events

    def spy(file: Any, wanted: Any = None) -> Any:
        opened.append(file.name)
        return real(file, wanted)

    monkeypatch.setattr(event_reader, "file_events", spy)
    return opened


def test_a_refreshed_index_answers_every_query_as_the_files_do_without_opening_one(
    log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the answers of the files alone, then an index refreshed by the tick
    state, _ = log
    expected = [files_alone(state, q) for q in QUERIES]
    refreshed = event_reader.refresh_index(state, TODAY)
    # WHEN every query is asked again
    opened = no_parquet(monkeypatch)
    answers = [event_reader.read_events(state, q) for q in QUERIES]
    # THEN the same events, values and order (ties by file), the recent files from the index alone
    assert answers == expected
    assert ids(answers[0]) == ["old", "y1", "y2", "t1", "t2", "tie-c", "tie-d", "t3"]
    assert ids(answers[2]) == ["t1", "tie-c", "t3"]
    assert answers[0][-1]["event_time"] == NOW - timedelta(minutes=5)
    assert answers[0][-1]["event_time"].tzinfo is timezone.utc
    assert refreshed == event_index.Refresh(indexed=3, removed=0, waiting=0)  # the day nine days ago is not kept
    assert opened == ["event_date=" + (NOW - timedelta(days=9)).date().isoformat() + "/part-0-a.parquet"]


def test_a_file_appended_after_the_refresh_is_read_from_its_parquet(
    log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an index refreshed, then one more append (a tick killed before its refresh)
    state, folder = log
    event_reader.refresh_index(state, TODAY)
    write_file(folder, "part-4-e.parquet", [event("late", 1)])
    # WHEN the last hour is read
    opened = no_parquet(monkeypatch)
    answer = event_reader.read_events(state, event_reader.EventQuery(NOW - timedelta(hours=1)))
    # THEN the indexed events and the new file's, each once; only the new file was opened
    assert ids(answer) == ["t1", "t2", "tie-c", "tie-d", "t3", "late"]
    assert [name.split("/")[1] for name in opened] == ["part-4-e.parquet"]
    # AND the next refresh adds it
    assert event_reader.refresh_index(state, TODAY) == event_index.Refresh(indexed=1, removed=0, waiting=0)


def test_a_day_rewritten_after_the_refresh_is_read_as_it_is_now(log: tuple[Path, Path]) -> None:
    # GIVEN an index refreshed, then yesterday rewritten as retention does (its file replaced by another
    # holding one of its events) and a file of today rewritten in place with other events
    state, folder = log
    event_reader.refresh_index(state, TODAY)
    yesterday = folder / f"{PARTITION_PREFIX}{(NOW - timedelta(days=1)).date().isoformat()}"
    (yesterday / "part-1-b.parquet").unlink()
    write_file(folder, "part-5-f.parquet", [event("y2", 24 * 60 + 4, "RUN_STARTED")])
    today_file = next(folder.glob("*/part-3-d.parquet"))
    write_file(folder, today_file.name, [event("t3", 5, "RUN_ENDED", status="FAILED")])
    # WHEN the last two days are read
    query = event_reader.EventQuery(NOW - timedelta(days=2), limit=0)
    answer = event_reader.read_events(state, query)
    # THEN each event as the files hold it now, once; the index's stale copies are never returned
    assert ids(answer) == ["y2", "t1", "t2", "tie-c", "t3"]
    assert answer == files_alone(state, query)
    # AND the next refresh removes the stale files and adds the new ones
    assert event_reader.refresh_index(state, TODAY) == event_index.Refresh(indexed=2, removed=2, waiting=0)
    assert event_reader.read_events(state, query) == answer


def test_stopped_between_two_batches_of_a_refresh_every_event_is_read_once_and_the_next_refresh_ends_it(
    log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a refresh that adds one file per transaction, stopped (as a kill would) after the first
    state, _ = log
    query = event_reader.EventQuery(NOW - timedelta(days=3), limit=0)
    expected = files_alone(state, query)
    monkeypatch.setattr(event_index, "FILES_PER_TRANSACTION", 1)
    with stopping_at("event index:added files"), pytest.raises(Stopped):
        event_reader.refresh_index(state, TODAY)
    # WHEN the log is read with the index half refreshed
    # THEN every event once: the newest file from the index, the others from their parquet
    assert event_reader.read_events(state, query) == expected
    # AND the restarted tick's refresh adds the files left
    assert event_reader.refresh_index(state, TODAY) == event_index.Refresh(indexed=2, removed=0, waiting=0)
    assert event_reader.read_events(state, query) == expected


def test_a_refresh_bounded_in_files_takes_the_newest_first_and_leaves_the_rest_to_the_next(
    log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an index refreshed with room for one file
    state, folder = log
    assert event_index.refresh(StateLayout(state).events_index, folder, TODAY, limit=1) == event_index.Refresh(
        indexed=1, removed=0, waiting=2
    )
    # WHEN the last hour is read
    opened = no_parquet(monkeypatch)
    answer = event_reader.read_events(state, event_reader.EventQuery(NOW - timedelta(hours=1)))
    # THEN the newest file came from the index, the other recent one from its parquet
    assert ids(answer) == ["t1", "t2", "tie-c", "tie-d", "t3"]
    assert [name.split("/")[1] for name in opened] == ["part-2-c.parquet"]


def test_a_damaged_index_or_one_of_another_folder_is_not_read_and_the_next_refresh_makes_it_anew(
    log: tuple[Path, Path], tmp_path: Path
) -> None:
    state, folder = log
    query = event_reader.EventQuery(NOW - timedelta(days=7), limit=0)
    expected = files_alone(state, query)
    index = StateLayout(state).events_index
    # GIVEN an index of another folder (a state folder moved)
    other = tmp_path / "other" / "heartbeat_events"
    other.mkdir(parents=True)
    event_index.refresh(index, other, TODAY)
    # THEN it is not read, and the next refresh makes it anew for this folder
    assert event_reader.read_events(state, query) == expected
    assert event_reader.refresh_index(state, TODAY) == event_index.Refresh(indexed=3, removed=0, waiting=0)
    # GIVEN a damaged index file
    index.write_bytes(b"not a database at all" * 100)
    # THEN it is not read, and the next refresh makes it anew
    assert event_reader.read_events(state, query) == expected
    assert event_reader.refresh_index(state, TODAY) == event_index.Refresh(indexed=3, removed=0, waiting=0)
    assert event_reader.read_events(state, query) == expected
    assert sqlite3.connect(index).execute("SELECT count(*) FROM files").fetchone() == (3,)


def test_a_file_that_is_not_parquet_is_indexed_as_such_and_skipped_with_a_warning(
    log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a file of today that is not whole parquet, indexed by the tick
    state, folder = log
    broken = next(folder.glob("*/part-3-d.parquet")).with_name("part-9-broken.parquet")
    broken.write_bytes(b"PAR1 not a whole file")
    event_reader.refresh_index(state, TODAY)
    # WHEN the last hour is read
    opened = no_parquet(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="harness.state.event_index"):
        answer = event_reader.read_events(state, event_reader.EventQuery(NOW - timedelta(hours=1)))
    # THEN the other files' events, a warning naming the file, and no parquet opened
    assert ids(answer) == ["t1", "t2", "tie-c", "tie-d", "t3"]
    assert any("part-9-broken.parquet" in r.getMessage() for r in caplog.records)
    assert opened == []


def test_the_index_keeps_only_its_days(log: tuple[Path, Path]) -> None:
    # GIVEN an index refreshed today, then refreshed again two days later
    state, _ = log
    event_reader.refresh_index(state, TODAY)
    later = TODAY + timedelta(days=event_index.INDEX_DAYS - 1)
    # THEN the days before its first day are removed from it (yesterday's file), the others stay
    assert event_index.first_day(later) == TODAY
    assert event_reader.refresh_index(state, later) == event_index.Refresh(indexed=0, removed=1, waiting=0)


def test_a_delta_log_or_one_only_spark_reads_has_no_index(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    event_reader.record_location(state, "abfss://lake@account.dfs.core.windows.net/heartbeat_events")
    assert event_reader.refresh_index(state, date.today()) is None
    delta = tmp_path / "heartbeat_events"
    (delta / "_delta_log").mkdir(parents=True)
    event_reader.record_location(state, delta.as_uri())
    assert event_reader.refresh_index(state, date.today()) is None
    assert not StateLayout(state).events_index.exists()


# --- a recent day rewritten as one file (harness.state.event_compaction) while a reader reads it ------
# The new file is in place before the files it replaces are deleted: a reader may list both (each event
# counts once) or list a file that is gone when it reads it (it lists the folders again).
EVERYTHING = event_reader.EventQuery(NOW - timedelta(days=30), limit=0)
TODAYS = [
    event("t1", 30),
    event("t2", 20, "CHECK_FAILED", trigger_job_id=None),
    event("tie-c", 10),
    event("tie-d", 10, sensor_id="payments", trigger_job_id="j2"),
    event("t3", 5, "RUN_ENDED", status="FAILED"),
]


def rewrite_today(folder: Path) -> None:
    """Today's two files rewritten as one: the new file first, then the old ones deleted."""
    write_file(folder, "part-9-compacted.parquet", TODAYS)
    for name in ("part-2-c.parquet", "part-3-d.parquet"):
        (folder / f"{PARTITION_PREFIX}{TODAY.isoformat()}" / name).unlink()


def test_an_event_listed_in_two_files_is_read_once(log: tuple[Path, Path]) -> None:
    state, folder = log
    before = files_alone(state, EVERYTHING)
    # WHEN the new file is in place and the files it replaces are not deleted yet
    write_file(folder, "part-9-compacted.parquet", TODAYS)
    # THEN each event is read once
    read = files_alone(state, EVERYTHING)
    assert sorted(ids(read)) == sorted(ids(before)) and len(set(ids(read))) == len(read)


def test_a_file_deleted_between_the_listing_and_its_read_is_read_from_its_replacement(
    log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, folder = log
    before = files_alone(state, EVERYTHING)
    real, rewritten = event_reader.file_events, []

    def rewritten_while_read(*args: Any) -> list[dict[str, Any]]:
        if not rewritten:  # the day is rewritten after the reader listed it
            rewritten.append(True)
            rewrite_today(folder)
        return real(*args)

    monkeypatch.setattr(event_reader, "file_events", rewritten_while_read)
    # WHEN today's files are replaced after the listing, before the reader opens them
    read = files_alone(state, EVERYTHING)
    # THEN the reader lists the folder again: every event, once
    assert rewritten and sorted(ids(read)) == sorted(ids(before))
