"""iceberg_table: new snapshots of an Iceberg table, read with pyiceberg (no JVM).

sensor_id is `[catalog:] namespace.table`; the catalog is one of `iceberg.catalogs` in heartbeat.yml
(`default` without a prefix), loaded with pyiceberg's `load_catalog` (a SQL catalog, REST, Glue, Hive...).
One read per check: the table's metadata (its snapshots, each with its parent, time, summary operation
and properties). Only when something is new are the manifests of the new snapshots read, for the
partitions they touched, and, for a partition trigger, the manifests of the current snapshot.

The watermark is `{"snapshot_id": id}`. New data: the current snapshot differs from the watermark's and
one of the snapshots between them changes data (`append`, `overwrite`, `delete`; a `replace` only
rewrites files, like compaction). The snapshots between are the current one's ancestors back to the
watermark's; a watermark that is no ancestor (a rollback, an expired snapshot) lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any, Mapping, Sequence, cast

from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from harness.core.config import Config, IcebergSettings, env_secret
from harness.core.errors import ConfigError, ConsumeError, PositionUnavailable, SensorError, first_line
from harness.core.vocabulary import SensorSource
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.change_events import MAX_EVENTS, ChangeEvent, PartitionValues, described, overall_operation
from harness.sensors.context import CheckContext
from harness.sensors.declaration import PositionQuery, RangeRequest, SensorDeclaration
from harness.sensors.frames import arrow_frame, parquet_files, spark_compatible
from harness.sensors.partition_trigger import PartitionContent, fingerprint

if TYPE_CHECKING:  # pyiceberg is imported where a table is read: a tick without Iceberg rows never pays for it (0.25 s)
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

DEFAULT_CATALOG = "default"
_CHANGES = {"append": "APPEND", "overwrite": "UPDATE", "delete": "DELETE"}  # replace: no data change
_SUMMARY_FIELDS = {"operation"}


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_id: int | None
    timestamp: str
    operation: str  # the summary's operation: append / overwrite / delete / replace
    properties: Mapping[str, str]  # the summary's other fields: metrics and the writer's own properties

    @property
    def change(self) -> str | None:
        return _CHANGES.get(self.operation)


def _iso(timestamp_ms: int) -> str:
    return datetime.fromtimestamp(timestamp_ms / 1000, tz=timezone.utc).isoformat()


@dataclass(frozen=True)
class IcebergState:
    """An Iceberg table now: its current snapshot and every snapshot its metadata still lists."""

    table_name: str
    table: Table = field(repr=False, compare=False)
    snapshot_id: int | None
    snapshots: Mapping[int, Snapshot]
    partition_columns: tuple[str, ...]

    @property
    def watermark(self) -> Watermark:
        return {"snapshot_id": self.snapshot_id}

    def between(self, seen: int | None) -> tuple[list[Snapshot], bool]:
        """The snapshots after `seen` up to the current one, oldest first (the newest MAX_EVENTS + 1 at
        most), and whether `seen` was found among the current snapshot's ancestors."""
        chain: list[Snapshot] = []
        current = self.snapshot_id
        while current is not None and current != seen and len(chain) <= MAX_EVENTS:
            snapshot = self.snapshots.get(current)
            if snapshot is None:
                break  # expired: the ancestry ends here
            chain.append(snapshot)
            current = snapshot.parent_id
        return chain[::-1], current == seen

    def change_event(self, snapshot: Snapshot) -> ChangeEvent:
        tags = {k: v for k, v in snapshot.properties.items() if not _is_metric(k)}
        return ChangeEvent(
            event_time=snapshot.timestamp,
            table=self.table_name,
            table_format="iceberg",
            snapshot_id=snapshot.snapshot_id,
            snapshot_time=snapshot.timestamp,
            previous_snapshot_id=snapshot.parent_id,
            operation=snapshot.change or "UPDATE",
            partition_values=self._touched(snapshot.snapshot_id),
            tags=tags,
        )

    def events_since(self, since: Watermark | None) -> list[ChangeEvent]:
        chain, _ = self.between(_seen(since))
        return [self.change_event(s) for s in chain[-MAX_EVENTS:] if s.change]

    def lists_every_change_since(self, since: Watermark | None) -> bool:
        if since is None:
            return False
        chain, found = self.between(_seen(since))
        return found and len(chain) <= MAX_EVENTS  # events_since keeps the newest MAX_EVENTS

    def _touched(self, snapshot_id: int) -> tuple[PartitionValues, ...]:
        """The partitions whose files this snapshot added or deleted (from the manifests it wrote)."""
        from pyiceberg.manifest import ManifestEntryStatus

        if not self.partition_columns:
            return ()
        snapshot = self.table.snapshot_by_id(snapshot_id)
        if snapshot is None:
            return ()
        touched: set[tuple[tuple[str, str | None], ...]] = set()
        for manifest in snapshot.manifests(self.table.io):
            if manifest.added_snapshot_id != snapshot_id:
                continue
            for entry in manifest.fetch_manifest_entry(self.table.io, discard_deleted=False):
                if entry.status != ManifestEntryStatus.EXISTING:
                    touched.add(self._values(manifest.partition_spec_id, entry.data_file.partition))
        return tuple(dict(p) for p in sorted(touched, key=str))

    def _values(self, spec_id: int, record: Any) -> tuple[tuple[str, str | None], ...]:
        spec, schema = self.table.specs()[spec_id], self.table.schema()
        values = []
        for position, spec_field in enumerate(spec.fields):
            value = record[position]
            source_type = schema.find_type(spec_field.source_id)
            values.append(
                (
                    spec_field.name,
                    None if value is None else str(spec_field.transform.to_human_string(source_type, value)),
                )
            )
        return tuple(values)

    def partition_contents(self) -> Sequence[PartitionContent]:
        return self._partitions

    @cached_property
    def _partitions(self) -> list[PartitionContent]:
        """The live data files of the current snapshot, grouped by partition."""
        snapshot = self.table.current_snapshot()
        files: dict[tuple[tuple[str, str | None], ...], list[str]] = {}
        for manifest in snapshot.manifests(self.table.io) if snapshot else []:
            for entry in manifest.fetch_manifest_entry(self.table.io, discard_deleted=True):
                values = self._values(manifest.partition_spec_id, entry.data_file.partition)
                files.setdefault(values, []).append(entry.data_file.file_path)
        return [PartitionContent(dict(values), fingerprint(paths)) for values, paths in files.items()]


def _is_metric(key: str) -> bool:
    """The summary fields Iceberg writers fill in themselves (added-data-files, total-records, ...)."""
    return (
        key.startswith(
            (
                "added-",
                "deleted-",
                "removed-",
                "total-",
                "changed-",
                "replace-",
                "manifests-",
                "entries-",
                "engine-",
                "iceberg-",
                "spark.",
                "app-id",
            )
        )
        or key in _SUMMARY_FIELDS
    )


def _seen(since: Watermark | None) -> int | None:
    value = since.get("snapshot_id") if since else None
    return int(value) if value is not None else None


class IcebergSensor(Sensor[IcebergState]):
    def __init__(self, catalogs: Mapping[str, Mapping[str, str]]) -> None:
        self.catalogs = {name: dict(properties) for name, properties in catalogs.items()}

    @classmethod
    def from_settings(cls, settings: IcebergSettings) -> IcebergSensor:
        """`iceberg.catalogs`, each catalog's secret properties read from the environment now."""
        catalogs: dict[str, dict[str, str]] = {}
        for name, catalog in settings.catalogs.items():
            properties = dict(catalog.properties)
            for key, variable in catalog.properties_env.items():
                properties[key] = env_secret(variable, f"iceberg.catalogs.{name}.properties_env.{key}") or ""
            if not properties:
                raise ConfigError(f"iceberg.catalogs.{name}: no properties (e.g. type: sql, uri, warehouse)")
            catalogs[name] = properties
        return cls(catalogs)

    def _table(self, upstream: Upstream) -> tuple[str, str]:
        """(the catalog's name, `namespace.table`) of a sensor_id `[catalog:] namespace.table`."""
        name, _, table = upstream.sensor_id.rpartition(":")
        name, table = name.strip() or DEFAULT_CATALOG, table.strip()
        if name not in self.catalogs:
            known = ", ".join(self.catalogs) or "none"
            instead = (
                f", or name a configured one in sensor_id ('{min(self.catalogs)}: {table}')" if self.catalogs else ""
            )
            raise SensorError(
                f"{upstream.label}: no Iceberg catalog {name!r} in heartbeat.yml (iceberg.catalogs: {known}); "
                f"add iceberg.catalogs.{name} with its pyiceberg properties (type, uri, warehouse){instead}"
            )
        if "." not in table:
            raise SensorError(f"{upstream.label}: expected namespace.table after the catalog, e.g. sales.orders")
        return name, table

    def check_upstream(self, upstream: Upstream) -> None:
        self._table(upstream)

    def _catalog(self, upstream: Upstream) -> tuple[Catalog, str]:
        name, table = self._table(upstream)
        from pyiceberg.catalog import load_catalog

        properties = dict(self.catalogs[name])
        if str(properties.get("type", "")).lower() == "sql":
            properties.setdefault("init_catalog_tables", "false")  # a sensor reads: a missing catalog stays missing
        try:
            return load_catalog(name, **properties), table
        except Exception as exc:  # noqa: BLE001 - pyiceberg raises many types; the message names the problem
            raise SensorError(f"{upstream.label}: cannot load Iceberg catalog {name!r}: {exc}") from exc

    def read_position(self, context: CheckContext, upstream: Upstream) -> IcebergState:
        from pyiceberg.exceptions import NoSuchTableError

        context.time_left(upstream.label)
        catalog, name = self._catalog(upstream)
        try:
            table = catalog.load_table(name)
        except NoSuchTableError as exc:
            raise SensorError(f"{upstream.label}: no Iceberg table {name!r} in the catalog: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - the catalog's own error (connection, permission)
            if context.expired:
                raise context.timed_out(upstream.label) from exc
            first = first_line(exc)
            if "iceberg_tables" in first:  # a SQL catalog's database without its tables (pyiceberg's SqlCatalog)
                raise SensorError(
                    f"{upstream.label}: the SQL catalog's database holds no Iceberg catalog ({first}); check "
                    f"iceberg.catalogs.{self._table(upstream)[0]}.properties.uri, and that its database (or the volume "
                    "it is on) is there"
                ) from exc
            raise SensorError(f"{upstream.label}: cannot read the Iceberg table: {first}") from exc
        if context.expired:
            raise context.timed_out(upstream.label)
        snapshots = {
            s.snapshot_id: Snapshot(
                s.snapshot_id,
                s.parent_snapshot_id,
                _iso(s.timestamp_ms),
                s.summary.operation.value if s.summary else "append",
                dict(s.summary.additional_properties) if s.summary else {},
            )
            for s in table.snapshots()
        }
        current = table.current_snapshot()
        return IcebergState(
            name, table, current.snapshot_id if current else None, snapshots, tuple(f.name for f in table.spec().fields)
        )

    def detect(self, upstream: Upstream, position: IcebergState, since: Watermark | None) -> Detection:
        seen = _seen(since)
        if position.snapshot_id is None:
            return NothingNew("no snapshot yet (table empty)")
        if position.snapshot_id == seen:
            return NothingNew(f"still at snapshot {seen}")
        chain, found = position.between(seen)
        data = [s for s in chain if s.change]
        if found and not data:
            return NothingNew(
                f"snapshots after {seen} change no data ({', '.join(sorted({s.operation for s in chain}))})"
            )
        events = [position.change_event(s) for s in data[-MAX_EVENTS:]]
        changes: dict[str, Any] = {
            "snapshot_id_from": seen,
            "snapshot_id_to": position.snapshot_id,
            "operation": overall_operation(e.operation for e in events),
            "operations": sorted({e.operation for e in events}),
            **described(events),
        }
        if not found:
            changes["note"] = (
                f"snapshot {seen} is not an ancestor of the current one (rolled back or expired): "
                "the listed snapshots are the current one's ancestors"
                if seen is not None
                else "never sensed: the newest snapshots are listed"
            )
            if seen is not None:
                changes["events_incomplete"] = True  # the changes since `seen` are no longer all known
        if position.partition_columns:
            touched = {tuple(p.items()) for e in events for p in e.partition_values}
            changes["partitions"] = [dict(p) for p in sorted(touched, key=str)]
        return NewData(watermark=position.watermark, changes=changes)

    def position_at(self, context: CheckContext, upstream: Upstream, at: datetime) -> Watermark:
        """The snapshot current at `at`: the newest ancestor of the current snapshot committed by then (none:
        before the table's first snapshot, so all of it is new). Refused when the ancestors back to then were
        expired: the range from there can no longer be read."""
        state = self.read_position(context, upstream)
        current, oldest = state.snapshot_id, None
        while current is not None:
            snapshot = state.snapshots.get(current)
            if snapshot is None:
                break  # an expired parent
            if datetime.fromisoformat(snapshot.timestamp) <= at:
                return {"snapshot_id": current}
            current, oldest = snapshot.parent_id, snapshot
        if oldest is None or _is_first(state.table, oldest.snapshot_id):
            return {"snapshot_id": None}  # before the table's first snapshot: all of it is new
        raise PositionUnavailable(
            f"{upstream.label}: the snapshot current at {at:%Y-%m-%d %H:%M:%S} UTC was expired, or was none in a "
            f"format 1 table (the oldest held, {oldest.snapshot_id}, is of {oldest.timestamp}). Rewind to a later time, or give the position with "
            "--watermark"
        )


def _is_first(table: Table, snapshot_id: int) -> bool:
    """Whether the snapshot is the table's first: its sequence number 1 (format 2). Expiring snapshots
    drops their children's parent ids, so a snapshot without a parent need not be the first; a format 1
    table numbers none, so its first cannot be told."""
    snapshot = table.snapshot_by_id(snapshot_id)
    return snapshot is not None and snapshot.sequence_number == 1


def position_at(query: PositionQuery) -> Watermark:
    """The table's snapshot current at the time, from its metadata's snapshots (pyiceberg)."""
    return cast(IcebergSensor, query.sensor).position_at(query.context, query.upstream, query.at)


# --- a job reading its range (harness.consume) ------------------------------------------------------
def read_range(request: RangeRequest) -> DataFrame:
    """The rows of the data files the snapshots after `from` up to `to` added (their manifests say which),
    read by Spark: what the range appended or rewrote. A job that never succeeded gets the table at `to`."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.manifest import ManifestEntryStatus

    spark, target = request.spark, request.upstream
    table = build(request.config, target.kind).read_position(request.context, target).table
    end = int(request.end["snapshot_id"])
    start = request.start.get("snapshot_id") if request.start else None
    schema = from_arrow_schema(spark_compatible(schema_to_pyarrow(table.schema(), include_field_ids=False)))
    if start is None:
        return arrow_frame(spark, table.scan(snapshot_id=end).to_arrow())
    files: list[str] = []
    current: int | None = end
    while current is not None and current != int(start):
        snapshot = table.snapshot_by_id(current)
        if snapshot is None:
            raise ConsumeError(
                f"{target.label}: snapshot {current} of the range has expired from the table's "
                "metadata; read the table as of the range's end instead"
            )
        for manifest in snapshot.manifests(table.io):
            if manifest.added_snapshot_id == current:
                files += [
                    e.data_file.file_path
                    for e in manifest.fetch_manifest_entry(table.io)
                    if e.status == ManifestEntryStatus.ADDED
                ]
        current = snapshot.parent_snapshot_id
    if current != int(start):
        raise ConsumeError(
            f"{target.label}: snapshot {start}, where the range starts, is not an ancestor of snapshot {end} in the "
            "table's metadata (its snapshots between expired, or the table was rolled back or made again), so what "
            "the range added is no longer known; read the table as of the range's end instead"
        )
    return parquet_files(spark, files, schema)


def build(config: Config, source: SensorSource) -> IcebergSensor:
    return IcebergSensor.from_settings(config.sources.iceberg)


DECLARATION = SensorDeclaration(build=build, read_range=read_range, position_at=position_at)
