"""Where an upstream was at a time (`harness rewind`), each source kind in its own module, against the real
component: trigger folders, delta-rs tables, librdkafka's mock cluster; the time-to-key rule of JDBC keys."""

from __future__ import annotations

import time
from contextlib import contextmanager
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from harness.core.errors import PositionUnavailable, SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors import declaration_of, key_values
from harness.sensors.base import Upstream
from harness.sensors.declaration import PositionQuery
from harness.sensors.delta import DeltaSensor, seen_version
from harness.sensors.kafka import KafkaSensor, TopicOffsets, offsets_at
from harness.sensors.trigger_file import TriggerFileSensor, files_in_range
from tests.fixtures_sources import a_moment_later, check_context, sensor_config
from tests.kafka_mock import MockKafka

pytestmark = pytest.mark.unit


def position(kind: SensorSource, sensor: object, upstream: Upstream, at: datetime) -> dict[str, object]:
    lookup = declaration_of(kind).position_at
    assert lookup is not None
    return dict(lookup(PositionQuery(sensor, check_context(), upstream, at)))  # type: ignore[arg-type]


def test_a_trigger_folder_at_a_time_holds_the_files_landed_by_then_so_its_range_takes_the_later_ones(
    tmp_path: Path,
) -> None:
    # GIVEN a trigger folder where a file landed before T and two after
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "friday").write_text("1")
    at = a_moment_later()
    (folder / "saturday").write_text("2")
    (folder / "monday").write_text("3")
    upstream = Upstream(SensorSource.TRIGGER_FILE, "in")

    # WHEN the folder's position at T is asked
    watermark = position(SensorSource.TRIGGER_FILE, TriggerFileSensor(tmp_path), upstream, at)

    # THEN it is the folder as of T, and the range from there to now takes exactly the files landed after T
    assert watermark["recent"] == ["friday"]
    now = TriggerFileSensor(tmp_path).read_position(check_context(), upstream).watermark
    assert [p.name for p in files_in_range(folder, watermark, now)] == ["saturday", "monday"]


def test_a_trigger_folder_before_its_first_file_is_the_start_everything_comes(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    at = a_moment_later()
    (tmp_path / "in" / "a").write_text("1")

    watermark = position(
        SensorSource.TRIGGER_FILE, TriggerFileSensor(tmp_path), Upstream(SensorSource.TRIGGER_FILE, "in"), at
    )

    assert watermark == {"changed_ns": 0, "recent": []}


@pytest.fixture
def delta(tmp_path: Path) -> DeltaSensor:
    return DeltaSensor.from_settings(sensor_config(tmp_path).sources.delta, delta_on_spark=False)


def test_a_delta_table_at_a_time_is_the_version_current_then(delta: DeltaSensor, tmp_path: Path) -> None:
    # GIVEN a table written at versions 0 and 1 before T and 2 after
    path = str(tmp_path / "orders")
    write_deltalake(path, pa.table({"id": [1]}))
    write_deltalake(path, pa.table({"id": [2]}), mode="append")
    at = a_moment_later()
    write_deltalake(path, pa.table({"id": [3]}), mode="append")

    # WHEN its position at T is asked
    watermark = position(SensorSource.DELTA_TABLE, delta, Upstream(SensorSource.DELTA_TABLE, path), at)

    # THEN it is version 1, of this table (its id)
    assert watermark == {"version": 1, "table_id": DeltaTable(path).metadata().id}


def test_a_delta_table_before_its_first_commit_is_before_version_0_all_of_it_new(
    delta: DeltaSensor, tmp_path: Path
) -> None:
    path = str(tmp_path / "orders")
    at = a_moment_later()
    write_deltalake(path, pa.table({"id": [1]}))

    watermark = position(SensorSource.DELTA_TABLE, delta, Upstream(SensorSource.DELTA_TABLE, path), at)

    assert seen_version(watermark) == -1 and watermark["table_id"] == DeltaTable(path).metadata().id


def test_a_delta_version_whose_files_were_vacuumed_is_refused_naming_the_file(
    delta: DeltaSensor, tmp_path: Path
) -> None:
    # GIVEN a table overwritten after T, and vacuumed: the files of the version current at T are gone
    path = str(tmp_path / "orders")
    write_deltalake(path, pa.table({"id": [1]}))
    at = a_moment_later()
    write_deltalake(path, pa.table({"id": [2]}), mode="overwrite")
    DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)

    # WHEN its position at T is asked THEN it is refused: the table no longer holds that version
    with pytest.raises(PositionUnavailable, match=r"version 0 holds .*gone \(VACUUM\).*Rewind to a later time"):
        position(SensorSource.DELTA_TABLE, delta, Upstream(SensorSource.DELTA_TABLE, path), at)


def test_a_named_delta_table_on_a_spark_without_delta_is_refused_naming_what_to_change(delta: DeltaSensor) -> None:
    # GIVEN this machine's Spark, which cannot read Delta: WHEN a named table's position is asked THEN it is
    # refused, saying so and what to give instead
    with pytest.raises(SensorError, match="needs Delta on Spark's classpath.*path or URI as sensor_id"):
        position(
            SensorSource.DELTA_TABLE,
            delta,
            Upstream(SensorSource.DELTA_TABLE, "sales.orders"),
            datetime.now(timezone.utc),
        )


def test_a_kafka_topic_at_a_time_after_its_messages_is_its_end_offsets(kafka: MockKafka, tmp_path: Path) -> None:
    # GIVEN a topic with messages on two partitions, all written before T (the mock cluster answers a
    # time lookup only with "none at or after it", as a real broker does for a time after the last message)
    topic = f"rewind-{time.time_ns()}"
    kafka.produce(topic, "a", "b", partition=0)
    kafka.produce(topic, "c", partition=2)
    sensor = KafkaSensor.from_settings(
        sensor_config(tmp_path, kafka={"bootstrap_servers": kafka.bootstrap_servers}).sources.kafka
    )

    # WHEN its position at T is asked, through the consumer's offsets_for_times
    watermark = position(SensorSource.KAFKA, sensor, Upstream(SensorSource.KAFKA, topic), a_moment_later())

    # THEN it is every partition's end offset: nothing written since
    assert watermark == {"offsets": {"0": 2, "1": 0, "2": 1, "3": 0}}


def test_kafka_offsets_for_a_time_map_each_partition_and_expired_messages_are_refused() -> None:
    upstream = Upstream(SensorSource.KAFKA, "orders")
    at = datetime(2026, 12, 4, 17, 0, tzinfo=timezone.utc)
    now = TopicOffsets("orders", earliest={0: 0, 1: 40}, end={0: 10, 1: 90})

    # a partition's first message from T, and one with none from T (its end)
    assert offsets_at(upstream, now, {0: 7, 1: -1}, at) == {"offsets": {"0": 7, "1": 90}}
    # the first message from T is the earliest retained, and retention deleted older ones
    with pytest.raises(PositionUnavailable, match="partition 1 no longer holds the messages from 2026-12-04 17:00:00"):
        offsets_at(upstream, now, {0: 7, 1: 40}, at)


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        (datetime(2026, 12, 7, 9, 0), datetime(2026, 12, 4, 17, 0)),  # naive timestamps: naive UTC
        (datetime(2026, 12, 7, 9, 0, tzinfo=timezone.utc), datetime(2026, 12, 4, 17, 0, tzinfo=timezone.utc)),
        (date(2026, 12, 7), date(2026, 12, 3)),  # a date key: T's own day comes too
        (None, None),  # an empty table
    ],
)
def test_a_time_key_at_a_time_is_that_time(current: key_values.KeyValue | None, expected: object) -> None:
    at = datetime(2026, 12, 4, 18, 0, tzinfo=timezone(timedelta(hours=1)))
    assert key_values.value_at(current, at) == expected


def test_a_key_no_time_maps_to_is_refused() -> None:
    with pytest.raises(ValueError, match="type int, which no time maps to"):
        key_values.value_at(1200, datetime.now(timezone.utc))


def test_every_kind_that_maps_a_time_says_so_in_its_declaration() -> None:
    mapped = {kind for kind in SensorSource if declaration_of(kind).position_at is not None}
    assert {SensorSource.TRIGGER_FILE, SensorSource.DELTA_TABLE, SensorSource.KAFKA, SensorSource.JDBC} <= mapped


def test_an_iceberg_table_at_a_time_is_the_snapshot_current_then_and_an_expired_one_is_refused(
    tmp_path: Path,
) -> None:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    from harness.sensors.iceberg import IcebergSensor

    # GIVEN an Iceberg table in a SQL catalog with a snapshot before T and two after
    properties = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": (tmp_path / "warehouse").as_uri()}
    catalog = SqlCatalog("lake", **properties)
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", schema=Schema(NestedField(1, "id", LongType(), required=False)))
    before = a_moment_later()
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    friday = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    at = a_moment_later()
    table.append(pa.table({"id": pa.array([2], pa.int64())}))
    table.append(pa.table({"id": pa.array([3], pa.int64())}))
    sensor = IcebergSensor({"lake": {"type": "sql", **properties}})
    upstream = Upstream(SensorSource.ICEBERG_TABLE, "lake: sales.orders")

    # WHEN its position at T, and before its first snapshot, is asked
    watermark = position(SensorSource.ICEBERG_TABLE, sensor, upstream, at)
    first = position(SensorSource.ICEBERG_TABLE, sensor, upstream, before)

    # THEN it is the snapshot current at T (the two later ones are the range), and nothing before the first
    assert watermark == {"snapshot_id": friday}
    assert first == {"snapshot_id": None}

    # WHEN the snapshots up to the current one's parent are expired, and the position at T is asked again
    current = table.current_snapshot()
    assert current is not None and current.parent_snapshot_id is not None
    table.maintenance.expire_snapshots().by_ids([friday, current.parent_snapshot_id]).commit()

    # THEN it is refused, saying the snapshot then was expired and what to do
    with pytest.raises(PositionUnavailable, match="expired.*--watermark"):
        position(SensorSource.ICEBERG_TABLE, sensor, upstream, at)


class NamedHistory:
    """What Spark answers for one named Delta table, standing in for it as a check's context hands Spark out
    (Delta's Spark jars cannot be loaded here): DESCRIBE HISTORY with commit times, DESCRIBE DETAIL, and the
    key's max as of a version."""

    expired = False

    def __init__(self, commits: list[datetime], key_max: dict[int, int], first_version: int = 0) -> None:
        self.commits, self.key_max, self.first, self.queries = commits, key_max, first_version, []  # type: ignore[var-annotated]

    @contextmanager
    def spark_until_deadline(self, label: str) -> Iterator[NamedHistory]:
        yield self

    def sql(self, query: str) -> NamedHistory:
        self.queries.append(query)
        return self

    def collect(self) -> list[Any]:
        from pyspark.sql import Row

        query = self.queries[-1]
        if query.startswith("DESCRIBE HISTORY"):  # newest first, naive UTC, as Spark gives them
            versions = enumerate(self.commits, start=self.first)
            return [Row(version=v, timestamp=t.replace(tzinfo=None)) for v, t in reversed(list(versions))]
        if query.startswith("DESCRIBE DETAIL"):
            return [Row(id="t1")]
        version = int(query.rsplit("VERSION AS OF ", 1)[1])
        return [Row(m=self.key_max[version])]


def test_a_named_delta_table_at_a_time_is_its_version_then_with_its_id_and_keys_max_and_a_cleaned_one_is_refused() -> (
    None
):
    # GIVEN a named table (keyed on id) committed at 10:00, 11:00 and 12:00
    day = datetime(2026, 12, 4, tzinfo=timezone.utc)
    commits = [day.replace(hour=h) for h in (10, 11, 12)]
    history = NamedHistory(commits, key_max={0: 5, 1: 9, 2: 12})
    sensor = DeltaSensor({}, delta_on_spark=True)
    upstream = Upstream(SensorSource.DELTA_TABLE, "sales.orders", upstream_key="id")
    lookup = declaration_of(SensorSource.DELTA_TABLE).position_at
    assert lookup is not None

    def at(moment: datetime, source: NamedHistory = history) -> dict[str, object]:
        return dict(lookup(PositionQuery(sensor, source, upstream, moment)))  # type: ignore[arg-type]

    # WHEN its position at 11:30, and before it was made, is asked
    # THEN it is version 1 with the table's id and the key's max as of version 1; before: nothing yet
    half_past = at(day.replace(hour=11, minute=30))
    assert half_past["version"] == 1 and half_past["table_id"] == "t1"
    assert "VERSION AS OF 1" in history.queries[-1]
    assert at(day.replace(hour=9))["version"] == -1

    # WHEN its history starts at version 5 (the older log cleaned up) THEN a time before it is refused
    cleaned = NamedHistory(commits, key_max={}, first_version=5)
    with pytest.raises(PositionUnavailable, match="cleaned up.*--watermark"):
        at(day.replace(hour=9), cleaned)
