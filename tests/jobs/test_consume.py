"""harness.consume: a job reads exactly its range (the data written between the watermarks it was handed),
against the real components of the sensor tests: Delta tables written by deltalake, librdkafka's mock
cluster, PostgreSQL, trigger folders."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyspark.sql import SparkSession

from harness.consume import ConsumeError, read_range
from harness.core.config import Config
from harness.core.vocabulary import SensorSource
from harness.sensors.base import Sensor, Upstream
from harness.sensors.delta import DeltaSensor
from harness.sensors.jdbc import JdbcSensor
from harness.sensors.kafka import KafkaSensor
from harness.sensors.trigger_file import TriggerFileSensor
from tests.fixtures_sources import check_context, pg_connection, sensor_config
from tests.kafka_mock import MockKafka
from tests.postgres import PostgresServer


def watermark(sensor: Sensor[Any], upstream: Upstream, spark: SparkSession | None = None) -> dict[str, Any]:
    return dict(sensor.read_position(check_context(spark), upstream).watermark)


def range_of(upstream: Upstream, start: dict[str, Any] | None, end: dict[str, Any]) -> str:
    """The change range a run would be handed for one upstream (HEARTBEAT_CHANGE_RANGE's text)."""
    return json.dumps(
        {
            "job_id": "j",
            "run_context_id": "hb-test",
            "upstreams": [
                {
                    "sensor_source": upstream.kind.value,
                    "sensor_id": upstream.sensor_id,
                    "dependency": "hard",
                    "from": start,
                    "to": end,
                }
            ],
        }
    )


def read_one(
    spark: SparkSession, config: Config, upstream: Upstream, start: dict[str, Any] | None, end: dict[str, Any]
) -> list[dict[str, Any]]:
    (frame,) = read_range(spark, range_of(upstream, start, end), config=config).values()
    return [r.asDict() for r in frame.collect()]


def orders(ids: list[int], region: str = "eu") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "region": [region] * len(ids)})


def test_delta_range_is_the_rows_the_commits_in_between_added_with_their_partitions(
    spark: SparkSession, tmp_path: Path
) -> None:
    # GIVEN a partitioned table the job last read at version 0, then two appends (the range), then one more
    path, config = str(tmp_path / "orders"), sensor_config(tmp_path)
    sensor, upstream = DeltaSensor.from_settings(config.sources.delta, False), Upstream(SensorSource.DELTA_TABLE, path)
    write_deltalake(path, orders([1, 2]), partition_by=["region"])
    start = watermark(sensor, upstream)
    write_deltalake(path, orders([3, 4], "us"), mode="append")
    write_deltalake(path, orders([5]), mode="append")
    end = watermark(sensor, upstream)
    write_deltalake(path, orders([6]), mode="append")

    # WHEN the job reads its range THEN exactly the rows of versions 1-2, with their partition values
    rows = read_one(spark, config, upstream, start, end)
    assert sorted((r["id"], r["region"]) for r in rows) == [(3, "us"), (4, "us"), (5, "eu")]
    # AND a job that never succeeded reads the whole table as of the range's end
    assert sorted(r["id"] for r in read_one(spark, config, upstream, None, end)) == [1, 2, 3, 4, 5]


def test_a_delta_range_across_the_table_made_again_is_all_of_its_end(spark: SparkSession, tmp_path: Path) -> None:
    # GIVEN a table the job last read at version 0, deleted and made again at its path, past that version
    path, config = str(tmp_path / "again"), sensor_config(tmp_path)
    sensor, upstream = DeltaSensor.from_settings(config.sources.delta, False), Upstream(SensorSource.DELTA_TABLE, path)
    write_deltalake(path, orders([1, 2]))
    start = watermark(sensor, upstream)
    shutil.rmtree(path)
    write_deltalake(path, orders([7]))
    write_deltalake(path, orders([8]), mode="append")
    # WHEN the job reads its range THEN it is the new table's rows (not those after version 0 alone)
    assert sorted(r["id"] for r in read_one(spark, config, upstream, start, watermark(sensor, upstream))) == [7, 8]


def test_delta_range_with_change_data_feed_is_the_feed_of_the_versions_in_between(
    spark: SparkSession, tmp_path: Path
) -> None:
    # GIVEN a table with the change data feed on: a delete and an append in the range, an append after it
    path, config = str(tmp_path / "cdf"), sensor_config(tmp_path)
    sensor, upstream = DeltaSensor.from_settings(config.sources.delta, False), Upstream(SensorSource.DELTA_TABLE, path)
    write_deltalake(path, orders([1, 2]), configuration={"delta.enableChangeDataFeed": "true"})
    start = watermark(sensor, upstream)
    from deltalake import DeltaTable

    DeltaTable(path).delete("id = 1")
    write_deltalake(path, orders([3]), mode="append")
    end = watermark(sensor, upstream)
    write_deltalake(path, orders([4]), mode="append")

    # WHEN the job reads its range THEN the deleted row and the inserted row, each with its change type
    rows = read_one(spark, config, upstream, start, end)
    assert sorted((r["id"], r["_change_type"]) for r in rows) == [(1, "delete"), (3, "insert")]


def test_kafka_range_is_the_messages_between_the_offsets(spark: SparkSession, kafka: MockKafka, tmp_path: Path) -> None:
    config = sensor_config(tmp_path, kafka={"bootstrap_servers": kafka.bootstrap_servers, "max_messages": 1})
    sensor, upstream = (
        KafkaSensor.from_settings(config.sources.kafka),
        Upstream(SensorSource.KAFKA, "shop: consume.orders"),
    )
    kafka.produce("consume.orders", "a", "b")
    start = watermark(sensor, upstream)
    kafka.produce("consume.orders", "c", "d")
    kafka.produce("consume.orders", "e", partition=2)
    end = watermark(sensor, upstream)
    kafka.produce("consume.orders", "f", "g")

    rows = read_one(spark, config, upstream, start, end)

    # every message of the range (max_messages bounds only what a check reads), none after it
    assert sorted((r["partition"], r["value"].decode()) for r in rows) == [(0, "c"), (0, "d"), (2, "e")]


def test_jdbc_range_is_the_key_range_between_the_watermarks(
    spark: SparkSession, postgres: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    config = sensor_config(tmp_path, jdbc={"connections": {"default": pg_connection(postgres)}})
    sensor, upstream = (
        JdbcSensor.from_settings(config.sources.jdbc),
        Upstream(SensorSource.JDBC, "public.consume_orders", "id"),
    )
    postgres.execute(
        [
            "DROP TABLE IF EXISTS consume_orders",
            "CREATE TABLE consume_orders (id int, amount int)",
            "INSERT INTO consume_orders SELECT i, i * 10 FROM generate_series(1, 3) i",
        ]
    )
    start = watermark(sensor, upstream, spark)
    postgres.execute("INSERT INTO consume_orders VALUES (4, 40), (5, 50)")
    end = watermark(sensor, upstream, spark)
    postgres.execute("INSERT INTO consume_orders VALUES (6, 60)")

    rows = read_one(spark, config, upstream, start, end)

    assert sorted((r["id"], r["amount"]) for r in rows) == [(4, 40), (5, 50)]


def test_trigger_file_range_is_the_files_landed_in_between(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "triggers"
    (root / "orders").mkdir(parents=True)
    config = sensor_config(tmp_path, trigger_file={"root": str(root)})
    sensor, upstream = TriggerFileSensor(config.trigger_root), Upstream(SensorSource.TRIGGER_FILE, "orders")

    def land(name: str) -> None:
        (root / "orders" / name).write_text(name)
        time.sleep(0.02)  # distinct change times

    land("a.done")
    start = watermark(sensor, upstream)
    land("b.done")
    land("c.done")
    end = watermark(sensor, upstream)
    land("d.done")

    rows = read_one(spark, config, upstream, start, end)

    assert [r["name"] for r in rows] == ["b.done", "c.done"]
    assert rows[0]["path"] == str(root / "orders" / "b.done") and rows[0]["size"] == 6


def test_a_source_whose_range_is_not_read_here_is_refused_by_name(spark: SparkSession, tmp_path: Path) -> None:
    upstream = Upstream(SensorSource.SAP_BW, "ZPC_SALES")
    with pytest.raises(ConsumeError, match="sap_bw:ZPC_SALES: reading the range of sap_bw is not supported"):
        read_one(spark, sensor_config(tmp_path), upstream, None, {"sap_time": "20260105143000"})


def test_iceberg_range_is_the_rows_the_snapshots_in_between_added(spark: SparkSession, tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    # GIVEN an Iceberg table (local SQL catalog) with an append before the range and two in it
    properties = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": (tmp_path / "warehouse").as_uri()}
    catalog = SqlCatalog("lake", **properties)
    catalog.create_namespace("sales")
    table = catalog.create_table(
        "sales.orders",
        schema=Schema(
            NestedField(1, "id", LongType(), required=False), NestedField(2, "region", StringType(), required=False)
        ),
    )
    config = sensor_config(tmp_path, iceberg={"catalogs": {"lake": {"properties": {"type": "sql", **properties}}}})
    upstream = Upstream(SensorSource.ICEBERG_TABLE, "lake: sales.orders")
    table.append(orders([1]))
    start = {"snapshot_id": table.refresh().current_snapshot().snapshot_id}
    table.append(orders([2, 3]))
    table.append(orders([4], region="us"))
    end = {"snapshot_id": table.refresh().current_snapshot().snapshot_id}

    # THEN the range is the rows of the two appends; a job that never succeeded gets the whole table
    assert sorted((r["id"], r["region"]) for r in read_one(spark, config, upstream, start, end)) == [
        (2, "eu"),
        (3, "eu"),
        (4, "us"),
    ]
    assert sorted(r["id"] for r in read_one(spark, config, upstream, None, end)) == [1, 2, 3, 4]
    assert read_one(spark, config, upstream, end, end) == []
    # WHEN the snapshots before the range's end expire THEN the range is refused by name, not read in part
    table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in table.snapshots()][:-1]).commit()
    with pytest.raises(
        ConsumeError, match=f"snapshot {start['snapshot_id']}, where the range starts, is not an ancestor"
    ):
        read_one(spark, config, upstream, start, end)


def test_delta_range_by_upstream_key_is_the_rows_past_the_start_max(spark: SparkSession, tmp_path: Path) -> None:
    # GIVEN a table by path with an upstream_key, which the job last read up to id 2, then two more ids
    path, config = str(tmp_path / "keyed"), sensor_config(tmp_path)
    sensor = DeltaSensor.from_settings(config.sources.delta, False)
    upstream = Upstream(SensorSource.DELTA_TABLE, path, upstream_key="id")
    write_deltalake(path, orders([1, 2]))
    start = watermark(sensor, upstream)
    write_deltalake(path, orders([3, 4]), mode="append")
    end = watermark(sensor, upstream)
    write_deltalake(path, orders([5]), mode="append")

    # WHEN the job reads its range THEN the rows whose key is past the start's max, up to the end's
    assert sorted(r["id"] for r in read_one(spark, config, upstream, start, end)) == [3, 4]
    # AND across the table made again since: every row of the new table up to its max (its keys start again)
    shutil.rmtree(path)
    write_deltalake(path, orders([1, 2, 3]))
    assert sorted(r["id"] for r in read_one(spark, config, upstream, end, watermark(sensor, upstream))) == [1, 2, 3]
