"""The append-only event log. Every detection, trigger, run start/end, error and manual action is a row.

Rows are only ever appended; the control table is derived from the controls CSV and these rows.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from harness.model import EventType, RowKey, dumps

EVENT_SCHEMA = StructType(
    [
        StructField("event_id", StringType(), False),
        StructField("event_time", TimestampType(), False),
        StructField("event_type", StringType(), False),
        StructField("tick_id", StringType(), True),
        StructField("sensor_source", StringType(), True),
        StructField("sensor_id", StringType(), True),
        StructField("trigger_job_id", StringType(), True),
        StructField("status", StringType(), True),
        StructField("watermark_before", StringType(), True),
        StructField("watermark_after", StringType(), True),
        StructField("run_id", StringType(), True),
        StructField("idempotency_token", StringType(), True),
        StructField("message", StringType(), True),
        StructField("details", StringType(), True),
    ]
)

_clock_lock = threading.Lock()
_last_time = datetime.min.replace(tzinfo=timezone.utc)


def now() -> datetime:
    """UTC now, strictly increasing within the process, so events of one process never tie."""
    global _last_time
    with _clock_lock:
        t = datetime.now(timezone.utc)
        if t <= _last_time:
            t = _last_time + timedelta(microseconds=1)
        _last_time = t
        return t


@dataclass(frozen=True)
class Event:
    event_type: EventType
    row: RowKey | None = None
    status: str | None = None
    watermark_before: str | None = None
    watermark_after: str | None = None
    run_id: str | None = None
    idempotency_token: str | None = None
    message: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    job_id: str | None = None  # for job-level events without a row
    event_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    event_time: datetime = field(default_factory=now)

    def as_tuple(self, tick_id: str | None) -> tuple[Any, ...]:
        row = self.row
        return (
            self.event_id,
            self.event_time.astimezone(timezone.utc).replace(tzinfo=None),
            self.event_type.value,
            tick_id,
            row.sensor_source if row else None,
            row.sensor_id if row else None,
            row.trigger_job_id if row else self.job_id,
            self.status,
            self.watermark_before,
            self.watermark_after,
            self.run_id,
            self.idempotency_token,
            self.message,
            dumps(self.details) if self.details else None,
        )


def schema_name() -> str:
    return os.environ.get("HEARTBEAT_SCHEMA", "heartbeat")


def events_table() -> str:
    return f"{schema_name()}.heartbeat_events"


class EventLog:
    """Appends events to the event table (created on first use, Delta or parquet)."""

    def __init__(self, spark: SparkSession, table_format: str, tick_id: str | None = None) -> None:
        self.spark = spark
        self.table = events_table()
        self.tick_id = tick_id
        self._ensure(table_format)

    def _ensure(self, table_format: str) -> None:
        cols = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in EVENT_SCHEMA.fields)
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema_name()}")
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {self.table} ({cols}) USING {table_format}")

    def append(self, events: Sequence[Event]) -> int:
        """Append in one write; returns how many rows were written."""
        if not events:
            return 0
        df = self.spark.createDataFrame([e.as_tuple(self.tick_id) for e in events], EVENT_SCHEMA)
        df.write.insertInto(self.table)
        return len(events)

    def rows(self, where: str = "true", params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Events matching a SQL predicate, oldest first (for the harness's own bookkeeping)."""
        df = self.spark.sql(f"SELECT * FROM {self.table} WHERE {where} ORDER BY event_time", args=params or {})
        return [r.asDict() for r in df.collect()]
