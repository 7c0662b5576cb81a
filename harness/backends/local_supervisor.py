"""Supervises one local run: runs the job's command, enforces its timeout, writes result.json.

Started detached by LocalBackend.start; outlives the heartbeat process that started it.
Usage: python -m harness.backends.local_supervisor RUN_DIR
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one, never a part."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    tmp.write_text(text)
    os.replace(tmp, path)


def supervise(run_dir: Path) -> int:
    meta = json.loads((run_dir / "meta.json").read_text())
    write_atomic(run_dir / "supervisor.pid", str(os.getpid()))
    env = {**os.environ, **meta["env"]}
    timeout = meta.get("timeout_seconds")
    started = datetime.now(timezone.utc)
    with open(run_dir / "output.log", "wb") as log:
        try:
            proc = subprocess.Popen(["/bin/bash", "-c", meta["command"]], cwd=meta["cwd"], env=env,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
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
    result = {"exit_code": code, "message": message, "started_at": started.isoformat(),
              "ended_at": datetime.now(timezone.utc).isoformat()}
    write_atomic(run_dir / "result.json", json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1])))
