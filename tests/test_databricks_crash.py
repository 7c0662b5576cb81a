"""Fault injection with real process exits: the heartbeat runs as its own process (own state folder, so
its own Derby metastore and JVM) and the Jobs API test server kills it with SIGKILL at each point
between the recorded intent, the API call and the recorded run id. Restarted, it must leave exactly
one run per batch of new data, and the control table must end COMPLETED.

The kill comes from the server side, while it handles the heartbeat's own request, so the product
carries no test hooks:
  * "run-now:received": the intent (TRIGGER_REQUESTED) is recorded, no run exists yet;
  * "run-now:created":  the run exists in the workspace, the heartbeat never learns its id.
The whole process group goes (the Python process and its Spark JVM), as when a node dies.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from harness.config import PROJECT_DIR
from harness.controls import USER_COLUMNS
from tests.jobs_api_server import DropRequest, JobsApiServer, RecordedRequest
from tests.support import control_row

JOB = 501
PROCESS_TIMEOUT_SECONDS = 300


class HeartbeatProcess:
    """`python -m harness` in its own process group, so a kill takes its Spark JVM with it."""

    def __init__(self, root: Path, server: JobsApiServer) -> None:
        self.root, self.server = root, server
        self.config = root / "heartbeat.yml"
        # dbt reads seeds from inside the project only (state/ is git-ignored); removed by `cleanup`.
        self.seeds = PROJECT_DIR / "state" / "test-seeds" / f"crash_{root.name}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.killed_at: list[str] = []
        self.seconds: list[float] = []
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("DATABRICKS_", "HEARTBEAT_", "PYSPARK_"))}
        self.env.update({"DATABRICKS_HOST": server.url, "DATABRICKS_TOKEN": server.token,
                         "DATABRICKS_CONFIG_FILE": str(root / ".databrickscfg"), "NO_PROXY": "127.0.0.1"})

    def write_config(self) -> None:
        self.seeds.mkdir(parents=True, exist_ok=True)
        with (self.seeds / "heartbeat_controls.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(USER_COLUMNS))
            writer.writeheader()
            writer.writerow(control_row("trigger_file", "orders", str(JOB)))
        self.config.write_text(yaml.safe_dump({
            "state_dir": str(self.root / "state"),
            "backend": "databricks",
            "dbt_target": "local",
            "controls_csv": str(self.seeds / "heartbeat_controls.csv"),
            "trigger_file": {"root": str(self.root / "triggers")},
            "databricks": {"retry_timeout_seconds": 5, "http_timeout_seconds": 3},
        }))

    def cleanup(self) -> None:
        shutil.rmtree(self.seeds, ignore_errors=True)

    def drop(self, name: str) -> None:
        folder = self.root / "triggers" / "orders"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(name)

    def kill(self, stage: str) -> None:
        """Called by the server while it handles the request: SIGKILL the whole process group."""
        assert self.proc is not None
        self.killed_at.append(stage)
        os.killpg(self.proc.pid, signal.SIGKILL)

    def kill_and_drop(self, stage: str) -> None:
        """Kill, and let the request die with the process: the workspace never saw it."""
        self.kill(stage)
        raise DropRequest(stage)

    def run(self, *args: str) -> int:
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "--config", str(self.config), *args],
            cwd=PROJECT_DIR, env=self.env, start_new_session=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        try:
            output, _ = self.proc.communicate(timeout=PROCESS_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise
        self._wait_group_gone(self.proc.pid)
        self.seconds.append(round(time.monotonic() - started, 1))
        (self.root / f"process-{len(self.seconds)}.log").write_bytes(output)
        return self.proc.returncode

    @staticmethod
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

    def row_status(self) -> str:
        """The row's status in the snapshot each tick of `python -m harness run` leaves."""
        snapshot = json.loads((self.root / "state" / "status.json").read_text())
        (row,) = [r for r in snapshot["rows"] if r["upstream_label"] == "trigger_file:orders"]
        return str(row["status"])


def test_killed_between_intent_call_and_record_yields_one_run_per_batch_and_ends_completed(
        tmp_path: Path, jobs_api: JobsApiServer, request: pytest.FixtureRequest) -> None:
    # GIVEN a Databricks job whose runs succeed at once, fed by a trigger folder with a first batch
    jobs_api.add_job(JOB)
    jobs_api.auto_end[JOB] = ("SUCCESS", "")
    heartbeat = HeartbeatProcess(tmp_path, jobs_api)
    request.addfinalizer(heartbeat.cleanup)
    heartbeat.write_config()
    heartbeat.drop("batch-1.done")

    def once(stage: str, action: Callable[[RecordedRequest], None]) -> None:
        def hook(req: RecordedRequest) -> None:
            jobs_api.hooks.pop(stage)
            action(req)
        jobs_api.hooks[stage] = hook

    # WHEN the heartbeat dies after recording its intent, before the workspace creates the run
    once("run-now:received", lambda req: heartbeat.kill_and_drop("after intent, before the run exists"))
    assert heartbeat.run("tick") == -signal.SIGKILL
    assert jobs_api.runs_of(JOB) == [] and len(jobs_api.calls("/run-now")) == 1

    # AND, restarted, it re-sends the request (the run is created: a second batch lands meanwhile),
    # then dies after the workspace created the second batch's run, before it learns the run id
    def first_created(req: RecordedRequest) -> None:
        heartbeat.drop("batch-2.done")
        once("run-now:created", lambda r: heartbeat.kill("after the run exists, before its id is recorded"))
    once("run-now:created", first_created)
    assert heartbeat.run("run", "--interval", "0", "--max-ticks", "2") == -signal.SIGKILL
    assert len(jobs_api.runs_of(JOB)) == 2

    # AND restarted again, it runs to the end
    assert heartbeat.run("run", "--interval", "0", "--max-ticks", "2") == 0

    # THEN the workspace holds exactly one run per batch, each re-sent token answered by its first run
    runs = jobs_api.runs_of(JOB)
    assert len(runs) == 2, heartbeat.seconds
    tokens = [c.body["idempotency_token"] for c in jobs_api.calls("/run-now")]
    assert tokens == [runs[0].token, runs[0].token, runs[1].token, runs[1].token]
    first, second = (jobs_api.change_range(r)["upstreams"][0] for r in runs)
    assert first["from"] is None and first["to"]["recent"] == ["batch-1.done"]
    assert second["from"] == first["to"] and "batch-2.done" in second["to"]["recent"]
    # AND the control table ends COMPLETED
    assert heartbeat.row_status() == "COMPLETED"
    assert len(heartbeat.killed_at) == 2
    print(f"heartbeat processes took {heartbeat.seconds} s")
