"""Partition triggers: a row with a `partition_filter` waits for the partitions it names instead of any
new snapshot. The same for every partitioned table format: a sensor's position offers its partitions
(each with a fingerprint of its data files) and the change events since a watermark.

A row is NEW_EVENT_AVAILABLE when, at the tick's time:
  - every partition the filter names has data (a named partition may fix only some of the partition
    columns: `ds=2026-01-05` on a table partitioned by ds and hour is every hour of that day);
  - at least one of them is not yet acted on: its fingerprint differs from the one in the row's
    watermark (never acted on, or overwritten since: new files replaced the ones acted on);
  - with `tags`: a change that made a changed partition's data carries all of them (since the
    watermark for a partition acted on before, any retained change for one never acted on).
The watermark keeps the position's own fields plus `partitions`: the fingerprints of the named
partitions acted on, so it holds only what the filter names now.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Protocol, Sequence, runtime_checkable

from harness.core.errors import SensorError
from harness.core.partition_filter import Partition, PartitionFilter, partition_name, tags_match
from harness.sensors.base import Detection, NewData, NothingNew, Watermark
from harness.sensors.change_events import ChangeEvent, described


@dataclass(frozen=True)
class PartitionContent:
    """One partition of a table now: its values and a fingerprint that changes whenever its data does."""

    values: Mapping[str, str | None]
    fingerprint: str

    def matches(self, partition: Partition) -> bool:
        return all(str(self.values.get(column)) == value for column, value in partition)


@runtime_checkable
class PartitionedPosition(Protocol):
    @property
    def watermark(self) -> Watermark: ...

    @property
    def partition_columns(self) -> tuple[str, ...]: ...

    def partition_contents(self) -> Sequence[PartitionContent]:
        """Every partition with data in the current snapshot."""

    def events_since(self, since: Watermark | None) -> list[ChangeEvent]:
        """The change events after the row's watermark, oldest first (at most the newest MAX_EVENTS)."""

    def lists_every_change_since(self, since: Watermark | None) -> bool:
        """Whether events_since(since) holds every change of data after the watermark (the table's log
        reaches back to it, within the limit), so a partition none of them touches had its files only
        rewritten (a compaction); False where the table keeps no such log."""


def fingerprint(parts: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()[:16]


def detect_partitions(
    label: str,
    position: PartitionedPosition,
    trigger: PartitionFilter,
    tags: Mapping[str, str],
    since: Watermark | None,
    at: datetime,
) -> Detection:
    """One row's partition trigger at the tick's time `at`."""
    unknown = sorted(trigger.columns - set(position.partition_columns))
    if unknown:
        columns = ", ".join(position.partition_columns) or "nothing (not partitioned)"
        raise SensorError(
            f"{label}: partition_filter {trigger.text!r} names {', '.join(unknown)}, "
            f"but the table is partitioned by {columns}"
        )
    wanted = trigger.render(at)
    contents = position.partition_contents()
    ready: dict[str, str] = {}
    missing: list[str] = []
    for partition in wanted:
        matched = [c.fingerprint for c in contents if c.matches(partition)]
        if matched:
            ready[partition_name(partition)] = fingerprint(matched)
        else:
            missing.append(partition_name(partition))
    if missing:
        return NothingNew(f"waiting for partition {', '.join(missing)} (no data yet)")
    acted = dict((since or {}).get("partitions") or {})
    changed = [name for name, digest in ready.items() if acted.get(name) != digest]
    if not changed:
        return NothingNew(f"partition {', '.join(ready)} already acted on, unchanged since")
    changed_partitions = [p for p in wanted if partition_name(p) in changed]
    events = _events_of(position, since, changed_partitions, acted)
    rewritten = _rewritten_only(position, since, changed_partitions, acted, events)
    changed = [name for name in changed if name not in rewritten]
    if not changed:
        return NothingNew(
            f"partition {', '.join(rewritten)} acted on, its files since rewritten without a change of data "
            "(a compaction)"
        )
    if tags and not any(tags_match(tags, e.tags) for e in events):
        wanted_tags = ";".join(f"{k}={v}" for k, v in tags.items())
        return NothingNew(f"partition {', '.join(changed)} changed, but no change of it carries the tags {wanted_tags}")
    return NewData(
        watermark={**position.watermark, "partitions": ready},
        changes={
            "partition_filter": trigger.text,
            "partitions_ready": list(ready),
            "partitions_changed": changed,
            "partitions_overwritten": [name for name in changed if name in acted],
            **described(events),
        },
    )


def _rewritten_only(
    position: PartitionedPosition,
    since: Watermark | None,
    changed: list[Partition],
    acted: Mapping[str, str],
    events: list[ChangeEvent],
) -> list[str]:
    """The partitions acted on whose files changed while no change of data since the watermark touches
    them (OPTIMIZE, an Iceberg `replace`): the same data, not new. Only where the table's log lists
    every change since; else any change of files counts."""
    names = [partition_name(p) for p in changed if partition_name(p) in acted and not any(e.touches(p) for e in events)]
    return names if names and position.lists_every_change_since(since) else []


def _events_of(
    position: PartitionedPosition, since: Watermark | None, changed: list[Partition], acted: Mapping[str, str]
) -> list[ChangeEvent]:
    """The change events behind the changed partitions: since the watermark for a partition acted on
    before (its overwrite), every retained one for a partition never acted on (it may have landed
    before the row's watermark moved for another partition)."""
    fresh = [p for p in changed if partition_name(p) not in acted]
    recent = position.events_since(since)
    pool = position.events_since(None) if fresh else recent
    recent_ids = {e.snapshot_id for e in recent}
    return [
        e
        for e in pool
        if any(e.touches(p) for p in fresh) or (e.snapshot_id in recent_ids and any(e.touches(p) for p in changed))
    ]
