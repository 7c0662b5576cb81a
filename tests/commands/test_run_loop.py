"""`python -m harness run` loops until stopped (Ctrl-C, SIGTERM), then stops cleanly after the current tick; its logs as JSON
lines; `--until-idle`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness.core.config import PROJECT_DIR
from harness.state.lock import StateLock
from harness.tick.steps import TickReport
from tests.processes import HeartbeatProcess


@pytest.mark.process
def test_run_loop_logs_json_lines_only_and_a_stop_to_its_process_group_lets_the_tick_finish(tmp_path: Path) -> None:
    # GIVEN a heartbeat process (its own state folder and metastore) with a trigger file waiting, looping
    # with --log-format json after the subcommand's name
    hb = HeartbeatProcess(tmp_path, "local", "json_job")
    hb.write_config()
    hb.drop("batch1")
    proc = hb.start("run", "--interval", "1", "--log-format", "json")
    try:
        # WHEN its first tick has started the job and, while the tick goes on (its fold, its snapshot), a
        # stop is sent to its process group, Spark's JVM included (systemd's `systemctl stop`, `kill -- -PGID`)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and '"step": "start jobs"' not in hb.output_so_far():
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGTERM)
        code = hb.finish(proc)
    finally:
        hb.cleanup()
        if proc.poll() is None:
            proc.kill()
    text = hb.output()

    # THEN every line it printed is a JSON object (no Spark banner, no JDK warning, no traceback) ...
    records = [json.loads(line) for line in text.splitlines()]
    messages = [r["message"] for r in records]
    assert code == 0, text
    assert "stopping after the current tick (signal 15)" in messages and any(
        m.startswith("stopped after") for m in messages
    )
    # ... the tick it was in finished: the JVM did not take the signal (it ends with the process)
    assert not [r for r in records if r["level"] == "ERROR"], text
    assert hb.health()["last_tick"]["error"] is None
    # ... whose step lines carry the tick, the step, its seconds, its counts and the jobs it started
    steps = [r for r in records if "step" in r]
    first_tick = [r for r in steps if r["tick_id"] == steps[0]["tick_id"]]
    by_step = {r["step"]: r for r in first_tick}
    assert by_step["start jobs"]["started"] == ["json_job"] and by_step["start jobs"]["refused"] == []
    assert by_step["sense"]["new_data"] == 1 and isinstance(by_step["sense"]["seconds"], float)
    assert all(r["time"].endswith("+00:00") and r["level"] == "INFO" for r in steps)
    # ... it released the state, and reading commands piped into `head` end quietly
    StateLock(hb.state).acquire().release()
    for command, lines in (("status | head -3", 3), ("events | head -1", 1)):
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", f"{sys.executable} -m harness --config {hb.config} {command}"],
            cwd=PROJECT_DIR,
            env=hb.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (done.returncode, done.stderr) == (0, ""), command
        assert len(done.stdout.splitlines()) == lines, command


def kill_its_jvm(proc: subprocess.Popen[str]) -> None:
    """SIGKILL to the loop's Spark JVM alone, as the kernel's out-of-memory killer sends it; the loop's one
    JVM (the one before it started again ended, and is no zombie of the new program)."""
    found = subprocess.run(["pgrep", "-g", str(proc.pid), "-x", "java"], capture_output=True, text=True)
    (pid,) = found.stdout.split()
    os.kill(int(pid), signal.SIGKILL)


@pytest.mark.process
def test_a_run_loop_starts_again_with_its_changed_heartbeat_yml_and_when_its_jvm_is_killed(tmp_path: Path) -> None:
    """A process: a loop that starts itself again, and a JVM killed under a Python process that lives on."""
    # GIVEN a loop whose heartbeat.yml does not define the job a landed file feeds: its start is refused
    hb = HeartbeatProcess(tmp_path, "local", "new_job")
    # the refused start is tried again at most 5 s after the fix (dbt's default waits 60 s, doubling to an hour)
    hb.write_config(runs={"refused_start_retry_seconds": 5, "refused_start_retry_max_seconds": 5})
    full = hb.config.read_text()
    hb.config.write_text(yaml.safe_dump({**yaml.safe_load(full), "local_runner": {"jobs": {}}}))
    hb.drop("batch1")
    proc = hb.start("run", "--interval", "1")

    def wait_for(text: str, count: int = 1) -> None:
        # a bound for a failure to show, not a timing: a loaded CI worker's cold JVM and first fold took 110 s
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and hb.output_so_far().count(text) < count:
            time.sleep(0.2)
        assert hb.output_so_far().count(text) >= count, hb.output_so_far()

    try:
        wait_for("1 refused (new_job)")
        # WHEN a typo is made in the file, THEN it is said once, and the loop goes on as it was
        hb.config.write_text(full.replace("trigger_file:", "trigger_fil:"))
        wait_for("changed and is refused")
        wait_for("start jobs", 3)
        # WHEN the file defines the job, THEN the loop starts again with it, and the job starts
        hb.config.write_text(full)
        wait_for("changed: the loop starts again with it")
        wait_for("1 started (new_job)")
        hb.wait_for_runs()
        # WHEN its Spark JVM is killed and a file lands, THEN the loop says so, starts again with a new JVM
        # (every call to the old one would fail), and the landing starts the job
        kill_its_jvm(proc)
        hb.drop("batch2")
        wait_for("the loop starts again with a new one")
        wait_for("1 started (new_job)", 2)
        hb.wait_for_runs()
        os.killpg(proc.pid, signal.SIGTERM)
        code = hb.finish(proc)
    finally:
        hb.cleanup()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = hb.output()
    assert code == 0, text
    assert text.count("changed and is refused") == 1 and len(hb.runs()) == 2
    # the loop said it once (and the tick that met the killed JVM, if one did, in one line): no trace
    assert text.count("the loop starts again with a new one") == 1 and "Traceback" not in text, text
    assert hb.health()["last_tick"]["error"] is None


def test_a_tick_is_idle_only_when_it_started_nothing_and_no_run_is_going() -> None:
    # `run --until-idle` stops after such a tick
    assert TickReport("t").idle
    assert TickReport("t", runs_succeeded=2, new_data=1).idle  # ends recorded, new data waiting on a rule
    assert not TickReport("t", started=["job_a"]).idle
    assert not TickReport("t", runs_running=1).idle
    assert not TickReport("t", start_unconfirmed=["job_a"]).idle
    assert not TickReport("t", error="dbt build failed").idle


def test_a_loop_started_while_another_heartbeat_holds_the_state_waits_for_it_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import threading

    from harness.commands.cli import _wait_for_state
    from harness.core.config import load_config

    (tmp_path / "heartbeat.yml").write_text(f"state_dir: {tmp_path / 'state'}\n")
    config = load_config(tmp_path / "heartbeat.yml")
    # GIVEN a cron tick holding the state folder, which it releases a moment later
    held = StateLock(config.state_dir, "heartbeat (pid 1)").acquire()
    threading.Timer(0.3, held.release).start()
    # WHEN a loop starts, THEN it waits for the folder, says so once, and gets it when the tick ends
    lock = _wait_for_state(config, threading.Event(), 0.02)
    assert lock is not None
    lock.release()
    waits = [r.getMessage() for r in caplog.records if "waiting until it ends" in r.getMessage()]
    assert len(waits) == 1 and "heartbeat (pid 1)" in waits[0]
    # AND one stopped (Ctrl-C) while it waits gives up without the folder
    held = StateLock(config.state_dir).acquire()
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    assert _wait_for_state(config, stop, 0.02) is None
    held.release()
