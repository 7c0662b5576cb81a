"""Backfilling a job over a past range (`python -m harness backfill`), end to end with real Spark and dbt: the
parts' runs are handed exactly the range (in consecutive parts with --max-range), each with its own token,
moving no watermark; a backfill part and a regular run of the job never run at the same time."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from harness.commands import cli
from harness.commands.ranges import backfill_request
from harness.sensors.trigger_file import files_in_range
from harness.tick import inbox
from tests.jobs_api_server import JobsApiServer
from tests.support import HeartbeatHarness, control_row, status_output, use_databricks

pytestmark = pytest.mark.scenario


def wait_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - datetime.now(timezone.utc)).total_seconds()))


def files_of(folder: Path, upstream_range: dict[str, Any]) -> list[str]:
    return [p.name for p in files_in_range(folder, upstream_range["from"], upstream_range["to"])]


def test_a_backfill_in_parts_hands_each_run_its_part_with_its_own_token_and_moves_no_watermark(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a job that already consumed a folder where a file landed in each of three 0.3 s windows, and one after
    heartbeat.write_controls([control_row("trigger_file", "in", "daily")])
    heartbeat.define_jobs("daily")
    start = datetime.now(timezone.utc)
    for k, name in enumerate(["monday", "tuesday", "wednesday"]):
        wait_until(start + timedelta(seconds=0.3 * k + 0.1))
        heartbeat.drop_trigger_file("in", name)
    end = start + timedelta(seconds=0.9)
    wait_until(end + timedelta(seconds=0.05))
    heartbeat.drop_trigger_file("in", "thursday")
    heartbeat.tick_until_settled()
    (regular,) = heartbeat.job_runs("daily")
    (row,) = heartbeat.tables.control_rows()

    # WHEN the job is backfilled over the three windows in parts of 0.3 s, and the heartbeat ticks until idle
    config = str(heartbeat.write_config_file())
    command = ["--config", config, "backfill", "--job", "daily", "--from", start.isoformat(), "--to", end.isoformat()]
    assert cli.main([*command, "--max-range", "0.3s", "--reason", "bad deploy"]) == 0
    for _ in range(8):
        heartbeat.tick()
        heartbeat.wait_for_runs()
        if not inbox.pending(heartbeat.config.state_dir) and heartbeat.job_status("daily") == {"COMPLETED"}:
            break

    # THEN three one-off runs, oldest first, each handed its window's file, with tokens of their own
    regular_run, *parts = heartbeat.job_runs("daily")
    assert regular_run == regular and len(parts) == 3
    folder = heartbeat.config.trigger_root / "in"  # type: ignore[operator]
    assert [files_of(folder, p["range"]["upstreams"][0]) for p in parts] == [["monday"], ["tuesday"], ["wednesday"]]
    for earlier, later in zip(parts, parts[1:]):
        assert later["range"]["upstreams"][0]["from"] == earlier["range"]["upstreams"][0]["to"]
    tokens = [p["token"] for p in parts]
    assert len(set(tokens)) == 3 and all(t.startswith("hb-bf-") for t in tokens) and regular["token"] not in tokens
    # and the job's watermark, last success and regular run did not move
    (after,) = heartbeat.tables.control_rows()
    assert (after.watermark, after.last_success_watermark, after.latest_trigger_token, after.status) == (
        row.watermark,
        row.last_success_watermark,
        row.latest_trigger_token,
        "COMPLETED",
    )
    succeeded = heartbeat.events("BACKFILL_SUCCEEDED")
    assert [e["message"].split(": ")[1] for e in succeeded] == [f"backfill part {k} of 3" for k in (1, 2, 3)]
    assert "last backfill run ended" in status_output(heartbeat, capsys)
    assert inbox.pending(heartbeat.config.state_dir) == []


def test_a_backfill_part_and_a_regular_run_never_overlap_and_run_now_carries_the_parts_range(
    heartbeat: HeartbeatHarness, jobs_api: JobsApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a Databricks job whose regular run is going
    jobs_api.add_job(901)
    heartbeat.write_controls([control_row("trigger_file", "in", "901")])
    use_databricks(heartbeat)
    start = datetime.now(timezone.utc)
    time.sleep(0.05)
    heartbeat.drop_trigger_file("in", "old")
    time.sleep(0.05)
    end = datetime.now(timezone.utc)
    heartbeat.tick()  # regular run A
    running = lambda: [r for r in jobs_api.runs_of(901) if r.life_cycle_state == "RUNNING"]  # noqa: E731

    # WHEN a backfill of the past range is queued while it runs
    request, _ = backfill_request("901", start.isoformat(), end.isoformat(), None, None, datetime.now(timezone.utc))
    inbox.submit(heartbeat.config.state_dir, request)
    heartbeat.tick()

    # THEN the backfill part waits for the regular run, and `why` says so
    assert len(jobs_api.runs_of(901)) == 1 and heartbeat.events("BACKFILL_REQUESTED") == []
    capsys.readouterr()
    cli.main(["--config", str(heartbeat.write_config_file()), "why", "--job", "901"])
    assert "its next part waits for the run going to end" in capsys.readouterr().out

    # WHEN the regular run ends: the part starts; new data lands meanwhile
    jobs_api.end_run(jobs_api.runs_of(901)[0].run_id, "SUCCESS")
    heartbeat.tick()
    assert len(running()) == 1 and len(heartbeat.events("BACKFILL_REQUESTED")) == 1
    heartbeat.drop_trigger_file("in", "new")
    heartbeat.tick()

    # THEN the regular run waits for the part, saying which
    assert len(running()) == 1 and len(jobs_api.runs_of(901)) == 2
    reason = heartbeat.decisions()["901"].reason
    assert reason.startswith("a backfill run is in progress (backfill part 1 of 1: ") and "regular run waits" in reason

    # WHEN the part ends
    jobs_api.end_run(jobs_api.runs_of(901)[1].run_id, "SUCCESS")
    heartbeat.tick()

    # THEN the regular run starts, from the watermark the backfill did not move; the part's run_now carried its range
    regular_a, part, regular_b = jobs_api.started_runs(901)
    assert len(running()) == 1 and running()[0].run_id == regular_b.run_id
    part_range = jobs_api.change_range(part)["upstreams"][0]
    folder = heartbeat.config.trigger_root / "in"  # type: ignore[operator]
    assert files_of(folder, part_range) == ["old"] and part_range["from"] == {"changed_ns": 0, "recent": []}
    assert (
        jobs_api.change_range(regular_b)["upstreams"][0]["from"]
        == jobs_api.change_range(regular_a)["upstreams"][0]["to"]
    )
    assert part.token != regular_a.token and part.token != regular_b.token
