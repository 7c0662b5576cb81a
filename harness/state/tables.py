"""Reading what dbt built: the control table, the sensing eligibility, the trigger set, the open runs,
and the digest of the controls CSV the seed holds. Every table by its three-part name.

What was read is kept until it may have changed: what dbt built (the control table, the views over it,
the seed) until the next fold (`EventLog.folds`); the open runs, a view over the runs' events in the
log, until the next append of such events or fold (`EventLog.run_events`). A tick with nothing new reads
no table at all, and a tick's appends do not make it read the control table again. The trigger set also
depends on the clock (a refused start, a quiet period, a minimum gap, a start window wait until a given
time), so its reading is kept only until the earliest of those times. Which tables the schema holds is
one listing, kept until the next fold or until a tick lists it again (`list_again`: an operator may have
dropped one); a busy tick looked up tables about ten times, 3 metastore calls each. Tables are read
through Arrow (`records`), a fraction of the cost of Spark's rows, and sorted there. After a fold, the
readings a step needs are taken side by side (`read_together`): each read's fixed cost is mostly planning
on the driver, one core each.
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from harness.core.config import Config
from harness.core.controls import DIGEST_PROPERTY, SEED
from harness.core.vocabulary import ControlRow, EventType, RowKey, control_row, utc
from harness.platform.dbt_runner import AS_IF_CONTROL_TABLE
from harness.platform.literal_rows import literal_rows
from harness.state.event_log import Event

CONTROL_TABLE = "heartbeat_control_table"
ELIGIBILITY = "heartbeat_sensing_eligibility"
TRIGGER_SET = "heartbeat_trigger_set"
TRIGGER_SET_AS_IF = "heartbeat_trigger_set_as_if"  # compiled, never built: its SQL runs here
OPEN_RUNS = "heartbeat_open_runs"
SENSED_KEYS = f"{ELIGIBILITY}:keys"
LISTING = "the schema's tables"  # the key of the kept listing
KEY_COLUMNS = tuple(f.name for f in fields(RowKey))  # a control row's key
ROW_ORDER = ("trigger_job_id", "sensor_source", "sensor_id")  # the order the control table is read in
DETECTED_SCHEMA = StructType(
    [
        StructField(name, TimestampType() if name == "dry_detected_at" else StringType())
        for name in ("sensor_source", "sensor_id", "trigger_job_id", "dry_status", "dry_watermark", "dry_detected_at")
    ]
)


@dataclass(frozen=True)
class Detection:
    """A row's state as a detection would leave it (the status and watermark its event carries)."""

    key: RowKey
    status: str
    watermark: str | None
    detected_at: datetime


def detections(events: Sequence[Event]) -> list[Detection]:
    """The detections among a sensing's events (what a fold would make of them: Detection)."""
    return [
        Detection(e.row, e.status, e.watermark_after, e.event_time)
        for e in events
        if e.event_type is EventType.DATA_CHANGED and e.row is not None and e.status
    ]


def as_detected(rows: Sequence[ControlRow], found: Sequence[Detection]) -> list[ControlRow]:
    """`rows` as `found` leaves them once folded: each detected row's status, watermark and time of detection
    (its range ending at that watermark: a row with a max_range is folded before its job starts)."""
    detected = {d.key: d for d in found}
    return [
        replace(
            r,
            status=detected[r.key].status,
            watermark=detected[r.key].watermark,
            latest_event_fetched_timestamp=detected[r.key].detected_at,
            range_end_watermark=None,
        )
        if r.key in detected
        else r
        for r in rows
    ]


@dataclass(frozen=True)
class JobDecision:
    job_id: str
    job_name: str | None
    should_start: bool
    reason: str
    earliest_start_at: datetime | None = None  # a job waiting only for time: when it may start

    @classmethod
    def of(cls, r: dict[str, Any]) -> JobDecision:
        """A row of the trigger set."""
        earliest = r.get("earliest_start_at")
        return cls(
            r["trigger_job_id"],
            r["trigger_job_name"],
            bool(r["should_start"]),
            r["reason"],
            None if earliest is None else utc(earliest),
        )


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
    backfill: str | None = None  # JSON: which part of which backfill, for a backfill part's run request


T = TypeVar("T")
READERS = 5  # the most readings a step takes side by side (Tables.snapshot_readings); more wait their turn
_reader = threading.local()  # `busy` in a reader thread


@functools.cache
def _readers() -> ThreadPoolExecutor:
    """The process's reader threads, kept from one reading to the next: Spark serves each Python thread on a
    JVM thread of its own, whose first metastore call sets up a metastore client for it (a new thread's
    lookup of a table took 20 ms more, its read 50 ms more, at every tick)."""
    return ThreadPoolExecutor(READERS, "read", initializer=lambda: setattr(_reader, "busy", True))


FOREVER = datetime.max.replace(tzinfo=timezone.utc)


def records(frame: DataFrame, order: Sequence[str] = ()) -> list[dict[str, Any]]:
    """A frame's rows as dicts, collected through Arrow (timestamps come back as UTC datetimes), ascending
    by the columns `order` as Spark orders them (nulls first; text by its UTF-8 bytes). Arrow sorts the
    collected rows: a sort in Spark costs a sampling job and a shuffle of its own, about 0.2 s a read of
    the control table at 10,000 rows (docs/performance-notes.md)."""
    table = frame.toArrow()
    if order:
        table = table.sort_by([(column, "ascending", "at_start") for column in order])
    return table.to_pylist()  # type: ignore[no-any-return]


class LogVersions(Protocol):
    """What the readings are kept by (the event log, harness.state.event_log.EventLog)."""

    run_events: int  # moves whenever the open runs may have changed (a run's events appended, a fold)
    folds: int  # moves whenever what dbt built may have changed


class Tables:
    def __init__(self, spark: SparkSession, config: Config, log: LogVersions | None = None) -> None:
        """Readings are kept while `log`'s counters stand still; without a `log` nothing is kept."""
        self.spark, self.config, self._log = spark, config, log
        self._kept: dict[str, tuple[int, datetime, Any]] = {}

    def keep(
        self,
        control_table: list[dict[str, Any]],
        sensed: set[RowKey],
        open_runs: list[dict[str, Any]],
        controls_digest: str | None,
        trigger_set: list[dict[str, Any]],
        decisions_until: datetime,
    ) -> None:
        """Readings taken elsewhere (a current status snapshot: harness.tick.cold), kept as if read now:
        the control table's records, the keys of the rows sensed, the open runs' records, the seed's digest,
        and the trigger set's decisions until `decisions_until` (when the clock alone changes them)."""
        if self._log is None:
            return
        folds, run_events = self._log.folds, self._log.run_events
        rows = [control_row(r) for r in control_table]
        for key, value, counter, until in (
            (CONTROL_TABLE, control_table, folds, FOREVER),
            (f"{CONTROL_TABLE}:rows", rows, folds, FOREVER),
            (SENSED_KEYS, sensed, folds, FOREVER),
            (ELIGIBILITY, [r for r in rows if r.key in sensed], folds, FOREVER),
            (OPEN_RUNS, open_runs, run_events, FOREVER),
            (SEED, controls_digest, folds, FOREVER),
            (TRIGGER_SET, (trigger_set, decisions_until), folds, decisions_until),
        ):
            self._kept[key] = (counter, until, value)

    def exists(self, name: str) -> bool:
        """Whether the heartbeat's schema holds the table or view `name` (from the kept listing). Without
        an event log nothing is kept, and the table is looked up alone: such a reader (the tests' own)
        may come before the schema exists, where a listing would fail."""
        if self._log is None:
            return bool(self.spark.catalog.tableExists(self.config.table(name)))
        return name.lower() in self._listing()

    def _listing(self) -> frozenset[str]:
        return self._kept_or(LISTING, self._list)

    def list_again(self) -> None:
        """Forgets the kept listing of the schema: the next `exists` lists it again."""
        self._kept.pop(LISTING, None)

    def _list(self) -> frozenset[str]:
        """The names of the schema's tables and views, in one metastore listing (SHOW TABLES; its
        temporary views are not the schema's)."""
        rows = self.spark.sql(f"SHOW TABLES IN {self.config.catalog}.{self.config.schema}").collect()
        return frozenset(str(r["tableName"]).lower() for r in rows if not r["isTemporary"])

    def _kept_or(
        self,
        key: str,
        read: Callable[[], T],
        until: Callable[[T], datetime] = lambda _: FOREVER,
        *,
        of_runs: bool = False,
    ) -> T:
        """The reading kept under `key` while what it reads is the same (what dbt built, or with `of_runs`
        the runs' events in the log) and `until` its value has not passed."""
        if self._log is None:
            return read()
        version, hit = (self._log.run_events if of_runs else self._log.folds), self._kept.get(key)
        if hit is not None and hit[0] == version and datetime.now(timezone.utc) < hit[1]:
            return hit[2]  # type: ignore[no-any-return]
        value = read()
        self._kept[key] = (version, until(value), value)
        return value

    def read_together(self, *readings: Callable[[], object]) -> None:
        """Takes `readings` (methods of this class) side by side, one thread each, and keeps them: the
        fixed cost of a read (analysis, planning and code generation on the driver) takes one core, so
        reads side by side take less than their sum as far as another core is free (docs/performance-notes.md).
        Those already kept read nothing. A reading that itself reads together does so in its own thread."""
        if self._log is None:
            return  # nothing would be kept
        if getattr(_reader, "busy", False):
            for reading in readings:
                reading()
            return
        self._listing()  # most readings ask it first: taken once, not once a thread
        for done in [_readers().submit(reading) for reading in readings]:
            done.result()

    def snapshot_readings(self) -> None:
        """Everything the status snapshot shows, read together (harness.tick.run.snapshot)."""
        self.read_together(
            self._trigger_set, self.control_table, self._sensed_keys, self.open_run_records, self.controls_digest
        )

    def readings_shown(self) -> tuple[object, ...]:
        """What the status snapshot shows, as the readings kept now (snapshot_readings): the same objects
        (`is`) as long as none was read again, so a tick tells an unchanged snapshot without comparing it."""
        self.snapshot_readings()
        return (
            self._trigger_set_until(),
            self.control_table(),
            self._sensed_keys(),
            self.open_run_records(),
            self.controls_digest(),
        )

    def _read(self, name: str, *order: str) -> list[dict[str, Any]]:
        if not self.exists(name):
            return []
        return records(self.spark.table(self.config.table(name)), order)

    def control_table(self) -> list[dict[str, Any]]:
        """The control table's rows by job and upstream."""
        return self._kept_or(CONTROL_TABLE, lambda: self._read(CONTROL_TABLE, *ROW_ORDER))

    def control_rows(self) -> list[ControlRow]:
        return self._kept_or(f"{CONTROL_TABLE}:rows", lambda: [control_row(r) for r in self.control_table()])

    def sensed_rows(self) -> list[ControlRow]:
        """Rows to sense this tick (the eligibility model), with their control-table state."""
        return self._kept_or(ELIGIBILITY, self._read_sensed_rows)

    def _read_sensed_rows(self) -> list[ControlRow]:
        self.read_together(self.control_table, self._sensed_keys)
        sensed = self._sensed_keys()
        return [r for r in self.control_rows() if r.key in sensed]

    def _sensed_keys(self) -> set[RowKey]:
        """The keys of the rows the eligibility model senses (the rows are read once, in the control table)."""
        return self._kept_or(SENSED_KEYS, self._read_sensed_keys)

    def _read_sensed_keys(self) -> set[RowKey]:
        if not self.exists(ELIGIBILITY):
            return set()
        frame = self.spark.table(self.config.table(ELIGIBILITY)).where("is_sensed").select(*KEY_COLUMNS)
        return {RowKey(*(r[k] for k in KEY_COLUMNS)) for r in records(frame)}

    def _trigger_set(self) -> list[dict[str, Any]]:
        return self._trigger_set_until()[0]

    def job_decisions(self) -> list[JobDecision]:
        return [JobDecision.of(r) for r in self._trigger_set()]

    def decisions_valid_until(self) -> datetime:
        """Until when the trigger set's decisions hold without a new event (the clock alone changes them
        then: a refused start may be retried, a quiet period, a minimum gap or a closed window ends)."""
        return self._trigger_set_until()[1]

    def _trigger_set_until(self) -> tuple[list[dict[str, Any]], datetime]:
        """The trigger set's rows, kept until the clock alone changes them (next_change from their read)."""

        def read() -> tuple[list[dict[str, Any]], datetime]:
            read_at = datetime.now(timezone.utc)  # the query takes its clock at this time or later
            rows = self._read(TRIGGER_SET, "trigger_job_id")
            return rows, next_change(rows, read_at)

        return self._kept_or(TRIGGER_SET, read, lambda kept: kept[1])

    def _compiled_as_if(self) -> Path | None:
        return next(self.config.dbt_target_path.glob(f"compiled/*/models/marts/{TRIGGER_SET_AS_IF}.sql"), None)

    def can_decide_as_if(self) -> bool:
        """Whether job_decisions_as_if can answer: dbt compiled the as-if trigger set in this state's target
        folder (a full build does) and the control table is there."""
        return self._compiled_as_if() is not None and self.exists(CONTROL_TABLE)

    def job_decisions_as_if(self, detections: Sequence[Detection]) -> list[JobDecision] | None:
        """The trigger set's decisions over the control table as `detections` would leave it, without
        writing anything: the compiled SQL of heartbeat_trigger_set_as_if (the trigger set's rules over the
        temporary view AS_IF_CONTROL_TABLE, dbt's target folder) run over that view. None when dbt has
        not compiled it yet in this state's target folder."""
        compiled = self._compiled_as_if()
        if compiled is None or not self.exists(CONTROL_TABLE):
            return None
        frame = self.spark.table(self.config.table(CONTROL_TABLE))
        if detections:
            from pyspark.sql import functions as F

            changed = literal_rows(
                self.spark,
                [
                    (d.key.sensor_source, d.key.sensor_id, d.key.trigger_job_id, d.status, d.watermark, d.detected_at)
                    for d in detections
                ],
                DETECTED_SCHEMA,
            )
            columns = frame.columns
            frame = (
                frame.join(changed, list(KEY_COLUMNS), "left")
                .withColumn("status", F.coalesce("dry_status", "status"))
                .withColumn("watermark", F.coalesce("dry_watermark", "watermark"))
                .withColumn(
                    "latest_event_fetched_timestamp", F.coalesce("dry_detected_at", "latest_event_fetched_timestamp")
                )
                .select(*columns)
            )
        frame.createOrReplaceTempView(AS_IF_CONTROL_TABLE)
        return [JobDecision.of(r) for r in records(self.spark.sql(compiled.read_text()), ["trigger_job_id"])]

    def open_runs(self) -> list[OpenRunRow]:
        """The open run requests. The view reads the events from the oldest trigger the control table
        shows in progress: while that table is missing (dropped, a lost metastore) there are none to
        read, until the tick's fold rebuilds it from the events; the next tick finds them."""
        return [open_run_row(r) for r in self.open_run_records()]

    def open_run_records(self) -> list[dict[str, Any]]:
        """The rows of heartbeat_open_runs as read (for the status snapshot)."""
        return self._kept_or(
            OPEN_RUNS,
            lambda: self._read(OPEN_RUNS, "requested_at", "idempotency_token") if self.exists(CONTROL_TABLE) else [],
            of_runs=True,
        )

    def controls_digest(self) -> str | None:
        """The digest of the controls CSV the seed table holds; None when it holds none (or no complete load)."""
        return self._kept_or(SEED, self._read_controls_digest)

    def _read_controls_digest(self) -> str | None:
        if not self.exists(SEED):
            return None
        properties = self.spark.sql(f"SHOW TBLPROPERTIES {self.config.table(SEED)}").collect()
        return next((str(r["value"]) for r in properties if r["key"] == DIGEST_PROPERTY), None)


def next_change(trigger_set: list[dict[str, Any]], read_at: datetime) -> datetime:
    """When the trigger set's decisions, read at `read_at`, change with the clock alone: the earliest
    time a refused start may be retried or a job waiting only for time (its earliest_start_at) may
    start. A retry time passed before the read changes nothing later: such a job waits for something
    else (a pause, a minimum gap, new data), which an event or a new controls CSV brings."""
    retries = [
        utc(r["retry_start_after"])
        for r in trigger_set
        if r.get("is_start_refused") and not r["should_start"] and r.get("retry_start_after") is not None
    ]
    waits = [t for t in retries if t > read_at]
    waits += [utc(r["earliest_start_at"]) for r in trigger_set if r.get("earliest_start_at") is not None]
    return min(waits, default=FOREVER)


def open_run_row(r: dict[str, Any]) -> OpenRunRow:
    """A row of heartbeat_open_runs, as Spark returns it or as the status snapshot holds it."""
    return OpenRunRow(
        token=r["idempotency_token"],
        job_id=r["trigger_job_id"],
        job_name=r["trigger_job_name"],
        requested_at=utc(r["requested_at"]),
        run_id=r["run_id"],
        is_flagged_stuck=bool(r["is_flagged_stuck"]),
        last_poll_error=r["last_poll_error"],
        last_poll_error_at=utc(r["last_poll_error_at"]),
        key=RowKey(r["sensor_source"], r["sensor_id"], r["trigger_job_id"]),
        watermark_before=r["watermark_before"],
        watermark_after=r["watermark_after"],
        previous_status=r["previous_status"],
        is_hard_dependency=bool(r["is_hard_dependency"]),
        backfill=r.get("backfill"),
    )
