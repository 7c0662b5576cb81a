"""Reading exactly the range a run was handed, for the job's own code: `read_range(spark)` turns the
change range (HEARTBEAT_CHANGE_RANGE, or the job parameter's text) into one DataFrame per upstream.

  delta_table, lmu_delta_table (a path or URI)
      with the table's change data feed on (`delta.enableChangeDataFeed`): the feed's rows of the
      versions after `from` up to `to` (`_change_type`, `_commit_version`, `_commit_timestamp`);
      otherwise the rows of the files the commits of those versions added (an UPDATE or MERGE rewrites
      files: their unchanged rows come too; deleted rows are not in any added file). With an
      upstream_key watermark: the rows of version `to` whose key is beyond `from`'s max, up to `to`'s.
      A job that never succeeded (`from` empty) gets the whole table at version `to`.
  kafka      the messages between the offsets, per partition (`from` inclusive, `to` exclusive), read
             with an assigned consumer (no group commit); key, value, topic, partition, offset, timestamp.
  jdbc       `key > from AND key <= to`, run by the database.
  trigger_file  the files landed in the range: name, path, size, landed (read them as you like).
  iceberg_table  the rows of the data files the snapshots after `from` up to `to` added (their
             manifests, read with pyiceberg; the files read by Spark); never succeeded: the table at `to`.
  published  the Data Change Events producers published in the range.

Each read goes to the upstream as it is now: data written after `to` is left out by the range's end
(versions, offsets, key values, times, snapshots), data expired or vacuumed since is gone. The
remaining source kinds (sap_bw, sap_b4, upstream_sensor_table, hive_table) are not read here:
`read_upstream` refuses them by name.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from harness.config import Config, load_config
from harness.errors import HeartbeatError
from harness.refresh.change_range import ChangeRange, UpstreamRange, from_environment, parse, trigger_files
from harness.sensors import key_values
from harness.sensors.base import NewData, Upstream
from harness.sensors.context import CheckContext
from harness.sensors.delta import CommitLog, DeltaSensor, TableState, is_path
from harness.sensors.jdbc import JdbcSensor, KeyMax
from harness.sensors.kafka import KafkaSensor, TopicOffsets
from harness.sensors.published import Published, PublishedSensor, publication_time
from harness.vocabulary import SensorSource

DEFAULT_TIMEOUT_SECONDS = 600.0  # one upstream's read (Kafka requests and consumption, JDBC query)
CDF_PROPERTY = "delta.enableChangeDataFeed"

FILE_SCHEMA = StructType(
    [
        StructField("name", StringType()),
        StructField("path", StringType()),
        StructField("size", LongType()),
        StructField("landed", TimestampType()),
    ]
)
PUBLICATION_SCHEMA = (
    "table string, snapshot_id string, operation string, partition_values map<string,string>, "
    "tags map<string,string>, event_time timestamp, publication_id string"
)


class ConsumeError(HeartbeatError):
    """An upstream's range cannot be read; the message names the upstream."""


def read_range(
    spark: SparkSession, change_range: ChangeRange | str | None = None, *, config: Config | None = None
) -> dict[str, DataFrame]:
    """Each upstream's data in the range, by its label (`kafka:orders`). `change_range`: the parsed
    range, its JSON text, or None for HEARTBEAT_CHANGE_RANGE. `config`: the heartbeat's (Kafka, JDBC,
    Delta settings; the trigger root), default as `python -m harness` finds it."""
    given = (
        from_environment()
        if change_range is None
        else parse(change_range)
        if isinstance(change_range, str)
        else change_range
    )
    config = config or load_config()
    return {u.label: read_upstream(spark, u, config=config) for u in given.upstreams}


def read_upstream(
    spark: SparkSession, upstream: UpstreamRange, *, config: Config, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
) -> DataFrame:
    """One upstream's data in its range."""
    if upstream.end is None:
        raise ConsumeError(f"{upstream.label}: the range has no end: nothing was detected for it")
    try:
        source = SensorSource(upstream.sensor_source)
    except ValueError:
        raise ConsumeError(f"{upstream.label}: unknown sensor_source") from None
    key = upstream.end.get("key")
    target = Upstream(source, upstream.sensor_id, str(key) if key else None)
    context = CheckContext.starting_now(spark, timeout_seconds)
    if source in (SensorSource.DELTA_TABLE, SensorSource.LMU_DELTA_TABLE):
        return _delta(spark, context, target, upstream, config)
    if source is SensorSource.KAFKA:
        return _kafka(context, target, upstream, config)
    if source is SensorSource.JDBC:
        position = KeyMax(str(key), key_values.decode(upstream.end["max"]) if upstream.end.get("max") else None)
        return JdbcSensor.from_settings(config.jdbc).new_data_frame(context, target, position, upstream.start)
    if source is SensorSource.TRIGGER_FILE:
        return _files(spark, upstream, config)
    if source is SensorSource.PUBLISHED:
        return _publications(spark, context, target, upstream, config)
    if source is SensorSource.ICEBERG_TABLE:
        return _iceberg(spark, context, target, upstream, config)
    raise ConsumeError(
        f"{upstream.label}: reading the range of {source.value} is not supported; its range "
        f"is from {dict(upstream.start or {})} to {dict(upstream.end)}"
    )


# --- Delta -----------------------------------------------------------------------------------------
def _delta(
    spark: SparkSession, context: CheckContext, target: Upstream, upstream: UpstreamRange, config: Config
) -> DataFrame:
    assert upstream.end is not None
    version = int(upstream.end["version"])
    sensor = DeltaSensor.from_settings(config.delta, delta_on_spark=config.table_format == "delta")
    if target.upstream_key or not is_path(target.sensor_id):
        # The sensor's own reads: the key range of version `to`, or Spark's VERSION AS OF for a name.
        end = upstream.end.get("max")
        position = TableState(
            target.sensor_id,
            version,
            CommitLog(target.sensor_id, sensor.paths.storage_options),
            key=target.upstream_key,
            key_max=key_values.decode(end) if end else None,
        )
        return sensor.new_data_frame(context, target, position, upstream.start)
    table = sensor.paths.open(target, version)
    start = int(upstream.start["version"]) if upstream.start and "version" in upstream.start else -1
    schema = from_arrow_schema(_arrow_schema(table))
    if start < 0 or start > version:  # never succeeded, or the table was recreated: all of version `to`
        return _parquet(spark, table.file_uris(), target.sensor_id, schema)
    if start == version:
        return spark.createDataFrame([], schema)
    if table.metadata().configuration.get(CDF_PROPERTY, "false").lower() == "true":
        import pyarrow as pa

        feed = pa.table(table.load_cdf(starting_version=start + 1, ending_version=version))
        return spark.createDataFrame(feed.cast(_spark_compatible(feed.schema)))
    log = CommitLog(target.sensor_id, sensor.paths.storage_options)
    added: list[str] = []
    for v in range(start + 1, version + 1):
        commit = log.commit(v)
        if commit is None:
            raise ConsumeError(
                f"{target.label}: the commit of version {v} can no longer be read (log cleaned "
                "up); read the table as of the range's end instead"
            )
        added.extend(commit.added_files)
    root = target.sensor_id.rstrip("/")
    return _parquet(spark, [f"{root}/{unquote(path)}" for path in added], root, schema)


def _arrow_schema(table: DeltaTable) -> Any:
    import pyarrow as pa

    return _spark_compatible(pa.schema(table.schema().to_arrow()))


def _spark_compatible(schema: Any) -> Any:
    """delta-rs's view and unsigned types (string_view, the feed's uint64 versions) as types Spark takes."""
    import pyarrow as pa

    plain = {
        pa.string_view(): pa.string(),
        pa.large_string(): pa.string(),
        pa.binary_view(): pa.binary(),
        pa.large_binary(): pa.binary(),
        pa.uint8(): pa.int16(),
        pa.uint16(): pa.int32(),
        pa.uint32(): pa.int64(),
        pa.uint64(): pa.int64(),
    }
    return pa.schema([field.with_type(plain.get(field.type, field.type)) for field in schema])


def _parquet(spark: SparkSession, files: list[str], root: str, schema: StructType) -> DataFrame:
    """The rows of these data files, partition columns taken from their folders (`col=value/`)."""
    if not files:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).option("basePath", root).parquet(*files).select(*schema.fieldNames())


# --- Iceberg ---------------------------------------------------------------------------------------
def _iceberg(
    spark: SparkSession, context: CheckContext, target: Upstream, upstream: UpstreamRange, config: Config
) -> DataFrame:
    """The rows of the data files the snapshots in the range added (their manifests say which), read by
    Spark: what the range appended or rewrote. A job that never succeeded gets the table as of `to`."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.manifest import ManifestEntryStatus

    from harness.sensors.iceberg import IcebergSensor

    assert upstream.end is not None
    state = IcebergSensor.from_settings(config.iceberg).read_position(context, target)
    table, end = state.table, int(upstream.end["snapshot_id"])
    start = upstream.start.get("snapshot_id") if upstream.start else None
    schema = from_arrow_schema(_spark_compatible(schema_to_pyarrow(table.schema(), include_field_ids=False)))
    if start is None:
        rows = table.scan(snapshot_id=end).to_arrow()
        return spark.createDataFrame(rows.cast(_spark_compatible(rows.schema)))
    files: list[str] = []
    current: int | None = end
    while current is not None and current != int(start):
        snapshot = table.snapshot_by_id(current)
        if snapshot is None:
            raise ConsumeError(
                f"{upstream.label}: snapshot {current} of the range has expired from the table's "
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
    if not files:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(*files)


# --- Kafka -----------------------------------------------------------------------------------------
def _kafka(context: CheckContext, target: Upstream, upstream: UpstreamRange, config: Config) -> DataFrame:
    assert upstream.end is not None
    unbounded = config.kafka.model_copy(update={"max_messages": sys.maxsize})
    sensor = KafkaSensor.from_settings(unbounded)
    now = sensor.read_position(context, target)  # for the earliest offsets still retained
    end = {int(p): int(o) for p, o in upstream.end.get("offsets", {}).items()}
    position = TopicOffsets(now.topic, {p: now.earliest.get(p, 0) for p in end}, end)
    return sensor.new_data_frame(context, target, position, upstream.start)


# --- files and publications ------------------------------------------------------------------------
def _files(spark: SparkSession, upstream: UpstreamRange, config: Config) -> DataFrame:
    if config.trigger_root is None:
        raise ConsumeError(f"{upstream.label}: no trigger root configured (trigger_file.root)")
    rows = []
    for path in trigger_files(Path(config.trigger_root) / upstream.sensor_id, upstream):
        st = path.stat()
        rows.append((path.name, str(path), st.st_size, datetime.fromtimestamp(st.st_ctime, timezone.utc)))
    return spark.createDataFrame(rows, FILE_SCHEMA)


def _publications(
    spark: SparkSession, context: CheckContext, target: Upstream, upstream: UpstreamRange, config: Config
) -> DataFrame:
    assert upstream.end is not None
    sensor = PublishedSensor(config.state_dir)
    position = sensor.read_position(context, target)
    end = upstream.end.get("published_at")
    records = [r for r in position.records if end and publication_time(r) <= datetime.fromisoformat(end)]
    new = sensor.detect(target, Published(tuple(records)), upstream.start)
    found: list[dict[str, Any]] = new.changes["publications"] if isinstance(new, NewData) else []
    rows = [
        (
            r["table"],
            r["snapshot_id"],
            r["operation"],
            r["partition_values"],
            r["tags"],
            publication_time(r),
            r["publication_id"],
        )
        for r in found
    ]
    return spark.createDataFrame(rows, PUBLICATION_SCHEMA)
