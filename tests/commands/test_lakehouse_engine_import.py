"""`import-lakehouse-engine`: how the engine's control table and sensor table translate into each row's status
and watermark, what is named rather than matched, and what the dry run prints (no Spark: exports as rows)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness.commands.lakehouse_engine import engine_sensor_id, plan_lines, read_rows, summary, translate
from harness.core.controls import ControlSpec
from harness.core.errors import HeartbeatError
from harness.core.vocabulary import RowKey

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def spec(line: int, source: str, sensor_id: str, job: str, upstream_key: str = "") -> ControlSpec:
    return ControlSpec(line, source, sensor_id, "batch", "", upstream_key, "", job, "", "UNPAUSED", True)


def engine_row(source: str, sensor_id: str, job: str, status: str | None, **more: object) -> dict[str, object]:
    return {"sensor_source": source, "sensor_id": sensor_id, "trigger_job_id": job, "status": status, **more}


def sensor_row(sensor_id: str, status: str, value: str | None, key: str | None = None, **more: object) -> dict:
    return {
        "sensor_id": sensor_id,
        "assets": None,
        "status": status,
        "status_change_timestamp": datetime(2026, 5, 1, 6, 40),
        "checkpoint_location": more.get("checkpoint_location"),
        "upstream_key": key,
        "upstream_value": value,
    }


def test_the_engine_names_a_heartbeat_rows_sensor_by_its_sensor_id_and_job_with_blanks_colons_and_dots_as_underscores() -> (
    None
):
    assert engine_sensor_id("bw: ZPC.SALES daily", "42") == "bw__ZPC_SALES_daily_42"


@pytest.mark.parametrize(
    ("engine_status", "sensor_status", "status", "watermark"),
    [
        ("COMPLETED", "PROCESSED_NEW_DATA", "COMPLETED", {"key": "id", "max": {"type": "int", "value": 10}}),
        ("IN_PROGRESS", "ACQUIRED_NEW_DATA", "COMPLETED", {"key": "id", "max": {"type": "int", "value": 10}}),
        (
            "NEW_EVENT_AVAILABLE",
            "ACQUIRED_NEW_DATA",
            "NEW_EVENT_AVAILABLE",
            {"key": "id", "max": {"type": "int", "value": 10}},
        ),
        ("COMPLETED", "ACQUIRED_NEW_DATA", "NEW_EVENT_AVAILABLE", {"key": "id", "max": {"type": "int", "value": 10}}),
        (None, None, None, None),
    ],
)
def test_a_jdbc_rows_engine_status_and_upstream_value_translate_into_its_status_and_key_watermark(
    engine_status: str | None, sensor_status: str | None, status: str | None, watermark: dict | None
) -> None:
    # GIVEN a jdbc row whose engine rows hold a status and the max of its upstream_key
    row = spec(2, "jdbc", "sales: public.orders", "7", upstream_key="id")
    sensors = [sensor_row(engine_sensor_id(row.sensor_id, "7"), sensor_status, "10", "id")] if sensor_status else []
    # WHEN translated
    result = translate([row], [engine_row("jdbc", "sales: public.orders", "7", engine_status)], sensors)
    # THEN the row gets the status and the typed watermark (none: it starts from now)
    ((_, carried),) = result.carried
    assert carried.status == status
    assert (json.loads(carried.watermark) if carried.watermark else None) == watermark
    assert not result.not_matched


def test_a_sap_chains_upstream_value_is_its_sap_time_and_without_one_the_engines_fetch_time_as_it_compares_it() -> None:
    rows = [spec(2, "sap_bw", "bw: ZPC_A", "j"), spec(3, "sap_b4", "ZPC_B", "j")]
    control = [
        engine_row("sap_bw", "bw: ZPC_A", "j", "COMPLETED"),
        engine_row("sap_b4", "ZPC_B", "j", "COMPLETED", latest_event_fetched_timestamp=datetime(2026, 5, 1, 6, 30)),
    ]
    sensors = [sensor_row(engine_sensor_id("bw: ZPC_A", "j"), "PROCESSED_NEW_DATA", "20260501063000", "LOAD_DATE")]
    result = translate(rows, control, sensors)
    (_, a), (_, b) = result.carried
    assert json.loads(a.watermark or "") == {"sap_time": "20260501063000"} and a.status == "COMPLETED"
    assert json.loads(b.watermark or "") == {"sap_time": "20260501063000"}
    assert "latest_event_fetched_timestamp" in b.source


@pytest.mark.parametrize(
    ("value", "typed"),
    [
        ("2026-05-01 06:30:00", {"type": "timestamp", "value": "2026-05-01T06:30:00"}),
        ("2026-05-01", {"type": "date", "value": "2026-05-01"}),
        ("12.50", {"type": "decimal", "value": "12.50"}),
        ("A-17", {"type": "string", "value": "A-17"}),
    ],
)
def test_an_upstream_value_is_read_in_the_type_its_text_has(value: str, typed: dict) -> None:
    row = spec(2, "lmu_delta_table", "/lake/uploads", "j", upstream_key="loaded_at")
    sensors = [sensor_row(engine_sensor_id(row.sensor_id, "j"), "PROCESSED_NEW_DATA", value, "loaded_at")]
    ((_, carried),) = translate(
        [row], [engine_row("lmu_delta_table", "/lake/uploads", "j", "COMPLETED")], sensors
    ).carried
    assert json.loads(carried.watermark or "") == {"key": "loaded_at", "max": typed}


def test_a_table_the_engine_read_through_a_streaming_checkpoint_starts_from_now_saying_so() -> None:
    # GIVEN a Delta table the engine read as a stream: its sensor row holds a checkpoint, no value
    row = spec(2, "delta_table", "/lake/orders", "j")
    sensors = [
        sensor_row(engine_sensor_id("/lake/orders", "j"), "PROCESSED_NEW_DATA", "None", checkpoint_location="/chk/o")
    ]
    ((_, carried),) = translate([row], [engine_row("delta_table", "/lake/orders", "j", "COMPLETED")], sensors).carried
    # THEN it starts from now, and says why: the checkpoint holds where the engine stopped
    assert carried.status is None and carried.watermark is None and carried.watches_from_now
    assert "streaming checkpoint (checkpoint_location /chk/o)" in carried.source


def test_a_jdbc_value_of_another_column_than_the_rows_upstream_key_is_not_carried() -> None:
    row = spec(2, "jdbc", "public.orders", "j", upstream_key="id")
    sensors = [sensor_row(engine_sensor_id("public.orders", "j"), "PROCESSED_NEW_DATA", "9", "updated_at")]
    ((_, carried),) = translate([row], [engine_row("jdbc", "public.orders", "j", "COMPLETED")], sensors).carried
    assert carried.watches_from_now and "upstream_key 'updated_at' is not the row's 'id'" in carried.source


def test_rows_differing_in_case_or_named_otherwise_are_named_not_matched() -> None:
    # GIVEN the engine's rows: one in another case, one of no row of the CSV, a sensor row of no row
    rows = [spec(2, "trigger_file", "landed", "j"), spec(3, "jdbc", "public.orders", "k", upstream_key="id")]
    control = [
        engine_row("trigger_file", "LANDED", "j", "COMPLETED"),
        engine_row("jdbc", "public.orders", "k", "COMPLETED"),
        engine_row("kafka", "p: t", "gone", "COMPLETED"),
    ]
    sensors = [
        sensor_row("PUBLIC_ORDERS_k", "PROCESSED_NEW_DATA", "9", "id"),
        sensor_row("orphan", "PROCESSED_NEW_DATA", "1"),
    ]
    result = translate(rows, control, sensors)
    # THEN each is named, and none of them carried
    named = "\n".join(result.not_matched)
    assert "(trigger_file 'LANDED' -> job j) in the engine's control table differs in case from line 2" in named
    assert "sensor_id 'PUBLIC_ORDERS_k' differs in case from 'public_orders_k'" in named
    assert "(kafka 'p: t' -> job gone) in the engine's control table is not in the controls CSV" in named
    assert "sensor_id 'orphan' matches no row of the controls CSV" in named
    assert [s.line for s, _ in result.left] == [2]
    ((_, jdbc),) = result.carried
    assert jdbc.watches_from_now  # its sensor row was not matched: nothing to carry


def test_the_dry_run_says_per_row_what_it_sets_and_from_which_column() -> None:
    # GIVEN a carried jdbc row, a checkpointed Delta table, a row already in Heartbeat and an unmatched one
    rows = [
        spec(2, "jdbc", "public.orders", "k", upstream_key="id"),
        spec(3, "delta_table", "/lake/orders", "j"),
        spec(4, "sap_bw", "ZPC_A", "s"),
        spec(5, "kafka", "p: t", "t"),
    ]
    control = [
        engine_row("jdbc", "public.orders", "k", "COMPLETED"),
        engine_row("delta_table", "/lake/orders", "j", "NEW_EVENT_AVAILABLE"),
        engine_row("sap_bw", "ZPC_A", "s", "COMPLETED"),
    ]
    sensors = [
        sensor_row("public_orders_k", "PROCESSED_NEW_DATA", "10", "id"),
        sensor_row("/lake/orders_j", "ACQUIRED_NEW_DATA", "None", checkpoint_location="/chk/o"),
        sensor_row("ZPC_A_s", "PROCESSED_NEW_DATA", "20260501063000", "LOAD_DATE"),
    ]
    result = translate(rows, control, sensors)
    already = {RowKey("sap_bw", "ZPC_A", "s"): "status COMPLETED"}
    # WHEN its lines are written THEN each row says what it gets and from where
    assert plan_lines(result, already) == [
        "line 2 (jdbc 'public.orders' -> job k): COMPLETED, watermark max(id) = 10",
        "    from: lakehouse_engine_sensors.upstream_value '10' (read as int); the control table's status "
        "COMPLETED, the sensor's PROCESSED_NEW_DATA",
        "line 3 (delta_table '/lake/orders' -> job j): start_from now",
        "    from: the engine read this delta_table through a streaming checkpoint "
        "(checkpoint_location /chk/o): where it stopped is not in its tables; its first check records where the "
        "upstream is",
        "    note: the engine had found new data it had not processed: run the job once by hand if that data must "
        "be processed",
        "line 4 (sap_bw 'ZPC_A' -> job s): left as it is: it has status COMPLETED in Heartbeat",
        "line 5 (kafka 'p: t' -> job t): not carried (not in the engine's control table): as the controls CSV says "
        "(start_from heartbeat.yml's controls.start_from)",
    ]
    assert summary(result, already) == (
        "1 rows carried, 1 start from now, 1 left as they are in Heartbeat, 1 not in the engine's tables, "
        "0 engine rows not matched"
    )


def test_exports_are_read_as_csv_or_parquet_and_a_missing_file_is_named(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "control.csv").write_text("sensor_source,sensor_id,trigger_job_id,status\njdbc,t,j,COMPLETED\n")
    pq.write_table(pa.table({"sensor_id": ["t_j"], "upstream_value": ["3"]}), tmp_path / "sensors.parquet")

    def no_spark() -> None:
        raise AssertionError("an export is read without Spark")

    assert read_rows(str(tmp_path / "control.csv"), "--control-table", no_spark)[0]["status"] == "COMPLETED"
    assert read_rows(str(tmp_path / "sensors.parquet"), "--sensor-table", no_spark) == [
        {"sensor_id": "t_j", "upstream_value": "3"}
    ]
    with pytest.raises(HeartbeatError, match=r"--sensor-table .*/gone.csv: no such file or folder"):
        read_rows(str(tmp_path / "gone.csv"), "--sensor-table", no_spark)


@pytest.mark.scenario
def test_the_engines_tables_are_read_by_name_through_spark_when_no_export_is_given(spark: "SparkSession") -> None:
    # GIVEN the engine's sensor table as a table of the session (its schema: assets an array of strings)
    from pyspark.sql.types import ArrayType, StringType, StructField, StructType, TimestampType

    schema = StructType(
        [
            StructField("sensor_id", StringType(), False),
            StructField("assets", ArrayType(StringType(), False), True),
            StructField("status", StringType(), False),
            StructField("status_change_timestamp", TimestampType(), False),
            StructField("checkpoint_location", StringType(), True),
            StructField("upstream_key", StringType(), True),
            StructField("upstream_value", StringType(), True),
        ]
    )
    row = ("public_orders_k", ["orders_k"], "PROCESSED_NEW_DATA", datetime(2026, 5, 1, 6, 40), None, "id", "10")
    spark.createDataFrame([row], schema).createOrReplaceTempView("engine_sensors_by_name")
    # WHEN it is named instead of a path THEN its rows are read through the session, as an export's would be
    rows = read_rows("engine_sensors_by_name", "--sensor-table", lambda: spark)
    assert rows == [
        {
            "sensor_id": "public_orders_k",
            "assets": ["orders_k"],
            "status": "PROCESSED_NEW_DATA",
            "status_change_timestamp": datetime(2026, 5, 1, 6, 40),
            "checkpoint_location": None,
            "upstream_key": "id",
            "upstream_value": "10",
        }
    ]
    # and a name no table has is refused, naming it
    with pytest.raises(HeartbeatError, match=r"--sensor-table no_such_engine_table: cannot be read as a table"):
        read_rows("no_such_engine_table", "--sensor-table", lambda: spark)
