"""The lead's scenario, driven by ticks: a controls CSV mixing source kinds (folder, Delta table,
Kafka topic, PostgreSQL table, SAP chain log), two jobs sharing one upstream, one upstream made
unreachable mid-run. One read per distinct upstream per tick, errors isolated, no event lost."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from harness.sensors.jdbc import JdbcSensor
from tests.fixtures_sources import pg_connection
from tests.kafka_mock import MockKafka
from tests.postgres import PostgresServer
from tests.support import HeartbeatHarness, control_row, spy_on_reads


@pytest.fixture
def jdbc_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every JDBC read the real sensor makes (a spy around it, not a mock)."""
    return spy_on_reads(monkeypatch, JdbcSensor)


def test_mixed_sources_one_read_per_upstream_errors_isolated_and_nothing_lost(
    heartbeat: HeartbeatHarness,
    postgres: PostgresServer,
    pg_password: str,
    kafka: MockKafka,
    jdbc_reads: list[str],
    tmp_path: Path,
) -> None:
    # GIVEN job_a (orders table + Kafka topic), job_b (the same orders table + an SAP chain) and
    # job_c (a Delta table, hard + a trigger folder, soft), every upstream holding data
    postgres.execute(
        [
            "DROP TABLE IF EXISTS scn_orders",
            "CREATE TABLE scn_orders (id int)",
            "INSERT INTO scn_orders VALUES (1), (2), (3)",
            'CREATE SCHEMA IF NOT EXISTS "SCN"',
            'CREATE TABLE IF NOT EXISTS "SCN"."RSPCLOGCHAIN" ("CHAIN_ID" text, "DATUM" text, "ZEIT" text, '
            '"ANALYZED_STATUS" text)',
            """INSERT INTO "SCN"."RSPCLOGCHAIN" VALUES ('ZPC_SCN', '20260101', '060000', 'G')""",
        ]
    )
    kafka.produce("scn.events", "e1", "e2")
    delta = tmp_path / "delta_sales"
    write_deltalake(str(delta), pa.table({"id": [1]}))
    heartbeat.drop_trigger_file("scn", "a.done")
    heartbeat.with_sections(
        jdbc={"connections": {"pg": pg_connection(postgres)}},
        sap_bw={"schema": "SCN", "connections": {"bw": pg_connection(postgres)}},
        kafka={"bootstrap_servers": kafka.bootstrap_servers},
    )
    heartbeat.write_controls(
        [
            control_row("jdbc", "pg: public.scn_orders", "job_a", upstream_key="id"),
            control_row("kafka", "shop: scn.events", "job_a"),
            control_row("jdbc", "pg: public.scn_orders", "job_b", upstream_key="id"),
            control_row("sap_bw", "bw: ZPC_SCN", "job_b"),
            control_row("delta_table", str(delta), "job_c"),
            control_row("trigger_file", "scn", "job_c", hard=False),
        ]
    )
    heartbeat.define_jobs("job_a", "job_b", "job_c")

    # WHEN the first tick runs
    first = heartbeat.tick()

    # THEN 5 distinct upstreams were checked, the shared table read once, and all three jobs started
    assert (first.upstreams_checked, first.new_data, first.check_errors) == (5, 6, 0)
    assert jdbc_reads == ["pg: public.scn_orders"]
    assert sorted(first.started) == ["job_a", "job_b", "job_c"]

    # WHEN, while the runs go, orders and events arrive, and the Delta table becomes unreachable
    postgres.execute("INSERT INTO scn_orders VALUES (4), (5)")
    kafka.produce("scn.events", "e3", partition=1)
    shutil.move(delta, tmp_path / "delta_sales_moved")
    heartbeat.wait_for_runs()
    second = heartbeat.tick()

    # THEN the runs' ends are recorded, the new data is picked up, only the Delta row failed, and only
    # job_a (both hard upstreams new) started again: job_b waits for its SAP chain
    assert second.runs_succeeded == 3 and second.check_errors == 1
    (failed,) = heartbeat.events("CHECK_FAILED")
    assert failed["trigger_job_id"] == "job_c" and "cannot read the Delta table" in failed["message"]
    assert second.started == ["job_a"]
    statuses = heartbeat.statuses()
    assert statuses[("jdbc", "pg: public.scn_orders", "job_b")] == "NEW_EVENT_AVAILABLE"
    assert statuses[("sap_bw", "bw: ZPC_SCN", "job_b")] == "COMPLETED"

    # WHEN the Delta table is back with a new version and the SAP chain runs green, and a tick runs
    shutil.move(tmp_path / "delta_sales_moved", delta)
    write_deltalake(str(delta), pa.table({"id": [2]}), mode="append")
    postgres.execute("""INSERT INTO "SCN"."RSPCLOGCHAIN" VALUES ('ZPC_SCN', '20260102', '060000', 'G')""")
    heartbeat.wait_for_runs()
    third = heartbeat.tick()

    # THEN job_b and job_c start, and every run's range continues where the previous one ended
    assert sorted(third.started) == ["job_b", "job_c"]
    heartbeat.wait_for_runs()
    ranges = {(r["job"], u["sensor_id"]): [] for r in heartbeat.job_runs() for u in r["range"]["upstreams"]}
    for run in heartbeat.job_runs():
        for u in run["range"]["upstreams"]:
            ranges[(run["job"], u["sensor_id"])].append((u["from"], u["to"]))
    orders_b = ranges[("job_b", "pg: public.scn_orders")]
    assert [(f and f["max"]["value"], t["max"]["value"]) for f, t in orders_b] == [(None, 3), (3, 5)]
    events_a = ranges[("job_a", "shop: scn.events")]
    assert events_a[1][0] == events_a[0][1] and events_a[1][1]["offsets"]["1"] == 1
    delta_c = ranges[("job_c", str(delta))]
    assert [(f and f["version"], t["version"]) for f, t in delta_c] == [(None, 0), (0, 1)]
