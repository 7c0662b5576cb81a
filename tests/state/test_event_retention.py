"""The event log is partitioned by day and its old days are compacted (events.keep_days) without
changing any row's state: a rebuild of the control table from scratch after compaction gives the
same table, the archive holds every event, and an event log written before partitioning is moved in."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.core.config import PROJECT_DIR, ConfigError, config_from_mapping
from harness.state.event_files import PARTITION_COLUMN
from harness.state.event_log import EVENT_SCHEMA, EventLog
from harness.state.event_reader import EVENTS_TABLE
from harness.state.tables import CONTROL_TABLE
from harness.tick import fold, retention
from tests.support import HeartbeatHarness, control_row


def _state(heartbeat: HeartbeatHarness) -> list[dict[str, Any]]:
    return heartbeat.tables.control_table()


def _event_ids(heartbeat: HeartbeatHarness, table: str) -> set[str]:
    return {r[0] for r in heartbeat.spark.sql(f"SELECT event_id FROM {heartbeat.config.table(table)}").collect()}


def _count(heartbeat: HeartbeatHarness, table: str, where: str = "true") -> int:
    return int(heartbeat.spark.sql(f"SELECT count(*) FROM {heartbeat.config.table(table)} WHERE {where}").first()[0])


def test_compaction_keeps_every_rows_state_and_archives_the_rest(heartbeat: HeartbeatHarness) -> None:
    # GIVEN a job that ran twice, a job whose run failed with a detection still to hand over, and a job
    # waiting out its quiet period with two detections to hand over
    heartbeat.write_controls(
        [
            control_row("trigger_file", "ok", "good"),
            control_row("trigger_file", "bad", "failing"),
            control_row("trigger_file", "slow", "waiting") | {"quiet_period": "1h"},
        ]
    )
    heartbeat.define_jobs("good", "failing", "waiting")
    heartbeat.set_exit_code("failing", 1)
    heartbeat.with_sections(events={"keep_days": 30})
    heartbeat.drop_trigger_file("ok", "b1")
    heartbeat.drop_trigger_file("bad", "b1")
    heartbeat.drop_trigger_file("slow", "b1")
    heartbeat.tick_until_settled()
    heartbeat.drop_trigger_file("ok", "b2")
    heartbeat.drop_trigger_file("slow", "b2")
    heartbeat.tick_until_settled()
    assert heartbeat.job_status("good") == {"COMPLETED"} and heartbeat.job_status("failing") == {"FAILED"}
    before = _state(heartbeat)
    total = _count(heartbeat, EVENTS_TABLE)
    days = {r[0] for r in heartbeat.spark.sql(f"SHOW PARTITIONS {heartbeat.config.table(EVENTS_TABLE)}").collect()}
    assert days == {f"{PARTITION_COLUMN}={datetime.now(timezone.utc).date()}"}

    # WHEN the log is compacted as if 40 days had passed (every event is past the limit)
    runtime = heartbeat.runtime()
    later = date.today() + timedelta(days=40)
    assert retention.due(runtime.config, later)
    done = retention.compact(runtime, later)

    # THEN the archive has every event, the log keeps fewer, and the control table did not move
    assert done is not None and done.archived == total
    assert _count(heartbeat, retention.ARCHIVE_TABLE) == total
    kept = _count(heartbeat, EVENTS_TABLE)
    assert 0 < kept < total and done.kept == kept
    assert _state(heartbeat) == before
    # the detections since a row's last success are still in the log (their range is still owed), of
    # the others only the latest
    detections = "event_type = 'DATA_CHANGED' AND trigger_job_id"
    assert _count(heartbeat, EVENTS_TABLE, f"{detections} = 'failing'") == 1
    assert _count(heartbeat, EVENTS_TABLE, f"{detections} = 'waiting'") == 2
    assert _count(heartbeat, EVENTS_TABLE, f"{detections} = 'good'") == 1
    assert not retention.due(runtime.config, later)

    # WHEN the control table is rebuilt from scratch from the compacted log
    heartbeat.spark.sql(f"DROP TABLE {heartbeat.config.table(CONTROL_TABLE)}")
    runtime.views_built = False
    fold.fold(runtime, with_seed=True)
    # THEN it is the same table
    assert _state(heartbeat) == before

    # WHEN compaction runs again the next day: nothing is archived twice, nothing more is dropped
    again = retention.compact(runtime, later + timedelta(days=1))
    assert again is not None and again.archived == 0 and again.kept == kept
    assert _count(heartbeat, retention.ARCHIVE_TABLE) == total

    # WHEN a rewrite was cut short: the process died with the log's (parquet) day gone
    kept_ids = _event_ids(heartbeat, EVENTS_TABLE)
    day = datetime.now(timezone.utc).date()
    heartbeat.spark.sql(
        f"ALTER TABLE {heartbeat.config.table(EVENTS_TABLE)} DROP PARTITION ({PARTITION_COLUMN} = DATE'{day}')"
    )
    record = runtime.config.layout.retention_record
    record.write_text(json.dumps(json.loads(record.read_text()) | {"rewriting": True}))
    assert retention.due(runtime.config, later + timedelta(days=1))
    # THEN the next compaction puts the kept events back from the archive
    repaired = retention.compact(runtime, later + timedelta(days=1))
    assert repaired is not None and repaired.kept == kept
    assert _event_ids(heartbeat, EVENTS_TABLE) == kept_ids

    # AND the heartbeat carries on: the failed job's range still starts at its last success
    heartbeat.request("retry", "failing")
    heartbeat.set_exit_code("failing", 0)
    heartbeat.tick_until_settled()
    failing_runs = heartbeat.job_runs("failing")
    assert failing_runs[-1]["range"]["upstreams"][0]["from"] is None


def test_an_event_log_written_before_partitioning_is_moved_into_the_partitioned_table(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN an event table in the earlier layout (no event_date), holding two events
    table = heartbeat.config.table(EVENTS_TABLE)
    spark = heartbeat.spark
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {heartbeat.config.catalog}.{heartbeat.config.schema}")
    old_columns = [f for f in EVENT_SCHEMA.fields if f.name != PARTITION_COLUMN]
    spark.sql(
        f"CREATE TABLE {table} ({', '.join(f'{f.name} {f.dataType.simpleString()}' for f in old_columns)}) "
        "USING parquet"
    )
    spark.sql(
        f"INSERT INTO {table} (event_id, event_time, event_type) VALUES "
        "('a', TIMESTAMP'2026-01-01 10:00:00', 'CONFIG_REJECTED'), "
        "('b', TIMESTAMP'2026-02-01 10:00:00', 'CONFIG_REJECTED')"
    )

    # WHEN the log is opened
    log = EventLog(spark, heartbeat.config)

    # THEN its events are in the partitioned table, each on its day, once; the earlier table is gone
    assert PARTITION_COLUMN in spark.table(table).columns
    rows = {r["event_id"]: r[PARTITION_COLUMN] for r in spark.table(table).collect()}
    assert rows == {"a": date(2026, 1, 1), "b": date(2026, 2, 1)}
    assert not spark.catalog.tableExists(heartbeat.config.table(retention.ARCHIVE_TABLE))
    assert not spark.catalog.tableExists(heartbeat.config.table(EVENTS_TABLE + "_unpartitioned"))
    assert log.unfolded  # the moved events are folded by the next tick


def test_keep_days_shorter_than_the_open_runs_window_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="events.keep_days is 7.*at least 30"):
        config_from_mapping({"events": {"keep_days": 7}}, tmp_path)


def test_the_kept_events_operation_passes_the_macros_own_arguments() -> None:
    # GIVEN the macro that fills the kept events' table, and its documentation for the dbt docs site
    macros = PROJECT_DIR / "macros"
    signature = re.search(r"macro heartbeat_create_kept_events\(([^)]*)\)", (macros / "retention.sql").read_text())
    documented = yaml.safe_load((macros / "_heartbeat__macros.yml").read_text())["macros"]
    # WHEN retention builds its dbt command for the days before 31 January, read from the archive
    command = retention.kept_events_operation(retention.ARCHIVE_TABLE, date(2026, 1, 31))
    # THEN it runs that macro with exactly its arguments, which the documentation names too
    assert command[:2] == ["run-operation", "heartbeat_create_kept_events"]
    arguments = json.loads(command[command.index("--args") + 1])
    assert arguments == {
        "source_table": "heartbeat_events_archive",
        "before_date": "2026-01-31",
        "kept_table": retention.KEPT_TABLE,
    }
    assert signature is not None and [name.strip() for name in signature.group(1).split(",")] == list(arguments)
    (entry,) = [m for m in documented if m["name"] == "heartbeat_create_kept_events"]
    assert [a["name"] for a in entry["arguments"]] == list(arguments)
