"""When a job starts, not only whether: a job's min_interval and a row's quiet_period on real Spark and dbt,
through the tick (the rules themselves are the trigger set's, with one dbt unit test each). Their waits are
real time, so both jobs share one heartbeat and their waits overlap. And a row's max_range: a long range
handed in parts that chain."""

from __future__ import annotations

import time
from typing import Any

from harness.refresh.change_range import UpstreamRange, trigger_files
from harness.state.status_files import read_json
from tests.support import HeartbeatHarness, control_row

MIN_INTERVAL, QUIET = 60, 20  # seconds: long enough for the ticks between on a busy 2-core machine (three ticks)


def shown(heartbeat: HeartbeatHarness, job_id: str) -> dict[str, Any]:
    """The job as the last tick left it in the status snapshot (what `status` and `why` print)."""
    snapshot = read_json(heartbeat.config.layout.snapshot)
    assert snapshot is not None
    return next(job for job in snapshot["jobs"] if job["job_id"] == job_id)


def test_min_interval_takes_five_landings_in_two_runs_and_quiet_period_starts_once_on_the_last_change(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN job j, started at most once per 60 s, and job q, whose upstream must be quiet for 20 s
    heartbeat.write_controls(
        [
            control_row("trigger_file", "in", "j") | {"min_interval": f"{MIN_INTERVAL}s"},
            control_row("trigger_file", "load", "q") | {"quiet_period": f"{QUIET}s"},
        ]
    )
    heartbeat.define_jobs("j", "q")
    (heartbeat.config.trigger_root / "load").mkdir(parents=True)  # type: ignore[operator]
    heartbeat.drop_trigger_file("in", "batch1")

    # WHEN j's first landing arrives, THEN j starts (it never started before)
    assert heartbeat.tick().started == ["j"]
    first_start = time.monotonic()
    heartbeat.wait_for_runs()

    # WHEN more land on j within its interval, and q's load lands in two parts a tick apart,
    # THEN both wait, saying why and until when
    heartbeat.drop_trigger_file("in", "batch2")
    heartbeat.drop_trigger_file("load", "part1")
    assert heartbeat.tick().started == []
    waiting = shown(heartbeat, "q")
    assert waiting["reason"].startswith("quiet period: trigger_file:load changed ")
    assert waiting["reason"].endswith(f" ago, needs {QUIET} s") and waiting["earliest_start_at"] is not None
    for name in ("batch3", "batch4", "batch5"):
        heartbeat.drop_trigger_file("in", name)
    heartbeat.drop_trigger_file("load", "part2")
    assert heartbeat.tick().started == []
    second_part_seen = time.monotonic()
    waiting = shown(heartbeat, "j")
    assert waiting["reason"].startswith("minimum gap: started ")
    assert waiting["reason"].endswith(f" ago, every {MIN_INTERVAL} s") and waiting["earliest_start_at"] is not None

    # WHEN q's upstream stays quiet for its period, THEN q starts once, on the last part
    time.sleep(max(0.0, second_part_seen + QUIET + 1 - time.monotonic()))
    assert "q" in heartbeat.tick().started
    # WHEN j's interval has passed, THEN one run takes its four later landings
    time.sleep(max(0.0, first_start + MIN_INTERVAL + 1 - time.monotonic()))
    heartbeat.tick()
    heartbeat.wait_for_runs()
    assert heartbeat.tick().started == []

    j_runs = [run["range"]["upstreams"][0] for run in heartbeat.job_runs("j")]
    assert len(j_runs) == 2, j_runs
    assert j_runs[0]["from"] is None and j_runs[0]["to"]["recent"] == ["batch1"]
    assert j_runs[1]["from"] == j_runs[0]["to"] and "batch5" in j_runs[1]["to"]["recent"]
    q_runs = heartbeat.job_runs("q")
    assert len(q_runs) == 1
    upstream = q_runs[0]["range"]["upstreams"][0]
    assert upstream["from"] is None and "part2" in upstream["to"]["recent"]


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
