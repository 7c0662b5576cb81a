"""published: changes producers register themselves (`python -m harness publish`, `harness.jobs.publish`).

sensor_id is the table name the producer publishes (`sales.orders`, a path: any text, compared
exactly). The position is the table's CHANGE_PUBLISHED events of the last PUBLICATION_WINDOW, read from
the event log's files without Spark (harness.state.event_reader); a row has new data when one of them is newer
than its watermark. Like trigger folders, the watermark keeps the ids published shortly before its
newest time, so a publication recorded late (another process's clock) is still seen, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from harness.core.config import Config
from harness.core.errors import HeartbeatError, SensorError
from harness.core.vocabulary import EventType, SensorSource, upstream_label
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.context import CheckContext
from harness.sensors.declaration import RangeRequest, SensorDeclaration
from harness.state.event_reader import EventQuery, plain, read_events

PUBLICATION_WINDOW = timedelta(days=30)  # a row that never saw a publication sees those of this window
GRACE = timedelta(minutes=10)  # a publication recorded this much behind the newest is still seen


@dataclass(frozen=True)
class Published:
    """The table's publications in the window, oldest first (each the Data Change Event record)."""

    records: tuple[dict[str, Any], ...]

    @property
    def watermark(self) -> Watermark:
        return publication_watermark(self.records)


def publication_time(record: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(record["event_time"])


def publication_watermark(records: tuple[dict[str, Any], ...], floor: datetime | None = None) -> dict[str, Any]:
    times = [publication_time(r) for r in records] + ([floor] if floor else [])
    if not times:
        return {"published_at": None, "recent": []}
    newest = max(times)
    recent = sorted(r["publication_id"] for r in records if publication_time(r) >= newest - GRACE)
    return {"published_at": newest.isoformat(), "recent": recent}


class PublishedSensor(Sensor[Published]):
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def read_position(self, context: CheckContext, upstream: Upstream) -> Published:
        since = datetime.now(timezone.utc) - PUBLICATION_WINDOW
        query = EventQuery(
            since=since, upstream=upstream.label, event_types=(EventType.CHANGE_PUBLISHED.value,), limit=0
        )
        try:
            events = read_events(self.state_dir, query)
        except HeartbeatError as exc:
            raise SensorError(f"{upstream.label}: cannot read the published changes: {exc}") from exc
        records = tuple(
            plain(e)["details"] for e in events if upstream_label(e["sensor_source"], e["sensor_id"]) == upstream.label
        )
        return Published(tuple(sorted(records, key=publication_time)))

    def detect(self, upstream: Upstream, position: Published, since: Watermark | None) -> Detection:
        seen = datetime.fromisoformat(since["published_at"]) if since and since.get("published_at") else None
        recent = set(since.get("recent", [])) if since else set()
        new = [
            r
            for r in position.records
            if seen is None
            or publication_time(r) > seen
            or (publication_time(r) >= seen - GRACE and r["publication_id"] not in recent)
        ]
        if not new:
            return NothingNew(f"nothing published since {seen.isoformat() if seen else 'the start'}")
        operations = sorted({r["operation"] for r in new})
        partitions = [r["partition_values"] for r in new if r["partition_values"]]
        changes = {
            "operation": operations[0] if len(operations) == 1 else "UPDATE",
            "operations": operations,
            "publications": new,
            "publication_count": len(new),
            "partitions": [dict(p) for p in {tuple(sorted(p.items())): p for p in partitions}.values()],
        }
        return NewData(watermark=publication_watermark(position.records, seen), changes=changes)


# --- a job reading its range (harness.consume) ------------------------------------------------------
PUBLICATION_SCHEMA = (
    "table string, snapshot_id string, operation string, partition_values map<string,string>, "
    "tags map<string,string>, event_time timestamp, publication_id string"
)


def read_range(request: RangeRequest) -> DataFrame:
    """The Data Change Events producers published in the range."""
    sensor, target = PublishedSensor(request.config.state_dir), request.upstream
    position = sensor.read_position(request.context, target)
    end = request.end.get("published_at")
    records = [r for r in position.records if end and publication_time(r) <= datetime.fromisoformat(end)]
    new = sensor.detect(target, Published(tuple(records)), request.start)
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
    return request.spark.createDataFrame(rows, PUBLICATION_SCHEMA)


def build(config: Config, source: SensorSource) -> PublishedSensor:
    return PublishedSensor(config.state_dir)


DECLARATION = SensorDeclaration(build=build, read_range=read_range)
