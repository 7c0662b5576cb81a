"""The event log's appends, on the session's SparkSession: every value comes back as it was written,
to Spark and to the readers without Spark, whether the append went without Spark (the embedded
default's parquet log) or through a Spark INSERT (a Delta log, a remote Spark); a kill mid-append
leaves all of it or none of it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from harness.core.config import PROJECT_DIR, Config
from harness.core.faults import Stopped, stopping_at
from harness.core.vocabulary import EventType, RowKey
from harness.state.event_append import SCRATCH
from harness.state.event_files import file_events, log_files
from harness.state.event_log import EVENT_SCHEMA, Event, EventLog

pytestmark = pytest.mark.scenario


def open_log(spark: SparkSession, state_dir: Path, schema: str, fresh: bool = True) -> EventLog:
    if fresh:
        spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
    config = Config(config_path=None, project_dir=PROJECT_DIR, state_dir=state_dir, schema=schema)
    return EventLog(spark, config, tick_id="tick-1")


@pytest.mark.parametrize("writer", ["without Spark", "Spark"])
def test_an_append_keeps_every_value_of_every_column(spark: SparkSession, tmp_path: Path, writer: str) -> None:
    # GIVEN an event log, and events with every column set or left empty, awkward text and microseconds
    log = open_log(spark, tmp_path, "hb_event_log_values")
    assert log.folder is not None, "the embedded default's log is appended to without Spark"
    folder = log.folder
    if writer == "Spark":
        log.folder = None
    just_before_midnight = datetime(2026, 3, 1, 23, 59, 59, 999_999, tzinfo=timezone.utc)
    events = [
        Event(
            EventType.DATA_CHANGED,
            RowKey("delta_table", "/lake/orders", "job-1"),
            status="NEW_DATA",
            watermark_before='{"version": 1}',
            watermark_after='{"version": 2}',
            run_id="r-1",
            idempotency_token="tok",
            message='a "quoted", multi-line\nmessage: é ✓ \\ end',
            details={"nested": {"list": [1, 2.5, None], "text": "ü"}},
            event_time=just_before_midnight,
        ),
        Event(
            EventType.CHECK_FAILED,
            upstream=("kafka", "orders-topic"),
            message="unreachable",
            event_time=just_before_midnight + timedelta(microseconds=1),
        ),
        Event(EventType.CONFIG_REJECTED, event_time=datetime(2026, 3, 2, 8, 0, tzinfo=timezone(timedelta(hours=2)))),
    ]

    # WHEN they are appended in one write
    assert log.append(events) == 3

    # THEN each column holds what was written (times in UTC, each on its own UTC day)
    names = [f.name for f in EVENT_SCHEMA.fields]
    written = {e.event_id: dict(zip(names, e.as_tuple("tick-1"))) for e in events}
    read = {r["event_id"]: r for r in log.history()}
    assert read == written
    assert [read[e.event_id]["event_date"].isoformat() for e in events] == ["2026-03-01", "2026-03-02", "2026-03-02"]
    # AND the readers without Spark read the same from the day folders' files
    files = log_files(folder, just_before_midnight.date())
    assert len(files) == 2, files
    without_spark = {e["event_id"]: e for f in files for e in file_events(f)}
    assert without_spark == {
        event_id: {name: value for name, value in event.items() if name != "event_date"}
        for event_id, event in written.items()
    }


def test_appends_to_a_day_spark_has_listed_are_read_at_once(spark: SparkSession, tmp_path: Path) -> None:
    # GIVEN an event log whose today Spark has read (and listed its files)
    log = open_log(spark, tmp_path, "hb_event_log_listed")
    log.append([Event(EventType.CONFIG_REJECTED, message="first")])
    assert [e["message"] for e in log.history()] == ["first"]

    # WHEN more events of the same day are appended, one append at a time
    appended = ["first"]
    for message in ("second", "third"):
        log.append([Event(EventType.CONFIG_REJECTED, message=message)])
        appended.append(message)

        # THEN every read sees every event appended before it
        assert sorted(e["message"] for e in log.history()) == sorted(appended)


def test_an_append_stopped_before_its_rename_adds_no_event_and_the_next_process_clears_its_file(
    spark: SparkSession, tmp_path: Path
) -> None:
    # GIVEN an event log holding one event
    log = open_log(spark, tmp_path, "hb_event_log_stopped")
    log.append([Event(EventType.CONFIG_REJECTED, message="kept")])

    # WHEN an append is stopped with its file written but not moved into the log (as a kill leaves it)
    with stopping_at("events append:file written"), pytest.raises(Stopped):
        log.append([Event(EventType.CONFIG_REJECTED, message="lost with the process")])
    assert log.folder is not None and list((log.folder / SCRATCH).iterdir())

    # THEN the log holds the first event only, for Spark and for the readers without Spark
    assert [e["message"] for e in log.history()] == ["kept"]
    files = log_files(log.folder, datetime.now(timezone.utc).date())
    assert [e["message"] for f in files for e in file_events(f)] == ["kept"]
    # AND the next process's log removes the unfinished file, and appends as before
    restarted = open_log(spark, tmp_path, "hb_event_log_stopped", fresh=False)
    assert not (log.folder / SCRATCH).exists()
    restarted.append([Event(EventType.CONFIG_REJECTED, message="next")])
    assert sorted(e["message"] for e in restarted.history()) == ["kept", "next"]


def test_the_fold_marker_holds_the_earliest_time_of_the_rows_events_appended(
    spark: SparkSession, tmp_path: Path
) -> None:
    # GIVEN an event log folded up to now
    log = open_log(spark, tmp_path, "hb_event_log_marker")
    assert log.unfolded_since is None
    # WHEN an append holds a publication stamped by a producer whose clock is a year behind, and a row's
    # event; then a later append
    earlier = datetime.now(timezone.utc) - timedelta(minutes=1)
    row = RowKey("trigger_file", "in", "j")
    log.append(
        [
            Event(EventType.CHANGE_PUBLISHED, upstream=("published", "t"), event_time=earlier - timedelta(days=365)),
            Event(EventType.DATA_CHANGED, row, event_time=earlier),
        ]
    )
    log.append([Event(EventType.RUN_STARTED, row)])
    # THEN a fold would read from the row's event on: the publication is no row's, and the later append
    # does not move the time
    assert log.unfolded_since == earlier
    # AND an append of no row's events (a publication, a refused CSV) leaves nothing to fold: the models
    # read only the rows' events
    log.mark_folded()
    log.append([Event(EventType.CONFIG_REJECTED, message="bad CSV")])
    log.append([Event(EventType.CHANGE_PUBLISHED, upstream=("published", "t"))])
    assert not log.unfolded
    # AND onto a log with events to fold, it leaves them to fold, from the same time
    log.append([Event(EventType.DATA_CHANGED, row, event_time=earlier)])
    log.append([Event(EventType.CHANGE_PUBLISHED, upstream=("published", "t"))])
    assert log.unfolded_since == earlier
    log.mark_folded()
    # AND one stopped before it is whole leaves the marker, so the next process completes it and folds
    with stopping_at("events append:file written"), pytest.raises(Stopped):
        log.append([Event(EventType.CHANGE_PUBLISHED, upstream=("published", "t"))])
    assert log.unfolded


def test_the_open_runs_are_read_again_only_after_an_append_of_a_runs_events(
    spark: SparkSession, tmp_path: Path
) -> None:
    # GIVEN an event log
    log = open_log(spark, tmp_path, "hb_event_log_run_events")
    row = RowKey("trigger_file", "in", "j")
    before = log.run_events
    # WHEN a detection and a publication are appended, THEN what was read of the open runs still holds
    log.append([Event(EventType.DATA_CHANGED, row, status="NEW_EVENT_AVAILABLE")])
    log.append([Event(EventType.CHANGE_PUBLISHED, upstream=("published", "t"))])
    assert log.run_events == before and log.unfolded
    # WHEN a run's event is appended (its idempotency token is what the open runs' view reads), or a
    # fold happens, THEN it may not
    log.append([Event(EventType.RUN_STARTED, row, idempotency_token="t1", run_id="r1")])
    assert log.run_events == before + 1
    log.mark_folded()
    assert log.run_events == before + 2
