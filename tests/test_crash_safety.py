"""Fault injection: the heartbeat process (its Python process and Spark JVM, as one process group) is
killed with SIGKILL at each named point of a tick, on the local runner and on the Databricks backend.

Each heartbeat process here runs two ticks (`run --max-ticks 2`). Its first tick is the restart after
the previous kill and must repair everything by itself; then a batch lands, and the second tick is
killed at the next point. After each kill the test checks what the restart tick left: 0 duplicate runs,
ranges that chain, and a status snapshot that shows every run that existed when it was written. At the
end, once every run ended, every batch went to exactly one run. The points (harness.faults):

  tick:sensed             detections appended, not folded yet
  dbt:version-written     inside the fold: the control table's new version written, not switched to
  dbt:version-switched    inside the fold: switched to the new version, dbt not finished
  start:intent-recorded   the run request's intent recorded, the backend not called
  local:token-recorded    (local runner) the run's token recorded, its process not launched
  start:backend-called    the backend started the run, its id not recorded
  start:outcome-recorded  the run id recorded, not folded into the control table yet
  status:snapshot         the status snapshot half-written

On the local runner one more kill lands while a version of the control table is being written, and at
the end the metastore is lost. Each kill costs a heartbeat process (~45 s), so the default run keeps
the points where a run could be lost or started twice and shares them between the backends (the code
at each point is the same on both): detections not folded and the local runner's own point on the
local runner, the intent recorded and the backend called on the Databricks backend, plus the
half-written version. HEARTBEAT_FULL_CRASH_MATRIX=1 runs every point on both backends (the inner
points of the fold, the outcome recorded, the snapshot), as before a release.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from tests.jobs_api_server import JobsApiServer
from tests.processes import HeartbeatProcess

pytestmark = pytest.mark.process  # each kill is of a heartbeat process and its JVM

TWO_TICKS = ("run", "--interval", "2", "--max-ticks", "2")
FOLD = ["tick:sensed", "dbt:version-written", "dbt:version-switched"]
START_PROTOCOL = ["start:intent-recorded", "start:backend-called", "start:outcome-recorded"]
EVERY_POINT = FOLD + START_PROTOCOL[:1] + ["local:token-recorded"] + START_PROTOCOL[1:] + ["status:snapshot"]
POINTS = {
    "local": EVERY_POINT,
    "databricks": [p for p in EVERY_POINT if not p.startswith("local:")],
} if os.environ.get("HEARTBEAT_FULL_CRASH_MATRIX") else {
    "local": ["tick:sensed", "local:token-recorded"],
    "databricks": ["start:intent-recorded", "start:backend-called"],
}
JOB = {"local": "orders_job", "databricks": "701"}
STATE_KEYS = ("status", "watermark", "last_success_watermark", "trigger_watermark", "latest_trigger_token",
              "latest_run_id", "last_success_timestamp")


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


@pytest.mark.parametrize("backend", ["local", "databricks"])
def test_killed_at_every_named_point_the_restart_repairs_with_no_duplicate_and_no_lost_batch(
        backend: str, tmp_path: Path, jobs_api: JobsApiServer) -> None:
    seconds = campaign(backend, tmp_path, jobs_api)
    print(f"{backend}: {len(seconds)} heartbeat processes, seconds {seconds}")


def campaign(backend: str, root: Path, jobs_api: JobsApiServer) -> list[float]:
    """The kills of one backend, in order; returns how long each heartbeat process took."""
    # GIVEN a heartbeat whose job's runs succeed at once, fed by a trigger folder holding a first batch
    server = jobs_api if backend == "databricks" else None
    if server is not None:
        server.add_job(int(JOB[backend]))
        server.auto_end[int(JOB[backend])] = ("SUCCESS", "")
    hb = HeartbeatProcess(root, backend, JOB[backend], server)
    try:
        hb.write_config()
        dropped = [hb.drop("batch-0.done")]
        kill_at_each_point(hb, backend, dropped)
    finally:
        hb.cleanup()
    return hb.seconds


def kill_at_each_point(hb: HeartbeatProcess, backend: str, dropped: list[Path]) -> None:
    for i, point in enumerate(POINTS[backend], start=1):
        # WHEN, after a restart tick, a batch lands and the heartbeat is killed at the point
        code, batch = crash_in_second_tick(hb, point, f"batch-{i}.done")
        dropped.append(batch)
        assert code == -signal.SIGKILL, f"{backend}: {point} was not reached:\n{hb.output()}"
        if i > 1:  # THEN the restart tick before it had repaired the previous kill
            assert_restart_tick_repaired(hb, f"{backend}: after the kill at {POINTS[backend][i - 2]}")
    last = POINTS[backend][-1]

    if backend == "local":
        # WHEN it is killed while a version of the control table is half written
        killed, batch = kill_while(hb, half_written_version(hb), "batch-half.done")
        dropped.append(batch)
        assert killed, "no version of the control table was being written"
        assert_restart_tick_repaired(hb, f"{backend}: after the kill at {last}")
        last = "a half-written version"

    # THEN the next restart repairs the last kill, every batch went to exactly one run, and nothing is left over
    assert hb.run("run", "--interval", "1", "--until-idle", "--max-ticks", "10") == 0, hb.output()
    assert_restart_tick_repaired(hb, f"{backend}: after the kill at {last}")
    hb.wait_for_runs()
    assert_every_batch_went_to_one_run(hb, dropped)
    assert hb.row()["status"] == "COMPLETED"
    versions = list((hb.state / "warehouse" / "heartbeat.db").glob("heartbeat_control_table*"))
    assert len(versions) <= 2, f"{backend}: leftover versions of the control table: {versions}"

    if backend == "local":
        # WHEN the metastore itself is lost (docs/operations.md: also how a state folder is moved)
        state_before, runs_before = {k: hb.row()[k] for k in STATE_KEYS}, hb.runs()
        shutil.rmtree(hb.state / "metastore_db")
        # THEN the next tick adopts the event log's folder and rebuilds the same state from it
        assert hb.run("tick") == 0, hb.output()
        assert {k: hb.row()[k] for k in STATE_KEYS} == state_before
        assert hb.runs() == runs_before, "the rebuild started a run"
