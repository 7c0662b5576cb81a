"""When a job starts, not only whether, on real Spark and dbt through the tick (the rules themselves are the
trigger set's, with dbt unit tests for each): a job's min_interval, a row's quiet_period on a Delta table
written in several commits, and a job's start_window, closed and then open. Their waits are real time, so
the three jobs share one heartbeat and their waits overlap. And a row's max_range: a long range handed in
parts that chain."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake

from harness.refresh.change_range import UpstreamRange, trigger_files
from harness.state.status_files import read_json
from tests.support import HeartbeatHarness, control_row

MIN_INTERVAL, QUIET = 60, 20  # seconds: long enough for the ticks between on a busy 2-core machine (three ticks)
WINDOW_CLOSED_FOR = 50  # seconds at least: the start window opens at the first whole minute after that


def shown(heartbeat: HeartbeatHarness, job_id: str) -> dict[str, Any]:
    """The job as the last tick left it in the status snapshot (what `status` and `why` print)."""
    snapshot = read_json(heartbeat.config.layout.snapshot)
    assert snapshot is not None
    return next(job for job in snapshot["jobs"] if job["job_id"] == job_id)


def a_window_opening_in(seconds: int) -> tuple[str, datetime]:
    """A start window (UTC) that opens at the first whole minute at least `seconds` from now."""
    opens = (datetime.now(timezone.utc) + timedelta(seconds=seconds + 59)).replace(second=0, microsecond=0)
    return f"{opens:%H:%M}-{opens + timedelta(minutes=30):%H:%M}", opens


def commit(table: Path, value: int) -> None:
    write_deltalake(str(table), pa.table({"id": [value]}), mode="append")


def test_min_interval_quiet_period_on_delta_commits_and_a_start_window_decide_when_jobs_start(
    heartbeat: HeartbeatHarness, tmp_path: Path
) -> None:
    # GIVEN job j, started at most once per 60 s; job q, whose Delta table must be quiet for 20 s; and job
    # w, started only inside a window that opens in a minute or two
    load = tmp_path / "load"
    commit(load, 0)

    def write_controls(window: str) -> None:
        heartbeat.write_controls(
            [
                control_row("trigger_file", "in", "j") | {"min_interval": f"{MIN_INTERVAL}s"},
                control_row("delta_table", str(load), "q") | {"quiet_period": f"{QUIET}s"},
                control_row("trigger_file", "win", "w") | {"start_window": window},
            ]
        )

    # (w's window opens in hours until the first tick's build is done: on a loaded machine it took over a minute)
    write_controls(a_window_opening_in(6 * 3600)[0])
    heartbeat.define_jobs("j", "q", "w")
    heartbeat.drop_trigger_file("in", "batch1")
    heartbeat.drop_trigger_file("win", "w1")

    # WHEN j's first landing arrives, THEN j starts (it never started before); w waits for its window
    assert heartbeat.tick().started == ["j"]
    first_start = time.monotonic()
    heartbeat.wait_for_runs()
    window, opens = a_window_opening_in(WINDOW_CLOSED_FOR)
    write_controls(window)

    # WHEN more land on j within its interval, q's table gets a commit, and w a second file,
    # THEN all three wait, saying why and until when
    heartbeat.drop_trigger_file("in", "batch2")
    commit(load, 1)
    heartbeat.drop_trigger_file("win", "w2")
    assert heartbeat.tick().started == []
    waiting = shown(heartbeat, "q")
    assert waiting["reason"].startswith(f"quiet period: delta_table:{load} changed ")
    assert waiting["reason"].endswith(f" ago, needs {QUIET} s") and waiting["earliest_start_at"] is not None
    waiting = shown(heartbeat, "w")
    assert waiting["reason"].startswith(f"outside its start window ({window}), opens ")
    assert waiting["reason"].endswith(f"{opens:%H:%M} UTC")
    assert datetime.fromisoformat(waiting["earliest_start_at"]) == opens
    # WHEN the load goes on in two more commits a few seconds apart
    for name in ("batch3", "batch4", "batch5"):
        heartbeat.drop_trigger_file("in", name)
    commit(load, 2)
    time.sleep(2)
    commit(load, 3)
    assert heartbeat.tick().started == []
    last_commit_seen = time.monotonic()
    waiting = shown(heartbeat, "j")
    assert waiting["reason"].startswith("minimum gap: started ")
    assert waiting["reason"].endswith(" ago, every 1 min") and waiting["earliest_start_at"] is not None

    # WHEN q's table stays quiet for its period, THEN q starts once, on the last commit (on a slow machine j's
    # interval or w's window may have passed by then too: they start in the same tick)
    time.sleep(max(0.0, last_commit_seen + QUIET + 1 - time.monotonic()))
    started = set(heartbeat.tick().started)
    assert "q" in started
    # WHEN j's interval has passed, THEN one run takes its four later landings
    if "j" not in started:
        time.sleep(max(0.0, first_start + MIN_INTERVAL + 1 - time.monotonic()))
        now_started = heartbeat.tick().started
        assert "j" in now_started
        started.update(now_started)
    # WHEN w's window has opened, THEN w starts once, with both files that landed while it was closed
    if "w" not in started:
        time.sleep(max(0.0, (opens - datetime.now(timezone.utc)).total_seconds() + 1))
        assert heartbeat.tick().started == ["w"]
    heartbeat.wait_for_runs()
    assert heartbeat.tick().started == []

    j_runs = [run["range"]["upstreams"][0] for run in heartbeat.job_runs("j")]
    assert len(j_runs) == 2, j_runs
    assert j_runs[0]["from"] is None and j_runs[0]["to"]["recent"] == ["batch1"]
    assert j_runs[1]["from"] == j_runs[0]["to"] and "batch5" in j_runs[1]["to"]["recent"]
    q_runs = heartbeat.job_runs("q")
    assert len(q_runs) == 1
    upstream = q_runs[0]["range"]["upstreams"][0]
    assert upstream["from"] is None and upstream["to"]["version"] == 3
    w_runs = heartbeat.job_runs("w")
    assert len(w_runs) == 1
    upstream = w_runs[0]["range"]["upstreams"][0]
    assert upstream["from"] is None and set(upstream["to"]["recent"]) >= {"w1", "w2"}


def test_max_range_two_after_a_failure_hands_five_pending_files_in_three_runs_whose_ranges_chain(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN job m, handed at most 2 files a run, whose first run failed
    heartbeat.write_controls([control_row("trigger_file", "in", "m") | {"max_range": "2"}])
    heartbeat.define_jobs("m")
    heartbeat.set_exit_code("m", 1)
    heartbeat.drop_trigger_file("in", "batch0")
    heartbeat.tick_until_settled()
    assert heartbeat.job_status("m") == {"FAILED"}

    # WHEN five files land while it is FAILED, and its failed run is marked done by hand
    heartbeat.set_exit_code("m", 0)
    pending = [f"batch{i}" for i in range(1, 6)]
    for name in pending:
        heartbeat.drop_trigger_file("in", name)
    heartbeat.request("complete", "m")

    # THEN the next tick senses the five at once and starts the first part of three
    assert heartbeat.tick().started == ["m"]
    # AND each later part starts at the tick that records the previous one's success, with no new data
    for _ in range(2):
        heartbeat.wait_for_runs()
        report = heartbeat.tick()
        assert (report.started, report.new_data) == (["m"], 0)
    # AND the third is the last (the tick recording its success would start none)
    (row,) = heartbeat.tables.control_table()
    assert (row["status"], row["range_part"], row["range_parts"]) == ("IN_PROGRESS", 3, 3)
    heartbeat.wait_for_runs()

    # AND the three ranges chain from the watermark the failed run's range was marked done at, and take
    # every pending file once, oldest first, as the job reads them (harness.consume)
    failed, *parts = [run["range"]["upstreams"][0] for run in heartbeat.job_runs("m")]
    assert len(parts) == 3, parts
    assert parts[0]["from"] == failed["to"]
    assert [b["from"] for b in parts[1:]] == [a["to"] for a in parts[:-1]]
    folder = heartbeat.config.trigger_root / "in"  # type: ignore[operator]
    taken = [[p.name for p in trigger_files(folder, UpstreamRange.from_json(part))] for part in parts]
    assert taken == [pending[0:2], pending[2:4], pending[4:]]
