"""delta_table / lmu_delta_table: new table versions beyond the watermark.

sensor_id is a path or URI (`/lake/sales/orders`, `s3://bucket/orders`): the table is read with
`deltalake` (delta-rs, no JVM): its version, then, only when there is something new, the commit files
of the new versions (commit time, operation, add/remove actions and the partition values they touch).
A named table (`db.table`, `catalog.db.table`) goes through Spark's `DESCRIBE HISTORY`, which needs
Delta on Spark's classpath (Databricks).

Without upstream_key the watermark is `{"version": v}`; versions whose commits change no data
(OPTIMIZE, VACUUM, property changes: no add/remove with dataChange) are not new data. With
upstream_key (the manual-upload case) the watermark is the max of that column, from the files'
statistics where they are exact (integers, decimals, dates), else from a scan of that one column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Protocol
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError
from deltalake.fs import DeltaStorageHandler
from pyspark.sql import DataFrame, SparkSession

from harness.config import env_secret
from harness.errors import SensorError
from harness.model import SensorSource
from harness.preprocess import quote_identifier
from harness.sensors import key_values
from harness.sensors.base import Detection, NewData, NothingNew, Position, Sensor, Upstream, Watermark
from harness.sensors.spark_access import harness_spark, quoted_table_name, spark_error_text

MAX_DETAILED_COMMITS = 100  # commits described in one event; older ones are counted, not described
_DATA_OPERATIONS = {"DELETE": "DELETE", "UPDATE": "UPDATE", "MERGE": "UPDATE", "RESTORE": "UPDATE",
                    "TRUNCATE": "DELETE"}
_WRITE_MODES = {"append": "APPEND", "overwrite": "UPDATE"}


def is_path(sensor_id: str) -> bool:
    return "/" in sensor_id or "://" in sensor_id


@dataclass(frozen=True)
class Commit:
    """One table version, as far as the sensor cares."""

    version: int
    timestamp: str | None
    operation: str
    change: str | None  # APPEND / UPDATE / DELETE, None when the commit changes no data
    partitions: tuple[tuple[tuple[str, str | None], ...], ...] = ()
    added_files: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        return {"version": self.version, "timestamp": self.timestamp, "operation": self.operation,
                "change": self.change}


def change_kind(operation: str, parameters: Mapping[str, Any], adds: int, removes: int) -> str | None:
    """APPEND / UPDATE / DELETE from the commit's operation, else from its actions; None: no data change."""
    if adds == 0 and removes == 0:
        return None
    if operation in _DATA_OPERATIONS:
        return _DATA_OPERATIONS[operation]
    mode = str(parameters.get("mode", "")).lower()
    if mode in _WRITE_MODES:
        return _WRITE_MODES[mode]
    if adds and removes:
        return "UPDATE"
    return "APPEND" if adds else "DELETE"


def _commit_time(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    return datetime.fromtimestamp(int(value) / 1000, tz=timezone.utc).isoformat()


def parse_commit(version: int, lines: Iterable[str]) -> Commit:
    """A commit file (`_delta_log/<version>.json`, one action per line) -> Commit."""
    info: Mapping[str, Any] = {}
    adds, removes = [], []
    for line in lines:
        if not line.strip():
            continue
        action = json.loads(line)
        if "commitInfo" in action:
            info = action["commitInfo"]
        elif "add" in action and action["add"].get("dataChange", True):
            adds.append(action["add"])
        elif "remove" in action and action["remove"].get("dataChange", True):
            removes.append(action["remove"])
    parameters = info.get("operationParameters") or {}
    partitions = {tuple(sorted((a.get("partitionValues") or {}).items())) for a in adds + removes}
    return Commit(
        version=version,
        timestamp=_commit_time(info.get("timestamp")),
        operation=str(info.get("operation", "UNKNOWN")),
        change=change_kind(str(info.get("operation", "")), parameters, len(adds), len(removes)),
        partitions=tuple(sorted(p for p in partitions if p)),
        added_files=tuple(a["path"] for a in adds),
    )


def commit_from_history(entry: Mapping[str, Any]) -> Commit:
    """A row of `DESCRIBE HISTORY` -> Commit (no partitions: history does not carry actions)."""
    operation = str(entry.get("operation", "UNKNOWN"))
    parameters = entry.get("operationParameters") or {}
    metrics = entry.get("operationMetrics") or {}
    adds = int(metrics.get("numAddedFiles", metrics.get("numFiles", 0)) or 0)
    removes = int(metrics.get("numRemovedFiles", 0) or 0) + int(metrics.get("numDeletedRows", 0) or 0)
    if operation in _DATA_OPERATIONS or str(parameters.get("mode", "")).lower() in _WRITE_MODES:
        adds = max(adds, 1)
    if operation.startswith(("OPTIMIZE", "VACUUM")):
        adds = removes = 0  # rewrites files, never data
    return Commit(version=int(entry["version"]), timestamp=_commit_time(entry.get("timestamp")), operation=operation,
                  change=change_kind(operation, parameters, adds, removes))


class CommitSource(Protocol):
    def commit(self, version: int) -> Commit | None:
        """The commit of `version`, or None when it can no longer be read (log cleaned up)."""


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


@dataclass(frozen=True)
class HistoryCommits:
    """Commits of a named table, from one DESCRIBE HISTORY."""

    by_version: Mapping[int, Commit]

    def commit(self, version: int) -> Commit | None:
        return self.by_version.get(version)


@dataclass(frozen=True)
class TableState:
    """What `read_position` saw: the version, and how to read the commits behind it."""

    version: int
    commits: CommitSource
    partition_columns: tuple[str, ...] = ()
    key_max: Any = None


class DeltaSensor(Sensor):
    sources = (SensorSource.DELTA_TABLE, SensorSource.LMU_DELTA_TABLE)

    @property
    def storage_options(self) -> dict[str, str]:
        """`delta.storage_options` (object store settings) plus secrets named in `storage_options_env`."""
        settings = self.config.delta
        options = dict(settings.storage_options)
        for key, variable in settings.storage_options_env.items():
            options[key] = env_secret(variable, f"delta.storage_options_env.{key}") or ""
        return options

    # --- position --------------------------------------------------------------------------------
    def read_position(self, upstream: Upstream) -> Position:
        if is_path(upstream.sensor_id):
            return self._path_position(upstream)
        return self._named_position(upstream)

    def _open(self, upstream: Upstream, version: int | None = None) -> DeltaTable:
        try:
            return DeltaTable(upstream.sensor_id, version=version, storage_options=self.storage_options or None)
        except (DeltaError, OSError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SensorError(f"{upstream.label}: cannot read the Delta table: {first}; "
                              "check the path (sensor_id) and delta.storage_options") from exc

    def _path_position(self, upstream: Upstream) -> Position:
        table = self._open(upstream)
        version = table.version()
        state = TableState(version, CommitLog(upstream.sensor_id, self.storage_options),
                           tuple(table.metadata().partition_columns))
        if not upstream.upstream_key:
            return Position(watermark={"version": version}, observed=state)
        key_max = self._key_max(upstream, table)
        return self._key_position(upstream, state, key_max)

    @staticmethod
    def _key_position(upstream: Upstream, state: TableState, key_max: Any) -> Position:
        encoded = key_values.encode(key_max) if key_max is not None else None
        watermark = {"version": state.version, "key": upstream.upstream_key, "max": encoded}
        return Position(watermark=watermark, observed=replace(state, key_max=key_max))

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
            exact = pa.types.is_integer(column.type) or pa.types.is_decimal(column.type) or pa.types.is_date(column.type)
            if exact and column.null_count == 0:
                return pc.max(column).as_py()
        dataset = table.to_pyarrow_dataset()
        if key not in dataset.schema.names:
            raise SensorError(f"{upstream.label}: upstream_key {key!r} is not a column of the table "
                              f"(columns: {', '.join(dataset.schema.names)})")
        return pc.max(dataset.to_table(columns=[key]).column(key)).as_py()

    def _named_position(self, upstream: Upstream) -> Position:
        spark = harness_spark(upstream.label)
        if self.config.table_format != "delta":
            raise SensorError(
                f"{upstream.label}: a named table is read with Spark's DESCRIBE HISTORY, which needs Delta on "
                "Spark's classpath (not found in this session); give the table's path or URI as sensor_id "
                "instead (e.g. /lake/sales/orders or s3://bucket/sales/orders)")
        name = quoted_table_name(upstream.label, upstream.sensor_id)
        try:
            history = [r.asDict() for r in spark.sql(f"DESCRIBE HISTORY {name} LIMIT {MAX_DETAILED_COMMITS}").collect()]
            key_max = (spark.sql(f"SELECT max({quote_identifier(upstream.upstream_key)}) AS m FROM {name}").collect()[0][0]
                       if upstream.upstream_key else None)
        except Exception as exc:  # noqa: BLE001 - Spark analysis errors name the missing table or column
            raise SensorError(f"{upstream.label}: {spark_error_text(exc)}") from exc
        commits = {c.version: c for c in map(commit_from_history, history)}
        state = TableState(max(commits, default=-1), HistoryCommits(commits))
        if upstream.upstream_key:
            return self._key_position(upstream, state, key_max)
        return Position(watermark={"version": state.version}, observed=state)

    # --- detection -------------------------------------------------------------------------------
    def detect(self, upstream: Upstream, position: Position, since: Watermark | None) -> Detection:
        state: TableState = position.observed
        if upstream.upstream_key:
            return self._detect_key(upstream, position, since)
        seen = int(since["version"]) if since and "version" in since else -1
        if state.version == seen:
            return NothingNew(f"still at version {seen}")
        first = seen + 1 if seen < state.version else 0  # version went back: the table was recreated
        commits, undescribed = self._commits(state, first)
        if undescribed == 0 and not any(c.change for c in commits):
            return NothingNew(f"versions {first}-{state.version} change no data "
                              f"({', '.join(sorted({c.operation for c in commits}))})")
        return NewData(watermark=position.watermark, changes=self._changes(state, seen, commits, undescribed))

    @staticmethod
    def _commits(state: TableState, first: int) -> tuple[list[Commit], int]:
        """The newest commits from `first` to the current version, and how many could not be described."""
        versions = range(max(first, state.version - MAX_DETAILED_COMMITS + 1), state.version + 1)
        commits = [c for c in map(state.commits.commit, versions) if c is not None]
        return commits, (state.version - first + 1) - len(commits)

    @staticmethod
    def _changes(state: TableState, seen: int, commits: list[Commit], undescribed: int) -> dict[str, Any]:
        data = [c for c in commits if c.change]
        changes: dict[str, Any] = {
            "version_from": seen if seen >= 0 else None,
            "version_to": state.version,
            "operation": _overall(data),
            "operations": sorted({c.change for c in data if c.change}),
            "commits": [c.describe() for c in commits],
            "commit_timestamp_from": commits[0].timestamp if commits else None,
            "commit_timestamp_to": commits[-1].timestamp if commits else None,
        }
        if seen > state.version:
            changes["note"] = f"version went back from {seen} to {state.version}: the table was recreated"
        if undescribed:
            changes["commits_not_described"] = undescribed
        if state.partition_columns:
            touched = {p for c in data for p in c.partitions}
            changes["partitions"] = [dict(p) for p in sorted(touched)] if not undescribed else None
        return changes

    @staticmethod
    def _detect_key(upstream: Upstream, position: Position, since: Watermark | None) -> Detection:
        state: TableState = position.observed
        previous = since.get("max") if since else None
        if state.key_max is None:
            return NothingNew(f"no {upstream.upstream_key} value yet (table empty)")
        if not key_values.is_beyond(state.key_max, previous):
            return NothingNew(f"max({upstream.upstream_key}) is still {previous['value'] if previous else None}")
        return NewData(watermark=position.watermark, changes={
            "upstream_key": upstream.upstream_key,
            "key_from": previous["value"] if previous else None,
            "key_to": position.watermark["max"]["value"],
            "version_to": state.version,
        })

    # --- the new rows, for preprocess_query --------------------------------------------------------
    def new_data_frame(self, spark: SparkSession, upstream: Upstream, position: Position,
                       since: Watermark | None) -> DataFrame:
        state: TableState = position.observed
        if not is_path(upstream.sensor_id):
            return self._named_frame(spark, upstream, state, since)
        dataset = self._open(upstream, state.version).to_pyarrow_dataset()
        if upstream.upstream_key:
            rows = dataset.to_table(filter=self._key_filter(upstream, state, since))
        else:
            rows = self._added_rows(dataset, state, since)
        return spark.createDataFrame(rows)

    @staticmethod
    def _key_filter(upstream: Upstream, state: TableState, since: Watermark | None) -> pc.Expression:
        key = pc.field(str(upstream.upstream_key))
        bound = key <= state.key_max
        previous = since.get("max") if since else None
        return bound if previous is None else (key > key_values.decode(previous)) & bound

    def _added_rows(self, dataset: pds.Dataset, state: TableState, since: Watermark | None) -> pa.Table:
        """Rows of the files the new commits added (whole snapshot when a commit cannot be read)."""
        seen = int(since["version"]) if since and "version" in since else -1
        if seen < 0 or seen > state.version:
            return dataset.to_table()
        commits, undescribed = self._commits(state, seen + 1)
        if undescribed:
            return dataset.to_table()
        added = {p for c in commits for f in c.added_files for p in (f, unquote(f))}
        fragments = [f for f in dataset.get_fragments() if f.path in added or unquote(f.path) in added]
        return pds.FileSystemDataset(fragments, dataset.schema, dataset.format, dataset.filesystem).to_table()

    @staticmethod
    def _named_frame(spark: SparkSession, upstream: Upstream, state: TableState,
                     since: Watermark | None) -> DataFrame:
        name = quoted_table_name(upstream.label, upstream.sensor_id)
        if upstream.upstream_key:
            key = quote_identifier(upstream.upstream_key)
            previous = since.get("max") if since else None
            query = f"SELECT * FROM {name} WHERE {key} <= :upper"
            args: dict[str, Any] = {"upper": state.key_max}
            if previous is not None:
                query += f" AND {key} > :lower"
                args["lower"] = key_values.decode(previous)
            return spark.sql(query, args=args)
        seen = int(since["version"]) if since and "version" in since else -1
        current = f"SELECT * FROM {name} VERSION AS OF {state.version}"
        if seen < 0 or seen > state.version:
            return spark.sql(current)
        return spark.sql(f"{current} EXCEPT ALL SELECT * FROM {name} VERSION AS OF {seen}")


def _overall(data: list[Commit]) -> str | None:
    kinds = {c.change for c in data}
    return kinds.pop() if len(kinds) == 1 else ("UPDATE" if kinds else None)
