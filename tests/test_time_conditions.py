"""When a job starts, not only whether: a job's min_interval and a row's quiet_period on real Spark and dbt,
through the tick (the rules themselves are the trigger set's, with one dbt unit test each). Their waits are
real time, so both jobs share one heartbeat and their waits overlap."""

from __future__ import annotations

import time
from typing import Any

from harness.state.status_files import read_json
from tests.support import HeartbeatHarness, control_row

MIN_INTERVAL, QUIET = 45, 20  # seconds: long enough for the ticks between on a busy 2-core machine


def shown(heartbeat: HeartbeatHarness, job_id: str) -> dict[str, Any]:
    """The job as the last tick left it in the status snapshot (what `status` and `why` print)."""
    snapshot = read_json(heartbeat.config.layout.snapshot)
    assert snapshot is not None
    return next(job for job in snapshot["jobs"] if job["job_id"] == job_id)


def test_min_interval_takes_five_landings_in_two_runs_and_quiet_period_starts_once_on_the_last_change(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN job j, started at most once per 45 s, and job q, whose upstream must be quiet for 20 s
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
