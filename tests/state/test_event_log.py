"""The event log's appends, on the session's SparkSession: every value comes back as it was written."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from harness.config import PROJECT_DIR, Config
from harness.state.event_log import EVENT_SCHEMA, Event, EventLog
from harness.vocabulary import EventType, RowKey

pytestmark = pytest.mark.scenario


def test_an_append_keeps_every_value_of_every_column(spark: SparkSession, tmp_path: Path) -> None:
    # GIVEN an event log, and events with every column set or left empty, awkward text and microseconds
    schema = "hb_event_log_values"
    spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
    log = EventLog(
        spark, Config(config_path=None, project_dir=PROJECT_DIR, state_dir=tmp_path, schema=schema), tick_id="tick-1"
    )
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
