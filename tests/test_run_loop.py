"""`python -m harness run` loops until Ctrl-C, then stops cleanly after the current step."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from harness.config import PROJECT_DIR
from harness.tick import TickReport


def test_run_loop_stops_cleanly_on_ctrl_c_and_releases_the_state(tmp_path: Path) -> None:
    # GIVEN a heartbeat with its own state folder (its own metastore: a second process)
    (tmp_path / "triggers" / "demo_orders_landed").mkdir(parents=True)
    config = tmp_path / "heartbeat.yml"
    config.write_text(yaml.safe_dump({"state_dir": "state", "trigger_file": {"root": "triggers"},
                                      "controls_csv": str(PROJECT_DIR / "seeds" / "heartbeat_controls.csv")}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTBEAT_")}
    proc = subprocess.Popen([sys.executable, "-m", "harness", "--config", str(config), "run", "--interval", "1"],
                            cwd=PROJECT_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # WHEN its first tick has finished and Ctrl-C arrives
        output = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            output.append(line)
            if "start jobs" in line:
                break
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    text = "".join(output) + rest

    # THEN it says it stops, exits 0 after whole ticks, and a next process can take the state
    assert proc.returncode == 0, text
    assert "stopping after the current step (signal 2)" in text and "stopped after" in text
    assert "Traceback" not in text
    from harness.state_lock import StateLock

    StateLock(tmp_path / "state").acquire().release()


def test_a_tick_is_idle_only_when_it_started_nothing_and_no_run_is_going() -> None:
    # `run --until-idle` stops after such a tick
    assert TickReport("t").idle
    assert TickReport("t", runs_succeeded=2, new_data=1).idle  # ends recorded, new data waiting on a rule
    assert not TickReport("t", started=["job_a"]).idle
    assert not TickReport("t", runs_running=1).idle
    assert not TickReport("t", start_unconfirmed=["job_a"]).idle
    assert not TickReport("t", error="dbt build failed").idle
