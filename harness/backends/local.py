"""The local job runner (embedded default): each job is a shell command run as a subprocess.

Jobs come from `local_runner.jobs` in heartbeat.yml (id -> name, command, optional timeout). Each run
lives in `<state>/local_runs/<run_id>/`; a detached supervisor process (harness.backends.local_supervisor,
forked by the process's launcher, harness.backends.local_launcher) claims the run, runs the command,
enforces its timeout and writes `result.json`, so a later tick, in any process, records how it ended.

A start is: the run's folder and meta.json, then the token file (token -> run id), then the
supervisor. A token already used returns its run: no second run. A run whose supervisor never claimed
it (the heartbeat was killed before launching it) provably never started: it is launched now, the same
run under the same token, by the next start with that token or the next poll.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from harness.backends.base import JobBackend, RunRequest, RunState, RunStatus, StartRefused
from harness.backends.local_supervisor import LAUNCHED, META, RESULT
from harness.core.config import Config
from harness.core.errors import BackendError
from harness.core.faults import crash_point
from harness.core.vocabulary import dumps
from harness.state.files import write_atomic

# A supervisor creates its claim, then writes its pid into it: an empty claim younger than this is a
# supervisor between the two writes, not one that died.
CLAIM_SECONDS = 60.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A finished child of this process stays a zombie until reaped; reap it so it reads as dead. A
    # supervisor is nobody's child here (the launcher forks it away), but a zombie is dead all the same
    # where nothing reaps it.
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited != 0:
            return False
    except ChildProcessError:
        pass
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


class LocalBackend(JobBackend):
    name = "local"

    def __init__(self, config: Config) -> None:
        self.config = config
        self.runs_dir = config.layout.local_runs
        self.tokens_dir = self.runs_dir / "tokens"
        self._launcher: subprocess.Popen[str] | None = None
        self._launch_lock = threading.Lock()

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def start(self, request: RunRequest) -> str:
        self.tokens_dir.mkdir(parents=True, exist_ok=True)
        token_file = self.tokens_dir / request.idempotency_token
        if token_file.exists():
            run_id = token_file.read_text().strip()
            self._ensure_launched(self.run_dir(run_id))
            return run_id
        job = self.config.local_jobs.get(request.job_id)
        if job is None:
            known = ", ".join(sorted(self.config.local_jobs)) or "none"
            raise StartRefused(
                f"job {request.job_id} is not defined in local_runner.jobs of the config "
                f"({self.config.config_path or 'heartbeat.yml'}); defined jobs: {known}"
            )
        run_id = f"local-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        run_dir = self.run_dir(run_id)
        run_dir.mkdir(parents=True)
        env = {
            "HEARTBEAT_JOB_ID": request.job_id,
            "HEARTBEAT_JOB_NAME": request.job_name or job.name or "",
            "HEARTBEAT_RUN_ID": run_id,
            "HEARTBEAT_RUN_CONTEXT_ID": request.idempotency_token,
            "HEARTBEAT_CHANGE_RANGE": dumps(request.change_range),
        }
        meta = {
            "run_id": run_id,
            "job_id": request.job_id,
            "command": job.command,
            "timeout_seconds": job.timeout_seconds,
            "token": request.idempotency_token,
            "env": env,
            "cwd": str(self.config.base_dir),
            "requested_at": datetime.now(timezone.utc).isoformat(),
        }
        write_atomic(run_dir / META, json.dumps(meta, indent=2))
        # Recorded before the process exists: a crash from here on never yields a second run.
        write_atomic(token_file, run_id)
        crash_point("local:token-recorded")
        self._launch(run_dir)
        return run_id

    def _launch(self, run_dir: Path) -> None:
        """Hand the run to this process's launcher (harness.backends.local_launcher), started on first
        use and again should it have died."""
        with self._launch_lock:
            for _ in range(2):
                if self._launcher is None or self._launcher.poll() is not None:
                    self._launcher = subprocess.Popen(
                        [sys.executable, "-m", "harness.backends.local_launcher"],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                        close_fds=True,
                        cwd=str(Path(__file__).resolve().parents[2]),
                        text=True,
                    )
                try:
                    assert self._launcher.stdin is not None
                    self._launcher.stdin.write(json.dumps(str(run_dir)) + "\n")
                    self._launcher.stdin.flush()
                    return
                except OSError:  # the launcher died: a new one
                    self._launcher = None
        raise BackendError(
            f"the local runner could not launch run {run_dir.name}: its launcher process "
            "keeps dying (see the heartbeat's log); the next tick launches the run again"
        )

    def _ensure_launched(self, run_dir: Path) -> None:
        """Launch a run no supervisor claimed: its start provably never happened. Should the first
        supervisor still be starting, it and this one race for the claim and only one runs."""
        if run_dir.is_dir() and not (run_dir / LAUNCHED).exists():
            self._launch(run_dir)

    def poll(self, job_id: str, run_id: str) -> RunStatus:
        run_dir = self.run_dir(run_id)
        if not run_dir.is_dir():
            raise BackendError(f"job {job_id}: local run {run_id} has no folder {run_dir}")
        result_file = run_dir / RESULT
        if result_file.exists():
            return _ended(job_id, run_id, result_file)
        launched = run_dir / LAUNCHED
        if not launched.exists():
            self._ensure_launched(run_dir)
            return RunStatus(RunState.RUNNING, "launched again: the heartbeat stopped before launching it")
        pid_text = launched.read_text().strip()
        if pid_text and not pid_text.isdigit():
            raise BackendError(
                f"job {job_id}: local run {run_id}: {launched} holds {pid_text[:40]!r}, not a process id; "
                "the run cannot be followed: close it with `python -m harness complete --job-id "
                f"{shlex.quote(job_id)}` (or `retry`)"
            )
        if pid_text and _alive(int(pid_text)):
            return RunStatus(RunState.RUNNING)
        if not pid_text and time.time() - launched.stat().st_mtime < CLAIM_SECONDS:
            return RunStatus(RunState.RUNNING)  # claimed this instant: its pid is being written
        if result_file.exists():  # finished between the two reads
            return self.poll(job_id, run_id)
        return RunStatus(
            RunState.FAILED, "the local runner's supervisor process died without a result", datetime.now(timezone.utc)
        )


def _ended(job_id: str, run_id: str, result_file: Path) -> RunStatus:
    """How the run ended, as its supervisor wrote it; a result file that cannot be read is a poll error
    (recorded once an hour, the other runs followed), not a failed tick."""
    try:
        result = json.loads(result_file.read_text())
        ended = datetime.fromisoformat(result["ended_at"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BackendError(
            f"job {job_id}: local run {run_id}: its result {result_file} cannot be read ({type(exc).__name__}: "
            f"{exc}); fix or remove the file, or close the run with `python -m harness complete --job-id "
            f"{shlex.quote(job_id)}` (or `retry`)"
        ) from None
    if result.get("exit_code") == 0:
        return RunStatus(RunState.SUCCEEDED, "exit code 0", ended)
    return RunStatus(RunState.FAILED, result.get("message") or f"exit code {result.get('exit_code')}", ended)
