"""upstream_sensor_table sensor against real Spark tables shaped like another product's Heartbeat
control table and a lakehouse-engine sensor table."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.functions import udf
from pyspark.sql.types import BooleanType

from harness.core.vocabulary import SensorSource
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.context import CheckTimedOut
from harness.sensors.upstream_sensor_table import CompletedLoads, UpstreamSensorTableSensor
from tests.fixtures_sources import check_context, sensor_config

SCHEMA = "upstream_product"


@pytest.fixture(scope="module")
def upstream_tables(spark: SparkSession) -> str:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for table, extra in (("control", "trigger_job_id STRING,"), ("le_sensor", "")):
        spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{table}")
        spark.sql(
            f"CREATE TABLE {SCHEMA}.{table} (sensor_id STRING, {extra} status STRING, "
            "status_change_timestamp TIMESTAMP) USING parquet"
        )
    return SCHEMA


def read(sensor: UpstreamSensorTableSensor, upstream: Upstream, spark: SparkSession) -> CompletedLoads:
    return sensor.read_position(check_context(spark), upstream)


def record(spark: SparkSession, table: str, sensor_id: str, status: str, stamp: str, job: str | None = None) -> None:
    columns = (
        "(sensor_id, trigger_job_id, status, status_change_timestamp)"
        if job
        else "(sensor_id, status, status_change_timestamp)"
    )
    values = [sensor_id, job, status, stamp] if job else [sensor_id, status, stamp]
    marks = ", ".join(["?"] * (len(values) - 1) + ["CAST(? AS TIMESTAMP)"])
    spark.sql(f"INSERT INTO {SCHEMA}.{table} {columns} VALUES ({marks})", args=values)


def test_upstream_heartbeat_table_completed_load_is_new_once(
    spark: SparkSession, upstream_tables: str, tmp_path: Path
) -> None:
    # GIVEN another product's control table where `orders` is in progress, then completed
    sensor = UpstreamSensorTableSensor.from_settings(sensor_config(tmp_path).sources.upstream_sensor_table)
    upstream = Upstream(SensorSource.UPSTREAM_SENSOR_TABLE, f"{SCHEMA}.control: orders")
    record(spark, "control", "orders", "IN_PROGRESS", "2026-03-01 10:00:00", job="load_orders")
    before = sensor.detect(upstream, read(sensor, upstream, spark), None)
    record(spark, "control", "orders", "COMPLETED", "2026-03-01 10:30:00", job="load_orders")

    # WHEN it is checked, and checked again with the new watermark
    first = sensor.detect(upstream, read(sensor, upstream, spark), None)
    again = sensor.detect(
        upstream, read(sensor, upstream, spark), first.watermark if isinstance(first, NewData) else None
    )

    # THEN nothing before the completion, the completion once, with the upstream's own timestamp
    assert isinstance(before, NothingNew)
    assert isinstance(first, NewData) and first.watermark == {"status_change_timestamp": "2026-03-01T10:30:00"}
    assert isinstance(again, NothingNew)


def test_upstream_lakehouse_engine_processed_load_after_watermark_is_new(
    spark: SparkSession, upstream_tables: str, tmp_path: Path
) -> None:
    # GIVEN an alias for a lakehouse-engine sensor table, and a row that saw a load at 08:00
    sensor = UpstreamSensorTableSensor.from_settings(
        sensor_config(
            tmp_path, upstream_sensor_table={"tables": {"le": {"table": f"{SCHEMA}.le_sensor"}}}
        ).sources.upstream_sensor_table
    )
    upstream = Upstream(SensorSource.UPSTREAM_SENSOR_TABLE, "le: sales_raw")
    record(spark, "le_sensor", "sales_raw", "PROCESSED_NEW_DATA", "2026-04-02 08:00:00")
    seen = read(sensor, upstream, spark).watermark

    # WHEN new data is acquired (not yet processed), then processed at 09:00, and another sensor completes
    record(spark, "le_sensor", "sales_raw", "ACQUIRED_NEW_DATA", "2026-04-02 08:45:00")
    acquired = sensor.detect(upstream, read(sensor, upstream, spark), seen)
    record(spark, "le_sensor", "sales_raw", "PROCESSED_NEW_DATA", "2026-04-02 09:00:00")
    record(spark, "le_sensor", "other", "PROCESSED_NEW_DATA", "2026-04-02 11:00:00")
    processed = sensor.detect(upstream, read(sensor, upstream, spark), seen)

    # THEN only the processed load of sales_raw is new
    assert isinstance(acquired, NothingNew)
    assert isinstance(processed, NewData)
    assert processed.changes == {
        "upstream_id": "sales_raw",
        "completed_from": "2026-04-02T08:00:00",
        "completed_to": "2026-04-02T09:00:00",
    }


def test_upstream_id_with_quotes_is_a_parameter_not_sql(
    spark: SparkSession, upstream_tables: str, tmp_path: Path
) -> None:
    # GIVEN completed loads, and an upstream id trying to widen the WHERE clause
    record(spark, "le_sensor", "x", "PROCESSED_NEW_DATA", "2026-05-01 00:00:00")
    sensor = UpstreamSensorTableSensor.from_settings(sensor_config(tmp_path).sources.upstream_sensor_table)
    upstream = Upstream(SensorSource.UPSTREAM_SENSOR_TABLE, f"{SCHEMA}.le_sensor: ' OR '1'='1")

    # WHEN it is checked, THEN no load matches that literal id
    assert isinstance(sensor.detect(upstream, read(sensor, upstream, spark), None), NothingNew)


def test_slow_spark_read_is_cancelled_at_the_check_deadline(spark: SparkSession, tmp_path: Path) -> None:
    # GIVEN an upstream table whose every row takes 60 s to read (a Python function that sleeps), read
    # directly: no sensing loop abandons the check
    nap = udf(lambda _: time.sleep(60) is None, BooleanType()).asNondeterministic()
    spark.udf.register("hb_test_nap", nap)
    spark.sql(
        "CREATE OR REPLACE TEMP VIEW slow_loads AS SELECT * FROM VALUES "
        "('orders', 'COMPLETED', TIMESTAMP '2026-01-01 00:00:00') AS t(sensor_id, status, status_change_timestamp) "
        "WHERE hb_test_nap(sensor_id)"
    )
    sensor = UpstreamSensorTableSensor.from_settings(sensor_config(tmp_path).sources.upstream_sensor_table)

    # WHEN it is checked with 3 s left until the check's deadline
    started = time.monotonic()
    with pytest.raises(CheckTimedOut, match=r"^upstream_sensor_table:slow_loads: orders: check timed out after 3s"):
        sensor.read_position(
            check_context(spark, timeout=3), Upstream(SensorSource.UPSTREAM_SENSOR_TABLE, "slow_loads: orders")
        )

    # THEN the Spark job was cancelled at the deadline: the check ended, and no job of it keeps running
    assert time.monotonic() - started < 20  # far below the 60 s the read would take
    deadline = time.monotonic() + 10
    while spark.sparkContext.statusTracker().getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert spark.sparkContext.statusTracker().getActiveJobsIds() == []
