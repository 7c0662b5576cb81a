"""The data change event: one record per snapshot of a table, the same for every table format.

A table sensor describes each new snapshot (a Delta version, an Iceberg snapshot, a Hive partition's
new files) as a `ChangeEvent` with the same fields, so a job reads its range the same way whatever the
format: when, which table, which snapshot after which, APPEND / UPDATE / DELETE, the partitions it
touched, and the tags the writer attached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

MAX_EVENTS = 100  # events described per detection and per upstream of a range; older ones are counted

PartitionValues = Mapping[str, str | None]


@dataclass(frozen=True)
class ChangeEvent:
    event_time: str | None  # when the change was committed (the snapshot's time)
    table: str
    table_format: str  # delta / iceberg / hive
    snapshot_id: int | str | None
    snapshot_time: str | None
    previous_snapshot_id: int | str | None
    operation: str  # APPEND / UPDATE / DELETE
    partition_values: tuple[PartitionValues, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "event_time": self.event_time,
            "table": self.table,
            "table_format": self.table_format,
            "snapshot_id": self.snapshot_id,
            "snapshot_time": self.snapshot_time,
            "previous_snapshot_id": self.previous_snapshot_id,
            "operation": self.operation,
            "partition_values": [dict(p) for p in self.partition_values],
            "tags": dict(self.tags),
        }

    def touches(self, partition: Sequence[tuple[str, str]]) -> bool:
        """The event touched a partition matching these (column, value) pairs (a subset of its columns)."""
        return any(
            all(str(values.get(column)) == value for column, value in partition) for values in self.partition_values
        )


def described(events: Sequence[ChangeEvent]) -> dict[str, Any]:
    """The `events` of a detection's details: the newest MAX_EVENTS, and how many older ones were left out."""
    kept = list(events)[-MAX_EVENTS:]
    out: dict[str, Any] = {"events": [e.as_dict() for e in kept]}
    if len(events) > len(kept):
        out["events_not_listed"] = len(events) - len(kept)
    return out


def overall_operation(operations: Iterable[str | None]) -> str | None:
    """One word for several changes: their operation when they agree, else UPDATE; None: no data change."""
    kinds = {o for o in operations if o}
    return kinds.pop() if len(kinds) == 1 else ("UPDATE" if kinds else None)
