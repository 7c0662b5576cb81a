"""hive_table sensor against real parquet tables in the session's metastore, written with Spark SQL."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pyspark.sql import SparkSession

from harness.core.errors import SensorError
from harness.core.partition_filter import parse_filter
from harness.core.vocabulary import SensorSource
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.hive_table import HiveState, HiveTableSensor
from harness.sensors.partition_trigger import detect_partitions
from tests.fixtures_sources import check_context

SCHEMA = "hive_upstream"
TICK = datetime(2026, 1, 6, 3, 0, tzinfo=timezone.utc)  # yesterday = 2026-01-05


@pytest.fixture
def table(spark: SparkSession, request: pytest.FixtureRequest) -> str:
    """An empty parquet table partitioned by ds, of this test alone."""
    name = f"{SCHEMA}.t_{abs(hash(request.node.name)) % 10**8}"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, ds STRING) USING parquet PARTITIONED BY (ds)")
    return name


def insert(spark: SparkSession, table: str, ds: str, *ids: int, overwrite: bool = False) -> None:
    values = ", ".join(f"({i})" for i in ids)
    spark.sql(f"INSERT {'OVERWRITE' if overwrite else 'INTO'} {table} PARTITION (ds = '{ds}') VALUES {values}")


def read(spark: SparkSession, table: str) -> tuple[Upstream, HiveState]:
    upstream = Upstream(SensorSource.HIVE_TABLE, table)
    return upstream, HiveTableSensor().read_position(check_context(spark), upstream)


def test_hive_table_new_partition_is_new_data_with_one_event_per_changed_partition(
    spark: SparkSession, table: str
) -> None:
    # GIVEN a row that has seen partition ds=2026-01-04
    insert(spark, table, "2026-01-04", 1)
    upstream, position = read(spark, table)
    sensor = HiveTableSensor()
    first = sensor.detect(upstream, position, None)
    assert isinstance(first, NewData)
    assert isinstance(sensor.detect(upstream, position, first.watermark), NothingNew)

    # WHEN partition ds=2026-01-05 is written
    insert(spark, table, "2026-01-05", 2, 3)
    upstream, position = read(spark, table)
    detection = sensor.detect(upstream, position, first.watermark)

    # THEN it is new data, described by one APPEND event of that partition, chained to the seen fingerprint
    assert isinstance(detection, NewData)
    (event,) = detection.changes["events"]
    assert event["partition_values"] == [{"ds": "2026-01-05"}] and event["operation"] == "APPEND"
    assert event["table_format"] == "hive" and event["table"] == table
    assert event["previous_snapshot_id"] == first.watermark["fingerprint"]
    assert event["snapshot_id"] == detection.watermark["fingerprint"]
    assert detection.changes["partitions"] == [{"ds": "2026-01-05"}]


def test_hive_table_dropped_partition_is_a_delete_event(spark: SparkSession, table: str) -> None:
    # GIVEN a row that has seen two partitions
    insert(spark, table, "2026-01-04", 1)
    insert(spark, table, "2026-01-05", 2)
    upstream, position = read(spark, table)
    seen = HiveTableSensor().detect(upstream, position, None)
    assert isinstance(seen, NewData)

    # WHEN one partition is dropped
    spark.sql(f"ALTER TABLE {table} DROP PARTITION (ds = '2026-01-04')")
    upstream, position = read(spark, table)
    detection = HiveTableSensor().detect(upstream, position, seen.watermark)

    # THEN the change is one DELETE event (a listing cannot say which partition went away)
    assert isinstance(detection, NewData)
    assert [(e["operation"], e["partition_values"]) for e in detection.changes["events"]] == [("DELETE", [])]


def test_hive_table_partition_trigger_waits_for_the_partition_then_fires_again_on_overwrite(
    spark: SparkSession, table: str
) -> None:
    # GIVEN a daily partition trigger for yesterday, and only older partitions
    trigger = parse_filter("ds={{ yesterday }}")
    insert(spark, table, "2026-01-04", 1)
    upstream, position = read(spark, table)
    waiting = detect_partitions(upstream.label, position, trigger, {}, None, TICK)
    assert isinstance(waiting, NothingNew) and waiting.reason == "waiting for partition ds=2026-01-05 (no data yet)"

    # WHEN yesterday's partition lands, THEN the row fires, and not again while it is unchanged
    insert(spark, table, "2026-01-05", 2)
    upstream, position = read(spark, table)
    fired = detect_partitions(upstream.label, position, trigger, {}, None, TICK)
    assert isinstance(fired, NewData) and fired.changes["partitions_ready"] == ["ds=2026-01-05"]
    assert isinstance(detect_partitions(upstream.label, position, trigger, {}, fired.watermark, TICK), NothingNew)

    # WHEN the partition is overwritten, THEN the row fires again, saying so
    insert(spark, table, "2026-01-05", 3, overwrite=True)
    upstream, position = read(spark, table)
    again = detect_partitions(upstream.label, position, trigger, {}, fired.watermark, TICK)
    assert isinstance(again, NewData) and again.changes["partitions_overwritten"] == ["ds=2026-01-05"]


def test_hive_table_missing_table_names_the_upstream(spark: SparkSession) -> None:
    # GIVEN a row naming a table the metastore does not have, WHEN it is read, THEN the error names it
    with pytest.raises(SensorError, match=r"hive_table:hive_upstream\.nowhere: cannot read the table"):
        read(spark, f"{SCHEMA}.nowhere")
