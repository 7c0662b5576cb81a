"""Adopting an estate whose upstreams already hold data: start_from now, and an import of the lakehouse
engine's tables (`import-lakehouse-engine`). Real Spark, dbt, delta-rs tables, PostgreSQL and the local runner."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from harness.commands import cli
from harness.tick.run import run_cold_tick
from harness.tick.runtime import Runtime
from tests.engine_exports import engine_control, engine_exports, engine_sensor
from tests.fixtures_sources import pg_connection
from tests.postgres import PostgresServer
from tests.support import HeartbeatHarness, control_row, status_output

pytestmark = pytest.mark.scenario


def test_an_estate_holding_data_with_start_from_now_starts_nothing_until_a_change_then_the_job_once(
    heartbeat: HeartbeatHarness, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a trigger folder and a Delta table that already hold data; the folder's row says start_from now,
    # the table's row leaves it to heartbeat.yml (controls.start_from: now), a third row says beginning
    table = tmp_path / "lake" / "orders"
    write_deltalake(str(table), pa.table({"id": [1, 2]}))
    heartbeat.drop_trigger_file("orders", "old-batch")
    heartbeat.drop_trigger_file("legacy", "old-batch")
    heartbeat.write_controls(
        [
            control_row("trigger_file", "orders", "j") | {"start_from": "now"},
            control_row("delta_table", str(table), "k") | {"start_from": ""},
            control_row("trigger_file", "legacy", "b") | {"start_from": "beginning"},
        ]
    )
    heartbeat.with_sections(controls={"start_from": "now"})
    heartbeat.define_jobs("j", "k", "b")

    # WHEN the first tick checks them: a cron tick, which starts cold
    first = run_cold_tick(heartbeat.config, heartbeat.runtime)

    # THEN only the beginning row's job starts; the now rows record where their upstreams are, without new data
    assert first.error is None and first.started == ["b"]
    watches = {e["sensor_id"]: e for e in heartbeat.events("WATCH_STARTED")}
    assert set(watches) == {"orders", str(table)}
    assert json.loads(watches[str(table)]["watermark_after"])["version"] == 0
    rows = {r.key.sensor_id: r for r in heartbeat.tables.control_rows()}
    for sensor_id in ("orders", str(table)):
        row = rows[sensor_id]
        assert row.start_from == "now" and row.status is None and row.latest_event_fetched_timestamp is None
        assert row.watermark == watches[sensor_id]["watermark_after"] == row.last_success_watermark
    assert rows["legacy"].start_from == "beginning"
    said = status_output(heartbeat, capsys)
    assert "watching from version 0" in said and "no new data yet" not in said  # no expected_within: no freshness

    # WHEN ticks go on with nothing new THEN nothing more starts, and no second watch is recorded: once the
    # run's end is recorded, a cron tick ends cold
    heartbeat.wait_for_runs()
    assert heartbeat.tick().started == []

    def no_spark() -> Runtime:
        raise AssertionError("a cron tick with nothing new opens no Spark")

    assert run_cold_tick(heartbeat.config, no_spark).started == []
    assert len(heartbeat.events("WATCH_STARTED")) == 2

    # WHEN both upstreams change THEN each job starts once, handed the range from where its watch began
    heartbeat.drop_trigger_file("orders", "new-batch")
    write_deltalake(str(table), pa.table({"id": [3]}), mode="append")
    assert sorted(run_cold_tick(heartbeat.config, heartbeat.runtime).started) == ["j", "k"]
    heartbeat.wait_for_runs()
    assert heartbeat.tick().started == []
    ranges = {run["job"]: run["range"]["upstreams"][0] for run in heartbeat.job_runs() if run["job"] in ("j", "k")}
    assert len([run for run in heartbeat.job_runs() if run["job"] in ("j", "k")]) == 2
    assert (
        json.dumps(ranges["j"]["from"], sort_keys=True, separators=(",", ":")) == watches["orders"]["watermark_after"]
    )
    assert ranges["k"]["from"]["version"] == 0 and ranges["k"]["to"]["version"] == 1


def test_an_import_of_the_engines_tables_carries_statuses_and_watermarks_and_starts_only_what_it_had_not_processed(
    heartbeat: HeartbeatHarness,
    postgres: PostgresServer,
    pg_password: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN an estate the engine ran: a JDBC table it processed up to id 10, one whose ids up to 5 it found
    # but had not processed, and a trigger folder it read through a streaming checkpoint
    postgres.execute(
        [
            "DROP TABLE IF EXISTS engine_done",
            "CREATE TABLE engine_done (id int)",
            "INSERT INTO engine_done SELECT generate_series(1, 10)",
            "DROP TABLE IF EXISTS engine_pending",
            "CREATE TABLE engine_pending (id int)",
            "INSERT INTO engine_pending SELECT generate_series(1, 5)",
        ]
    )
    heartbeat.with_sections(jdbc={"connections": {"default": pg_connection(postgres)}})
    heartbeat.drop_trigger_file("landed", "old-batch")
    heartbeat.write_controls(
        [
            control_row("jdbc", "public.engine_done", "done", upstream_key="id"),
            control_row("jdbc", "public.engine_pending", "pending", upstream_key="id"),
            control_row("trigger_file", "landed", "files"),
        ]
    )
    heartbeat.define_jobs("done", "pending", "files")
    control, sensors = engine_exports(
        tmp_path / "exports",
        [
            engine_control("jdbc", "public.engine_done", "done", "COMPLETED"),
            engine_control("jdbc", "public.engine_pending", "pending", "NEW_EVENT_AVAILABLE"),
            engine_control("trigger_file", "landed", "files", "COMPLETED"),
            engine_control("trigger_file", "LANDED", "files", "COMPLETED"),
        ],
        [
            engine_sensor("public_engine_done_done", "PROCESSED_NEW_DATA", "id", "10"),
            engine_sensor("public_engine_pending_pending", "ACQUIRED_NEW_DATA", "id", "5"),
            engine_sensor("landed_files", "PROCESSED_NEW_DATA", "", "None", checkpoint="/chk/landed_files"),
        ],
    )
    config = str(heartbeat.write_config_file())
    command = [
        "--config",
        config,
        "import-lakehouse-engine",
        "--control-table",
        str(control),
        "--sensor-table",
        str(sensors),
    ]

    # WHEN the team looks at the dry run, then imports
    capsys.readouterr()
    assert cli.main([*command, "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert not (heartbeat.config.state_dir / "inbox").exists() or not list(
        (heartbeat.config.state_dir / "inbox").glob("*.json")
    )
    assert "line 2 (jdbc 'public.engine_done' -> job done): COMPLETED, watermark max(id) = 10" in dry
    assert "line 4 (trigger_file 'landed' -> job files): start_from now" in dry
    assert "(trigger_file 'LANDED' -> job files) in the engine's control table is not in the controls CSV" in dry
    assert cli.main(command) == 0
    assert "queued" in capsys.readouterr().out

    # THEN the next tick carries them: it starts only the job whose data the engine had not processed
    first = heartbeat.tick()
    assert first.error is None and first.started == ["pending"]
    rows = {r.key.trigger_job_id: r for r in heartbeat.tables.control_rows()}
    assert rows["done"].status == "COMPLETED"
    assert json.loads(rows["done"].watermark or "") == {"key": "id", "max": {"type": "int", "value": 10}}
    assert rows["done"].last_success_watermark == rows["done"].watermark
    assert rows["files"].start_from == "now" and rows["files"].watermark is not None  # watched from its first check
    assert len(heartbeat.events("STATE_IMPORTED")) == 3
    heartbeat.wait_for_runs()
    (pending_run,) = heartbeat.job_runs("pending")
    assert pending_run["range"]["upstreams"][0]["to"]["max"]["value"] == 5

    # WHEN the same tables are imported a second time THEN nothing is queued and the next tick changes nothing
    capsys.readouterr()
    assert cli.main(command) == 0
    assert "nothing to import" in capsys.readouterr().out
    assert heartbeat.tick().started == []
    assert len(heartbeat.events("STATE_IMPORTED")) == 3

    # WHEN a table the engine had processed grows THEN its job starts once, handed the range from id 10
    postgres.execute("INSERT INTO engine_done VALUES (11)")
    assert heartbeat.tick().started == ["done"]
    heartbeat.wait_for_runs()
    (done_run,) = heartbeat.job_runs("done")
    upstream = done_run["range"]["upstreams"][0]
    assert upstream["from"]["max"]["value"] == 10 and upstream["to"]["max"]["value"] == 11
    assert "imported from the lakehouse engine" in status_output(heartbeat, capsys)
