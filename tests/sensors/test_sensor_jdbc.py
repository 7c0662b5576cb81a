"""jdbc sensor against a real PostgreSQL server, through Spark's JDBC reader."""

from __future__ import annotations

import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from pyspark.sql import SparkSession

from harness.core.errors import SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.context import CheckTimedOut
from harness.sensors.jdbc import JdbcSensor, KeyMax
from tests.fixtures_sources import check_context, pg_connection, sensor_config
from tests.postgres import PostgresServer, free_port

CLOSED = {"url": "jdbc:postgresql://127.0.0.1:9/lake", "driver": "org.postgresql.Driver"}  # never connected to


def jdbc_sensor(tmp_path: Path, postgres: PostgresServer, **connections: dict) -> JdbcSensor:
    named = {"default": pg_connection(postgres), **connections}
    return JdbcSensor.from_settings(sensor_config(tmp_path, jdbc={"connections": named}).sources.jdbc)


def read(sensor: JdbcSensor, upstream: Upstream, spark: SparkSession | None = None, timeout: float = 20) -> KeyMax:
    """One check's read of the table, with `timeout` seconds until the check's deadline."""
    return sensor.read_position(check_context(spark, timeout), upstream)


def orders_table(postgres: PostgresServer, name: str, ids: range) -> None:
    postgres.execute([f"DROP TABLE IF EXISTS {name}", f"CREATE TABLE {name} (id int, amount numeric(10,2))"])
    add_orders(postgres, name, ids)


def add_orders(postgres: PostgresServer, name: str, ids: range) -> None:
    postgres.execute(f"INSERT INTO {name} SELECT i, i * 1.5 FROM generate_series({ids.start}, {ids.stop - 1}) i")


def test_jdbc_unchanged_table_is_nothing_new(
    spark: SparkSession, postgres: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN a table whose max(id) the row has already seen
    orders_table(postgres, "orders_same", range(1, 4))
    sensor, upstream = jdbc_sensor(tmp_path, postgres), Upstream(SensorSource.JDBC, "public.orders_same", "id")
    seen = read(sensor, upstream, spark).watermark

    # WHEN it is checked again without any insert
    detection = sensor.detect(upstream, read(sensor, upstream, spark), seen)

    # THEN nothing is new
    assert isinstance(detection, NothingNew) and "still 3" in detection.reason


def test_jdbc_rows_beyond_the_watermark_are_new_with_the_key_range(
    spark: SparkSession, postgres: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN a row that has seen ids up to 3 (the first check: everything existing is new)
    orders_table(postgres, "orders_grow", range(1, 4))
    sensor, upstream = jdbc_sensor(tmp_path, postgres), Upstream(SensorSource.JDBC, "default: public.orders_grow", "id")
    first = sensor.detect(upstream, read(sensor, upstream, spark), None)
    assert isinstance(first, NewData) and first.changes["key_from"] is None and first.changes["key_to"] == 3

    # WHEN two rows land (e.g. while the job of the first detection runs) and the row is checked again
    add_orders(postgres, "orders_grow", range(4, 6))
    second = sensor.detect(upstream, read(sensor, upstream, spark), first.watermark)

    # THEN the new range is 3 -> 5 and the watermark is the typed max
    assert isinstance(second, NewData)
    assert (second.changes["key_from"], second.changes["key_to"]) == (3, 5)
    assert second.watermark == {"key": "id", "max": {"type": "int", "value": 5}}


def test_jdbc_new_data_frame_is_pushed_down_to_rows_beyond_the_watermark(
    spark: SparkSession, postgres: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN a view that fails for any row at or below id 3 (a full read would fail), watermark at 3
    orders_table(postgres, "orders_base", range(1, 6))
    postgres.execute(
        "CREATE OR REPLACE VIEW orders_guarded AS "
        "SELECT id, CASE WHEN id <= 3 THEN 1 / (id - id) ELSE id END AS checked FROM orders_base"
    )
    sensor, upstream = jdbc_sensor(tmp_path, postgres), Upstream(SensorSource.JDBC, "public.orders_guarded", "id")
    position = read(sensor, upstream, spark)

    # WHEN the new data frame is read for a row at id 3
    since = {"key": "id", "max": {"type": "int", "value": 3}}
    rows = sensor.new_data_frame(check_context(spark), upstream, position, since).collect()

    # THEN only ids 4 and 5 were read: the database applied the bound
    assert sorted(r["id"] for r in rows) == [4, 5]


def test_jdbc_row_whose_upstream_key_was_edited_starts_over_from_the_new_column(
    spark: SparkSession, postgres: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN a row that ran to max(amount) = 7.50 (ids 1..5), whose upstream_key is then edited to id
    orders_table(postgres, "orders_rekeyed", range(1, 6))
    sensor = jdbc_sensor(tmp_path, postgres)
    by_amount = Upstream(SensorSource.JDBC, "public.orders_rekeyed", "amount")
    seen = read(sensor, by_amount, spark).watermark
    by_id = Upstream(SensorSource.JDBC, "public.orders_rekeyed", "id")

    # WHEN it is checked with the new column
    position = read(sensor, by_id, spark)
    detection = sensor.detect(by_id, position, seen)

    # THEN the amount's max is not compared with the ids: the row starts over, as a new row would, and
    # its range reads every row up to max(id) (the amount's bound would not be the id's)
    assert isinstance(detection, NewData) and (detection.changes["key_from"], detection.changes["key_to"]) == (None, 5)
    rows = sensor.new_data_frame(check_context(spark), by_id, position, seen).collect()
    assert sorted(r["id"] for r in rows) == [1, 2, 3, 4, 5]


@pytest.mark.unit
def test_jdbc_max_behind_the_handed_one_says_rows_were_deleted(tmp_path: Path) -> None:
    # GIVEN a row handed up to max(id) = 5, whose table's rows 4 and 5 were deleted
    sensor = JdbcSensor.from_settings(sensor_config(tmp_path, jdbc=CLOSED).sources.jdbc)
    upstream = Upstream(SensorSource.JDBC, "public.orders", "id")
    handed = KeyMax("id", 5).watermark
    # WHEN it is checked, THEN the reason gives the max read and says what is not handed, not "still 5"
    detection = sensor.detect(upstream, KeyMax("id", 3), handed)
    assert isinstance(detection, NothingNew) and detection.reason == (
        "max(id) is 3, behind the 5 already handed (rows deleted): rows written again at or below 5 are not "
        "handed, only those beyond it"
    )
    assert sensor.detect(upstream, KeyMax("id", 5), handed) == NothingNew("max(id) is still 5")


@pytest.mark.unit
def test_jdbc_key_whose_type_changed_is_new_data_saying_so_and_its_range_is_refused_naming_what_to_do(
    tmp_path: Path,
) -> None:
    # GIVEN a row handed up to a timestamp, whose column was altered to text
    sensor = JdbcSensor.from_settings(sensor_config(tmp_path, jdbc=CLOSED).sources.jdbc)
    upstream = Upstream(SensorSource.JDBC, "public.events", "ts")
    handed = KeyMax("ts", datetime(2026, 1, 1, 10, 5)).watermark
    now = KeyMax("ts", "2026-01-01 10:10:00")
    # WHEN it is checked, THEN the change is new data (never silently ignored), noting the type change
    detection = sensor.detect(upstream, now, handed)
    assert isinstance(detection, NewData)
    assert detection.changes["note"].startswith("ts's values changed type (timestamp to string): a range from one")
    # AND reading the range says so, before any query (none compares the two), naming what to do
    with pytest.raises(SensorError, match=r"^jdbc:public.events: ts's values changed type .* `complete` the job"):
        sensor.new_data_frame(check_context(None), upstream, now, handed)
    # AND numbers of another kind compare as numbers: no note
    numbers = sensor.detect(upstream, KeyMax("ts", Decimal("7.5")), KeyMax("ts", 7).watermark)
    assert isinstance(numbers, NewData) and "note" not in numbers.changes


def test_jdbc_malicious_upstream_key_is_a_quoted_identifier_not_sql(
    spark: SparkSession, postgres: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN an upstream_key that tries to close the identifier and drop the table
    orders_table(postgres, "orders_victim", range(1, 3))
    sensor = jdbc_sensor(tmp_path, postgres)
    upstream = Upstream(
        SensorSource.JDBC, "public.orders_victim", 'id") FROM orders_victim; DROP TABLE orders_victim; --'
    )

    # WHEN it is checked
    with pytest.raises(SensorError) as error:
        read(sensor, upstream, spark)

    # THEN the database saw one unknown column, and the table is still there
    assert "does not exist" in str(error.value) and "jdbc:public.orders_victim" in str(error.value)
    good = Upstream(SensorSource.JDBC, "public.orders_victim", "id")
    assert read(sensor, good, spark).watermark["max"]["value"] == 2


def test_jdbc_unreachable_database_is_a_sensor_error_naming_the_upstream(
    spark: SparkSession, postgres: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN a connection to a closed port
    closed = pg_connection(postgres) | {"url": f"jdbc:postgresql://127.0.0.1:{free_port()}/lake"}
    sensor = jdbc_sensor(tmp_path, postgres, down=closed)

    # WHEN it is checked
    with pytest.raises(SensorError) as error:
        read(sensor, Upstream(SensorSource.JDBC, "down: public.orders", "id"), spark)

    # THEN the message names the upstream, the connection, its heartbeat.yml key and the cause
    message = str(error.value)
    assert message.startswith("jdbc:down: public.orders: cannot query down") and "refused" in message
    assert "heartbeat.yml's jdbc.connections.down)" in message


def test_jdbc_unknown_connection_says_what_to_configure(
    tmp_path: Path, postgres: PostgresServer, pg_password: str
) -> None:
    # GIVEN a sensor_id naming a connection that is not configured
    sensor = jdbc_sensor(tmp_path, postgres)

    # WHEN it is checked, THEN the error names the missing connection and the config key to add
    with pytest.raises(SensorError, match=r"no connection 'sales' .* add jdbc.connections.sales"):
        read(sensor, Upstream(SensorSource.JDBC, "sales: public.orders", "id"))


def test_jdbc_slow_query_is_cancelled_at_the_check_deadline(
    spark: SparkSession, postgres: PostgresServer, pg_password: str, tmp_path: Path
) -> None:
    # GIVEN a view that takes 60 s to answer (pg_sleep), read directly: no sensing loop abandons the check
    orders_table(postgres, "orders_under_slow", range(1, 3))
    postgres.execute("CREATE OR REPLACE VIEW orders_slow AS SELECT id FROM orders_under_slow, pg_sleep(60)")
    sensor = jdbc_sensor(tmp_path, postgres)
    read(sensor, Upstream(SensorSource.JDBC, "public.orders_under_slow", "id"), spark)  # Spark's JDBC classes loaded

    # WHEN it is checked with 3 s left until the check's deadline
    started = time.monotonic()
    with pytest.raises(CheckTimedOut, match=r"^jdbc:public.orders_slow: check timed out after 3s "):
        read(sensor, Upstream(SensorSource.JDBC, "public.orders_slow", "id"), spark, timeout=3)
    elapsed = time.monotonic() - started

    # THEN the check ended by its deadline, and the database stopped the query (its timeout was the time
    # left), rather than running it on for an abandoned check
    assert elapsed < 20  # far below the view's 60 s
    assert still_running(postgres, "orders_slow", wait=10) is False


def still_running(postgres: PostgresServer, text: str, wait: float) -> bool:
    """Whether the database still runs a query containing `text` after up to `wait` seconds."""
    deadline = time.monotonic() + wait
    with psycopg.connect(postgres.dsn(), autocommit=True) as conn:
        while True:
            (running,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                "AND query LIKE %s AND pid <> pg_backend_pid()",
                (f"%{text}%",),
            ).fetchone()
            if running == 0 or time.monotonic() > deadline:
                return running > 0
            time.sleep(0.1)
