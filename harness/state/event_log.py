"""The append-only event log. Every detection, trigger, run start/end, error and manual action is a row.

Rows are only ever appended; the control table is derived from the controls CSV and these rows.
An append is one file a day, committed by one rename, so a kill leaves all of it or none of it: on the
embedded default written without Spark (harness.state.event_append), elsewhere by a Spark INSERT.
Before each append a marker (`<state>/events.unfolded`, harness.state.fold_marker) says the control table
lags the log, and since when; a successful fold removes it, so a tick knows whether it must fold, and
from which time on, even after a kill in between. An append of no control row's event (a publication, a
refused controls CSV) removes the marker it wrote once it is whole: the models read only rows' events.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

from pyspark.sql import SparkSession
from pyspark.sql.types import DateType, StringType, StructField, StructType, TimestampType

from harness.core.config import LOCAL_CATALOG, Config
from harness.core.vocabulary import EventType, RowKey, dumps
from harness.platform.literal_rows import literal_select
from harness.state import event_append, fold_marker
from harness.state.event_files import PARTITION_COLUMN
from harness.state.event_reader import EVENTS_TABLE, record_location
from harness.state.locations import folder_location, schema_location, table_folder

log = logging.getLogger(__name__)

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
        # The UTC date of event_time: the table's partition column, so every reader that wants recent
        # events (the fold, the open runs, retention) reads only the days it needs.
        StructField("event_date", DateType(), False),
    ]
)
LEGACY_TABLE = EVENTS_TABLE + "_unpartitioned"  # the event table of versions before partitioning, while it is moved

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
    event_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    event_time: datetime = field(default_factory=now)
    upstream: tuple[str, str] | None = None  # (sensor_source, sensor_id) of an event of no row

    def as_tuple(self, tick_id: str | None) -> tuple[Any, ...]:
        row = self.row
        event_time = self.event_time.astimezone(timezone.utc).replace(tzinfo=None)
        source, sensor_id = (row.sensor_source, row.sensor_id) if row else (self.upstream or (None, None))
        return (
            self.event_id,
            event_time,
            self.event_type.value,
            tick_id,
            source,
            sensor_id,
            row.trigger_job_id if row else None,
            self.status,
            self.watermark_before,
            self.watermark_after,
            self.run_id,
            self.idempotency_token,
            self.message,
            dumps(self.details) if self.details else None,
            event_time.date(),
        )

    def as_record(self, tick_id: str | None = None) -> dict[str, Any]:
        """The event as a row of the log reads back (a dict by column name)."""
        return dict(zip(EVENT_SCHEMA.fieldNames(), self.as_tuple(tick_id)))


def create_statement(table: str, table_format: str) -> str:
    """CREATE TABLE for a table of events (the log, its archive): partitioned by day."""
    columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in EVENT_SCHEMA.fields)
    return f"CREATE TABLE {table} ({columns}) USING {table_format} PARTITIONED BY ({PARTITION_COLUMN})"


class EventLog:
    """Appends events to the event table (created on first use) and reads them back by type, job and time."""

    def __init__(self, spark: SparkSession, config: Config, tick_id: str | None = None) -> None:
        self.spark = spark
        self.config = config
        self.table = config.table(EVENTS_TABLE)
        self.tick_id = tick_id
        self.marker = config.layout.events_unfolded
        self.version = 0  # moves on every append and fold: what was read from the log may be stale
        # moves on every append of a run's events (those with an idempotency token, which the open runs'
        # view reads) and every fold: what was read of the open runs may be stale
        self.run_events = 0
        self.folds = 0  # moves on every fold: what was read from the tables dbt built may be stale
        self.folder: Path | None = None  # the log's local folder, when appends go there without Spark
        self._ensure()

    def _ensure(self) -> None:
        """Create the event table, or adopt its folder when the metastore lost it (a lost or moved
        metastore): the events are the state's source of truth, everything else is rebuilt from them.
        An event table of an earlier version (not partitioned by date) is moved into the new one."""
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {self.config.catalog}.{self.config.schema}")
        exists = self.spark.catalog.tableExists(self.table)
        if exists and PARTITION_COLUMN not in self.spark.table(self.table).columns:
            log.warning("moving the event log into a table partitioned by date (%s)", PARTITION_COLUMN)
            # Spark's own catalog takes the new name without its catalog part; Unity Catalog takes all three.
            legacy = self.config.table(LEGACY_TABLE).removeprefix(f"{LOCAL_CATALOG}.")
            self.spark.sql(f"ALTER TABLE {self.table} RENAME TO {legacy}")
            exists = False
        if not exists:
            self._create()
        elif self.marker.exists():
            self.recover_partitions()  # a process may have died between writing a new day's files and registering them
        if self.spark.catalog.tableExists(self.config.table(LEGACY_TABLE)):
            self._move_legacy_events()
        self._record_location()

    def _create(self) -> None:
        create = create_statement(self.table, self.config.table_format)
        folder = self._orphaned_folder()
        if folder is not None:
            log.warning("the metastore has no event table but its folder %s holds events: adopting them", folder)
            create += f" LOCATION '{folder_location(folder)}'"
        self.spark.sql(create)
        if folder is not None:
            self.recover_partitions()

    def recover_partitions(self) -> None:
        """Register the day folders the metastore does not know (parquet tables keep their partitions in
        the metastore; Delta keeps them in its log, where a commit is whole or absent)."""
        if self.config.table_format == "parquet":
            self.spark.sql(f"ALTER TABLE {self.table} RECOVER PARTITIONS")

    def _move_legacy_events(self) -> None:
        """Copy the events of the earlier, unpartitioned table that the new one lacks, then drop it:
        repeatable after a kill at any point (an event id is copied once)."""
        legacy = self.config.table(LEGACY_TABLE)
        columns = ", ".join(f"l.{f.name}" for f in EVENT_SCHEMA.fields if f.name != PARTITION_COLUMN)
        self.spark.sql(
            f"INSERT INTO {self.table} SELECT {columns}, to_date(l.event_time) AS {PARTITION_COLUMN} "
            f"FROM {legacy} AS l LEFT ANTI JOIN {self.table} AS e ON e.event_id = l.event_id"
        )
        self.spark.sql(f"DROP TABLE {legacy}")
        fold_marker.note_unknown(self.marker)  # the moved events are folded like new ones

    def _record_location(self) -> None:
        """Where the table's files are, for the commands that read the log without Spark (harness.state.event_reader)."""
        rows = self.spark.sql(f"DESCRIBE TABLE EXTENDED {self.table}").collect()
        location = next((str(r[1]) for r in rows if str(r[0]).strip() == "Location"), None)
        if location:
            record_location(self.config.state_dir, location)
            self.folder = self._appended_without_spark(location)
            if self.folder is not None:
                event_append.clear_scratch(self.folder)

    def _appended_without_spark(self, location: str) -> Path | None:
        """The table's folder when this process appends to it without Spark: a parquet log in a folder
        of this machine (not of a remote Spark Connect server, `sc://`, whose folders are its own
        machine's)."""
        remote = self.config.spark_remote
        if self.config.table_format != "parquet" or (remote is not None and remote.startswith("sc://")):
            return None
        folder = table_folder(location)
        return folder if folder is not None and folder.is_dir() else None

    def _orphaned_folder(self) -> Path | None:
        """The event table's default folder in a local warehouse, when it exists with files in it."""
        rows = self.spark.sql(f"DESCRIBE SCHEMA EXTENDED {self.config.catalog}.{self.config.schema}").collect()
        location = next((str(r[1]) for r in rows if str(r[0]).strip() == "Location"), "")
        schema = table_folder(schema_location(location)) if location else None
        if schema is None:
            return None
        folder = schema / EVENTS_TABLE
        return folder if folder.is_dir() and any(folder.iterdir()) else None

    @property
    def unfolded(self) -> bool:
        return self.marker.exists()

    @property
    def unfolded_since(self) -> datetime | None:
        """The earliest time of the control rows' events appended since the last fold (None: none, or not known)."""
        return fold_marker.since(self.marker)

    def mark_folded(self) -> None:
        self.marker.unlink(missing_ok=True)
        self.changed()

    def changed(self) -> None:
        """The tables built from the log are about to change, or just changed (a fold)."""
        self.version += 1
        self.run_events += 1
        self.folds += 1

    def append(self, events: Sequence[Event]) -> int:
        """Append in one write; returns how many rows were written."""
        if not events:
            return 0
        # Before the write: a kill after it still leaves the marker, and the next process completes the
        # append (its day registered) and folds. Only a control row's events are folded (the models read
        # no other): only their times count (a publication's time is its producer's clock), and an
        # append of none of them leaves nothing to fold once it is whole.
        rows_times = [e.event_time for e in events if e.row is not None]
        nothing_to_fold = not rows_times and not self.marker.exists()
        fold_marker.note(self.marker, min(rows_times, default=now()))
        self.version += 1
        if any(e.idempotency_token for e in events):
            self.run_events += 1
        rows = [e.as_tuple(self.tick_id) for e in events]
        try:
            if self.folder is not None:
                self._append_files(self.folder, rows)
            else:
                select, args = literal_select(rows, EVENT_SCHEMA)
                self.spark.sql(f"INSERT INTO {self.table} {select}", args=args)
        except Exception:
            self._recover_quietly()
            raise
        if nothing_to_fold:
            self.marker.unlink(missing_ok=True)
        return len(events)

    def _append_files(self, folder: Path, rows: list[tuple[Any, ...]]) -> None:
        """The files, then a new day's folder registered with the metastore, then Spark's listing of the
        table refreshed (Spark keeps the files it listed until a refresh)."""
        for day in event_append.append_files(folder, EVENT_SCHEMA, rows):
            self.spark.sql(f"ALTER TABLE {self.table} ADD IF NOT EXISTS PARTITION ({PARTITION_COLUMN} = '{day}')")
        self.spark.catalog.refreshTable(self.table)

    def _recover_quietly(self) -> None:
        """After a failed append, register any day folder it wrote; the append's own error is what counts."""
        try:
            self.recover_partitions()
        except Exception as exc:  # noqa: BLE001 - retried when the next process opens the log
            log.debug("recovering the event log's partitions failed: %s", exc)

    def detections(self, job_ids: Sequence[str], days: int | None = None) -> list[dict[str, Any]]:
        """The DATA_CHANGED events of these jobs' rows (key, watermarks, details), for their ranges: of the
        last `days` days (only those days are read), or of the whole log."""
        recent = f" AND {PARTITION_COLUMN} >= date_sub(current_date(), {int(days)})" if days is not None else ""
        frame = self.spark.sql(
            f"SELECT event_id, event_time, sensor_source, sensor_id, trigger_job_id, watermark_before, "
            f"watermark_after, details FROM {self.table} "
            "WHERE event_type = :type AND array_contains(:jobs, trigger_job_id)" + recent,
            args={"type": EventType.DATA_CHANGED.value, "jobs": list(job_ids)},
        )
        return frame.toArrow().to_pylist()  # type: ignore[no-any-return]  # through Arrow: a fraction of Rows' cost

    def existing_ids(self, event_ids: Sequence[str], event_type: EventType, days: int) -> set[str]:
        """Which of `event_ids` (events of `event_type`) the log holds from the last `days` days (only
        those days are read)."""
        if not event_ids:
            return set()
        frame = self.spark.sql(
            f"SELECT event_id FROM {self.table} WHERE event_type = :type "
            f"AND array_contains(:ids, event_id) AND {PARTITION_COLUMN} >= date_sub(current_date(), "
            f"{int(days)})",
            args={"type": event_type.value, "ids": list(event_ids)},
        )
        return {r[0] for r in frame.collect()}

    def history(
        self,
        *,
        event_types: Sequence[str] = (),
        job_id: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Events, oldest first, filtered by type, job and time (newest `limit` when given)."""
        conditions: list[str] = ["true"]
        args: dict[str, Any] = {}
        if event_types:
            conditions.append("array_contains(:types, event_type)")
            args["types"] = list(event_types)
        if job_id is not None:
            conditions.append("trigger_job_id = :job_id")
            args["job_id"] = job_id
        if since is not None:
            conditions.append(f"event_time >= :since AND {PARTITION_COLUMN} >= to_date(:since)")
            args["since"] = since.astimezone(timezone.utc).replace(tzinfo=None) if since.tzinfo else since
        frame = self.spark.sql(f"SELECT * FROM {self.table} WHERE {' AND '.join(conditions)}", args=args)
        if limit is not None:
            frame = frame.orderBy("event_time", ascending=False).limit(limit)
        return sorted((r.asDict() for r in frame.collect()), key=lambda r: r["event_time"])
