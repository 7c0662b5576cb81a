"""Rewinding a job after a bad deploy whose runs succeeded (`python -m harness rewind`), end to end with real
Spark and dbt: the next run is handed the range from the rewind point on every upstream, once, and the runs
after it are back to normal; refusals change nothing; a run going keeps the rewind queued until it ends."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from harness.commands import cli
from harness.core.faults import Stopped, stopping_at
from harness.tick import inbox
from tests.fixtures_sources import a_moment_later
from tests.jobs_api_server import JobsApiServer
from tests.support import HeartbeatHarness, control_row, status_output, use_databricks

pytestmark = pytest.mark.scenario


def rewind(heartbeat: HeartbeatHarness, *args: str) -> int:
    """`python -m harness rewind ...` for this heartbeat (in this process: the command starts no Spark)."""
    return cli.main(["--config", str(heartbeat.write_config_file()), "rewind", *args])


def upstreams(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {u["sensor_source"]: u for u in run["range"]["upstreams"]}


def test_a_job_rewound_after_a_bad_run_is_handed_the_range_from_then_once_and_then_runs_as_usual(
    heartbeat: HeartbeatHarness, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a job fed by a trigger folder and a Delta table (both hard), whose runs succeeded on Thursday's
    # data and then on Friday's, which it processed with a bad deploy
    table = str(tmp_path / "orders")
    heartbeat.write_controls([control_row("trigger_file", "in", "report"), control_row("delta_table", table, "report")])
    heartbeat.define_jobs("report")
    heartbeat.drop_trigger_file("in", "thursday")
    write_deltalake(table, pa.table({"id": [1]}))
    heartbeat.tick_until_settled()
    friday = a_moment_later()
    heartbeat.drop_trigger_file("in", "friday")
    write_deltalake(table, pa.table({"id": [2]}), mode="append")
    heartbeat.tick_until_settled()
    thursday_run, bad_run = heartbeat.job_runs("report")

    # WHEN, on Monday, the job is rewound to Friday and the heartbeat ticks
    assert rewind(heartbeat, "--job", "report", "--to", friday.isoformat(), "--reason", "bad deploy") == 0
    heartbeat.tick_until_settled()

    # THEN its next run is handed Friday -> now on every upstream: the bad run's range again, with a new token
    *_, rerun = heartbeat.job_runs("report")
    assert len(heartbeat.job_runs("report")) == 3
    for kind in ("trigger_file", "delta_table"):
        assert upstreams(rerun)[kind]["from"] == upstreams(bad_run)[kind]["from"] == upstreams(thursday_run)[kind]["to"]
        assert upstreams(rerun)[kind]["to"] == upstreams(bad_run)[kind]["to"]
    assert upstreams(rerun)["delta_table"]["from"]["version"] == 0
    assert rerun["token"] != bad_run["token"]
    rewound = heartbeat.events("REWOUND")
    assert len(rewound) == 2 and {e["message"].split(" by ")[0] for e in rewound} == {
        f"job report: rewound to {friday:%Y-%m-%d %H:%M:%S} UTC"
    }
    assert all(e["message"].endswith("(bad deploy)") for e in rewound)
    assert heartbeat.job_status("report") == {"COMPLETED"}
    shown = status_output(heartbeat, capsys)
    assert f"rewound to {friday:%Y-%m-%d %H:%M:%S} UTC by " in shown and "(bad deploy)" in shown

    # WHEN new data comes after it
    heartbeat.drop_trigger_file("in", "tuesday")
    write_deltalake(table, pa.table({"id": [3]}), mode="append")
    heartbeat.tick_until_settled()

    # THEN the run after it is back to normal: from where the rewound run ended
    *_, after = heartbeat.job_runs("report")
    assert len(heartbeat.job_runs("report")) == 4
    for kind in ("trigger_file", "delta_table"):
        assert upstreams(after)[kind]["from"] == upstreams(rerun)[kind]["to"]
    assert upstreams(after)["trigger_file"]["to"]["recent"][-1] == "tuesday"


def test_a_rewind_refused_for_a_vacuumed_version_an_unknown_job_or_a_future_time_changes_nothing(
    heartbeat: HeartbeatHarness, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a job on a Delta table overwritten after T and vacuumed since: the version current at T is gone
    table = str(tmp_path / "orders")
    heartbeat.write_controls([control_row("delta_table", table, "load")])
    heartbeat.define_jobs("load")
    write_deltalake(table, pa.table({"id": [1]}))
    before = a_moment_later()
    write_deltalake(table, pa.table({"id": [2]}), mode="overwrite")
    heartbeat.tick_until_settled()
    DeltaTable(table).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    (row,) = heartbeat.tables.control_rows()

    # WHEN it is rewound to a future time, or an unknown job is: the command refuses at once, queues nothing
    capsys.readouterr()
    assert rewind(heartbeat, "--job", "load", "--to", "2999-01-01T00:00") == 2
    assert rewind(heartbeat, "--job", "lod", "--to", before.isoformat()) == 2
    said = capsys.readouterr().err
    assert "a rewind goes back to a past time; nothing queued" in said
    assert "job lod is not in the control table" in said and "load" in said
    assert inbox.pending(heartbeat.config.state_dir) == []

    # WHEN it is rewound to T, which the table no longer holds
    assert rewind(heartbeat, "--job", "load", "--to", before.isoformat()) == 0
    refused = heartbeat.tick()

    # THEN the tick refuses it, saying why on the job's row; nothing else moved and no run started
    assert refused.started == [] and inbox.pending(heartbeat.config.state_dir) == []
    (dropped,) = heartbeat.events("REQUEST_DROPPED")
    assert "refused, nothing changed" in dropped["message"] and "gone (VACUUM)" in dropped["message"]
    assert heartbeat.events("REWOUND") == []
    (after,) = heartbeat.tables.control_rows()
    assert (after.status, after.last_success_watermark, after.latest_trigger_token) == (
        row.status,
        row.last_success_watermark,
        row.latest_trigger_token,
    )
    assert len(heartbeat.job_runs("load")) == 1


def test_a_rewind_of_a_job_whose_run_is_going_waits_for_its_end_and_a_stop_before_its_file_is_removed_counts_once(
    heartbeat: HeartbeatHarness, jobs_api: JobsApiServer
) -> None:
    # GIVEN a Databricks job whose first run succeeded and whose second is going
    jobs_api.add_job(801)
    heartbeat.write_controls([control_row("trigger_file", "in", "801")])
    use_databricks(heartbeat)
    heartbeat.drop_trigger_file("in", "thursday")
    heartbeat.tick()
    jobs_api.end_run(jobs_api.runs_of(801)[-1].run_id, "SUCCESS")
    friday = a_moment_later()
    heartbeat.drop_trigger_file("in", "friday")
    heartbeat.tick()  # thursday's run succeeded; friday's starts
    going = jobs_api.runs_of(801)[-1]

    # WHEN the job is rewound to Friday while that run is going
    inbox.submit(heartbeat.config.state_dir, rewind_request_of("801", friday))
    waiting = heartbeat.tick()

    # THEN the rewind waits in the queue, changing nothing
    assert waiting.started == [] and len(inbox.pending(heartbeat.config.state_dir)) == 1
    assert heartbeat.events("REWOUND") == []

    # WHEN the run ends, and the tick that records it is stopped right after the rewind is recorded
    jobs_api.end_run(going.run_id, "SUCCESS")
    with stopping_at("request:rewind-recorded"), pytest.raises(Stopped):
        heartbeat.tick()
    heartbeat.restart()
    heartbeat.tick()  # applies the queued file again: the same events, once
    jobs_api.end_run(jobs_api.runs_of(801)[-1].run_id, "SUCCESS")
    heartbeat.tick()

    # THEN one more run was started (run_now's parameters carry the range from Friday), after the one going
    bad, rerun = jobs_api.started_runs(801)[1:]
    assert len(jobs_api.started_runs(801)) == 3
    assert jobs_api.change_range(rerun)["upstreams"][0]["from"] == jobs_api.change_range(bad)["upstreams"][0]["from"]
    assert jobs_api.change_range(rerun)["upstreams"][0]["to"] == jobs_api.change_range(bad)["upstreams"][0]["to"]
    assert len({e["event_id"] for e in heartbeat.events("REWOUND")}) == 1
    assert heartbeat.job_status("801") == {"COMPLETED"} and inbox.pending(heartbeat.config.state_dir) == []


def rewind_request_of(job_id: str, to: datetime) -> inbox.Request:
    from harness.commands.ranges import rewind_request

    request, _ = rewind_request(job_id, to.isoformat(), "bad deploy", [], datetime.now(timezone.utc))
    return request


def _json(text: str | None) -> Any:
    return json.loads(text) if text else None
