"""sap_bw / sap_b4 sensor against a real PostgreSQL holding an RSPCLOGCHAIN table."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from harness.core.vocabulary import SensorSource
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.sap import GreenLogs, SapChainSensor
from tests.fixtures_sources import check_context, pg_connection, sensor_config
from tests.postgres import PostgresServer

SCHEMA = "SAPABAP1"


@pytest.fixture(scope="module")
def chain_log(postgres: PostgresServer) -> PostgresServer:
    """SAP's process-chain log table, in an upper-case schema as on HANA."""
    postgres.execute(
        [
            f'CREATE SCHEMA IF NOT EXISTS "{SCHEMA}"',
            f'CREATE TABLE IF NOT EXISTS "{SCHEMA}"."RSPCLOGCHAIN" ("CHAIN_ID" varchar(30), "LOG_ID" varchar(25), '
            '"DATUM" varchar(8), "ZEIT" varchar(6), "ANALYZED_STATUS" varchar(1))',
        ]
    )
    return postgres


def log_run(server: PostgresServer, chain: str, datum: str, zeit: str, status: str = "G") -> None:
    server.execute(
        f'INSERT INTO "{SCHEMA}"."RSPCLOGCHAIN" VALUES (%s, %s, %s, %s, %s)',
        (chain, f"LOG{datum}{zeit}", datum, zeit, status),
    )


def sap_sensor(tmp_path: Path, server: PostgresServer, source: str = "sap_bw") -> SapChainSensor:
    section = {"schema": SCHEMA, "connections": {"bw": pg_connection(server)}}
    return SapChainSensor.from_settings(
        SensorSource(source), getattr(sensor_config(tmp_path, **{source: section}).sources, source)
    )


def read(sensor: SapChainSensor, upstream: Upstream, spark: SparkSession) -> GreenLogs:
    return sensor.read_position(check_context(spark), upstream)


def test_sap_chain_without_a_green_log_is_nothing_new(
    spark: SparkSession, chain_log: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN a chain whose only log is red
    log_run(chain_log, "ZPC_RED_ONLY", "20260105", "031500", status="R")
    sensor, upstream = sap_sensor(tmp_path, chain_log), Upstream(SensorSource.SAP_BW, "bw: ZPC_RED_ONLY")

    # WHEN it is checked for a row never sensed
    detection = sensor.detect(upstream, read(sensor, upstream, spark), None)

    # THEN nothing is new
    assert isinstance(detection, NothingNew) and "no green log" in detection.reason


def test_sap_newer_green_log_is_new_with_sap_time_as_watermark(
    spark: SparkSession, chain_log: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN a row that has seen the chain's green run of 1999 (far from the harness's clock: SAP time only)
    log_run(chain_log, "ZPC_DAILY", "19991231", "235959")
    sensor, upstream = sap_sensor(tmp_path, chain_log), Upstream(SensorSource.SAP_BW, "bw: ZPC_DAILY")
    first = sensor.detect(upstream, read(sensor, upstream, spark), None)
    assert isinstance(first, NewData) and first.watermark == {"sap_time": "19991231235959"}

    # WHEN a red run and a newer green run are logged, and the row is checked again
    log_run(chain_log, "ZPC_DAILY", "20000101", "000001", status="R")
    log_run(chain_log, "ZPC_DAILY", "20000101", "000500")
    second = sensor.detect(upstream, read(sensor, upstream, spark), first.watermark)

    # THEN the green run is new, with SAP's own DATUM and ZEIT
    assert isinstance(second, NewData)
    assert second.watermark == {"sap_time": "20000101000500"}
    assert dict(second.changes) == {
        "chain_id": "ZPC_DAILY",
        "sap_time_from": "19991231235959",
        "sap_time_to": "20000101000500",
        "datum": "20000101",
        "zeit": "000500",
    }


def test_sap_green_log_backdated_before_the_watermark_is_not_new(
    spark: SparkSession, chain_log: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN a row at the chain's green run of 2026-02-01 10:00:00
    log_run(chain_log, "ZPC_LATE", "20260201", "100000")
    sensor, upstream = sap_sensor(tmp_path, chain_log, "sap_b4"), Upstream(SensorSource.SAP_B4, "bw:ZPC_LATE")
    seen = read(sensor, upstream, spark).watermark

    # WHEN a green log with an older SAP time is written now
    log_run(chain_log, "ZPC_LATE", "20260131", "235900")

    # THEN it is not new: SAP time, not insertion time, decides
    assert isinstance(sensor.detect(upstream, read(sensor, upstream, spark), seen), NothingNew)


def test_sap_chain_id_with_quotes_matches_no_other_chain(
    spark: SparkSession, chain_log: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN green runs of some chain, and a sensor_id trying to widen the WHERE clause
    log_run(chain_log, "ZPC_OTHER", "20260301", "080000")
    sensor = sap_sensor(tmp_path, chain_log)
    upstream = Upstream(SensorSource.SAP_BW, "bw: X' OR '1'='1")

    # WHEN it is checked
    detection = sensor.detect(upstream, read(sensor, upstream, spark), None)

    # THEN the quote stayed inside the literal: no chain is called that, so nothing is new
    assert isinstance(detection, NothingNew)


def test_sap_new_data_frame_holds_the_green_logs_beyond_the_watermark(
    spark: SparkSession, chain_log: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN three green runs and one red run of a chain, and a row at the first green run
    for datum, status in (("20250101", "G"), ("20250102", "G"), ("20250103", "R"), ("20250104", "G")):
        log_run(chain_log, "ZPC_FRAME", datum, "120000", status)
    sensor, upstream = sap_sensor(tmp_path, chain_log), Upstream(SensorSource.SAP_BW, "bw: ZPC_FRAME")

    # WHEN the new data frame is read
    rows = sensor.new_data_frame(
        check_context(spark), upstream, read(sensor, upstream, spark), {"sap_time": "20250101120000"}
    ).collect()

    # THEN it holds the two later green runs
    assert sorted(r["DATUM"] for r in rows) == ["20250102", "20250104"]
