"""The status snapshot's files: written whole only when the state changed (a tick that found it unchanged
writes the small tick file), and read by `status` and `why` through its index, one job's rows at a time."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from harness.core.state_layout import StateLayout
from harness.state import status_files
from harness.views import status

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def row(job: str, sensor_id: str, **values: Any) -> dict[str, Any]:
    return {
        "sensor_source": "trigger_file",
        "sensor_id": sensor_id,
        "upstream_label": f"trigger_file:{sensor_id}",
        "trigger_job_id": job,
        "trigger_job_name": f"{job} name",
        "status": None,
        "is_hard_dependency": True,
        "job_state": "UNPAUSED",
        "watermark": None,
        "last_success_watermark": None,
        "status_change_timestamp": None,
        "latest_event_fetched_timestamp": None,
        "latest_run_id": None,
        "job_start_timestamp": None,
        "job_end_timestamp": None,
        "last_start_refusal": None,
        "last_start_refused_at": None,
        **values,
    }


def the_estate() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Jobs in every state: failed, running, ready, waiting, paused (by a hard row), one whose start was
    refused; rows of several jobs share an upstream."""
    rows = [
        row("a_failed", "up1", status="FAILED", latest_run_id="r1", status_change_timestamp=T0),
        row("a_failed", "up2", status="COMPLETED", is_hard_dependency=False),
        row("b_running", "up1", status="IN_PROGRESS", job_start_timestamp=T0, latest_run_id="r2"),
        row("c_ready", "up3", status="NEW_EVENT_AVAILABLE", watermark='{"changed_ns": 5, "recent": ["f"]}'),
        row("d_waiting", "up3", status="COMPLETED"),
        row("d_waiting", "up4"),
        row("e_paused", "up5", job_state="PAUSED"),
        row(
            "f_refused",
            "up6",
            status="NEW_EVENT_AVAILABLE",
            last_start_refusal="job f_refused: start refused: no such job",
            last_start_refused_at=T0 + timedelta(seconds=5),
            status_change_timestamp=T0,
        ),
    ]
    jobs = [
        {"job_id": j, "job_name": f"{j} name", "should_start": j == "c_ready", "reason": f"the reason of {j}"}
        for j in sorted({r["trigger_job_id"] for r in rows})
    ]
    return rows, jobs


def written(state: Path, tick_id: str = "t1") -> status_files.SnapshotWritten:
    rows, jobs = the_estate()
    body = {"written_at": T0.isoformat(), "decided_at": T0.isoformat(), "tick_id": tick_id, "jobs": jobs, "rows": rows}
    return status_files.write_snapshot_body(state, body)


def test_status_and_why_from_the_index_print_what_the_whole_snapshot_prints(tmp_path: Path) -> None:
    # GIVEN a snapshot of jobs in every state, written by a tick
    written(tmp_path)

    # WHEN status and why read its outline (through the index), and the whole snapshot
    outline = status_files.read_snapshot_outline(tmp_path)
    whole = status_files.read_snapshot(tmp_path)
    assert outline is not None and whole is not None

    # THEN they print the same, whatever the selection; the outline holds no row's other columns
    for selection in (status.Selection(), status.Selection(state="failed"), status.Selection(listed=2)):
        assert status.render(outline, None, None, selection, now=T0) == status.render(
            whole, None, None, selection, now=T0
        )
    for job in ("a_failed", "f_refused", "nope"):
        assert status.render_why(outline, job, [], T0) == status.render_why(whole, job, [], T0)
    assert "refused" in status.render(outline, None, None, now=T0)
    assert {"watermark", "sensor_id"}.isdisjoint(outline["rows"][0])


def test_the_snapshot_is_plain_json_of_every_row(tmp_path: Path) -> None:
    # GIVEN a snapshot written with its index, WHEN read as JSON (as the report and a cold tick read it)
    written(tmp_path)
    body = json.loads(StateLayout(tmp_path).snapshot.read_text())
    # THEN it holds every row and job as given, times as ISO text
    rows, jobs = the_estate()
    assert [r["trigger_job_id"] for r in body["rows"]] == [r["trigger_job_id"] for r in rows]
    assert body["jobs"] == jobs and body["rows"][0]["status_change_timestamp"] == T0.isoformat()


def test_a_tick_that_found_the_state_unchanged_writes_only_the_tick_file(tmp_path: Path) -> None:
    # GIVEN a snapshot a tick wrote
    first = written(tmp_path)
    path = StateLayout(tmp_path).snapshot
    before = path.stat()

    # WHEN the next tick finds the state unchanged
    assert status_files.confirm_snapshot(tmp_path, "t2", first) == first

    # THEN the snapshot's file is untouched, and status reads it as tick t2's
    assert path.stat().st_mtime_ns == before.st_mtime_ns and path.stat().st_ino == before.st_ino
    for read in (status_files.read_snapshot, status_files.read_snapshot_outline):
        snapshot = read(tmp_path)
        assert snapshot is not None and snapshot["tick_id"] == "t2" and snapshot["decided_at"] == T0.isoformat()


def test_a_snapshot_replaced_since_is_written_whole_again_and_an_index_of_another_is_not_used(tmp_path: Path) -> None:
    # GIVEN a snapshot a tick wrote, then replaced by another one (another process's tick, a copy by hand)
    first = written(tmp_path)
    index = StateLayout(tmp_path).snapshot_index.read_text()
    written(tmp_path, "t2")
    StateLayout(tmp_path).snapshot_index.write_text(index)  # the first snapshot's index beside the second

    # WHEN a tick holding the first one finds the state unchanged
    # THEN it does not take the snapshot on disk for its own (it writes it whole)
    assert status_files.confirm_snapshot(tmp_path, "t3", first) is None
    # AND a reader does not read the second snapshot's rows through the first one's index
    outline = status_files.read_snapshot_outline(tmp_path)
    assert outline is not None and outline["tick_id"] == "t2" and status_files.ROWS_OF not in outline


def test_a_kill_between_the_snapshot_and_its_tick_file_leaves_the_snapshots_own_tick(tmp_path: Path) -> None:
    # GIVEN a snapshot of tick t1 confirmed by t2, then a new snapshot of t3 whose tick file was not written
    first = written(tmp_path)
    status_files.confirm_snapshot(tmp_path, "t2", first)
    tick_file = StateLayout(tmp_path).snapshot_tick.read_text()
    written(tmp_path, "t3")
    StateLayout(tmp_path).snapshot_tick.write_text(tick_file)

    # WHEN status reads it, THEN it is t3's, not the tick file's t2
    snapshot = status_files.read_snapshot(tmp_path)
    assert snapshot is not None and snapshot["tick_id"] == "t3"


def test_unchanged_waiting_reasons_are_not_written_again(tmp_path: Path) -> None:
    # GIVEN the waiting reasons a tick wrote
    status_files.record_waiting(tmp_path, {"trigger_file:a -> job j": "no new file"}, {})
    path = StateLayout(tmp_path).waiting
    before = path.stat()

    # WHEN the next tick's are the same, THEN the file is untouched; WHEN they change, THEN it is written
    status_files.record_waiting(tmp_path, {"trigger_file:a -> job j": "no new file"}, {})
    assert path.stat().st_mtime_ns == before.st_mtime_ns and path.stat().st_ino == before.st_ino
    status_files.record_waiting(tmp_path, {"trigger_file:a -> job j": "waiting for partition ds=1"}, {})
    assert status_files.waiting_reasons(tmp_path) == {"trigger_file:a -> job j": "waiting for partition ds=1"}
