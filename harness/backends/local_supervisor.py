"""Supervises one local run: claims it, runs the job's command, enforces its timeout, writes result.json.

Started detached by LocalBackend; outlives the heartbeat process that started it. The claim (creating
`launched` exclusively) is what makes a run started: if two supervisors of one run ever start (the
heartbeat re-launching a run whose start it cannot prove), only the first to claim runs the command.
Usage: python -m harness.backends.local_supervisor RUN_DIR
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from harness.state.files import write_atomic

# A run folder: what its start wrote, the supervisor's claim, the job's output and how the run ended.
META = "meta.json"
LAUNCHED = "launched"
OUTPUT = "output.log"
RESULT = "result.json"


def claim(run_dir: Path) -> bool:
    """Mark the run launched by this process; False when another supervisor already did."""
    try:
        fd = os.open(run_dir / LAUNCHED, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)
    return True


# What pyspark sets in a process that started its own Spark Connect server (`spark_remote: local`): a
# job's Spark is its own, never a client of the heartbeat's server.
CONNECT_SERVER_MARKERS = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "SPARK_CONNECT_AUTHENTICATE_TOKEN")


def supervise(run_dir: Path) -> int:
    if not claim(run_dir):
        return 0
    started = datetime.now(timezone.utc)
    try:
        return _run(run_dir, started)
    except Exception as exc:  # noqa: BLE001 - said in the run's result: the heartbeat records it as the run's failure
        return _finish(run_dir, started, -1, f"the local runner could not run the command: {type(exc).__name__}: {exc}")


def _run(run_dir: Path, started: datetime) -> int:
    meta = json.loads((run_dir / META).read_text())
    inherited = {k: v for k, v in os.environ.items() if k not in CONNECT_SERVER_MARKERS}
    env = {**inherited, **meta["env"]}
    timeout = meta.get("timeout_seconds")
    with open(run_dir / OUTPUT, "wb") as log:
        try:
            proc = subprocess.Popen(
                ["/bin/bash", "-c", meta["command"]],
                cwd=meta["cwd"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return _finish(run_dir, started, 127, f"could not start the command: {exc}")
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return _finish(run_dir, started, -9, f"timed out after {timeout:g}s (local_runner timeout_seconds)")
    message = "" if code == 0 else f"exit code {code}: {_last_line(run_dir / 'output.log')}"
    return _finish(run_dir, started, code, message)


def _last_line(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:500] if lines else "(no output)"


def _finish(run_dir: Path, started: datetime, code: int, message: str) -> int:
    result = {
        "exit_code": code,
        "message": message,
        "started_at": started.isoformat(),
        "ended_at": datetime.now(timezone.utc).isoformat(),
    }
    write_atomic(run_dir / RESULT, json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1])))
