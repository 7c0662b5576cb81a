"""Changes producers register themselves: `python -m harness publish --table T ...`, `publish(...)` from
Python, and the tables a job writes, published when a run of it succeeds (`publish.on_success` in
heartbeat.yml). Rows with sensor_source `published` and sensor_id `T` trigger on them, without polling T.

A publication is one CHANGE_PUBLISHED event (no control row: `harness.sensors.published` reads them),
its details a Data Change Event: table, partition values, snapshot id, operation, tags, time. The
same table and snapshot id always give the same event id, and an id already in the log is not
appended again, so publishing twice is one event. Without a snapshot id every publication is new.

`publish(...)` and the `publish` command write the publication to `<state>/inbox/published/` (one file,
named by its id, written atomically), with or without a heartbeat running: the next tick appends it
before sensing (harness.tick.publications).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from harness.core.config import Config, load_config
from harness.core.errors import HeartbeatError
from harness.core.partition_filter import COLUMN_NAME, parse_filter
from harness.core.state_layout import StateLayout
from harness.core.vocabulary import PUBLISH_OPERATIONS as OPERATIONS
from harness.core.vocabulary import ControlRow, EventType, SensorSource, upstream_label
from harness.sensors.published import PUBLICATION_WINDOW
from harness.state import queue_files
from harness.state.event_log import Event, now
from harness.state.event_reader import EventQuery, read_events

_NAMESPACE = uuid.UUID("5f0e8a52-5c1b-4d53-9a43-8f3c2f1de0b1")  # publication ids: uuid5 of table + snapshot


@dataclass(frozen=True)
class Publication:
    """A Data Change Event a producer registers."""

    table: str
    snapshot_id: str | None = None
    partition_values: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    operation: str = "APPEND"
    event_time: datetime = field(default_factory=now)
    publication_id: str = ""

    def __post_init__(self) -> None:
        if not self.table.strip():
            raise HeartbeatError("publish: --table is empty; name the table that changed")
        if self.operation not in OPERATIONS:
            raise HeartbeatError(f"publish: operation {self.operation!r}; expected one of {', '.join(OPERATIONS)}")
        for column, value in self.partition_values.items():
            check_partition_value(column, value)
        if not self.publication_id:
            same = f"{self.table.strip()}\x00{self.snapshot_id}" if self.snapshot_id else None
            object.__setattr__(self, "publication_id", uuid.uuid5(_NAMESPACE, same).hex if same else uuid.uuid4().hex)

    @property
    def upstream_label(self) -> str:
        return upstream_label(SensorSource.PUBLISHED.value, self.table.strip())

    def record(self) -> dict[str, Any]:
        """The Data Change Event: what the event's details and a downstream run's range carry."""
        return {
            "table": self.table.strip(),
            "snapshot_id": self.snapshot_id,
            "operation": self.operation,
            "partition_values": dict(self.partition_values),
            "tags": dict(self.tags),
            "event_time": self.event_time.isoformat(),
            "table_format": SensorSource.PUBLISHED.value,
            "publication_id": self.publication_id,
        }

    def event(self) -> Event:
        return Event(
            EventType.CHANGE_PUBLISHED,
            upstream=(SensorSource.PUBLISHED.value, self.table.strip()),
            message=f"{self.table.strip()}: change published"
            + (f" (snapshot {self.snapshot_id})" if self.snapshot_id else ""),
            details=self.record(),
            event_id=self.publication_id,
            event_time=self.event_time,
        )

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Publication:
        return cls(
            table=record["table"],
            snapshot_id=record.get("snapshot_id"),
            partition_values=record.get("partition_values") or {},
            tags=record.get("tags") or {},
            operation=record.get("operation", "APPEND"),
            event_time=datetime.fromisoformat(record["event_time"]),
            publication_id=record["publication_id"],
        )


def pairs(values: Iterable[str], option: str) -> dict[str, str]:
    """`k=v` strings (from --partition / --tag) as a mapping; a clear error for anything else."""
    out: dict[str, str] = {}
    for value in values:
        key, sep, item = value.partition("=")
        if not sep or not key.strip():
            raise HeartbeatError(f"publish: {option} {value!r}: expected key=value (e.g. {option} ds=2026-11-22)")
        out[key.strip()] = item.strip()
    return out


def partitions(values: Iterable[str]) -> dict[str, str]:
    """--partition values as partition values: `ds=2026-11-22`, or several columns in the Hive folder form
    (`ds=2026-11-22/hour=03`), read as a partition_filter reads them; refused as the filters are."""
    out: dict[str, str] = {}
    for text in values:
        if ";" in text:
            raise HeartbeatError(
                f"publish: --partition {text!r}: one partition per --partition (no ';'); "
                "repeat the option for more columns"
            )
        try:
            (spec,) = parse_filter(text, example="ds=2026-11-22/hour=03").partitions
        except ValueError as exc:
            raise HeartbeatError(f"publish: --partition {text!r} refused: {exc}") from None
        for column, value in spec:
            check_partition_value(column, value, text)
            out[column] = value
    return out


def check_partition_value(column: str, value: str, given: str | None = None) -> None:
    """A published partition value is a literal a partition filter can name: a column name, a value with
    no `/`, `=`, `;` or `{{ }}` (a filter's time expressions are rendered by the heartbeat, not published)."""
    what = f"--partition {given!r}" if given is not None else f"partition {column}={value!r}"
    if not COLUMN_NAME.fullmatch(column):
        raise HeartbeatError(f"publish: {what}: {column!r} is not a column name (letters, digits, _)")
    if not value.strip() or any(c in value for c in "/=;") or "{{" in value or "}}" in value:
        raise HeartbeatError(
            f"publish: {what}: value {value!r} must be a literal partition value "
            "(e.g. ds=2026-11-22; several columns as ds=2026-11-22/hour=03)"
        )


def watching_rows(rows: Sequence[ControlRow] | None, table: str) -> list[ControlRow] | None:
    """The control-table rows that trigger on publications of `table` (None: no control table yet)."""
    if rows is None:
        return None
    return [r for r in rows if r.key.sensor_source == SensorSource.PUBLISHED.value and r.key.sensor_id == table.strip()]


# --- the queue -------------------------------------------------------------------------------------
def enqueue(state_dir: Path, publication: Publication) -> Path:
    """Write the publication for the next tick (the same id twice: the same file)."""
    return queue_files.enqueue(
        StateLayout(state_dir).published_inbox / f"{publication.publication_id}.json", publication.record()
    )


def recorded(state_dir: Path, publication: Publication) -> bool:
    """Whether the event log already holds this publication (a snapshot published before), read from the
    log's files without Spark. False when they cannot be read here: the tick records each id once anyway."""
    return publication.publication_id in (recorded_ids(state_dir, [publication]) or set())


def recorded_ids(state_dir: Path, publications: Sequence[Publication]) -> set[str] | None:
    """The ids of `publications` the event log holds from the window the sensor reads, read from the log's
    files without Spark (only those with a snapshot id can be there); None when only Spark reads the log."""
    with_id = [p for p in publications if p.snapshot_id]
    if not with_id:
        return set()
    labels = {p.upstream_label for p in with_id}
    query = EventQuery(
        since=datetime.now(timezone.utc) - PUBLICATION_WINDOW,
        upstream=next(iter(labels)) if len(labels) == 1 else None,
        event_types=(EventType.CHANGE_PUBLISHED.value,),
        limit=0,
    )
    try:
        return {e["event_id"] for e in read_events(state_dir, query)} & {p.publication_id for p in with_id}
    except HeartbeatError:
        return None


def publish(
    table: str,
    *,
    partition: Mapping[str, str] | None = None,
    snapshot: str | int | None = None,
    tags: Mapping[str, str] | None = None,
    operation: str = "APPEND",
    config: Config | None = None,
) -> Publication:
    """Register a change of `table` for the heartbeat whose configuration is `config` (default: as
    `python -m harness` finds it). Queued for its next tick, which appends it before sensing; safe to
    call from a job while the heartbeat runs, and twice with the same snapshot (one event)."""
    config = config or load_config()
    publication = Publication(
        table,
        str(snapshot) if snapshot is not None else None,
        dict(partition or {}),
        dict(tags or {}),
        operation.upper(),
    )
    enqueue(config.state_dir, publication)
    return publication
