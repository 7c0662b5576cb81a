"""Fault injection: the heartbeat is stopped at each named point of a tick (harness.core.faults), on the local
runner and on the Databricks backend, and what the restart leaves is checked: 0 duplicate runs, ranges
that chain, and a status snapshot that shows every run that existed when it was written. At the end,
once every run ended, every batch went to exactly one run. The points:

  tick:sensed             detections appended, not folded yet
  dbt:version-written     inside the fold: the control table's new version written, not switched to
  dbt:version-switched    inside the fold: switched to the new version, dbt not finished
  start:intent-recorded   the run request's intent recorded, the backend not called
  local:token-recorded    (local runner) the run's token recorded, its process not launched
  start:backend-called    the backend started the run, its id not recorded
  start:outcome-recorded  the run id recorded, not folded into the control table yet
  status:snapshot         the status snapshot half-written
  requests:applied        a queued request's events appended (a `complete`, an import of the lakehouse
                          engine's state), its file not removed yet: applied again, recorded once

and, for the commands that steer a job's range (docs/ranges.md):

  request:rewind-recorded    a rewind's events appended, its request not removed from the queue
                             (tests/tick/test_rewind.py: applied again, it is one rewind)
  backfill:planned           a backfill's parts planned, none started
  backfill:intent-recorded   a backfill part's intent recorded, the backend not called
  start:backend-called       (a backfill part) the backend started its run, its id not recorded
  backfill:outcome-recorded  the part's run id recorded, not folded yet

The event index's point (`event index:added files`, a refresh stopped between two batches of files) can
lose or double no run, only a reader's events: tests/state/test_event_index.py stops it and reads. The
event log's point (`events append:file written`, an append's file written but not moved into its day)
leaves the log as a kill before the append does, which the points above cover:
tests/state/test_event_log.py stops it and reads.

Every point runs in CI on every backend where its code differs:
  - in-process (scenario layer): the points between the harness's own writes, on both backends. At the
    point the harness raises `Stopped`, which nothing catches; what is on disk is what a kill leaves
    (each append and file is whole or absent), and the test opens the state anew, as a restarted
    process does;
  - as a process killed with SIGKILL (process layer): the points inside dbt's fold and a version of the
    control table half written (only a real kill proves that a dead JVM's half-written files and Derby
    lock are repaired), and the lost metastore, on the local runner (the fold never calls the backend).
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from harness.commands import cli
from harness.commands.lakehouse_engine import engine_sensor_id
from harness.commands.ranges import backfill_request
from harness.core.faults import Stopped, stopping_at
from harness.sensors.trigger_file import files_in_range
from harness.tick import inbox
from tests.engine_exports import engine_control, engine_exports, engine_sensor
from tests.jobs_api_server import JobsApiServer
from tests.processes import UPSTREAM, HeartbeatProcess
from tests.support import HeartbeatHarness, control_row, use_databricks

TWO_TICKS = ("run", "--interval", "2", "--max-ticks", "2")
IN_PROCESS = {
    "local": [
        "tick:sensed",
        "start:intent-recorded",
        "local:token-recorded",
        "start:backend-called",
        "start:outcome-recorded",
        "status:snapshot",
    ],
    "databricks": [
        "tick:sensed",
        "start:intent-recorded",
        "start:backend-called",
        "start:outcome-recorded",
        "status:snapshot",
    ],
}
KILLED_PROCESS = ["dbt:version-written", "dbt:version-switched"]
JOB = {"local": "orders_job", "databricks": "701"}
STATE_KEYS = (
    "status",
    "watermark",
    "last_success_watermark",
    "trigger_watermark",
    "latest_trigger_token",
    "latest_run_id",
    "last_success_timestamp",
)


def crash_in_second_tick(hb: HeartbeatProcess, point: str, batch: str) -> tuple[int, Path]:
    """Run two ticks; once the first (the restart) ended, a batch lands; the second is killed at `point`."""
    before = hb.last_tick_id()
    proc = hb.start(*TWO_TICKS, crash_at=f"{point}@2")
    while hb.last_tick_id() == before and proc.poll() is None:
        time.sleep(0.05)
    dropped = hb.drop(batch)
    return hb.finish(proc), dropped


def kill_while(hb: HeartbeatProcess, condition: Callable[[], bool], batch: str) -> tuple[bool, Path]:
    """As crash_in_second_tick, but the second tick is killed as soon as `condition` holds (polled every 50 ms)."""
    before = hb.last_tick_id()
    proc = hb.start(*TWO_TICKS)
    while hb.last_tick_id() == before and proc.poll() is None:
        time.sleep(0.05)
    dropped = hb.drop(batch)
    killed = False
    while proc.poll() is None:
        if condition():
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.05)
    hb.finish(proc)
    return killed, dropped


def half_written_version(hb: HeartbeatProcess) -> Callable[[], bool]:
    folder = hb.state / "warehouse" / "heartbeat.db"
    return lambda: any((p / "_temporary").exists() for p in folder.glob("heartbeat_control_table__v*"))


def assert_restart_tick_repaired(hb: HeartbeatProcess, context: str) -> None:
    """What the restart tick left: no run twice, ranges chaining, and a snapshot that shows the newest run
    of those that existed when it was written (status never lags the runs)."""
    runs = hb.runs()
    tokens = [r["token"] for r in runs]
    assert len(tokens) == len(set(tokens)), f"{context}: a request started two runs: {runs}"
    ranges = [r["range"]["upstreams"][0] for r in runs if r["range"] is not None]
    for earlier, later in zip(ranges, ranges[1:]):
        assert later["from"] == earlier["to"], f"{context}: ranges do not chain: {ranges}"
    health = hb.health()
    assert health["last_tick"]["error"] is None and health["failures_in_a_row"] == 0, f"{context}: {health}"
    snapshot = hb.snapshot()
    assert snapshot["tick_id"] == health["last_tick"]["tick_id"], f"{context}: the snapshot is not the restart tick's"
    written = datetime.fromisoformat(snapshot["written_at"])
    existing = [r for r in runs if r["created"] <= written]
    row = hb.row()
    if existing:
        assert row["latest_run_id"] == existing[-1]["run_id"], f"{context}: status lags the runs: {row} vs {existing}"
        assert row["status"] in ("IN_PROGRESS", "COMPLETED"), f"{context}: {row}"
    (job,) = [j for j in snapshot["jobs"] if j["job_id"] == hb.job_id]
    assert not (job["should_start"] and row["status"] == "IN_PROGRESS"), f"{context}: {job}"


def assert_every_batch_went_to_one_run(hb: HeartbeatProcess, dropped: list[Path]) -> None:
    runs = hb.runs()
    ranges = [r["range"]["upstreams"][0] for r in runs]
    assert ranges[0]["from"] is None
    for earlier, later in zip(ranges, ranges[1:]):
        assert later["from"] == earlier["to"]
    newest = max(os.stat(p).st_ctime_ns for p in dropped)
    assert ranges[-1]["to"]["changed_ns"] >= newest, "a batch was never handed to a run"
    assert len(runs) <= len(dropped)


# --- in-process: the points between the harness's own writes ----------------------------------------
@pytest.mark.scenario
@pytest.mark.parametrize("backend", ["local", "databricks"])
def test_stopped_at_each_point_of_a_tick_the_restart_repairs_with_no_duplicate_and_no_lost_batch(
    backend: str, heartbeat: HeartbeatHarness, jobs_api: JobsApiServer
) -> None:
    # GIVEN a heartbeat whose job's runs succeed at once, fed by a trigger folder holding a first batch
    job = JOB[backend]
    heartbeat.write_controls([control_row("trigger_file", UPSTREAM, job)])
    server = None
    if backend == "databricks":
        server = jobs_api
        server.add_job(int(job))
        server.auto_end[int(job)] = ("SUCCESS", "")
        use_databricks(heartbeat)
    else:
        heartbeat.define_jobs(job)
    hb = HeartbeatProcess(heartbeat.root, backend, job, server)  # reads what the heartbeat left
    dropped = [heartbeat.drop_trigger_file(UPSTREAM, "batch-0.done")]
    points = IN_PROCESS[backend]
    for i, point in enumerate(points, start=1):
        # WHEN, after a restart tick, a batch lands and the tick is stopped at the point
        restart = heartbeat.tick()
        assert restart.error is None, restart.error
        if i > 1:  # THEN the restart tick had repaired the previous stop
            assert_restart_tick_repaired(hb, f"{backend}: after the stop at {points[i - 2]}")
        dropped.append(hb.drop(f"batch-{i}.done"))
        with stopping_at(point), pytest.raises(Stopped):
            heartbeat.tick()
        heartbeat.restart()

    # THEN ticks until idle repair the last stop, and every batch went to exactly one run
    for _ in range(10):
        if heartbeat.tick().idle:
            break
    assert_restart_tick_repaired(hb, f"{backend}: after the stop at {points[-1]}")
    hb.wait_for_runs()
    assert_every_batch_went_to_one_run(hb, dropped)
    assert hb.row()["status"] == "COMPLETED"


@pytest.mark.scenario
def test_an_import_stopped_at_each_point_of_its_ticks_is_recorded_once_and_starts_its_job_once(
    heartbeat: HeartbeatHarness, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an import queued of an upload table the engine found new data in (ids up to 5, not processed) and
    # of a trigger folder it read through a checkpoint (start_from now), both holding data
    table = tmp_path / "lake" / "uploads"
    write_deltalake(str(table), pa.table({"id": [1, 2, 3, 4, 5]}))
    heartbeat.drop_trigger_file("landed", "old-batch")
    heartbeat.write_controls(
        [
            control_row("lmu_delta_table", str(table), "pending", upstream_key="id"),
            control_row("trigger_file", "landed", "files"),
        ]
    )
    heartbeat.define_jobs("pending", "files")
    control, sensors = engine_exports(
        tmp_path / "exports",
        [
            engine_control("lmu_delta_table", str(table), "pending", "NEW_EVENT_AVAILABLE"),
            engine_control("trigger_file", "landed", "files", "COMPLETED"),
        ],
        [
            engine_sensor(engine_sensor_id(str(table), "pending"), "ACQUIRED_NEW_DATA", "id", "5"),
            engine_sensor("landed_files", "PROCESSED_NEW_DATA", "", "None", checkpoint="/chk/landed_files"),
        ],
    )
    config = str(heartbeat.write_config_file())
    assert cli.main(["--config", config, "import-lakehouse-engine", "--control-table", str(control),
                     "--sensor-table", str(sensors)]) == 0  # fmt: skip

    # WHEN ticks are stopped after the import's events were appended (its file left), after the first check
    # recorded where the folder is (not folded), and after the job's start intent was recorded
    for point in ("requests:applied", "tick:sensed", "start:intent-recorded"):
        with stopping_at(point), pytest.raises(Stopped):
            heartbeat.tick()
        heartbeat.restart()
    for _ in range(5):
        heartbeat.tick()
        heartbeat.wait_for_runs()

    # THEN each row was imported once and watched once, and the job ran once, handed the range up to id 5
    assert len({e["event_id"] for e in heartbeat.events("STATE_IMPORTED")}) == 2
    assert len({e["event_id"] for e in heartbeat.events("WATCH_STARTED")}) == 1
    (run,) = heartbeat.job_runs("pending")
    assert run["range"]["upstreams"][0]["to"]["max"]["value"] == 5
    assert heartbeat.job_runs("files") == []
    rows = {r.key.trigger_job_id: r for r in heartbeat.tables.control_rows()}
    assert rows["pending"].status == "COMPLETED" and rows["files"].watermark is not None
    assert not list((heartbeat.config.state_dir / "inbox").glob("*.json"))


BACKFILL_POINTS = ["backfill:planned", "backfill:intent-recorded", "start:backend-called", "backfill:outcome-recorded"]


@pytest.mark.scenario
@pytest.mark.parametrize("backend", ["local", "databricks"])
def test_a_backfill_stopped_at_each_point_starts_each_part_once_and_moves_no_watermark(
    backend: str, heartbeat: HeartbeatHarness, jobs_api: JobsApiServer
) -> None:
    # GIVEN a job whose runs succeed at once, which consumed a folder where a file landed in each of four windows
    job = JOB[backend]
    heartbeat.write_controls([control_row("trigger_file", UPSTREAM, job)])
    if backend == "databricks":
        jobs_api.add_job(int(job))
        jobs_api.auto_end[int(job)] = ("SUCCESS", "")
        use_databricks(heartbeat)
    else:
        heartbeat.define_jobs(job)
    hb = HeartbeatProcess(heartbeat.root, backend, job, jobs_api if backend == "databricks" else None)
    start = datetime.now(timezone.utc)
    for k in range(len(BACKFILL_POINTS)):
        time.sleep(max(0.0, (start + timedelta(seconds=0.3 * k + 0.1) - datetime.now(timezone.utc)).total_seconds()))
        heartbeat.drop_trigger_file(UPSTREAM, f"window-{k}.done")
    end = start + timedelta(seconds=0.3 * len(BACKFILL_POINTS))
    time.sleep(max(0.0, (end - datetime.now(timezone.utc)).total_seconds()))
    heartbeat.tick()
    hb.wait_for_runs()
    heartbeat.tick()
    consumed = hb.row()["last_success_watermark"]
    request, _ = backfill_request(job, start.isoformat(), end.isoformat(), "0.3s", None, datetime.now(timezone.utc))
    inbox.submit(heartbeat.config.state_dir, request)

    # WHEN each tick that plans or starts a part is stopped at a point, and a restart tick follows
    for point in BACKFILL_POINTS:
        with stopping_at(point), pytest.raises(Stopped):
            heartbeat.tick()
        heartbeat.restart()
        assert heartbeat.tick().error is None
        hb.wait_for_runs()
    for _ in range(6):
        heartbeat.tick()
        hb.wait_for_runs()
        if not inbox.pending(heartbeat.config.state_dir) and hb.row()["status"] == "COMPLETED":
            break

    # THEN each part ran once, handed its window's file, and the job's watermark did not move
    parts = [r for r in hb.runs() if r["token"].startswith("hb-bf-")]
    assert len(parts) == len(BACKFILL_POINTS) and len({r["token"] for r in parts}) == len(parts), parts
    folder = heartbeat.config.trigger_root / UPSTREAM  # type: ignore[operator]
    handed = [
        [p.name for p in files_in_range(folder, r["range"]["upstreams"][0]["from"], r["range"]["upstreams"][0]["to"])]
        for r in parts
    ]
    assert sorted(handed) == [[f"window-{k}.done"] for k in range(len(BACKFILL_POINTS))]
    assert hb.row()["last_success_watermark"] == consumed and hb.row()["status"] == "COMPLETED"
    assert inbox.pending(heartbeat.config.state_dir) == []


# --- a killed process: inside dbt's fold, a half-written version, a lost metastore -------------------
@pytest.mark.process
def test_killed_inside_the_fold_the_restart_repairs_with_no_duplicate_and_no_lost_batch(tmp_path: Path) -> None:
    """A process of its own: only a SIGKILL of the heartbeat and its JVM leaves what a lost node leaves
    inside dbt (half-written files, a dead JVM's Derby lock). Its last step is cron's next tick as a
    process: with nothing new, it must not start Spark. Its state folder's path holds a space, as a
    user's may: the metastore, the warehouse and the adopted event log's folder live under it."""
    hb = HeartbeatProcess(tmp_path / "heart beat", "local", JOB["local"])
    try:
        # GIVEN a heartbeat whose job's runs succeed at once, fed by a trigger folder holding a first batch
        hb.write_config()
        dropped = [hb.drop("batch-0.done")]
        kill_at_each_point(hb, dropped)
    finally:
        hb.cleanup()
    print(f"{len(hb.seconds)} heartbeat processes, seconds {hb.seconds}")


def kill_at_each_point(hb: HeartbeatProcess, dropped: list[Path]) -> None:
    for i, point in enumerate(KILLED_PROCESS, start=1):
        # WHEN, after a restart tick, a batch lands and the heartbeat is killed at the point
        code, batch = crash_in_second_tick(hb, point, f"batch-{i}.done")
        dropped.append(batch)
        assert code == -signal.SIGKILL, f"{point} was not reached:\n{hb.output()}"
        if i > 1:  # THEN the restart tick before it had repaired the previous kill
            assert_restart_tick_repaired(hb, f"after the kill at {KILLED_PROCESS[i - 2]}")

    # WHEN it is killed while a version of the control table is half written
    killed, batch = kill_while(hb, half_written_version(hb), "batch-half.done")
    dropped.append(batch)
    assert killed, "no version of the control table was being written"
    assert_restart_tick_repaired(hb, f"after the kill at {KILLED_PROCESS[-1]}")

    # THEN the next restart repairs the last kill, every batch went to exactly one run, and nothing is left over
    assert hb.run("run", "--interval", "1", "--until-idle", "--max-ticks", "10") == 0, hb.output()
    assert_restart_tick_repaired(hb, "after the kill at a half-written version")
    hb.wait_for_runs()
    assert_every_batch_went_to_one_run(hb, dropped)
    assert hb.row()["status"] == "COMPLETED"
    versions = list((hb.state / "warehouse" / "heartbeat.db").glob("heartbeat_control_table*"))
    assert 1 <= len(versions) <= 2, f"the control table's versions in the state folder: {versions}"

    # WHEN the metastore itself is lost (docs/operations.md: also how a state folder is moved), and the
    # controls CSV is written again with the same rows (other line ends), so that the tick cannot end
    # from the status snapshot as a cold tick with nothing new does, without opening the metastore
    state_before, runs_before = {k: hb.row()[k] for k in STATE_KEYS}, hb.runs()
    shutil.rmtree(hb.state / "metastore_db")
    controls = hb.seeds / "heartbeat_controls.csv"
    controls.write_bytes(controls.read_bytes().replace(b"\r\n", b"\n"))
    # THEN the next tick opens Spark, adopts the event log's folder and rebuilds the same state from it
    assert hb.run("tick") == 0, hb.output()
    assert "open spark" in hb.output() and "with the new controls CSV" in hb.output(), hb.output()
    assert {k: hb.row()[k] for k in STATE_KEYS} == state_before
    assert hb.runs() == runs_before, "the rebuild started a run"

    # WHEN cron's next tick finds nothing new, THEN it ends from the snapshot without starting Spark
    spark_log = (hb.state / "spark.log").stat().st_size
    assert hb.run("tick") == 0, hb.output()
    assert "open spark" not in hb.output() and "sense " in hb.output(), hb.output()
    assert (hb.state / "spark.log").stat().st_size == spark_log
    assert hb.snapshot()["tick_id"] == hb.last_tick_id() and hb.runs() == runs_before
