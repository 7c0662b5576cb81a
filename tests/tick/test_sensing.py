"""Sensing across upstreams: one read per distinct upstream, concurrent checks with a timeout, errors
isolated per upstream, preprocess_query confined. Driven by direct `sense()` calls on control rows
(cheaper than ticks); the upstreams are real (folders, PostgreSQL)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from harness.core.config import Config, SensingSettings
from harness.core.vocabulary import ControlRow, EventType, RowKey, SensorSource
from harness.sensors import build_registry
from harness.sensors.base import Upstream
from harness.sensors.context import CheckContext
from harness.sensors.jdbc import JdbcSensor
from harness.sensors.trigger_file import FolderListing, TriggerFileSensor
from harness.state.event_log import Event
from harness.tick.sensing import sense
from tests.fixtures_sources import check_context, pg_connection, sensed_row, sensor_config
from tests.postgres import PostgresServer, free_port


def control(
    source: str,
    sensor_id: str,
    job: str,
    *,
    upstream_key: str | None = None,
    preprocess_query: str | None = None,
    watermark: Any = None,
) -> ControlRow:
    return sensed_row(
        source,
        sensor_id,
        job,
        upstream_key=upstream_key,
        preprocess_query=preprocess_query,
        watermark=json.dumps(watermark) if watermark is not None else None,
    )


def by_job(events: list[Event]) -> dict[str, Event]:
    return {e.row.trigger_job_id: e for e in events if e.row is not None}


@pytest.fixture
def config(tmp_path: Path, postgres: PostgresServer, pg_password: str) -> Config:
    (tmp_path / "triggers").mkdir()
    closed = pg_connection(postgres) | {"url": f"jdbc:postgresql://127.0.0.1:{free_port()}/lake"}
    base = sensor_config(
        tmp_path, timeout=20, jdbc={"connections": {"default": pg_connection(postgres), "down": closed}}
    )
    return replace(base, trigger_root=tmp_path / "triggers")


@pytest.fixture
def tables(spark: SparkSession, postgres: PostgresServer, config: Config) -> PostgresServer:
    """The tables, and one JDBC read first: Spark's first JDBC query loads its classes (~10 s), which
    would count against the short check timeout of these tests."""
    postgres.execute(
        [
            "DROP TABLE IF EXISTS sensing_orders CASCADE",
            "CREATE TABLE sensing_orders (id int, amount int)",
            "INSERT INTO sensing_orders VALUES (1, 10), (2, 20)",
            "CREATE OR REPLACE VIEW sensing_slow AS SELECT id FROM sensing_orders, pg_sleep(40)",
            "DROP TABLE IF EXISTS sensing_tricky",
            'CREATE TABLE sensing_tricky (k int, "k` > 0 OR `k" int)',
            "INSERT INTO sensing_tricky VALUES (5, 5)",
        ]
    )
    JdbcSensor.from_settings(config.sources.jdbc).read_position(
        check_context(spark), Upstream(SensorSource.JDBC, "public.sensing_orders", "id")
    )
    return postgres


class CountingTriggerFileSensor(TriggerFileSensor):
    """The real trigger_file sensor, counting its reads (a spy, not a mock)."""

    reads: list[Upstream] = []

    def read_position(self, context: CheckContext, upstream: Upstream) -> FolderListing:
        self.reads.append(upstream)
        return super().read_position(context, upstream)


def test_two_jobs_sharing_an_upstream_cause_one_read_and_keep_their_own_watermarks(
    spark: SparkSession, config: Config
) -> None:
    # GIVEN one trigger folder feeding two jobs; job_b has already seen the first file
    folder = config.trigger_root / "orders"  # type: ignore[operator]
    folder.mkdir()
    (folder / "first.done").write_text("1")
    sensor = CountingTriggerFileSensor(config.trigger_root)
    seen_first = sensor.read_position(check_context(), Upstream(SensorSource.TRIGGER_FILE, "orders")).watermark
    (folder / "second.done").write_text("2")
    sensor.reads.clear()
    rows = [
        control("trigger_file", "orders", "job_a"),
        control("trigger_file", "orders", "job_b", watermark=seen_first),
    ]

    # WHEN the rows are sensed
    outcome = sense(rows, {SensorSource.TRIGGER_FILE: sensor}, spark, config)

    # THEN the folder was read once, and each row got the files beyond its own watermark
    assert len(sensor.reads) == 1 and outcome.upstreams == 1
    events = by_job(outcome.events)
    assert [f["name"] for f in events["job_a"].details["files"]] == ["first.done", "second.done"]
    assert [f["name"] for f in events["job_b"].details["files"]] == ["second.done"]


class SlowTriggerFileSensor(TriggerFileSensor):
    """The real trigger_file sensor, taking 2 s per read (a slow folder listing)."""

    def read_position(self, context: CheckContext, upstream: Upstream) -> FolderListing:
        time.sleep(2)
        return super().read_position(context, upstream)


def test_each_check_gets_its_deadline_when_it_starts_not_when_sensing_starts(config: Config) -> None:
    # GIVEN two trigger folders read one after the other (one check at a time), each read taking 2 s,
    # and a check timeout of 3 s: together they take longer than one check may
    for name in ("first", "second"):
        (config.trigger_root / name).mkdir()  # type: ignore[operator]
        (config.trigger_root / name / "a.done").write_text("1")  # type: ignore[operator]
    config = replace(
        config,
        settings=config.settings.model_copy(
            update={"sensing": SensingSettings(check_timeout_seconds=3, max_parallel_checks=1)}
        ),
    )
    sensor = SlowTriggerFileSensor(config.trigger_root)
    rows = [control("trigger_file", "first", "job_first"), control("trigger_file", "second", "job_second")]

    # WHEN they are sensed
    outcome = sense(rows, {SensorSource.TRIGGER_FILE: sensor}, None, config)

    # THEN neither timed out: the second check's 3 s started when it did
    assert {job: e.event_type for job, e in by_job(outcome.events).items()} == {
        "job_first": EventType.DATA_CHANGED,
        "job_second": EventType.DATA_CHANGED,
    }


def test_unreachable_upstream_fails_only_its_rows(spark: SparkSession, config: Config, tables: PostgresServer) -> None:
    # GIVEN two jobs on a reachable table and one job on a database whose port is closed
    rows = [
        control("jdbc", "public.sensing_orders", "job_ok_1", upstream_key="id"),
        control("jdbc", "public.sensing_orders", "job_ok_2", upstream_key="id"),
        control("jdbc", "down: public.sensing_orders", "job_down", upstream_key="id"),
    ]

    # WHEN they are sensed
    outcome = sense(rows, build_registry(config), spark, config)

    # THEN the reachable rows have new data, the other one a CHECK_FAILED naming its upstream and cause
    events = by_job(outcome.events)
    assert events["job_ok_1"].event_type is EventType.DATA_CHANGED
    assert events["job_ok_2"].event_type is EventType.DATA_CHANGED
    assert events["job_down"].event_type is EventType.CHECK_FAILED
    assert events["job_down"].message.startswith("jdbc:down: public.sensing_orders: cannot query down")
    assert "refused" in events["job_down"].message and outcome.upstreams == 2


def test_slow_upstream_times_out_without_delaying_the_others(
    spark: SparkSession, config: Config, tables: PostgresServer
) -> None:
    # GIVEN a view that takes 40 s to answer (pg_sleep), a check timeout of 3 s, and a fast table
    rows = [
        control("jdbc", "public.sensing_slow", "job_slow", upstream_key="id"),
        control("jdbc", "public.sensing_orders", "job_fast", upstream_key="id"),
    ]

    config = replace(
        config,
        settings=config.settings.model_copy(
            update={"sensing": SensingSettings(check_timeout_seconds=3, max_parallel_checks=4)}
        ),
    )

    # WHEN they are sensed
    started = time.monotonic()
    outcome = sense(rows, build_registry(config), spark, config)
    elapsed = time.monotonic() - started

    # THEN the slow one is a timeout error, the fast one has its data, and nobody waited for the slow one
    events = by_job(outcome.events)
    assert events["job_slow"].event_type is EventType.CHECK_FAILED
    assert events["job_slow"].message == (
        "jdbc:public.sensing_slow: check timed out after 3s (sensing.check_timeout_seconds)"
    )
    assert events["job_fast"].event_type is EventType.DATA_CHANGED
    assert elapsed < 30  # far below the slow view's 40 s: sensing did not wait for it


def on_orders(job_id: str, query: str | None = None) -> ControlRow:
    """A row of job `job_id` on the table public.sensing_orders (its new rows by id), with `query` as its
    preprocess_query."""
    return control("jdbc", "public.sensing_orders", job_id, upstream_key="id", preprocess_query=query)


@pytest.mark.parametrize("query", ["DROP TABLE sensor_new_data", "SELECT * FROM sensor_new_data; SELECT 1"])
def test_preprocess_query_other_than_one_select_is_refused_at_check_time(
    spark: SparkSession, config: Config, tables: PostgresServer, query: str
) -> None:
    # GIVEN a row with new data and a preprocess_query that is not a single SELECT
    rows = [on_orders("job_p", query)]

    # WHEN it is sensed
    (event,) = sense(rows, build_registry(config), spark, config).events

    # THEN it is refused with a message, and the table the query named still exists
    assert event.event_type is EventType.CHECK_FAILED and "preprocess_query must" in event.message
    tables.execute("SELECT 1 FROM sensing_orders")


def test_preprocess_query_decides_whether_new_rows_count(
    spark: SparkSession, config: Config, tables: PostgresServer
) -> None:
    # GIVEN new rows (amounts 10 and 20) and two rows filtering them differently via ?upstream_key
    rows = [
        on_orders("job_big", "SELECT * FROM sensor_new_data WHERE amount > 15 AND ?upstream_key > 1"),
        on_orders("job_huge", "SELECT * FROM sensor_new_data WHERE amount > 1000"),
    ]

    # WHEN they are sensed
    outcome = sense(rows, build_registry(config), spark, config)

    # THEN only the row whose query returns a row has new data
    assert [e.row.trigger_job_id for e in outcome.events] == ["job_big"]
    assert "preprocess_query returned no row" in outcome.nothing_new[rows[1].key.ref]


def test_a_failed_preprocess_query_is_its_rows_failure_named_by_job_and_line_in_the_query(
    spark: SparkSession, config: Config, tables: PostgresServer
) -> None:
    # GIVEN new rows and two rows of the same upstream: one plain, one whose query names no such column
    rows = [on_orders("job_plain"), on_orders("job_typo", "SELECT * FROM sensor_new_data WHERE no_such_col > 1")]

    # WHEN they are sensed
    outcome = sense(rows, build_registry(config), spark, config)

    # THEN the plain row has new data, and the other's failure names its job and the query's own line
    by_job = {e.row.trigger_job_id: e for e in outcome.events if e.row is not None}
    assert by_job["job_plain"].event_type is EventType.DATA_CHANGED
    failed = by_job["job_typo"]
    assert failed.event_type is EventType.CHECK_FAILED
    assert failed.message.startswith("jdbc:public.sensing_orders -> job job_typo: preprocess_query failed: ")
    assert "no_such_col" in failed.message and "line 1 pos " in failed.message


def test_malicious_upstream_key_stays_one_identifier_in_the_preprocess_query(
    spark: SparkSession, config: Config, tables: PostgresServer
) -> None:
    # GIVEN a real column named to break out of backticks: "k` > 0 OR `k", beside a column k, both 5;
    # the preprocess_query keeps rows where that column IS NULL (none: it holds 5)
    key = "k` > 0 OR `k"
    rows = [
        control(
            "jdbc",
            "public.sensing_tricky",
            "job_tricky",
            upstream_key=key,
            preprocess_query="SELECT * FROM sensor_new_data WHERE ?upstream_key IS NULL",
        )
    ]

    # WHEN it is sensed
    outcome = sense(rows, build_registry(config), spark, config)

    # THEN ?upstream_key stayed one identifier: the query returned no row (broken quoting would have
    # read `k` > 0 OR `k` IS NULL, true for the row, and reported new data)
    assert outcome.events == []
    assert "preprocess_query returned no row" in outcome.nothing_new[rows[0].key.ref]


def test_an_upstream_read_by_two_rows_is_one_failed_check_in_the_ticks_record() -> None:
    from harness.tick.sensing import SensingOutcome

    # GIVEN a sensing whose check of one upstream failed for its two rows, and of another for its one row
    lake = "delta_table:/lake/nope: cannot read the Delta table; check the path (sensor_id)"
    db = "jdbc:sales.orders: cannot query default: connection refused"
    outcome = SensingOutcome(
        events=[
            Event(EventType.CHECK_FAILED, row=RowKey("delta_table", "/lake/nope", job), message=lake)
            for job in ("a", "b")
        ]
        + [
            Event(EventType.DATA_CHANGED, row=RowKey("trigger_file", "orders", "c")),
            Event(EventType.CHECK_FAILED, row=RowKey("jdbc", "sales.orders", "d"), message=db),
        ]
    )
    # THEN the failed checks are each upstream's message, once, in the order found
    assert outcome.failed_checks == [lake, db]


def test_checks_failing_as_in_the_last_tick_are_not_recorded_again_however_many(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from harness.state.status_files import TickResult, last_failed_checks, record_tick
    from harness.tick.sensing import SensingOutcome, to_record

    # GIVEN 30 upstreams down, each failure recorded on its row and named in the last tick's record
    messages = [f"jdbc:sales.t{i}: cannot query default: connection refused" for i in range(30)]
    rows = [sensed_row("jdbc", f"sales.t{i}", f"j{i}", last_error=m) for i, m in enumerate(messages)]
    record_tick(tmp_path, TickResult("t0", datetime.now(timezone.utc), 0.1, None, failed_checks=messages))

    # WHEN the next tick's checks fail the same way
    outcome = SensingOutcome(
        events=[Event(EventType.CHECK_FAILED, row=r.key, message=m) for r, m in zip(rows, messages)]
    )

    # THEN it records none of them again (it recorded all but the first 20 at every tick, and folded)
    assert to_record(outcome, rows, last_failed_checks(tmp_path)) == []


def test_a_failure_whose_message_differs_only_in_the_clients_retry_figures_is_not_recorded_again(
    tmp_path: Path,
) -> None:
    from datetime import datetime, timezone

    from harness.state.status_files import TickResult, last_failed_checks, record_tick
    from harness.tick.sensing import SensingOutcome, to_record

    # GIVEN an object store down: the last tick recorded its check's failure, which names how long the
    # client retried and how many times
    said = "delta_table:s3://lake/orders: cannot read the Delta table: Generic S3 error: Error after {} retries in {}, max_retries:10, retry_timeout:180s"
    first = said.format(10, "30.001234567s")
    row = sensed_row("delta_table", "s3://lake/orders", "j", last_error=first)
    record_tick(tmp_path, TickResult("t0", datetime.now(timezone.utc), 0.1, None, failed_checks=[first]))

    # WHEN this tick's check fails the same way, after other figures
    again = Event(EventType.CHECK_FAILED, row=row.key, message=said.format(9, "29.5s"))
    # THEN it is the same failure: not recorded again (it was, at every tick, and folded)
    assert to_record(SensingOutcome(events=[again]), [row], last_failed_checks(tmp_path)) == []
    # AND another failure of the same upstream is new
    other = Event(EventType.CHECK_FAILED, row=row.key, message="delta_table:s3://lake/orders: access denied")
    assert to_record(SensingOutcome(events=[other]), [row], last_failed_checks(tmp_path)) == [other]
