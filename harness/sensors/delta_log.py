"""A Delta table's commit log, as far as the sensor cares: what each version changed, and the
description of a range of versions that goes into an event. Pure: commit files and history rows in,
`Commit`s and dicts out; reading them from a table is `harness.sensors.delta`'s part.

A version changes data when its commit adds or removes files with `dataChange` (APPEND / UPDATE /
DELETE); OPTIMIZE, VACUUM and property changes do not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Protocol

from harness.sensors.change_events import ChangeEvent, described, overall_operation

MAX_DETAILED_COMMITS = 100  # commits described in one event; older ones are counted, not described
_DATA_OPERATIONS = {
    "DELETE": "DELETE",
    "UPDATE": "UPDATE",
    "MERGE": "UPDATE",
    "RESTORE": "UPDATE",
    "TRUNCATE": "DELETE",
}
_WRITE_MODES = {"append": "APPEND", "overwrite": "UPDATE"}

Partition = tuple[tuple[str, str | None], ...]  # (column, value) pairs, sorted
# commitInfo fields Delta writers set themselves; any other text field is a tag its writer attached
# (delta-rs `CommitProperties(custom_metadata=...)`, Spark's `userMetadata`).
_COMMIT_INFO_FIELDS = {
    "timestamp",
    "operation",
    "operationParameters",
    "operationMetrics",
    "engineInfo",
    "clientVersion",
    "isolationLevel",
    "isBlindAppend",
    "txnId",
    "readVersion",
    "userId",
    "userName",
    "clusterId",
    "job",
    "notebook",
    "inCommitTimestamp",
}


@dataclass(frozen=True)
class Commit:
    """One table version."""

    version: int
    timestamp: str | None
    operation: str
    change: str | None  # APPEND / UPDATE / DELETE, None when the commit changes no data
    partitions: tuple[Partition, ...] = ()
    added_files: tuple[str, ...] = ()
    tags: tuple[tuple[str, str], ...] = ()

    def describe(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "timestamp": self.timestamp,
            "operation": self.operation,
            "change": self.change,
        }

    def change_event(self, table: str) -> ChangeEvent:
        """The version as a data change event (only for versions that change data)."""
        return ChangeEvent(
            event_time=self.timestamp,
            table=table,
            table_format="delta",
            snapshot_id=self.version,
            snapshot_time=self.timestamp,
            previous_snapshot_id=self.version - 1 if self.version > 0 else None,
            operation=self.change or "UPDATE",
            partition_values=tuple(dict(p) for p in self.partitions),
            tags=dict(self.tags),
        )


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
        tags=tuple(sorted((k, v) for k, v in info.items() if isinstance(v, str) and k not in _COMMIT_INFO_FIELDS)),
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
    return Commit(
        version=int(entry["version"]),
        timestamp=_commit_time(entry.get("timestamp")),
        operation=operation,
        change=change_kind(operation, parameters, adds, removes),
    )


class CommitSource(Protocol):
    def commit(self, version: int) -> Commit | None:
        """The commit of `version`, or None when it can no longer be read (log cleaned up)."""


@dataclass(frozen=True)
class KnownCommits:
    """Commits already read (the rows of one DESCRIBE HISTORY, or literal ones in a test)."""

    by_version: Mapping[int, Commit]

    def commit(self, version: int) -> Commit | None:
        return self.by_version.get(version)


def commits_between(source: CommitSource, first: int, last: int) -> tuple[list[Commit], int]:
    """The newest commits from `first` to `last` (at most MAX_DETAILED_COMMITS), and how many versions
    of that range could not be described (beyond the limit, or no longer readable)."""
    versions = range(max(first, last - MAX_DETAILED_COMMITS + 1), last + 1)
    commits = [c for c in map(source.commit, versions) if c is not None]
    return commits, (last - first + 1) - len(commits)


def overall_change(commits: Iterable[Commit]) -> str | None:
    """One word for several commits: their change when they agree, else UPDATE; None: no data change."""
    return overall_operation(c.change for c in commits)


def describe_changes(
    table: str, seen: int, version: int, commits: list[Commit], undescribed: int, partitioned: bool
) -> dict[str, Any]:
    """The event's details for versions after `seen` (-1: never sensed) up to `version`."""
    data = [c for c in commits if c.change]
    changes: dict[str, Any] = {
        "version_from": seen if seen >= 0 else None,
        "version_to": version,
        "operation": overall_change(data),
        "operations": sorted({c.change for c in data if c.change}),
        "commits": [c.describe() for c in commits],
        "commit_timestamp_from": commits[0].timestamp if commits else None,
        "commit_timestamp_to": commits[-1].timestamp if commits else None,
        **described([c.change_event(table) for c in data]),
    }
    if seen > version:
        changes["note"] = f"version went back from {seen} to {version}: the table was recreated"
    if undescribed:
        changes["commits_not_described"] = changes["events_not_listed"] = undescribed
    if partitioned:
        touched = {p for c in data for p in c.partitions}
        changes["partitions"] = [dict(p) for p in sorted(touched)] if not undescribed else None
    return changes
