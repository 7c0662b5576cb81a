"""delta_table / lmu_delta_table: new table versions beyond the watermark.

sensor_id is a path or URI (`/lake/sales/orders`, `s3://bucket/orders`): the table is read with
`deltalake` (delta-rs, no JVM): its version, then, only when there is something new, the commit files
of the new versions (commit time, operation, add/remove actions and the partition values they touch).
A named table (`db.table`, `catalog.db.table`) goes through Spark's `DESCRIBE HISTORY`, which needs
Delta on Spark's classpath (Databricks). What a commit changed is `harness.sensors.delta_log`'s part.

Without upstream_key the watermark is `{"version": v, "table_id": id}`, the id in the table's metadata
(delta-rs's for a path, `DESCRIBE DETAIL`'s for a name): a table deleted and made again at the same path
or under the same name is told from the one before whatever its versions (a `DROP` then `CREATE TABLE
... AS` at every load leaves each at version 0), and all of it is then new; a watermark without an id
(a named table's, from before it was kept) is taken as of the table there now. Versions whose commits
change no data (OPTIMIZE, VACUUM, property changes: no add/remove with dataChange) are not new data.
With upstream_key (the manual-upload case) the watermark is the max of that column, from the files'
statistics where they are exact (integers, decimals, dates), else from a scan of that one column.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence, cast
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.fs as pfs
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError
from deltalake.fs import DeltaStorageHandler
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from harness.core.config import Config, DeltaSettings, env_secret
from harness.core.errors import ConsumeError, PositionUnavailable, SensorError, first_line
from harness.core.preprocess import quote_identifier
from harness.core.vocabulary import SensorSource, is_path
from harness.sensors import key_values
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.change_events import ChangeEvent
from harness.sensors.context import CheckContext
from harness.sensors.declaration import PositionQuery, RangeRequest, SensorDeclaration
from harness.sensors.delta_log import (
    MAX_DETAILED_COMMITS,
    Commit,
    CommitSource,
    KnownCommits,
    commit_from_history,
    commits_between,
    describe_changes,
    parse_commit,
)
from harness.sensors.frames import arrow_frame, parquet_files, spark_compatible
from harness.sensors.partition_trigger import PartitionContent, fingerprint
from harness.sensors.spark_sql import quoted_table_name, spark_error_text


@dataclass(frozen=True)
class TableState:
    """The position of a Delta table: its version, how to read the commits behind it, and with an
    upstream_key that column's max (None: the table is empty). `files` lists the current snapshot's
    data files (read only when a partition trigger asks); None where they cannot be read (named tables)."""

    table: str
    version: int
    commits: CommitSource
    partition_columns: tuple[str, ...] = ()
    key: str | None = None
    key_max: Any = None
    files: Callable[[], pa.Table] | None = None
    table_id: str | None = None  # the id in the table's metadata: a table made again has another
    watermark: Watermark = field(init=False)

    def __post_init__(self) -> None:  # encoded once, so a key of an unsupported type fails the read
        watermark: dict[str, Any] = {"version": self.version}
        if self.table_id is not None:
            watermark["table_id"] = self.table_id
        if self.key is not None:
            watermark |= {"key": self.key, "max": key_values.encode(self.key_max) if self.key_max is not None else None}
        object.__setattr__(self, "watermark", watermark)

    def partition_contents(self) -> Sequence[PartitionContent]:
        return self._partitions

    @cached_property
    def _partitions(self) -> list[PartitionContent]:
        """The add actions of the current snapshot grouped by partition; a partition's fingerprint is
        that of its files' paths (an overwrite replaces them)."""
        if self.files is None:
            raise SensorError(
                f"{self.table}: a partition trigger reads the table's files from its log, which "
                "needs the table's path or URI as sensor_id (e.g. s3://bucket/sales/orders)"
            )
        actions = self.files()
        if actions.num_rows == 0:
            return []
        columns = [f"partition.{c}" for c in self.partition_columns]
        paths: dict[tuple[Any, ...], list[str]] = defaultdict(list)
        for row in actions.select(["path", *columns]).to_pylist():
            paths[tuple(row[c] for c in columns)].append(row["path"])
        return [
            PartitionContent(
                {c: None if v is None else str(v) for c, v in zip(self.partition_columns, values)}, fingerprint(files)
            )
            for values, files in paths.items()
        ]

    def of_this_table(self, since: Watermark | None) -> Watermark | None:
        """`since`, or None when it is another table's position: one deleted and made again at the same
        path or name since (its versions, or its keys, start again), so everything this table holds is new."""
        return None if since and since.get("table_id") not in (None, self.table_id) else since

    def events_since(self, since: Watermark | None) -> list[ChangeEvent]:
        seen = seen_version(self.of_this_table(since))
        first = seen + 1 if seen < self.version else 0
        commits, _ = commits_between(self.commits, first, self.version)
        return [c.change_event(self.table) for c in commits if c.change]

    def lists_every_change_since(self, since: Watermark | None) -> bool:
        seen = seen_version(self.of_this_table(since))
        return 0 <= seen <= self.version and commits_between(self.commits, seen + 1, self.version)[1] == 0


def seen_version(since: Watermark | None) -> int:
    """The version a row's watermark has seen; -1 when it has not seen any."""
    return int(since["version"]) if since and "version" in since else -1


# delta-rs's message for a log missing commits: each side a long debug form ending in its version
LOG_GAP = re.compile(r"Expected contiguous commit files, but found gap: .*?version: (\d+).*?-> .*?version: (\d+)", re.S)


class CommitLog:
    """Commit files of a path table, read on demand and kept for the rest of this check."""

    def __init__(self, uri: str, storage_options: Mapping[str, str]) -> None:
        self.uri, self.storage_options = uri, dict(storage_options)
        self._cache: dict[int, Commit | None] = {}
        self._storage: DeltaStorageHandler | None = None

    def commit(self, version: int) -> Commit | None:
        if version not in self._cache:
            self._cache[version] = self._read(version)
        return self._cache[version]

    def _read(self, version: int) -> Commit | None:
        if self._storage is None:
            self._storage = DeltaStorageHandler(self.uri, self.storage_options or None)
        try:
            with self._storage.open_input_file(f"_delta_log/{version:020d}.json") as handle:
                text = handle.read().decode("utf-8")
        except FileNotFoundError:
            return None
        return parse_commit(version, text.splitlines())


class PathTables:
    """Tables named by a path or URI, read with delta-rs."""

    def __init__(self, storage_options: Mapping[str, str]) -> None:
        self.storage_options = dict(storage_options)

    def open(self, upstream: Upstream, version: int | None = None) -> DeltaTable:
        try:
            return DeltaTable(upstream.sensor_id, version=version, storage_options=self.storage_options or None)
        except (DeltaError, OSError) as exc:
            gap = LOG_GAP.search(str(exc))
            if gap:
                raise SensorError(
                    f"{upstream.label}: cannot read the Delta table: its log has a gap, no commit file between "
                    f"versions {gap[1]} and {gap[2]} in _delta_log (deleted, or not copied yet); no reader can "
                    "read it until its writer restores them or writes a checkpoint past them"
                ) from exc
            raise SensorError(
                f"{upstream.label}: cannot read the Delta table: {first_line(exc)}; "
                "check the path (sensor_id) and delta.storage_options"
            ) from exc

    def position(self, upstream: Upstream, version: int | None = None) -> TableState:
        table = self.open(upstream, version)
        key_max = self._key_max(upstream, table) if upstream.upstream_key else None
        return TableState(
            upstream.sensor_id,
            table.version(),
            CommitLog(upstream.sensor_id, self.storage_options),
            tuple(table.metadata().partition_columns),
            upstream.upstream_key,
            key_max,
            files=lambda: pa.table(table.get_add_actions(flatten=True)),
            table_id=str(table.metadata().id),
        )

    def position_at(self, upstream: Upstream, at: datetime) -> Watermark:
        """The table as it was at `at`: the newest version committed by then (none: before the table was
        made, so all of it is new). Refused when the table no longer holds what a range from there reads:
        a commit after it cleaned from the log, or a data file one of them added vacuumed."""
        table = self.open(upstream)
        history = [(int(h["version"]), EPOCH + timedelta(milliseconds=int(h["timestamp"]))) for h in table.history()]
        version = version_at(upstream, history, at, "log")
        self._check_held(upstream, version, table.version())
        if version < 0:
            return TableState(
                upstream.sensor_id,
                -1,
                CommitLog(upstream.sensor_id, self.storage_options),
                key=upstream.upstream_key,
                table_id=str(table.metadata().id),
            ).watermark
        return self.position(upstream, version).watermark

    def _check_held(self, upstream: Upstream, version: int, current: int) -> None:
        """The table as of `version` and every commit after it up to `current` are there (in the log, with
        the files they added): what a job reads for the range (`read_range`, or VERSION AS OF for a named
        table); PositionUnavailable naming the first that is not."""
        log = CommitLog(upstream.sensor_id, self.storage_options)
        added: dict[str, int] = {}
        if version >= 0:  # the table as of then (what a reader of that version reads, VERSION AS OF)
            snapshot = pa.table(self.open(upstream, version).get_add_actions(flatten=True))
            added |= {unquote(path): version for path in snapshot.column("path").to_pylist()}
        for v in range(version + 1, current + 1):
            commit = log.commit(v)
            if commit is None:
                raise PositionUnavailable(
                    f"{upstream.label}: the commit of version {v} is no longer in its log (cleaned up): a range "
                    f"from version {version} cannot be read. Rewind to a later time, or give the position "
                    "with --watermark"
                )
            added |= {unquote(path): v for path in commit.added_files}
        if not added:
            return
        files = pfs.PyFileSystem(DeltaStorageHandler(upstream.sensor_id, self.storage_options or None))
        for info in files.get_file_info(list(added)):
            if info.type == pfs.FileType.NotFound:
                raise PositionUnavailable(
                    f"{upstream.label}: version {added[info.path]} holds {info.path}, which is gone (VACUUM): the "
                    f"table no longer holds the range from version {version}. Rewind to a later time (after the "
                    "vacuumed versions), or give the position with --watermark"
                )

    @staticmethod
    def _key_max(upstream: Upstream, table: DeltaTable) -> Any:
        """max(upstream_key): from file statistics when exact for the type, else a one-column scan."""
        key = str(upstream.upstream_key)
        actions = pa.table(table.get_add_actions(flatten=True))
        stat = f"max.{key}"
        if actions.num_rows == 0:
            return None
        if stat in actions.column_names:
            column = actions.column(stat)
            exact = (
                pa.types.is_integer(column.type) or pa.types.is_decimal(column.type) or pa.types.is_date(column.type)
            )
            if exact and column.null_count == 0:
                return pc.max(column).as_py()
        dataset = table.to_pyarrow_dataset()
        if key not in dataset.schema.names:
            raise SensorError(
                f"{upstream.label}: upstream_key {key!r} is not a column of the table "
                f"(columns: {', '.join(dataset.schema.names)})"
            )
        return pc.max(dataset.to_table(columns=[key]).column(key)).as_py()

    def new_rows(self, upstream: Upstream, state: TableState, since: Watermark | None) -> pa.Table:
        since = state.of_this_table(since)
        dataset = self.open(upstream, state.version).to_pyarrow_dataset()
        if upstream.upstream_key:
            return dataset.to_table(filter=self._key_filter(upstream, state, since))
        return self._added_rows(dataset, state, since)

    @staticmethod
    def _key_filter(upstream: Upstream, state: TableState, since: Watermark | None) -> pc.Expression:
        key = pc.field(str(upstream.upstream_key))
        bound = key <= state.key_max
        previous = key_values.stored_max(since, upstream.upstream_key)
        return bound if previous is None else (key > key_values.decode(previous)) & bound

    @staticmethod
    def _added_rows(dataset: pds.Dataset, state: TableState, since: Watermark | None) -> pa.Table:
        """Rows of the files the new commits added (whole snapshot when a commit cannot be read)."""
        seen = seen_version(since)
        if seen < 0 or seen > state.version:
            return dataset.to_table()
        commits, undescribed = commits_between(state.commits, seen + 1, state.version)
        if undescribed:
            return dataset.to_table()
        added = {p for c in commits for f in c.added_files for p in (f, unquote(f))}
        fragments = [f for f in dataset.get_fragments() if f.path in added or unquote(f.path) in added]
        return pds.FileSystemDataset(fragments, dataset.schema, dataset.format, dataset.filesystem).to_table()


class NamedTables:
    """Tables named in Spark's catalog, read with Spark SQL (DESCRIBE HISTORY, VERSION AS OF)."""

    def __init__(self, delta_on_spark: bool) -> None:
        self.delta_on_spark = delta_on_spark

    def name(self, upstream: Upstream) -> str:
        """The table's name quoted for Spark SQL; SensorError when this heartbeat's Spark cannot read it."""
        if not self.delta_on_spark:
            raise SensorError(
                f"{upstream.label}: a named table is read with Spark's DESCRIBE HISTORY, which needs Delta on "
                "Spark's classpath (this heartbeat's Spark has none: no delta-spark jar in HEARTBEAT_DELTA_JARS "
                "or $SPARK_HOME/jars, and its dbt target is not databricks); give the table's path or URI as "
                "sensor_id instead (e.g. /lake/sales/orders or s3://bucket/sales/orders)"
            )
        return quoted_table_name(upstream.label, upstream.sensor_id)

    def position(self, context: CheckContext, upstream: Upstream) -> TableState:
        name = self.name(upstream)
        key = quote_identifier(upstream.upstream_key) if upstream.upstream_key else None
        try:
            with context.spark_until_deadline(upstream.label) as spark:
                history = [
                    r.asDict() for r in spark.sql(f"DESCRIBE HISTORY {name} LIMIT {MAX_DETAILED_COMMITS}").collect()
                ]
                table_id = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["id"]
                key_max = spark.sql(f"SELECT max({key}) AS m FROM {name}").collect()[0][0] if key else None
        except SensorError:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark analysis errors name the missing table or column
            if context.expired:
                raise context.timed_out(upstream.label) from exc
            raise SensorError(f"{upstream.label}: {spark_error_text(exc)}") from exc
        commits = {c.version: c for c in map(commit_from_history, history)}
        return TableState(
            upstream.sensor_id,
            max(commits, default=-1),
            KnownCommits(commits),
            key=upstream.upstream_key,
            key_max=key_max,
            table_id=str(table_id) if table_id else None,
        )

    def position_at(self, context: CheckContext, upstream: Upstream, at: datetime) -> Watermark:
        """The table as it was at `at`: the newest version its history says was committed by then (none:
        before the table was made, so all of it is new), with the table's id and, with an upstream_key, the
        key's max at that version. Refused when the history no longer holds the versions of then."""
        name = self.name(upstream)
        key = quote_identifier(upstream.upstream_key) if upstream.upstream_key else None
        try:
            with context.spark_until_deadline(upstream.label) as spark:
                history = [
                    (int(r["version"]), _utc(r["timestamp"])) for r in spark.sql(f"DESCRIBE HISTORY {name}").collect()
                ]
                table_id = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["id"]
                version = version_at(upstream, history, at, "history")
                key_max = None
                if key and version >= 0:
                    key_max = spark.sql(f"SELECT max({key}) AS m FROM {name} VERSION AS OF {version}").collect()[0][0]
        except SensorError:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark names the missing table, version or column
            if context.expired:
                raise context.timed_out(upstream.label) from exc
            raise SensorError(f"{upstream.label}: {spark_error_text(exc)}") from exc
        state = TableState(
            upstream.sensor_id,
            version,
            KnownCommits({}),
            key=upstream.upstream_key,
            key_max=key_max,
            table_id=str(table_id) if table_id else None,
        )
        return state.watermark

    @staticmethod
    def new_rows(context: CheckContext, upstream: Upstream, state: TableState, since: Watermark | None) -> DataFrame:
        since = state.of_this_table(since)
        spark = context.session(upstream.label)
        name = quoted_table_name(upstream.label, upstream.sensor_id)
        if upstream.upstream_key:
            key = quote_identifier(upstream.upstream_key)
            previous = key_values.stored_max(since, upstream.upstream_key)
            query = f"SELECT * FROM {name} WHERE {key} <= :upper"
            args: dict[str, Any] = {"upper": state.key_max}
            if previous is not None:
                query += f" AND {key} > :lower"
                args["lower"] = key_values.decode(previous)
            return spark.sql(query, args=args)
        seen = seen_version(since)
        current = f"SELECT * FROM {name} VERSION AS OF {state.version}"
        if seen < 0 or seen > state.version:
            return spark.sql(current)
        return spark.sql(f"{current} EXCEPT ALL SELECT * FROM {name} VERSION AS OF {seen}")


class DeltaSensor(Sensor[TableState]):
    position_names_data = True  # a table version (with its key's max): the same rows

    def __init__(self, storage_options: Mapping[str, str], delta_on_spark: bool) -> None:
        self.paths = PathTables(storage_options)
        self.names = NamedTables(delta_on_spark)

    @classmethod
    def from_settings(cls, settings: DeltaSettings, delta_on_spark: bool) -> DeltaSensor:
        """`delta.storage_options` (object store settings) plus the secrets named in `storage_options_env`,
        read from the environment now. `delta_on_spark`: Spark can read Delta (named tables)."""
        options = dict(settings.storage_options)
        for key, variable in settings.storage_options_env.items():
            options[key] = env_secret(variable, f"delta.storage_options_env.{key}") or ""
        return cls(options, delta_on_spark)

    def check_upstream(self, upstream: Upstream) -> None:
        """A named table only: whether a path holds a table is known by reading it."""
        if not is_path(upstream.sensor_id):
            self.names.name(upstream)

    def read_position(self, context: CheckContext, upstream: Upstream) -> TableState:
        if is_path(upstream.sensor_id):
            return self.paths.position(upstream)
        return self.names.position(context, upstream)

    def detect(self, upstream: Upstream, position: TableState, since: Watermark | None) -> Detection:
        made_again = since is not None and position.of_this_table(since) is None
        since = None if made_again else since
        if upstream.upstream_key:
            return self._detect_key(upstream, position, since)
        seen = seen_version(since)
        if position.version == seen:
            return NothingNew(f"still at version {seen}")
        first = seen + 1 if seen < position.version else 0  # version went back: the table was recreated
        commits, undescribed = commits_between(position.commits, first, position.version)
        if undescribed == 0 and not any(c.change for c in commits):
            return NothingNew(
                f"versions {first}-{position.version} change no data "
                f"({', '.join(sorted({c.operation for c in commits}))})"
            )
        changes = describe_changes(
            upstream.sensor_id, seen, position.version, commits, undescribed, bool(position.partition_columns)
        )
        if made_again:
            where = "at this path" if is_path(upstream.sensor_id) else "of this name"
            changes["note"] = f"the table {where} was made again (its table id changed): all of it is new"
        return NewData(
            watermark=position.watermark,
            changes=changes,
            steps=lambda: version_steps(commits, position.watermark) if undescribed == 0 and first > seen else (),
        )

    @staticmethod
    def _detect_key(upstream: Upstream, position: TableState, since: Watermark | None) -> Detection:
        previous = key_values.stored_max(since, upstream.upstream_key)
        if position.key_max is None:
            return NothingNew(f"no {upstream.upstream_key} value yet (table empty)")
        if not key_values.is_beyond(position.key_max, previous):
            return NothingNew(f"max({upstream.upstream_key}) is still {previous['value'] if previous else None}")
        return NewData(
            watermark=position.watermark,
            changes={
                "upstream_key": upstream.upstream_key,
                "key_from": previous["value"] if previous else None,
                "key_to": position.watermark["max"]["value"],
                "version_to": position.version,
            },
        )

    def new_data_frame(
        self, context: CheckContext, upstream: Upstream, position: TableState, since: Watermark | None
    ) -> DataFrame:
        if not is_path(upstream.sensor_id):
            return self.names.new_rows(context, upstream, position, since)
        rows = self.paths.new_rows(upstream, position, since)
        return context.session(upstream.label).createDataFrame(rows)


def version_steps(commits: Sequence[Commit], watermark: Watermark) -> list[Watermark]:
    """The watermark after each version that changes data (max_range's steps: a snapshot each, one change
    event each), the last one the detection's watermark (versions after it that change no data go with it)."""
    data = [c for c in commits if c.change]
    table = {"table_id": watermark["table_id"]} if "table_id" in watermark else {}
    return [*({"version": c.version, **table} for c in data[:-1]), watermark] if data else []


# --- a job reading its range (harness.consume) ------------------------------------------------------
CDF_PROPERTY = "delta.enableChangeDataFeed"


def read_range(request: RangeRequest) -> DataFrame:
    """With the table's change data feed on (`delta.enableChangeDataFeed`): the feed's rows of the versions
    after `from` up to `to` (`_change_type`, `_commit_version`, `_commit_timestamp`); otherwise the rows of
    the files the commits of those versions added (an UPDATE or MERGE rewrites files: their unchanged rows
    come too; deleted rows are not in any added file). With an upstream_key watermark: the rows of version
    `to` whose key is beyond `from`'s max, up to `to`'s. Never succeeded (`from` empty): the table at `to`."""
    spark, target, start_mark, end = request.spark, request.upstream, request.start, request.end
    version = int(end["version"])
    sensor = build(request.config, target.kind)
    if target.upstream_key or not is_path(target.sensor_id):
        # The sensor's own reads: the key range of version `to`, or Spark's VERSION AS OF for a name.
        end_max = end.get("max")
        position = TableState(
            target.sensor_id,
            version,
            CommitLog(target.sensor_id, sensor.paths.storage_options),
            key=target.upstream_key,
            key_max=key_values.decode(end_max) if end_max else None,
            table_id=end.get("table_id"),  # `from` of another table id: the table was made again in between
        )
        return sensor.new_data_frame(request.context, target, position, start_mark)
    table = sensor.paths.open(target, version)
    if start_mark and start_mark.get("table_id") not in (None, end.get("table_id")):
        start_mark = None  # the range spans the table made again: all of version `to`
    start = seen_version(start_mark)
    schema = from_arrow_schema(spark_compatible(pa.schema(table.schema().to_arrow())))
    if start < 0 or start > version:  # never succeeded, or the table was recreated: all of version `to`
        return parquet_files(spark, table.file_uris(), schema, root=target.sensor_id)
    if start == version:
        return spark.createDataFrame([], schema)
    if table.metadata().configuration.get(CDF_PROPERTY, "false").lower() == "true":
        return arrow_frame(spark, pa.table(table.load_cdf(starting_version=start + 1, ending_version=version)))
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
    return parquet_files(spark, [f"{root}/{unquote(path)}" for path in added], schema, root=root)


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def version_at(upstream: Upstream, history: Sequence[tuple[int, datetime]], at: datetime, held_in: str) -> int:
    """The newest version committed at or before `at` (-1: before the table was made); PositionUnavailable
    when the table's log (`held_in`: its log, or its history) no longer holds the versions of then."""
    versions = sorted(history)
    committed = [v for v, t in versions if t <= at]
    if not committed and versions and versions[0][0] > 0:
        oldest, since = versions[0]
        raise PositionUnavailable(
            f"{upstream.label}: its {held_in} holds versions from {oldest} (committed {since:%Y-%m-%d %H:%M:%S} UTC) "
            f"on; the versions before, current at {at:%Y-%m-%d %H:%M:%S} UTC, were cleaned up (log retention). "
            "Rewind to a later time, or give the position with --watermark"
        )
    return committed[-1] if committed else -1


def _utc(moment: datetime) -> datetime:
    """A commit time from Spark: naive in the session's time zone, which the heartbeat runs in UTC."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def position_at(query: PositionQuery) -> Watermark:
    """The table's version current at the time: a path's from its log (delta-rs), a name's from its
    history (Spark)."""
    sensor = cast(DeltaSensor, query.sensor)
    if is_path(query.upstream.sensor_id):
        return sensor.paths.position_at(query.upstream, query.at)
    return sensor.names.position_at(query.context, query.upstream, query.at)


def build(config: Config, source: SensorSource) -> DeltaSensor:
    """Both kinds read the `delta:` section; named tables are read by Spark when it reads Delta."""
    return DeltaSensor.from_settings(config.sources.delta, delta_on_spark=config.table_format == "delta")


DECLARATION = SensorDeclaration(build=build, read_range=read_range, position_at=position_at)
