"""hive_table: parquet (or other file) tables in the metastore without a log: new partitions and new
files, read through Spark's catalog.

sensor_id is a table name, `db.table` or `catalog.db.table`. One read per check, inside its deadline:
the table's location and partition columns (`DESCRIBE TABLE EXTENDED`), the partitions the metastore
lists (`SHOW PARTITIONS`: a partition whose files are written but not yet registered is not visible to
readers, so it is not new data yet), and one recursive listing of the files under the location (name,
size, modification time; hidden `_`/`.` files left out) through Spark's `binaryFile` source, without
reading any file's content. All three are Spark SQL / DataFrame reads, so the sensor runs on Spark
Connect (serverless, standard access mode) as on classic Spark; the session's identity needs read
access to the table's location.

The watermark is `{"fingerprint": ..., "modified_ms": ...}`: a digest of every listed file of the
registered partitions, and the newest modification time. New data: the fingerprint changed. The change
events are one per partition holding files modified after the watermark (APPEND: a listing cannot tell
files added to a partition from a partition rewritten), or one DELETE without partitions when files or
partitions went away and nothing is newer. Such a table has no snapshot ids: an event's snapshot id is
the table's fingerprint after the change, its previous snapshot id the fingerprint before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

from harness.core.config import Config
from harness.core.errors import SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.change_events import ChangeEvent, described
from harness.sensors.context import CheckContext
from harness.sensors.declaration import SensorDeclaration
from harness.sensors.partition_trigger import PartitionContent, fingerprint
from harness.sensors.spark_sql import quoted_table_name, spark_error_text


@dataclass(frozen=True)
class DataFile:
    path: str  # relative to the table's location
    size: int
    modified_ms: int

    @property
    def key(self) -> str:
        return f"{self.path}|{self.size}|{self.modified_ms}"


@dataclass(frozen=True)
class Partition:
    values: dict[str, str]  # {} for an unpartitioned table
    files: tuple[DataFile, ...]

    @property
    def modified_ms(self) -> int:
        return max((f.modified_ms for f in self.files), default=0)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat()


@dataclass(frozen=True)
class HiveState:
    table: str
    partition_columns: tuple[str, ...]
    partitions: tuple[Partition, ...]  # the registered ones with at least one file

    @property
    def watermark(self) -> Watermark:
        files = [f.key for p in self.partitions for f in p.files]
        return {
            "fingerprint": fingerprint(files),
            "modified_ms": max((p.modified_ms for p in self.partitions), default=0),
        }

    def partition_contents(self) -> Sequence[PartitionContent]:
        return [PartitionContent(p.values, fingerprint([f.key for f in p.files])) for p in self.partitions]

    def lists_every_change_since(self, since: Watermark | None) -> bool:
        return False  # no log: a partition's files that changed are a change of its data

    def events_since(self, since: Watermark | None) -> list[ChangeEvent]:
        after = int(since.get("modified_ms", -1)) if since else -1
        before = since.get("fingerprint") if since else None
        now = self.watermark["fingerprint"]
        if now == before:
            return []
        changed = sorted((p for p in self.partitions if p.modified_ms > after), key=lambda p: p.modified_ms)
        events = [
            ChangeEvent(
                event_time=_iso(p.modified_ms),
                table=self.table,
                table_format="hive",
                snapshot_id=now,
                snapshot_time=_iso(p.modified_ms),
                previous_snapshot_id=before,
                operation="APPEND",
                partition_values=(p.values,) if self.partition_columns else (),
            )
            for p in changed
        ]
        if not events:
            events = [
                ChangeEvent(
                    event_time=None,
                    table=self.table,
                    table_format="hive",
                    snapshot_id=now,
                    snapshot_time=None,
                    previous_snapshot_id=before,
                    operation="DELETE",
                )
            ]
        return events


def _describe(spark: SparkSession, name: str) -> tuple[str, tuple[str, ...]]:
    """The table's location and partition columns."""
    rows = [
        (str(r[0]).strip(), str(r[1] or "").strip()) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    ]
    location = next((value for key, value in rows if key == "Location"), "")
    columns: list[str] = []
    if "# Partition Information" in [k for k, _ in rows]:
        start = [k for k, _ in rows].index("# Partition Information") + 2  # after the "# col_name" header
        for key, _ in rows[start:]:
            if not key or key.startswith("#"):
                break
            columns.append(key)
    return location, tuple(columns)


def _list_files(spark: SparkSession, location: str, label: str) -> list[DataFile]:
    """One recursive listing of the location, as a Spark job of the session: the `binaryFile` source
    lists the files (local, HDFS, object stores, volumes) and its `content` column, left out, is never
    read. Spark leaves hidden `_`/`.` files out. Runs on classic Spark and on Spark Connect alike (no
    context, no JVM access from Python). A location with no folder yet holds no files."""
    try:
        rows = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .load(location)
            .selectExpr("path", "length", "unix_millis(modificationTime) AS modified_ms")
            .collect()
        )
    except Exception as exc:  # noqa: BLE001 - a table created but never written has no folder yet
        if "PATH_NOT_FOUND" in str(exc) or "Path does not exist" in str(exc):
            return []
        raise
    root = _path_part(location)
    files = []
    for row in rows:
        path = _path_part(str(row["path"]))
        if not path.startswith(root + "/"):
            raise SensorError(f"{label}: a listed file {row['path']} is not under the table's location {location}")
        relative = path[len(root) + 1 :]
        if any(part.startswith(("_", ".")) for part in relative.split("/")):
            continue
        files.append(DataFile(relative, int(row["length"]), int(row["modified_ms"])))
    return files


def _path_part(uri: str) -> str:
    """`file:/a/b`, `file:///a/b/` and `/a/b` alike as `/a/b`; `s3://bucket/a` as `bucket/a`."""
    parsed = urlparse(uri)
    return (parsed.netloc + parsed.path).rstrip("/") if parsed.scheme else uri.rstrip("/")


class HiveTableSensor(Sensor[HiveState]):
    def check_upstream(self, upstream: Upstream) -> None:
        quoted_table_name(upstream.label, upstream.sensor_id)

    def read_position(self, context: CheckContext, upstream: Upstream) -> HiveState:
        name = quoted_table_name(upstream.label, upstream.sensor_id)
        try:
            with context.spark_until_deadline(upstream.label) as spark:
                location, columns = _describe(spark, name)
                specs = [str(r[0]) for r in spark.sql(f"SHOW PARTITIONS {name}").collect()] if columns else [""]
                if not location:
                    raise SensorError(
                        f"{upstream.label}: the metastore gives no location for the table "
                        "(a view?); name a table whose files are in a folder"
                    )
                files = _list_files(spark, location, upstream.label)
        except SensorError:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark's analysis errors name the missing table
            if context.expired:
                raise context.timed_out(upstream.label) from exc
            raise SensorError(f"{upstream.label}: cannot read the table: {spark_error_text(exc)}") from exc
        return HiveState(upstream.sensor_id, columns, _partitions(specs, files))

    def detect(self, upstream: Upstream, position: HiveState, since: Watermark | None) -> Detection:
        if not position.partitions:
            return NothingNew("no data files yet")
        if since and since.get("fingerprint") == position.watermark["fingerprint"]:
            return NothingNew(f"no file changed since {_iso(int(since.get('modified_ms', 0)))}")
        events = position.events_since(since)
        changes: dict[str, Any] = {
            "modified_from": _iso(int(since["modified_ms"])) if since and since.get("modified_ms") else None,
            "modified_to": _iso(int(position.watermark["modified_ms"])),
            "operation": events[0].operation if events else None,
            **described(events),
        }
        if position.partition_columns:
            changes["partitions"] = [dict(p) for e in events for p in e.partition_values]
        return NewData(watermark=position.watermark, changes=changes)


def _partitions(specs: list[str], files: list[DataFile]) -> tuple[Partition, ...]:
    """The registered partitions (`ds=2026-01-05/hour=03`, escaped as in folder names) with their files."""
    by_folder: dict[str, list[DataFile]] = {}
    for data_file in files:
        folder = data_file.path.rpartition("/")[0]
        by_folder.setdefault(folder, []).append(data_file)
    partitions = []
    for spec in specs:
        found = by_folder.get(spec, []) if spec else files
        if found:
            values = dict((unquote(k), unquote(v)) for k, _, v in (p.partition("=") for p in spec.split("/") if p))
            partitions.append(Partition(values, tuple(sorted(found, key=lambda f: f.path))))
    return tuple(partitions)


def build(config: Config, source: SensorSource) -> HiveTableSensor:
    """No section: the metastore is Spark's."""
    return HiveTableSensor()


DECLARATION = SensorDeclaration(build=build)
