"""What an operator reads: `status`, `why`, `events`, `tick --dry-run`, `report`, over one ticked state
(a job that succeeded, a job whose run failed, a job waiting for a hard dependency). The logs of a
heartbeat process and closed pipes: tests/commands/test_run_loop.py."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Iterator

import pytest
from pyspark.sql import SparkSession

from harness.commands import cli, operator
from harness.state import event_index, event_reader
from harness.state.event_files import EventFilter, log_files
from tests.support import HeartbeatHarness, control_row

LONG_ID = "landing/" + "a_very_long_folder_name_" * 3 + "end"


@pytest.fixture(scope="module")
def ticked(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HeartbeatHarness, str]]:
    """GIVEN ok_job succeeded, bad_job's run failed, wait_job has new data on one of its two hard rows."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        hb = HeartbeatHarness.create(spark, tmp_path_factory.mktemp("operator"), monkeypatch, "operator_views")
        hb.write_controls(
            [
                control_row("trigger_file", "a", "ok_job"),
                control_row("trigger_file", "b", "bad_job"),
                control_row("trigger_file", "c1", "wait_job"),
                control_row("trigger_file", "c2", "wait_job"),
                control_row("trigger_file", LONG_ID, "wait_job", hard=False),
            ]
        )
        hb.define_jobs("ok_job", "bad_job", "wait_job")
        hb.set_exit_code("bad_job", 1)
        for folder, name in (("a", "a1"), ("b", "b1"), ("c1", "c1"), (LONG_ID, "l1")):
            hb.drop_trigger_file(folder, name)
        (hb.config.trigger_root / "c2").mkdir()  # type: ignore[operator]
        hb.tick_until_settled()
        yield hb, str(hb.write_config_file())


def _run(capsys: pytest.CaptureFixture[str], config_file: str, *args: str) -> str:
    assert cli.main(["--config", config_file, *args]) == 0
    return capsys.readouterr().out


def test_status_first_line_counts_jobs_by_state(
    ticked: tuple[HeartbeatHarness, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config_file = ticked
    out = _run(capsys, config_file, "status")
    assert out.splitlines()[0] == "3 jobs: 0 ready, 2 waiting, 0 running, 1 failed, 0 paused (5 rows)"
    assert "job bad_job (bad_job-name): failed:" in out
    assert "s ago)" in out.splitlines()[3]  # how old the snapshot is


def test_status_state_filter_shows_only_the_failed_job(
    ticked: tuple[HeartbeatHarness, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config_file = ticked
    out = _run(capsys, config_file, "status", "--state", "FAILED")
    assert [line.split(" (")[0] for line in out.splitlines() if line.startswith("job ")] == ["job bad_job"]


def test_status_shows_watermarks_as_times_and_file_names_and_fits_long_labels(
    ticked: tuple[HeartbeatHarness, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config_file = ticked
    out = _run(capsys, config_file, "status", "--job", "wait_job")
    (c1,) = [line for line in out.splitlines() if line.strip().startswith("trigger_file:c1 ")]
    assert " watermark file 20" in c1 and c1.endswith(" c1")
    (long_row,) = [line for line in out.splitlines() if "…" in line]
    label = long_row.split()[0]
    assert len(label) == 48 and label.startswith("trigger_file:landing/") and label.endswith("_name_end")


def test_status_json_carries_the_summary_and_the_selected_jobs(
    ticked: tuple[HeartbeatHarness, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config_file = ticked
    body = json.loads(_run(capsys, config_file, "status", "--json", "--job", "ok_job"))
    assert body["snapshot"]["summary"] == {"ready": 0, "waiting": 2, "running": 0, "failed": 1, "paused": 0}
    (job,) = body["snapshot"]["jobs"]
    assert (job["job_id"], job["view"], [r["status"] for r in job["rows"]]) == ("ok_job", "waiting", ["COMPLETED"])


def test_why_gives_the_reason_and_the_events_of_the_job(
    ticked: tuple[HeartbeatHarness, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, config_file = ticked
    out = _run(capsys, config_file, "why", "--job", "wait_job")
    assert "    because: waiting for hard dependency trigger_file:c2" in out
    assert "DATA_CHANGED" in out and "trigger_file:c1  -> NEW_EVENT_AVAILABLE" in out
    failed = _run(capsys, config_file, "why", "--job", "bad_job")
    assert [t for t in ("DATA_CHANGED", "TRIGGER_REQUESTED", "RUN_STARTED", "RUN_FAILED") if t in failed] == [
        "DATA_CHANGED",
        "TRIGGER_REQUESTED",
        "RUN_STARTED",
        "RUN_FAILED",
    ]


def test_the_control_table_keeps_the_runs_own_end_for_status(ticked: tuple[HeartbeatHarness, str]) -> None:
    hb, _ = ticked
    (ok,) = [
        r
        for r in json.loads((hb.config.state_dir / "status.json").read_text())["rows"]
        if r["trigger_job_id"] == "ok_job"
    ]
    (ended,) = [e for e in hb.events("RUN_SUCCEEDED")]
    # the run's own end (from the backend), earlier than the tick that recorded it
    assert ok["run_ended_at"] is not None and ok["run_ended_at"] <= ok["job_end_timestamp"]
    assert datetime.fromisoformat(ok["run_ended_at"]) == datetime.fromisoformat(
        json.loads(ended["details"])["run_ended_at"]
    )


def test_events_filters_by_type_and_upstream_and_prints_json_lines(
    ticked: tuple[HeartbeatHarness, str], capsys: pytest.CaptureFixture[str]
) -> None:
    hb, config_file = ticked
    lines = _run(capsys, config_file, "events", "--type", "run_succeeded", "--json").splitlines()
    assert [(e["event_type"], e["trigger_job_id"]) for e in map(json.loads, lines)] == [("RUN_SUCCEEDED", "ok_job")]
    assert json.loads(lines[0])["event_time"].endswith("+00:00")
    text = _run(capsys, config_file, "events", "--upstream", "trigger_file:c", "--since", "1h").splitlines()
    assert {line.split()[4] for line in text} == {"trigger_file:c1"}
    # the same log Spark reads: every event of the table, none more
    everything = event_reader.read_events(
        hb.config.state_dir, event_reader.EventQuery(event_reader.parse_since("1d"), limit=0)
    )
    assert sorted(e["event_id"] for e in everything) == sorted(e["event_id"] for e in hb.events())


def test_a_tick_leaves_every_file_of_its_event_log_in_the_event_index_which_reads_as_the_files_do(
    ticked: tuple[HeartbeatHarness, str],
) -> None:
    hb, _ = ticked
    state, index = hb.config.state_dir, hb.config.layout.events_index
    folder = event_reader.events_folder(state)
    query = event_reader.EventQuery(event_reader.parse_since("1d"), limit=0)
    files = log_files(folder, query.since.date())
    # THEN the ticks left every file Spark wrote in the index
    indexed = event_index.indexed_events(index, folder, files, query.since, EventFilter(), 0)
    assert indexed is not None and files and indexed.covered == {f.name for f in files}
    # AND the events read through it are the files' own, value for value
    through_index = event_reader.read_events(state, query)
    index.rename(index.with_name("aside"))
    try:
        assert through_index == event_reader.read_events(state, query)
    finally:
        index.with_name("aside").rename(index)


def test_dry_run_prints_the_job_that_would_start_with_its_range_and_writes_nothing(
    ticked: tuple[HeartbeatHarness, str], capsys: pytest.CaptureFixture[str]
) -> None:
    hb, _ = ticked
    hb.drop_trigger_file("a", "a2")
    events_before, runs_before = len(hb.events()), len(hb.job_runs())
    assert operator.print_dry_run(hb.runtime()) == 0
    out = capsys.readouterr().out
    assert "1 of 3 jobs would start" in out and "note:" not in out  # the control table holds the CSV as it is
    assert "job ok_job would start with:" in out
    (line,) = [line for line in out.splitlines() if line.startswith("    trigger_file:a (hard): from file 20")]
    assert " a1" in line.split(" to ")[0] and line.split(" to ")[1].startswith("file 20") and "a2" in line
    assert (len(hb.events()), len(hb.job_runs())) == (events_before, runs_before)
    assert hb.job_status("ok_job") == {"COMPLETED"}


def test_report_writes_a_self_contained_page_into_the_state_folder(
    ticked: tuple[HeartbeatHarness, str], capsys: pytest.CaptureFixture[str]
) -> None:
    hb, config_file = ticked
    _run(capsys, config_file, "report", "--since", "1h")
    page = (hb.config.state_dir / "report.html").read_text()
    assert "<script src=" not in page and "Plotly.newPlot" in page
    assert all(job in page for job in ("ok_job", "bad_job", "wait_job"))


def test_the_docs_catalog_counts_the_control_tables_rows(
    ticked: tuple[HeartbeatHarness, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN the docs are generated (`python -m harness docs`, which runs `dbt docs generate`)
    hb, config_file = ticked
    assert "docs written to" in _run(capsys, config_file, "docs")
    # THEN the catalog shows the control table's row count as it is now (its statistics, refreshed first)
    catalog = json.loads((hb.config.dbt_target_path / "catalog.json").read_text())
    stats = catalog["nodes"]["model.heartbeat.heartbeat_control_table"]["stats"]
    assert [s["value"] for s in stats.values() if s["id"].endswith("rows")] == [5], stats
