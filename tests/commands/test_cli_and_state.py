"""One process owns a state folder; what arrives meanwhile is queued or refused with a clear message."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.commands import cli
from harness.core.config import PROJECT_DIR
from harness.state import tables
from harness.state.lock import StateLock
from harness.tick import inbox
from harness.tick.fold import fold
from tests.support import HeartbeatHarness, control_row


def test_second_tick_while_state_is_held_says_so_and_touches_nothing(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    heartbeat.write_controls([control_row("trigger_file", "in", "j")])
    heartbeat.define_jobs("j")
    config_file = heartbeat.write_config_file()
    heartbeat.drop_trigger_file("in", "batch1")
    with StateLock(heartbeat.config.state_dir, holder="heartbeat run (pid 1)"):
        code = cli.main(["--config", str(config_file), "tick"])
    assert code == 0
    assert (
        "tick skipped: another heartbeat process (heartbeat run (pid 1)) holds the state folder"
        in capsys.readouterr().err
    )
    assert not (heartbeat.config.state_dir / "local_runs").exists()
    assert heartbeat.tables.control_rows() == []


def test_complete_while_state_is_held_is_queued_and_applied_by_the_next_tick(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a FAILED job
    heartbeat.given_failed_job("j")
    (failed,) = heartbeat.tables.control_table()
    config_file = heartbeat.write_config_file()

    # WHEN `complete` runs while another process holds the state
    with StateLock(heartbeat.config.state_dir):
        assert cli.main(["--config", str(config_file), "complete", "--job-id", "j"]) == 0
    assert "the request is queued" in capsys.readouterr().out

    # THEN the next tick applies it
    report = heartbeat.tick()
    assert report.requests_applied == 1
    assert heartbeat.job_status("j") == {"COMPLETED"}
    (event,) = heartbeat.events("MANUAL_COMPLETE")
    assert event["message"].startswith("job j: completed by hand (requested at ")
    # the run keeps the end it failed at: closing it by hand is not when it ended
    (completed,) = heartbeat.tables.control_table()
    assert failed["run_ended_at"] is not None and completed["run_ended_at"] == failed["run_ended_at"]


def test_a_jobs_last_task_completes_it_before_the_tick_that_started_it_wrote_its_snapshot(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a snapshot of a tick before job j was in the controls CSV; then j is added and a tick
    # starts it, but the snapshot is still the earlier one (the starting tick has not written its own)
    heartbeat.given_working_job("a")
    earlier = heartbeat.config.layout.snapshot.read_bytes()
    heartbeat.write_controls([control_row("trigger_file", "in", "a"), control_row("trigger_file", "j_in", "j")])
    heartbeat.define_jobs("a", "j")
    heartbeat.drop_trigger_file("j_in", "batch1")
    assert heartbeat.tick().started == ["j"]
    heartbeat.config.layout.snapshot.write_bytes(earlier)
    config_file = heartbeat.write_config_file()

    # WHEN j's last task runs `complete` (the snapshot knows no job j)
    code = cli.main(["--config", str(config_file), "complete", "--job-id", "j"])

    # THEN the request is queued, saying why (it exited 2: "not in the control table"), and the next
    # tick takes it for j's run: that run's own success, recorded first, closes it, and the request is
    # said and dropped (not counted as applied)
    out = capsys.readouterr().out
    assert code == 0 and "note: job j started after the last tick's snapshot (RUN_STARTED at " in out
    assert "the request is queued" in out
    heartbeat.wait_for_runs()
    report = heartbeat.tick()
    assert (report.runs_succeeded, report.requests_applied) == (1, 0)
    assert heartbeat.job_status("j") == {"COMPLETED"} and inbox.pending(heartbeat.config.state_dir) == []
    # AND a job no tick started is still refused
    assert cli.main(["--config", str(config_file), "complete", "--job-id", "nosuch"]) == 2


def test_status_shows_each_job_with_its_reason_and_rows(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    heartbeat.write_controls([control_row("trigger_file", "a", "j"), control_row("trigger_file", "b", "j", hard=False)])
    heartbeat.define_jobs("j")
    (heartbeat.config.trigger_root / "a").mkdir()  # type: ignore[operator]
    heartbeat.drop_trigger_file("b", "batch1")
    heartbeat.tick()
    assert cli.main(["--config", str(heartbeat.write_config_file()), "status"]) == 0
    out = capsys.readouterr().out
    assert "job j (j-name): waiting: waiting for hard dependency trigger_file:a" in out
    assert "trigger_file:b" in out and "NEW_EVENT_AVAILABLE  soft UNPAUSED" in out


def test_control_table_is_rebuilt_from_seed_and_events_after_it_is_dropped(heartbeat: HeartbeatHarness) -> None:
    # GIVEN a history: a run that succeeded, then new data detected; a row whose text needs escaping
    described = 'O\'Neil\'s \\ "orders" {"a": 1} 100% ✓\ttab'
    heartbeat.write_controls(
        [
            control_row("trigger_file", "in", "j"),
            {**control_row("trigger_file", "x", "k"), "asset_description": described},
        ]
    )
    heartbeat.define_jobs("j")
    (heartbeat.config.trigger_root / "x").mkdir()  # type: ignore[operator]
    heartbeat.drop_trigger_file("in", "batch1")
    heartbeat.tick_until_settled()
    heartbeat.drop_trigger_file("in", "batch2")
    heartbeat.tick()
    before = heartbeat.tables.control_table()

    # WHEN the table is dropped and the models are built again
    heartbeat.spark.sql(f"DROP TABLE {heartbeat.config.table(tables.CONTROL_TABLE)}")
    fold(heartbeat.runtime())

    # THEN every row comes back exactly as it was
    after = heartbeat.tables.control_table()
    for old, new in zip(before, after):
        assert {k: v for k, v in new.items() if old[k] != v} == {}
    assert after == before
    assert {r["status"] for r in before} == {"IN_PROGRESS", None}
    # AND the seed loaded every text as written, and an empty cell as NULL
    assert [(r["asset_description"], r["upstream_key"]) for r in after if r["trigger_job_id"] == "k"] == [
        (described, None)
    ]


@pytest.mark.process
def test_dbt_command_line_refuses_clearly_while_a_heartbeat_holds_the_state(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTBEAT_")}
    env["HEARTBEAT_STATE_DIR"] = str(tmp_path / "state")
    env["DBT_TARGET_PATH"] = str(tmp_path / "target")
    env["DBT_LOG_PATH"] = str(tmp_path / "logs")
    with StateLock(tmp_path / "state", holder="heartbeat run (pid 99)"):
        result = subprocess.run(
            [str(PROJECT_DIR / ".venv" / "bin" / "dbt"), "seed"],
            cwd=PROJECT_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode != 0
    assert "another heartbeat process (heartbeat run (pid 99)) holds the state folder" in result.stdout
    assert "the heartbeat validates and loads it at its next tick" in result.stdout
    assert "Exception" not in result.stdout + result.stderr and "at org.apache" not in result.stdout + result.stderr


def test_status_right_after_a_tick_shows_the_state_that_tick_left(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a tick that started a job
    heartbeat.write_controls([control_row("trigger_file", "in", "j")])
    heartbeat.define_jobs("j")
    heartbeat.drop_trigger_file("in", "batch1")
    assert heartbeat.tick().started == ["j"]

    # WHEN status is asked right away
    assert cli.main(["--config", str(heartbeat.write_config_file()), "status"]) == 0

    # THEN it shows the run that tick started, not the data waiting for it
    out = capsys.readouterr().out
    assert "job j (j-name): running: a run is in progress" in out
    assert "trigger_file:in" in out and "IN_PROGRESS" in out and "NEW_EVENT_AVAILABLE" not in out
    assert "last tick " in out and " ok (" in out


def test_failing_ticks_show_in_status_until_the_state_is_repaired(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a working heartbeat
    heartbeat.given_working_job("j")
    config_file = str(heartbeat.write_config_file())

    # WHEN the control table's files are lost and ticks keep failing (a tick with nothing new reads no
    # table: the damage shows once a batch lands)
    location = (
        heartbeat.spark.sql(f"DESCRIBE FORMATTED {heartbeat.config.table(tables.CONTROL_TABLE)}")
        .filter("col_name = 'Location'")
        .collect()[0]["data_type"]
    )
    for data_file in Path(location.removeprefix("file:")).glob("*.parquet"):
        data_file.unlink()
    heartbeat.drop_trigger_file("in", "batch1")
    failures = [heartbeat.tick(), heartbeat.tick()]

    # THEN status says so: since when, the last successful tick, and the error
    assert all(f.error for f in failures)
    cli.main(["--config", config_file, "status"])
    out = capsys.readouterr().out
    assert "WARNING: the last 2 ticks failed (since " in out and "; last successful tick " in out
    assert f"last error: {failures[-1].error}" in out

    # WHEN the operator drops the damaged table (docs/operations.md), THEN the next tick rebuilds it
    heartbeat.spark.sql(f"DROP TABLE {heartbeat.config.table(tables.CONTROL_TABLE)}")
    assert heartbeat.tick().error is None
    cli.main(["--config", config_file, "status"])
    out = capsys.readouterr().out
    assert "WARNING" not in out and " ok (" in out and "trigger_file:in" in out
