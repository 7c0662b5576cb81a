"""The product's main path on the embedded default: a trigger file lands, a tick starts the job, the
next tick records it completed."""

from tests.support import HeartbeatHarness, control_row


def test_trigger_file_starts_job_once_and_next_tick_records_completion(heartbeat: HeartbeatHarness) -> None:
    # GIVEN one job fed by one trigger folder
    heartbeat.write_controls([control_row("trigger_file", "orders", "job_a")])
    heartbeat.define_jobs("job_a")
    heartbeat.drop_trigger_file("orders", "placeholder.keep").unlink()
    first = heartbeat.tick()
    assert first.started == [] and first.error is None

    # WHEN a trigger file lands and ticks run
    heartbeat.drop_trigger_file("orders", "2026-11-21.done")
    started = heartbeat.tick()
    heartbeat.wait_for_runs()
    settled = heartbeat.tick()

    # THEN the job ran exactly once, with the file in its change range, and the row is COMPLETED
    assert started.started == ["job_a"]
    assert settled.runs_succeeded == 1 and settled.started == []
    runs = heartbeat.job_runs("job_a")
    assert len(runs) == 1
    (upstream,) = runs[0]["range"]["upstreams"]
    assert upstream["sensor_id"] == "orders" and upstream["from"] is None
    assert upstream["to"]["recent"] == ["2026-11-21.done"]
    assert heartbeat.job_status("job_a") == {"COMPLETED"}
