"""The vocabulary shared by the whole harness: sources, statuses, event types, rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from functools import cached_property
from typing import Any, Mapping


class SensorSource(str, Enum):
    DELTA_TABLE = "delta_table"
    LMU_DELTA_TABLE = "lmu_delta_table"
    KAFKA = "kafka"
    TRIGGER_FILE = "trigger_file"
    SAP_BW = "sap_bw"
    SAP_B4 = "sap_b4"
    JDBC = "jdbc"
    UPSTREAM_SENSOR_TABLE = "upstream_sensor_table"
    ICEBERG_TABLE = "iceberg_table"
    HIVE_TABLE = "hive_table"
    PUBLISHED = "published"  # changes producers register themselves (`python -m harness publish`)


@dataclass(frozen=True)
class SourceKind:
    """What every part of the harness may know of a source kind without importing its sensor's clients:
    the module that reads it, and what the controls CSV may ask of its rows. The rest is that module's
    (`DECLARATION` in harness/sensors/<module>.py): how its sensor is built from heartbeat.yml, and how a
    job reads its range."""

    module: str  # harness/sensors/<module>.py
    partitions: bool = False  # its positions list partitions and change events: rows may wait for partitions
    tags: bool = False  # its change events carry tags: a row's `tags` can be matched
    preprocess: bool = True  # its new data can be read as a DataFrame: rows may have a preprocess_query
    needs_key: bool = False  # its watermark is the max of the row's upstream_key: rows must name one
    # a table given by name has partitions its sensor reads (else a partition trigger needs its path: is_path)
    named_partitions: bool = True


# Every source kind: one line each (tests/sensors/test_source_kinds.py checks the dbt project and the docs list them).
KINDS: dict[SensorSource, SourceKind] = {
    SensorSource.DELTA_TABLE: SourceKind("delta", partitions=True, tags=True, named_partitions=False),
    SensorSource.LMU_DELTA_TABLE: SourceKind("delta", partitions=True, tags=True, named_partitions=False),
    SensorSource.KAFKA: SourceKind("kafka"),
    SensorSource.TRIGGER_FILE: SourceKind("trigger_file", preprocess=False),
    SensorSource.SAP_BW: SourceKind("sap"),
    SensorSource.SAP_B4: SourceKind("sap"),
    SensorSource.JDBC: SourceKind("jdbc", needs_key=True),
    SensorSource.UPSTREAM_SENSOR_TABLE: SourceKind("upstream_sensor_table"),
    SensorSource.ICEBERG_TABLE: SourceKind("iceberg", partitions=True, tags=True, preprocess=False),
    SensorSource.HIVE_TABLE: SourceKind("hive_table", partitions=True, preprocess=False),
    SensorSource.PUBLISHED: SourceKind("published", preprocess=False),
}


def is_path(sensor_id: str) -> bool:
    """Whether a table's sensor_id is its path or URI (`/lake/sales/orders`, `s3://bucket/orders`), not its name."""
    return "/" in sensor_id or "://" in sensor_id


class Status(str, Enum):
    NEW_EVENT_AVAILABLE = "NEW_EVENT_AVAILABLE"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class JobState(str, Enum):
    UNPAUSED = "UNPAUSED"
    PAUSED = "PAUSED"


class ReadType(str, Enum):
    BATCH = "batch"
    STREAMING = "streaming"


class StartFrom(str, Enum):
    """Where a row's watching starts (the controls CSV's `start_from`, else heartbeat.yml's
    `controls.start_from`): from what the upstream already holds, or from where it is at the row's
    first check (that data is not new)."""

    BEGINNING = "beginning"
    NOW = "now"


class EventType(str, Enum):
    """What an event row records. The status a row moves to is carried beside it."""

    DATA_CHANGED = "DATA_CHANGED"  # a sensor found data beyond the row's watermark
    CHECK_FAILED = "CHECK_FAILED"  # an upstream could not be checked
    TRIGGER_REQUESTED = "TRIGGER_REQUESTED"  # intent to start a run, written before the API call
    RUN_STARTED = "RUN_STARTED"  # the backend accepted the run (run id known)
    RUN_START_FAILED = "RUN_START_FAILED"  # the backend refused the run; the rows go back as they were
    RUN_START_UNCONFIRMED = "RUN_START_UNCONFIRMED"  # no answer; the same token is re-sent next tick
    RUN_POLL_FAILED = "RUN_POLL_FAILED"  # a started run's state could not be read; polled again next tick
    # a run whose state could not be read reads again, still running: the row's last error is cleared
    RUN_POLL_RECOVERED = "RUN_POLL_RECOVERED"
    RUN_SUCCEEDED = "RUN_SUCCEEDED"
    RUN_FAILED = "RUN_FAILED"  # failed, timed out or cancelled
    RUN_SKIPPED = "RUN_SKIPPED"  # the backend skipped the run (a run of the job going): started again later
    RUN_STUCK = "RUN_STUCK"  # still running past the configured limit
    MANUAL_COMPLETE = "MANUAL_COMPLETE"  # `harness complete` or a successful run found by hand
    RETRY_REQUESTED = "RETRY_REQUESTED"  # `harness retry`: a failed job's range is handed to its next run
    CONFIG_REJECTED = "CONFIG_REJECTED"  # the controls CSV was refused
    CHANGE_PUBLISHED = "CHANGE_PUBLISHED"  # a producer registered a change of a table (no row: read by sensors)
    FRESHNESS_MISSED = "FRESHNESS_MISSED"  # an upstream has not changed within the row's expected_within
    # a row with an expected_within and no new data yet was first checked: its freshness counts from then;
    # or a row with start_from now was first checked: with a watermark, where the upstream was (not new data)
    WATCH_STARTED = "WATCH_STARTED"
    REQUEST_DROPPED = "REQUEST_DROPPED"  # a queued `complete` / `retry` not applied, and why
    # a row's status and watermark carried from the lakehouse engine's tables (`import-lakehouse-engine`),
    # or its start_from set to now where they cannot be
    STATE_IMPORTED = "STATE_IMPORTED"
    # `harness rewind`: the job's next run is handed the range from this position (watermark_after), as if
    # its last successful run had ended there; who asked and why in the details and message
    REWOUND = "REWOUND"
    # `harness backfill`: one part of a backfill's range, per row (its token, its range), planned once
    BACKFILL_PLANNED = "BACKFILL_PLANNED"
    # intent to start a backfill part's run, written before the API call (rows IN_PROGRESS: one run at a time)
    BACKFILL_REQUESTED = "BACKFILL_REQUESTED"
    BACKFILL_STARTED = "BACKFILL_STARTED"  # the backend accepted the backfill part's run (run id known)
    # a backfill part's run ended: the rows go back to the status they had (a backfill moves no watermark)
    BACKFILL_SUCCEEDED = "BACKFILL_SUCCEEDED"
    BACKFILL_FAILED = "BACKFILL_FAILED"  # failed, refused, skipped or cancelled; its range is said, to queue again


PUBLISH_OPERATIONS = ("APPEND", "UPDATE", "DELETE")  # what a publication says its change was


def upstream_label(source: str, sensor_id: str) -> str:
    """How an upstream is named in messages: `kafka:my_product: my.topic`."""
    return f"{source}:{sensor_id}"


@dataclass(frozen=True)
class RowKey:
    """A control-table row: one upstream feeding one job."""

    sensor_source: str
    sensor_id: str
    trigger_job_id: str

    @cached_property  # asked of every sensed row at every tick: 100,000 of them in an estate
    def ref(self) -> str:
        """The row in messages and the state's files: `kafka:my.topic -> job daily`."""
        return f"{upstream_label(self.sensor_source, self.sensor_id)} -> job {self.trigger_job_id}"


@dataclass(frozen=True)
class ControlRow:
    """A row of the control table as the harness reads it after `dbt build`."""

    key: RowKey
    upstream_key: str | None
    preprocess_query: str | None
    trigger_job_name: str | None
    is_hard_dependency: bool
    job_state: str
    status: str | None
    watermark: str | None  # JSON, source-specific; the latest position this row has seen
    last_success_watermark: str | None  # JSON; the position consumed by the job's last successful run
    trigger_watermark: str | None  # JSON; the position the job's latest run consumes
    latest_trigger_token: str | None
    latest_run_id: str | None
    job_start_timestamp: datetime | None
    partition_filter: str | None = None  # a partition trigger: the partitions to wait for
    tags: str | None = None  # with partition_filter: `k=v;...` a change of those partitions must carry
    latest_event_fetched_timestamp: datetime | None = None  # the latest detection of new data
    expected_within: str | None = None  # the freshness expectation from the CSV (`26h`)
    freshness_missed_at: datetime | None = None  # the latest FRESHNESS_MISSED event of the row
    watched_since: datetime | None = None  # the row's WATCH_STARTED: its freshness counts from then until data comes
    max_range: int | None = None  # the most steps one run is handed (None: the whole range)
    range_end_watermark: str | None = None  # JSON; where the range of the row's next run ends (the models decide)
    last_error: str | None = None  # the message of the row's latest error event (a failed check, a failed run, ...)
    run_ended_at: datetime | None = None  # when the latest ended run ended (its backend's time, else when recorded)
    start_from: str = StartFrom.BEGINNING.value  # `now`: the row's first check records where its upstream is
    imported_at: datetime | None = None  # when the row's state was imported from the lakehouse engine
    backfill_run_at: datetime | None = None  # when the job's latest backfill part's run was requested
    backfill_ended_at: datetime | None = None  # when that run's end was recorded

    @property
    def starts_watching(self) -> bool:
        """Whether the row's next check is its first with start_from now: it records where the upstream is
        (WATCH_STARTED with that watermark), not new data. Once watched, or with any state, it is not."""
        return (
            self.start_from == StartFrom.NOW.value
            and self.watermark is None
            and self.status is None
            and self.watched_since is None
            and self.latest_event_fetched_timestamp is None
        )

    @property
    def backfill_going(self) -> bool:
        """The row is IN_PROGRESS for a backfill part's run (harness.tick.backfill), not a regular run."""
        return (
            self.status == Status.IN_PROGRESS.value
            and self.backfill_run_at is not None
            and (self.backfill_ended_at is None or self.backfill_run_at > self.backfill_ended_at)
        )

    @property
    def range_end(self) -> str | None:
        """Where a run started now takes this row's range to: the models' range end, else its watermark."""
        return self.range_end_watermark or self.watermark

    @property
    def label(self) -> str:
        return upstream_label(self.key.sensor_source, self.key.sensor_id)


def dumps(value: Any) -> str:
    """Canonical JSON: the same value always gives the same text (tokens are derived from it)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def utc(value: Any) -> Any:
    """Spark returns naive UTC timestamps (the session and the process run in UTC); the status snapshot
    holds them as ISO 8601 text."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=timezone.utc) if isinstance(value, datetime) and value.tzinfo is None else value


def control_row(r: dict[str, Any]) -> ControlRow:
    """A row of the control table, as Spark returns it or as the status snapshot holds it."""
    return ControlRow(
        key=RowKey(r["sensor_source"], r["sensor_id"], r["trigger_job_id"]),
        upstream_key=r["upstream_key"],
        preprocess_query=r["preprocess_query"],
        trigger_job_name=r["trigger_job_name"],
        is_hard_dependency=bool(r["is_hard_dependency"]),
        job_state=r["job_state"],
        status=r["status"],
        watermark=r["watermark"],
        last_success_watermark=r["last_success_watermark"],
        trigger_watermark=r["trigger_watermark"],
        latest_trigger_token=r["latest_trigger_token"],
        latest_run_id=r["latest_run_id"],
        job_start_timestamp=utc(r["job_start_timestamp"]),
        partition_filter=r.get("partition_filter"),
        tags=r.get("tags"),
        latest_event_fetched_timestamp=utc(r["latest_event_fetched_timestamp"]),
        expected_within=r.get("expected_within"),
        freshness_missed_at=utc(r.get("freshness_missed_at")),
        watched_since=utc(r.get("watched_since")),
        max_range=r.get("max_range"),
        range_end_watermark=r.get("range_end_watermark"),
        last_error=r.get("last_error"),
        run_ended_at=utc(latest_run_end(r)),
        start_from=r.get("start_from") or StartFrom.BEGINNING.value,
        imported_at=utc(r.get("imported_at")),
        backfill_run_at=utc(r.get("backfill_run_at")),
        backfill_ended_at=utc(r.get("backfill_ended_at")),
    )


def latest_run_end(r: Mapping[str, Any]) -> Any:
    """When a row's latest ended run ended, as the row holds it: the backend's time (run_ended_at), else the
    time a tick recorded the end (job_end_timestamp)."""
    return r.get("run_ended_at") or r.get("job_end_timestamp")
