"""start_from now in cron's `python -m harness tick` processes: each starts cold, from the status snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.processes import HeartbeatProcess


@pytest.mark.process
def test_cron_tick_processes_honour_start_from_now_and_start_the_job_only_after_a_change(tmp_path: Path) -> None:
    """A process of its own: a cron tick is a new process each time, which starts cold (no Spark until the
    work in front of it needs it); only a process shows that its first look and hand-over keep start_from."""
    hb = HeartbeatProcess(tmp_path / "hb", "local", "orders_job")
    try:
        # GIVEN a trigger folder holding a batch, and heartbeat.yml's controls.start_from now
        hb.write_config(controls={"start_from": "now"})
        hb.drop("old-batch")

        # WHEN cron's first and second tick run THEN neither starts the job; the row watches from the folder
        assert hb.run("tick") == 0, hb.output()
        assert hb.run("tick") == 0, hb.output()
        row = hb.row()
        assert hb.runs() == [] and row["start_from"] == "now" and row["status"] is None
        assert row["watermark"] is not None and row["watched_since"] is not None

        # WHEN a batch lands THEN the next cron tick starts the job once, handed the range from the watch
        hb.drop("new-batch")
        assert hb.run("tick") == 0, hb.output()
        hb.wait_for_runs()
        (run,) = hb.runs()
        assert run["range"]["upstreams"][0]["from"] == json.loads(row["watermark"])
    finally:
        hb.cleanup()
