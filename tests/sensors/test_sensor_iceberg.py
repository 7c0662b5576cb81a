"""iceberg_table sensor against real Iceberg tables written with pyiceberg in a local SQL catalog (sqlite)."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from harness.core.errors import ConfigError, SensorError
from harness.core.partition_filter import parse_filter
from harness.core.vocabulary import SensorSource
from harness.sensors import build_registry
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.iceberg import IcebergSensor, IcebergState
from harness.sensors.partition_trigger import detect_partitions
from harness.views.watermarks import describe
from tests.fixtures_sources import check_context, sensor_config

TICK = datetime(2026, 1, 6, 3, 0, tzinfo=timezone.utc)  # yesterday = 2026-01-05
UPSTREAM = Upstream(SensorSource.ICEBERG_TABLE, "lake: sales.orders")


@pytest.fixture
def catalog_properties(tmp_path: Path) -> dict[str, str]:
    return {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": (tmp_path / "warehouse").as_uri()}


@pytest.fixture
def orders(catalog_properties: dict[str, str]) -> Table:
    """An empty table sales.orders partitioned by ds (identity)."""
    catalog = SqlCatalog("lake", **{k: v for k, v in catalog_properties.items() if k != "type"})
    catalog.create_namespace("sales")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "ds", StringType(), required=False)
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="ds"))
    return catalog.create_table("sales.orders", schema=schema, partition_spec=spec)


@pytest.fixture
def sensor(tmp_path: Path, catalog_properties: dict[str, str]) -> IcebergSensor:
    """Built from heartbeat.yml's iceberg section, as the harness builds it."""
    config = sensor_config(tmp_path, iceberg={"catalogs": {"lake": {"properties": catalog_properties}}})
    built = build_registry(config)[SensorSource.ICEBERG_TABLE]
    assert isinstance(built, IcebergSensor)
    return built


def rows(ds: str, *ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "ds": [ds] * len(ids)})


def read(sensor: IcebergSensor) -> IcebergState:
    return sensor.read_position(check_context(), UPSTREAM)


def test_iceberg_new_snapshots_are_change_events_with_parent_operation_partitions_and_tags(
    sensor: IcebergSensor, orders: Table
) -> None:
    # GIVEN an empty table: nothing to see yet
    assert read(sensor).watermark == {"snapshot_id": None}
    assert isinstance(sensor.detect(UPSTREAM, read(sensor), None), NothingNew)
    # and a row that has seen a first append
    orders.append(rows("2026-01-04", 1))
    seen = read(sensor).watermark

    # WHEN a tagged append to ds=2026-01-05 and a delete of ds=2026-01-04 are committed
    orders.append(rows("2026-01-05", 2, 3), snapshot_properties={"source": "crm"})
    orders.delete("ds == '2026-01-04'")
    detection = sensor.detect(UPSTREAM, read(sensor), seen)

    # THEN both snapshots are events, each chained to its parent, with its operation, partition and tags
    assert isinstance(detection, NewData)
    append, delete = detection.changes["events"]
    assert append["previous_snapshot_id"] == seen["snapshot_id"]
    assert delete["previous_snapshot_id"] == append["snapshot_id"]
    assert delete["snapshot_id"] == detection.watermark["snapshot_id"] == detection.changes["snapshot_id_to"]
    assert (append["operation"], append["partition_values"], append["tags"]) == (
        "APPEND",
        [{"ds": "2026-01-05"}],
        {"source": "crm"},
    )
    assert (delete["operation"], delete["partition_values"], delete["tags"]) == ("DELETE", [{"ds": "2026-01-04"}], {})
    assert append["table_format"] == "iceberg" and append["table"] == "sales.orders"
    assert detection.changes["operations"] == ["APPEND", "DELETE"] and detection.changes["operation"] == "UPDATE"
    assert describe(str(detection.watermark).replace("'", '"').replace("None", "null")).startswith("snapshot ")


def test_iceberg_snapshots_expired_since_the_watermark_leave_the_detection_incomplete(
    sensor: IcebergSensor, orders: Table
) -> None:
    # GIVEN a row that has seen a first append, then two more, and every snapshot but the current one expired
    orders.append(rows("2026-01-04", 1))
    seen = read(sensor).watermark
    orders.append(rows("2026-01-05", 2))
    orders.append(rows("2026-01-05", 3))
    orders.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in orders.snapshots()][:-1]).commit()
    # WHEN it is checked THEN it is new data whose events are said not to be all the changes since
    position = read(sensor)
    detection = sensor.detect(UPSTREAM, position, seen)
    assert isinstance(detection, NewData) and detection.changes["events_incomplete"] is True
    assert "is not an ancestor of the current one" in detection.changes["note"]
    assert not position.lists_every_change_since(seen)


def test_iceberg_daily_partition_trigger_with_late_out_of_order_and_overwritten_partitions(
    sensor: IcebergSensor, orders: Table
) -> None:
    trigger, tags = parse_filter("ds={{ yesterday }}"), {"quality": "checked"}

    # GIVEN a tick on 2026-01-06 waiting for ds=2026-01-05 with tag quality=checked; 2026-01-06 lands first
    orders.append(rows("2026-01-06", 9), snapshot_properties={"quality": "checked"})
    waiting = detect_partitions(UPSTREAM.label, read(sensor), trigger, tags, None, TICK)
    assert isinstance(waiting, NothingNew) and "waiting for partition ds=2026-01-05" in waiting.reason

    # WHEN yesterday's partition lands late without the tag, THEN the row still waits
    orders.append(rows("2026-01-05", 1))
    untagged = detect_partitions(UPSTREAM.label, read(sensor), trigger, tags, None, TICK)
    assert isinstance(untagged, NothingNew) and "carries the tags quality=checked" in untagged.reason

    # WHEN a tagged append to it follows, THEN the row fires with the events of that partition only
    orders.append(rows("2026-01-05", 2), snapshot_properties={"quality": "checked"})
    fired = detect_partitions(UPSTREAM.label, read(sensor), trigger, tags, None, TICK)
    assert isinstance(fired, NewData)
    assert [e["partition_values"] for e in fired.changes["events"]] == [[{"ds": "2026-01-05"}]] * 2
    assert isinstance(detect_partitions(UPSTREAM.label, read(sensor), trigger, tags, fired.watermark, TICK), NothingNew)

    # WHEN the partition is overwritten by a tagged write, THEN the row fires again for it
    orders.overwrite(
        rows("2026-01-05", 3), overwrite_filter="ds == '2026-01-05'", snapshot_properties={"quality": "checked"}
    )
    again = detect_partitions(UPSTREAM.label, read(sensor), trigger, tags, fired.watermark, TICK)
    assert isinstance(again, NewData) and again.changes["partitions_overwritten"] == ["ds=2026-01-05"]
    assert again.watermark["snapshot_id"] == read(sensor).snapshot_id

    # AND on the next day the filter names 2026-01-06, which has data not acted on: the row fires for it
    next_day = detect_partitions(
        UPSTREAM.label, read(sensor), trigger, tags, again.watermark, datetime(2026, 1, 7, 3, 0, tzinfo=timezone.utc)
    )
    assert isinstance(next_day, NewData) and list(next_day.watermark["partitions"]) == ["ds=2026-01-06"]


def test_iceberg_filter_on_a_column_the_table_is_not_partitioned_by_names_the_columns(
    sensor: IcebergSensor, orders: Table
) -> None:
    orders.append(rows("2026-01-05", 1))
    with pytest.raises(SensorError, match=r"names region, but the table is partitioned by ds"):
        detect_partitions(UPSTREAM.label, read(sensor), parse_filter("region=eu"), {}, None, TICK)


def test_iceberg_unknown_catalog_or_table_names_the_upstream_and_the_setting(
    sensor: IcebergSensor, orders: Table
) -> None:
    with pytest.raises(SensorError, match=r"no Iceberg catalog 'other' in heartbeat.yml \(iceberg.catalogs: lake\)"):
        sensor.read_position(check_context(), Upstream(SensorSource.ICEBERG_TABLE, "other: sales.orders"))
    with pytest.raises(SensorError, match=r"iceberg_table:lake: sales.missing: no Iceberg table 'sales.missing'"):
        sensor.read_position(check_context(), Upstream(SensorSource.ICEBERG_TABLE, "lake: sales.missing"))


def test_a_sql_catalog_whose_database_is_missing_is_said_so_and_not_made(tmp_path: Path) -> None:
    # GIVEN a SQL catalog whose database is not there (a volume not mounted)
    missing = tmp_path / "gone"
    missing.mkdir()
    properties = {"type": "sql", "uri": f"sqlite:///{missing}/catalog.db", "warehouse": (tmp_path / "wh").as_uri()}
    built = build_registry(sensor_config(tmp_path, iceberg={"catalogs": {"lake": {"properties": properties}}}))
    sensor = built[SensorSource.ICEBERG_TABLE]
    # WHEN a row of it is checked THEN the check says the catalog is missing, naming the setting, and makes none
    with pytest.raises(SensorError, match=r"holds no Iceberg catalog .*check iceberg.catalogs.lake.properties.uri"):
        sensor.read_position(check_context(), UPSTREAM)
    with sqlite3.connect(missing / "catalog.db") as db:
        assert db.execute("select name from sqlite_master").fetchall() == []


def test_iceberg_catalog_secret_from_an_unset_variable_stops_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HB_TEST_ICEBERG_TOKEN", raising=False)
    config = sensor_config(
        tmp_path,
        iceberg={
            "catalogs": {
                "rest": {
                    "properties": {"uri": "http://127.0.0.1:1"},
                    "properties_env": {"token": "HB_TEST_ICEBERG_TOKEN"},
                }
            }
        },
    )
    with pytest.raises(ConfigError, match=r"iceberg.catalogs.rest.properties_env.token.*HB_TEST_ICEBERG_TOKEN"):
        build_registry(config)
