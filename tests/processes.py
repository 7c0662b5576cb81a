"""A heartbeat run as its own process, as an operator runs it: `python -m harness ...` in its own process
group with its own state folder (so its own Derby metastore and JVM), on the local runner or on the
Databricks backend against the Jobs API test server. Tests kill it (SIGKILL to the whole group, as when
a node dies) and read back what it left: the runs, the snapshot `status` prints, the health record.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from harness.core.config import PROJECT_DIR
from harness.core.faults import CRASH_ENV
from harness.state.status_files import read_snapshot
from tests.jobs_api_server import FAST, JobsApiServer
from tests.support import RECORDING_JOB, SESSION_SEEDS, control_row, write_controls_csv

PROCESS_TIMEOUT_SECONDS = 300
UPSTREAM = "orders"


class HeartbeatProcess:
    """One heartbeat (one state folder) fed by the trigger folder `orders`, feeding job `job_id`."""

    def __init__(self, root: Path, backend: str, job_id: str, server: JobsApiServer | None = None) -> None:
        self.root, self.backend, self.job_id, self.server = root, backend, job_id, server
        self.config = root / "heartbeat.yml"
        self.state = root / "state"
        self.runs_dir = root / "job_runs"  # where the local recording job writes the range it was handed
        # dbt reads seeds from inside the project only (state/ is git-ignored); removed by `cleanup`.
        self.seeds = SESSION_SEEDS / f"proc_{root.name}"
        self.seconds: list[float] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABRICKS_", "HEARTBEAT_", "PYSPARK_"))}
        self.env.update(
            {
                "RUNS_DIR": str(self.runs_dir),
                "DATABRICKS_CONFIG_FILE": str(root / ".databrickscfg"),
                "NO_PROXY": "127.0.0.1",
            }
        )
        if server is not None:
            self.env.update({"DATABRICKS_HOST": server.url, "DATABRICKS_TOKEN": server.token})

    def write_config(self, *more_rows: dict[str, str], **settings: Any) -> None:
        """heartbeat.yml and the controls CSV: the trigger folder `orders` and `more_rows` feeding the job;
        `settings` are further top-level keys of heartbeat.yml (e.g. spark_remote)."""
        self.seeds.mkdir(parents=True, exist_ok=True)
        write_controls_csv(
            self.seeds / "heartbeat_controls.csv", [control_row("trigger_file", UPSTREAM, self.job_id), *more_rows]
        )
        (self.root / "triggers" / UPSTREAM).mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {
            "state_dir": str(self.state),
            "backend": self.backend,
            "dbt_target": "local",
            "controls_csv": str(self.seeds / "heartbeat_controls.csv"),
            "trigger_file": {"root": str(self.root / "triggers")},
            **settings,
        }
        if self.backend == "databricks":
            config["databricks"] = {**FAST, "retry_timeout_seconds": 5, "http_timeout_seconds": 3}
        else:
            config["local_runner"] = {"jobs": {self.job_id: {"name": "orders-job", "command": RECORDING_JOB}}}
        self.config.write_text(yaml.safe_dump(config))

    def cleanup(self) -> None:
        shutil.rmtree(self.seeds, ignore_errors=True)

    def drop(self, name: str) -> Path:
        path = self.root / "triggers" / UPSTREAM / name
        path.write_text(name)
        return path

    def run(self, *args: str, crash_at: str | None = None, timeout: float = PROCESS_TIMEOUT_SECONDS) -> int:
        """Run `python -m harness ARGS` to its end; returns its exit code (-9 when a crash point killed it)."""
        return self.finish(self.start(*args, crash_at=crash_at), timeout)

    def output_so_far(self) -> str:
        """What the process started last has printed until now."""
        return self._log.read_text(errors="replace") if self._log.exists() else ""

    def output(self, n: int = -1) -> str:
        logs = sorted(self.root.glob("process-*.log"), key=lambda p: int(p.name.split("-")[1]))
        return logs[n].read_text(errors="replace")

    # --- what it left ------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The status snapshot as `status` reads it: with the latest tick that found the state so."""
        snapshot = read_snapshot(self.state)
        assert snapshot is not None, f"no status snapshot in {self.state}"
        return snapshot

    def health(self) -> dict[str, Any]:
        return dict(json.loads((self.state / "health.json").read_text()))

    def row(self) -> dict[str, Any]:
        (row,) = [r for r in self.snapshot()["rows"] if r["upstream_label"] == f"trigger_file:{UPSTREAM}"]
        return dict(row)

    def runs(self) -> list[dict[str, Any]]:
        """The job's runs, oldest first: run id, token, when it was created, the change range it was handed."""
        if self.server is not None:
            return [
                {
                    "run_id": str(r.run_id),
                    "token": r.token,
                    "range": self.server.change_range(r),
                    "created": datetime.fromtimestamp(r.start_time / 1000, tz=timezone.utc),
                    "done": r.result_state is not None,
                }
                for r in self.server.runs_of(int(self.job_id))
            ]
        runs = []
        for folder in (self.state / "local_runs").glob("local-*"):
            if not (folder / "launched").exists():
                continue
            recorded = self.runs_dir / f"{folder.name}.json"
            meta = json.loads((folder / "meta.json").read_text())
            runs.append(
                {
                    "run_id": folder.name,
                    "token": meta["token"],
                    "created": datetime.fromisoformat(meta["requested_at"]),
                    "range": json.loads(recorded.read_text())["range"] if recorded.exists() else None,
                    "done": (folder / "result.json").exists(),
                }
            )
        return sorted(runs, key=lambda r: r["created"])

    def start(self, *args: str, crash_at: str | None = None) -> subprocess.Popen[bytes]:
        """Start `python -m harness ARGS` in its own process group; the caller waits (see `finish`)."""
        env = dict(self.env)
        if crash_at:
            env[CRASH_ENV] = crash_at
        self._started = time.monotonic()
        self._log = self.root / f"process-{len(self.seconds) + 1}-{crash_at or 'clean'}.log"
        return subprocess.Popen(
            [sys.executable, "-m", "harness", "--config", str(self.config), *args],
            cwd=PROJECT_DIR,
            env=env,
            start_new_session=True,
            stdout=self._log.open("wb"),
            stderr=subprocess.STDOUT,
        )

    def finish(self, proc: subprocess.Popen[bytes], timeout: float = PROCESS_TIMEOUT_SECONDS) -> int:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        _wait_group_gone(proc.pid)
        self.seconds.append(round(time.monotonic() - self._started, 1))
        return proc.returncode

    def last_tick_id(self) -> str | None:
        path = self.state / "health.json"
        return json.loads(path.read_text())["last_tick"]["tick_id"] if path.exists() else None

    def wait_for_runs(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(r["done"] and r["range"] is not None for r in self.runs()):
                return
            time.sleep(0.1)
        raise AssertionError(f"runs did not finish: {self.runs()}")


def _wait_group_gone(pgid: int) -> None:
    """The JVM of a killed heartbeat holds the Derby lock until it is gone."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.killpg(pgid, signal.SIGKILL)
