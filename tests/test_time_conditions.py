"""When a job starts, not only whether: a job's min_interval and a row's quiet_period on real Spark and dbt,
through the tick (the rules themselves are the trigger set's, with one dbt unit test each)."""

from __future__ import annotations

import time
from typing import Any

from harness.state.status_files import read_json
from tests.support import HeartbeatHarness, control_row


def shown(heartbeat: HeartbeatHarness, job_id: str) -> dict[str, Any]:
    """The job as the last tick left it in the status snapshot (what `status` and `why` print)."""
    snapshot = read_json(heartbeat.config.layout.snapshot)
    assert snapshot is not None
    return next(job for job in snapshot["jobs"] if job["job_id"] == job_id)


def test_min_interval_starts_five_landings_in_two_runs_whose_ranges_chain(heartbeat: HeartbeatHarness) -> None:
    # GIVEN a job fed by one trigger folder, started at most once per 45 s
    heartbeat.write_controls([control_row("trigger_file", "in", "j") | {"min_interval": "45s"}])
    heartbeat.define_jobs("j")
    heartbeat.drop_trigger_file("in", "batch1")

    # WHEN the first landing arrives, THEN the job starts (it never started before)
    assert heartbeat.tick().started == ["j"]
    first_start = time.monotonic()
    heartbeat.wait_for_runs()

    # WHEN four more land within the interval, THEN the job waits, saying why and until when
    heartbeat.drop_trigger_file("in", "batch2")
    assert heartbeat.tick().started == []
    for name in ("batch3", "batch4", "batch5"):
        heartbeat.drop_trigger_file("in", name)
    assert heartbeat.tick().started == []
    waiting = shown(heartbeat, "j")
    assert waiting["reason"].startswith("minimum gap: started ") and waiting["reason"].endswith(" ago, every 45 s")
    assert waiting["earliest_start_at"] is not None

    # WHEN the interval has passed, THEN one run takes all four, its range starting where the first ended
    time.sleep(max(0.0, first_start + 46 - time.monotonic()))
    assert heartbeat.tick().started == ["j"]
    heartbeat.wait_for_runs()
    heartbeat.tick()
    runs = [run["range"]["upstreams"][0] for run in heartbeat.job_runs("j")]
    assert len(runs) == 2
    assert runs[0]["from"] is None and runs[0]["to"]["recent"] == ["batch1"]
    assert runs[1]["from"] == runs[0]["to"] and "batch5" in runs[1]["to"]["recent"]


def test_quiet_period_starts_once_after_the_upstream_went_quiet_on_its_last_change(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN a job whose upstream must be quiet for 20 s before its news counts
    heartbeat.write_controls([control_row("trigger_file", "in", "q") | {"quiet_period": "20s"}])
    heartbeat.define_jobs("q")
    (heartbeat.config.trigger_root / "in").mkdir()  # type: ignore[operator]
    assert heartbeat.tick().started == []

    # WHEN a load lands in two parts, a tick apart, THEN the job waits for the quiet period each time
    heartbeat.drop_trigger_file("in", "part1")
    assert heartbeat.tick().started == []
    waiting = shown(heartbeat, "q")
    assert waiting["reason"].startswith("quiet period: trigger_file:in changed ")
    assert waiting["reason"].endswith(" ago, needs 20 s") and waiting["earliest_start_at"] is not None
    heartbeat.drop_trigger_file("in", "part2")
    assert heartbeat.tick().started == []
    second_part_seen = time.monotonic()

    # WHEN the upstream stays quiet for 20 s, THEN the job starts once, on the last part
    time.sleep(max(0.0, second_part_seen + 21 - time.monotonic()))
    assert heartbeat.tick().started == ["q"]
    heartbeat.wait_for_runs()
    assert heartbeat.tick().started == []
    runs = heartbeat.job_runs("q")
    assert len(runs) == 1
    upstream = runs[0]["range"]["upstreams"][0]
    assert upstream["from"] is None and "part2" in upstream["to"]["recent"]
