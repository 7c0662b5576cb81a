"""A heartbeat for one test: its own schema, controls CSV, trigger root, local jobs and run folder,
on the session's SparkSession. Tests drive it like a user: write the CSV, drop files, tick."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

import pytest
from pyspark.sql import SparkSession

from harness.commands import cli
from harness.core.config import (
    PROJECT_DIR,
    Config,
    HeartbeatFile,
    HeartbeatSettings,
    LocalJob,
    SensingSettings,
    SourceSections,
)
from harness.core.controls import OPTIONAL_COLUMNS, USER_COLUMNS
from harness.sensors.base import Sensor, Upstream
from harness.sensors.context import CheckContext
from harness.state.tables import JobDecision, Tables
from harness.tick import inbox
from harness.tick.run import run_tick
from harness.tick.runtime import Runtime
from harness.tick.steps import TickReport
from tests.jobs_api_server import FAST

# The controls CSVs of this test session's heartbeats: dbt reads seeds inside the project only (the
# folder is git-ignored), and each test session has its own, so that two sessions can run side by side
# (scripts/test.sh runs the process layer beside the others). Removed when the session ends (conftest).
SESSION_SEEDS = PROJECT_DIR / "state" / "test-seeds" / f"session-{os.getpid()}"

# A local job that records each run's change range and exits with the code in <job>.exit (default 0).
RECORDING_JOB = (
    "python3 -c \"import os,sys,json,pathlib; d=pathlib.Path(os.environ['RUNS_DIR']); "
    "d.mkdir(exist_ok=True); j=os.environ['HEARTBEAT_JOB_ID']; "
    "(d/(os.environ['HEARTBEAT_RUN_ID']+'.json')).write_text(json.dumps({'job':j,"
    "'range':json.loads(os.environ['HEARTBEAT_CHANGE_RANGE']),'token':os.environ['HEARTBEAT_RUN_CONTEXT_ID']})); "
    "f=d/(j+'.exit'); sys.exit(int(f.read_text()) if f.exists() else 0)\""
)


def control_row(
    source: str,
    sensor_id: str,
    job: str,
    *,
    hard: bool = True,
    paused: bool = False,
    upstream_key: str = "",
    preprocess_query: str = "",
    read_type: str = "batch",
) -> dict[str, str]:
    return {
        "sensor_source": source,
        "sensor_id": sensor_id,
        "sensor_read_type": read_type,
        "asset_description": f"{source} {sensor_id}",
        "upstream_key": upstream_key,
        "preprocess_query": preprocess_query,
        "trigger_job_id": job,
        "trigger_job_name": f"{job}-name",
        "job_state": "PAUSED" if paused else "UNPAUSED",
        "dependency_flag": "TRUE" if hard else "FALSE",
    }


def write_controls_csv(path: Path, rows: Iterable[Mapping[str, str]]) -> None:
    """A controls CSV of `rows`: the user columns, and the optional ones only when a row sets them."""
    rows = list(rows)
    optional = [c for c in OPTIONAL_COLUMNS if any(c in row for row in rows)]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*USER_COLUMNS, *optional])
        writer.writeheader()
        writer.writerows(rows)


@dataclass
class HeartbeatHarness:
    spark: SparkSession
    config: Config
    root: Path
    runs_dir: Path
    monkeypatch: pytest.MonkeyPatch
    reports: list[TickReport] = field(default_factory=list)
    _runtime: Runtime | None = None

    @classmethod
    def create(
        cls, spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = "heartbeat"
    ) -> "HeartbeatHarness":
        """A heartbeat in the schema `name` is hashed to, emptied first. The schema and the seed folder are
        dbt vars, so heartbeats that share a name (one test's after another's) share dbt's parse of the
        project; a heartbeat that lives beside another (a module's) takes a name of its own."""
        schema = "hb_" + hashlib.sha1(name.encode()).hexdigest()[:10]
        spark.sql(f"DROP DATABASE IF EXISTS spark_catalog.{schema} CASCADE")
        runs_dir = tmp_path / "job_runs"
        monkeypatch.setenv("RUNS_DIR", str(runs_dir))
        (tmp_path / "triggers").mkdir()
        seeds = SESSION_SEEDS / schema
        shutil.rmtree(seeds, ignore_errors=True)
        seeds.mkdir(parents=True)
        config = Config(
            config_path=None,
            project_dir=PROJECT_DIR,
            state_dir=tmp_path / "state",
            schema=schema,
            controls_csv=seeds / "heartbeat_controls.csv",
            trigger_root=tmp_path / "triggers",
            settings=HeartbeatSettings(sensing=SensingSettings(check_timeout_seconds=30, max_parallel_checks=4)),
        )
        config.state_dir.mkdir()
        return cls(spark, config, tmp_path, runs_dir, monkeypatch)

    # --- configuration -------------------------------------------------------------------------
    def write_controls(self, rows: Iterable[Mapping[str, str]]) -> None:
        write_controls_csv(self.config.controls_csv, rows)

    def define_jobs(self, *job_ids: str, command: str = RECORDING_JOB, timeout: float | None = None) -> None:
        jobs = dict(self.config.local_jobs)
        for job_id in job_ids:
            jobs[job_id] = LocalJob(name=f"{job_id}-name", command=command, timeout_seconds=timeout)
        self.config = replace(self.config, local_jobs=jobs)

    def with_config(self, **changes: Any) -> None:
        self.config = replace(self.config, **changes)

    def with_sections(self, **sections: Mapping[str, Any]) -> None:
        """Sections of heartbeat.yml (kafka, jdbc, databricks, ...), parsed as the file's would be."""
        parsed = HeartbeatFile.model_validate(sections)
        sources = {name: getattr(parsed, name) for name in sections if name in SourceSections.model_fields}
        settings = {name: getattr(parsed, name) for name in sections if name in HeartbeatSettings.model_fields}
        assert sources.keys() | settings.keys() == sections.keys(), "not a section a Config holds as read"
        self.with_config(
            sources=self.config.sources.model_copy(update=sources),
            settings=self.config.settings.model_copy(update=settings),
        )

    def write_config_file(self) -> Path:
        """heartbeat.yml for this heartbeat, for tests that go through the command line."""
        import yaml

        path = self.root / "heartbeat.yml"
        path.write_text(
            yaml.safe_dump(
                {
                    "state_dir": str(self.config.state_dir),
                    "controls_csv": str(self.config.controls_csv),
                    "trigger_file": {"root": str(self.config.trigger_root)},
                    "schema": self.config.schema,
                    "local_runner": {
                        "jobs": {
                            job_id: {"name": j.name, "command": j.command}
                            for job_id, j in self.config.local_jobs.items()
                        }
                    },
                }
            )
        )
        return path

    def set_exit_code(self, job_id: str, code: int) -> None:
        self.runs_dir.mkdir(exist_ok=True)
        (self.runs_dir / f"{job_id}.exit").write_text(str(code))

    # --- upstreams -----------------------------------------------------------------------------
    def drop_trigger_file(self, sensor_id: str, name: str) -> Path:
        folder = self.config.trigger_root / sensor_id  # type: ignore[operator]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_text(name)
        return path

    # --- driving -------------------------------------------------------------------------------
    def runtime(self) -> Runtime:
        """One runtime per configuration, as one `python -m harness run` process keeps its own."""
        if self._runtime is None or self._runtime.config is not self.config:
            self._runtime = Runtime.open(self.config)
        return self._runtime

    def restart(self) -> None:
        """Forget the runtime, as a process that stopped does: the next tick opens the state anew."""
        self._runtime = None

    def tick(self) -> TickReport:
        report = run_tick(self.runtime())
        self.reports.append(report)
        return report

    def wait_for_runs(self, timeout: float = 60.0) -> None:
        """Wait until every local run started so far has written its result."""
        deadline = time.monotonic() + timeout
        runs = self.config.state_dir / "local_runs"
        while time.monotonic() < deadline:
            folders = [p for p in runs.glob("local-*")] if runs.exists() else []
            if all((p / "result.json").exists() for p in folders):
                return
            time.sleep(0.1)
        raise AssertionError("local runs did not finish in time")

    def request(self, command: str, job_id: str) -> None:
        """`python -m harness complete|retry --job-id JOB_ID`, as recorded for the next tick."""
        rows = self.tables.control_rows()
        self.runtime().events.append(inbox.new_request(command, job_id).events(rows, "by the test"))

    def tick_until_settled(self, timeout: float = 60.0) -> TickReport:
        """Tick, wait (at most `timeout` s) for the runs it started, tick again to record their ends."""
        self.tick()
        self.wait_for_runs(timeout)
        return self.tick()

    def given_working_job(self, job_id: str) -> None:
        """One trigger folder `in` feeding `job_id`, and a first tick that found nothing in it."""
        self.write_controls([control_row("trigger_file", "in", job_id)])
        self.define_jobs(job_id)
        (self.config.trigger_root / "in").mkdir()  # type: ignore[operator]
        first = self.tick()
        assert first.error is None, first.error

    def given_failed_job(self, job_id: str, exit_code: int = 1) -> None:
        """One trigger folder `in` feeding `job_id`, whose first run exits with `exit_code`: FAILED."""
        self.write_controls([control_row("trigger_file", "in", job_id)])
        self.define_jobs(job_id)
        self.set_exit_code(job_id, exit_code)
        self.drop_trigger_file("in", "batch1")
        self.tick_until_settled()
        assert self.job_status(job_id) == {"FAILED"}

    # --- observing -----------------------------------------------------------------------------
    @property
    def tables(self) -> Tables:
        return Tables(self.spark, self.config)

    def statuses(self) -> dict[tuple[str, str, str], str | None]:
        return {
            (r["sensor_source"], r["sensor_id"], r["trigger_job_id"]): r["status"] for r in self.tables.control_table()
        }

    def job_status(self, job_id: str) -> set[str | None]:
        return {s for (_, _, job), s in self.statuses().items() if job == job_id}

    def decisions(self) -> dict[str, JobDecision]:
        return {d.job_id: d for d in self.tables.job_decisions()}

    def job_runs(self, job_id: str | None = None) -> list[dict[str, Any]]:
        """Runs the recording job saw, oldest first."""
        if not self.runs_dir.exists():
            return []
        runs = [json.loads(p.read_text()) | {"run_id": p.stem} for p in sorted(self.runs_dir.glob("local-*.json"))]
        return [r for r in runs if job_id is None or r["job"] == job_id]

    def events(self, event_type: str | None = None) -> list[dict[str, Any]]:
        return self.runtime().events.history(event_types=[event_type] if event_type else [])


def use_databricks(heartbeat: HeartbeatHarness, stuck_after_seconds: float = 3600.0, **section: Any) -> None:
    """The heartbeat on the Databricks backend, against the Jobs API test server (its settings in `section`)."""
    heartbeat.with_sections(databricks={**FAST, **section}, runs={"stuck_after_seconds": stuck_after_seconds})
    heartbeat.with_config(backend="databricks")


class LogCounters:
    """An event log's counters as the tables keep their readings by them (harness.state.tables.LogVersions),
    moved by the test."""

    run_events = folds = 0


def spy_on_reads(monkeypatch: pytest.MonkeyPatch, sensor: type[Sensor[Any]]) -> list[str]:
    """Every upstream the real sensor of this kind reads from here on, one entry a read (a spy around it,
    not a mock)."""
    reads: list[str] = []
    real = sensor.read_position

    def counted(self: Sensor[Any], context: CheckContext, upstream: Upstream) -> Any:
        reads.append(upstream.sensor_id)
        return real(self, context, upstream)

    monkeypatch.setattr(sensor, "read_position", counted)
    return reads


def status_output(heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]) -> str:
    """What `python -m harness status` prints for the heartbeat (run in this process)."""
    capsys.readouterr()
    assert cli.main(["--config", str(heartbeat.write_config_file()), "status"]) == 0
    return capsys.readouterr().out
