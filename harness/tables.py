"""Reading what dbt built: the control table, the sensing eligibility, the trigger set, the open runs,
and the digest of the controls CSV the seed holds. Every table by its three-part name.

What was read is kept until the event log changes (an append or a fold; `EventLog.version`): a tick
with nothing new reads no table at all. The trigger set also depends on the clock (a refused start
waits until a given time), so its reading is kept only until the earliest of those times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from harness.config import Config
from harness.controls import DIGEST_PROPERTY, SEED
from harness.events import Event
from harness.literal_rows import literal_rows
from harness.model import ControlRow, EventType, RowKey, control_row, utc

CONTROL_TABLE = "heartbeat_control_table"
ELIGIBILITY = "heartbeat_sensing_eligibility"
TRIGGER_SET = "heartbeat_trigger_set"
OPEN_RUNS = "heartbeat_open_runs"
DRY_RUN_VIEW = "heartbeat_dry_run_control_table"
DETECTED_SCHEMA = StructType([StructField(name, TimestampType() if name == "dry_detected_at" else StringType())
                              for name in ("sensor_source", "sensor_id", "trigger_job_id", "dry_status",
                                           "dry_watermark", "dry_detected_at")])


@dataclass(frozen=True)
class Detection:
    """A row's state as a detection would leave it (the status and watermark its event carries)."""

    key: RowKey
    status: str
    watermark: str | None
    detected_at: datetime


def detections(events: Sequence[Event]) -> list[Detection]:
    """The detections among a sensing's events (what a fold would make of them: Detection)."""
    return [Detection(e.row, e.status, e.watermark_after, e.event_time) for e in events
            if e.event_type is EventType.DATA_CHANGED and e.row is not None and e.status]


def as_detected(rows: Sequence[ControlRow], found: Sequence[Detection]) -> list[ControlRow]:
    """`rows` as `found` leaves them once folded: each detected row's status, watermark and time of detection."""
    detected = {d.key: d for d in found}
    return [replace(r, status=detected[r.key].status, watermark=detected[r.key].watermark,
                    latest_event_fetched_timestamp=detected[r.key].detected_at) if r.key in detected else r
            for r in rows]


@dataclass(frozen=True)
class JobDecision:
    job_id: str
    job_name: str | None
    should_start: bool
    reason: str


@dataclass(frozen=True)
class OpenRunRow:
    """A row of heartbeat_open_runs: one control row of a run request without a recorded outcome."""

    token: str
    job_id: str
    job_name: str | None
    requested_at: datetime
    run_id: str | None
    is_flagged_stuck: bool
    last_poll_error: str | None
    last_poll_error_at: datetime | None
    key: RowKey
    watermark_before: str | None
    watermark_after: str | None
    previous_status: str | None
    is_hard_dependency: bool


T = TypeVar("T")
FOREVER = datetime.max.replace(tzinfo=timezone.utc)


class Tables:
    def __init__(self, spark: SparkSession, config: Config, version: Callable[[], int] | None = None) -> None:
        """`version` changes whenever what dbt built may have changed; without it nothing is kept."""
        self.spark, self.config = spark, config
        self._version = version
        self._kept: dict[str, tuple[int, datetime, Any]] = {}

    def exists(self, name: str) -> bool:
        return bool(self.spark.catalog.tableExists(self.config.table(name)))

    def _kept_or(self, key: str, read: Callable[[], T], until: Callable[[T], datetime] = lambda _: FOREVER) -> T:
        """The reading kept under `key` while the version is the same and `until` its value has not passed."""
        if self._version is None:
            return read()
        version, hit = self._version(), self._kept.get(key)
        if hit is not None and hit[0] == version and datetime.now(timezone.utc) < hit[1]:
            return hit[2]  # type: ignore[no-any-return]
        value = read()
        self._kept[key] = (version, until(value), value)
        return value

    def _rows(self, name: str, *order: str) -> list[dict[str, Any]]:
        return self._kept_or(f"{name}:{','.join(order)}", lambda: self._read(name, *order))

    def _read(self, name: str, *order: str) -> list[dict[str, Any]]:
        if not self.exists(name):
            return []
        frame = self.spark.table(self.config.table(name))
        return [r.asDict() for r in (frame.orderBy(*order) if order else frame).collect()]

    def control_table(self) -> list[dict[str, Any]]:
        return self._rows(CONTROL_TABLE, "trigger_job_id", "sensor_source", "sensor_id")

    def control_rows(self) -> list[ControlRow]:
        return [control_row(r) for r in self._rows(CONTROL_TABLE)]

    def sensed_rows(self) -> list[ControlRow]:
        """Rows to sense this tick (the eligibility model), with their control-table state."""
        return self._kept_or(ELIGIBILITY, self._read_sensed_rows)

    def _read_sensed_rows(self) -> list[ControlRow]:
        if not self.exists(ELIGIBILITY):
            return []
        frame = self.spark.sql(
            f"SELECT c.* FROM {self.config.table(CONTROL_TABLE)} c JOIN {self.config.table(ELIGIBILITY)} e "
            "USING (sensor_source, sensor_id, trigger_job_id) WHERE e.is_sensed")
        return [control_row(r.asDict()) for r in frame.collect()]

    def _trigger_set(self) -> list[dict[str, Any]]:
        return self._kept_or(TRIGGER_SET, lambda: self._read(TRIGGER_SET, "trigger_job_id"), _next_retry)

    def job_decisions(self) -> list[JobDecision]:
        return [JobDecision(r["trigger_job_id"], r["trigger_job_name"], bool(r["should_start"]), r["reason"])
                for r in self._trigger_set()]

    def decisions_valid_until(self) -> datetime:
        """Until when the trigger set's decisions hold without a new event (the clock alone changes them
        then: a refused start may be retried)."""
        return _next_retry(self._trigger_set())

    def _compiled_trigger_set(self) -> Path | None:
        return next(self.config.dbt_target_path.glob(f"compiled/*/models/marts/{TRIGGER_SET}.sql"), None)

    def can_decide_as_if(self) -> bool:
        """Whether job_decisions_as_if can answer: dbt compiled the trigger set in this state's target
        folder (a full build does) and the control table is there."""
        return self._compiled_trigger_set() is not None and self.exists(CONTROL_TABLE)

    def job_decisions_as_if(self, detections: Sequence[Detection]) -> list[JobDecision] | None:
        """The trigger set's decisions over the control table as `detections` would leave it, without
        writing anything: the trigger set's own compiled SQL (dbt's target folder) run over a temporary
        view. None when dbt has not compiled the model yet in this state's target folder."""
        compiled = self._compiled_trigger_set()
        if compiled is None or not self.exists(CONTROL_TABLE):
            return None
        frame = self.spark.table(self.config.table(CONTROL_TABLE))
        if detections:
            from pyspark.sql import functions as F

            keys = ["sensor_source", "sensor_id", "trigger_job_id"]
            changed = literal_rows(self.spark, [(d.key.sensor_source, d.key.sensor_id, d.key.trigger_job_id, d.status,
                                                 d.watermark, d.detected_at) for d in detections], DETECTED_SCHEMA)
            columns = frame.columns
            frame = (frame.join(changed, keys, "left")
                     .withColumn("status", F.coalesce("dry_status", "status"))
                     .withColumn("watermark", F.coalesce("dry_watermark", "watermark"))
                     .withColumn("latest_event_fetched_timestamp",
                                 F.coalesce("dry_detected_at", "latest_event_fetched_timestamp"))
                     .select(*columns))
        frame.createOrReplaceTempView(DRY_RUN_VIEW)
        sql = re.sub(rf"[\w`.]*\b{CONTROL_TABLE}\b`?", DRY_RUN_VIEW, compiled.read_text())
        return [JobDecision(r["trigger_job_id"], r["trigger_job_name"], bool(r["should_start"]), r["reason"])
                for r in self.spark.sql(sql).orderBy("trigger_job_id").collect()]

    def open_runs(self) -> list[OpenRunRow]:
        """The open run requests. The view reads the events from the oldest trigger the control table
        shows in progress: while that table is missing (dropped, a lost metastore) there are none to
        read, until the tick's fold rebuilds it from the events; the next tick finds them."""
        return [open_run_row(r) for r in self.open_run_records()]

    def open_run_records(self) -> list[dict[str, Any]]:
        """The rows of heartbeat_open_runs as read (for the status snapshot)."""
        if not self.exists(CONTROL_TABLE):
            return []
        return self._rows(OPEN_RUNS, "requested_at", "idempotency_token")

    def controls_digest(self) -> str | None:
        """The digest of the controls CSV the seed table holds; None when it holds none (or no complete load)."""
        return self._kept_or(SEED, self._read_controls_digest)

    def _read_controls_digest(self) -> str | None:
        if not self.exists(SEED):
            return None
        properties = self.spark.sql(f"SHOW TBLPROPERTIES {self.config.table(SEED)}").collect()
        return next((str(r["value"]) for r in properties if r["key"] == DIGEST_PROPERTY), None)


def _next_retry(trigger_set: list[dict[str, Any]]) -> datetime:
    """When the trigger set's decisions change with the clock alone: the earliest time a refused start
    may be retried."""
    waits = [utc(r["retry_start_after"]) for r in trigger_set
             if r.get("is_start_refused") and not r["should_start"] and r.get("retry_start_after") is not None]
    return min(waits, default=FOREVER)


def open_run_row(r: dict[str, Any]) -> OpenRunRow:
    """A row of heartbeat_open_runs, as Spark returns it or as the status snapshot holds it."""
    return OpenRunRow(
        token=r["idempotency_token"], job_id=r["trigger_job_id"], job_name=r["trigger_job_name"],
        requested_at=utc(r["requested_at"]), run_id=r["run_id"], is_flagged_stuck=bool(r["is_flagged_stuck"]),
        last_poll_error=r["last_poll_error"], last_poll_error_at=utc(r["last_poll_error_at"]),
        key=RowKey(r["sensor_source"], r["sensor_id"], r["trigger_job_id"]),
        watermark_before=r["watermark_before"], watermark_after=r["watermark_after"],
        previous_status=r["previous_status"], is_hard_dependency=bool(r["is_hard_dependency"]),
    )
