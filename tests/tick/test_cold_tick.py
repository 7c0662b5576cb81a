"""The cold tick (harness.tick.cold): a tick process with nothing to record ends from the status snapshot,
without Spark or dbt; anything to record or read through Spark hands over to the full tick.

The unit tests build the state a tick leaves (snapshot, fold id, models digest, local runs) by hand;
the scenario test checks that a real tick's snapshot is one the cold tick goes on from, and that its
hand-over makes the same start a warm tick makes."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest

from harness.core.config import PROJECT_DIR, Config, LocalJob
from harness.core.controls import MISSING, SEED, file_digest
from harness.core.errors import ConfigError
from harness.core.vocabulary import RowKey, SensorSource, dumps
from harness.platform.dbt_runner import project_digest
from harness.sensors import build_registry
from harness.sensors.base import Upstream
from harness.sensors.context import CheckContext
from harness.sensors.trigger_file import TriggerFileSensor
from harness.state.status_files import (
    ROWS_OF,
    TickResult,
    read_json,
    read_snapshot,
    read_snapshot_outline,
    record_tick,
    waiting_reasons,
)
from harness.state.tables import CONTROL_TABLE, Tables, next_change
from harness.tick import cold, inbox
from harness.tick.run import run_cold_tick
from harness.tick.sensing import sense_once
from harness.tick.steps import TickReport
from tests.kafka_mock import MockKafka
from tests.support import SESSION_SEEDS, HeartbeatHarness, LogCounters, control_row, spy_on_reads

CSV_HEADER = (
    "sensor_source,sensor_id,sensor_read_type,asset_description,upstream_key,preprocess_query,"
    "trigger_job_id,trigger_job_name,job_state,dependency_flag\n"
)


@dataclass
class LeftState:
    """The state folder as a tick with nothing new leaves it: one trigger folder `in` feeding job `j`."""

    config: Config
    snapshot: dict[str, Any]

    def write(self) -> None:
        self.config.layout.snapshot.write_text(json.dumps(self.snapshot))

    def row(self) -> dict[str, Any]:
        return dict(self.snapshot["rows"][0])

    def cold(self) -> tuple[cold.Handover | None, TickReport]:
        self.write()
        report = TickReport("t1")
        return cold.run(self.config, report), report


def _watermark(config: Config) -> str:
    upstream = Upstream(SensorSource.TRIGGER_FILE, "in")
    sensor = TriggerFileSensor(config.trigger_root)
    return dumps(sensor.read_position(CheckContext.starting_now(None, 10), upstream).watermark)


@pytest.fixture
def left(tmp_path: Path) -> Iterator[LeftState]:
    (tmp_path / "triggers" / "in").mkdir(parents=True)
    (tmp_path / "triggers" / "in" / "batch1").write_text("1")
    seeds = SESSION_SEEDS / f"cold_{tmp_path.name}"
    seeds.mkdir(parents=True, exist_ok=True)
    csv = seeds / "heartbeat_controls.csv"
    csv.write_text(CSV_HEADER + "trigger_file,in,batch,in,,,j,j-name,UNPAUSED,TRUE\n")
    config = Config(
        config_path=None,
        project_dir=PROJECT_DIR,
        state_dir=tmp_path / "state",
        controls_csv=csv,
        trigger_root=tmp_path / "triggers",
        local_jobs={"j": LocalJob(name="j-name", command="true")},
    )
    config.state_dir.mkdir()
    config.layout.fold_id.write_text("fold-1")
    config.layout.models_digest.write_text(project_digest(config))
    row = {
        "sensor_source": "trigger_file",
        "sensor_id": "in",
        "trigger_job_id": "j",
        "trigger_job_name": "j-name",
        "upstream_key": None,
        "preprocess_query": None,
        "is_hard_dependency": True,
        "job_state": "UNPAUSED",
        "status": "COMPLETED",
        "watermark": _watermark(config),
        "last_success_watermark": None,
        "trigger_watermark": None,
        "latest_trigger_token": None,
        "latest_run_id": None,
        "job_start_timestamp": None,
        "latest_event_fetched_timestamp": datetime.now(timezone.utc).isoformat(),
    }
    snapshot = {
        "written_at": "2026-01-01T00:00:00+00:00",
        "tick_id": "t0",
        "jobs": [{"job_id": "j", "job_name": "j-name", "should_start": False, "reason": "waiting"}],
        "rows": [row],
        "fold_id": "fold-1",
        "controls_sha256": file_digest(csv),
        "sensed": [["trigger_file", "in", "j"]],
        "open_runs": [],
        "decisions_valid_until": datetime.max.replace(tzinfo=timezone.utc).isoformat(),
    }
    yield LeftState(config, snapshot)
    shutil.rmtree(seeds, ignore_errors=True)


def _open_run(state: LeftState, run_id: str | None) -> None:
    """Job j running as `run_id` (None: its start not confirmed yet)."""
    state.snapshot["rows"][0].update(status="IN_PROGRESS", latest_run_id=run_id)
    state.snapshot["open_runs"] = [
        {
            "idempotency_token": "hb-token",
            "trigger_job_id": "j",
            "trigger_job_name": "j-name",
            "requested_at": datetime.now(timezone.utc).isoformat(),
            "run_id": run_id,
            "is_flagged_stuck": False,
            "last_poll_error": None,
            "last_poll_error_at": None,
            "sensor_source": "trigger_file",
            "sensor_id": "in",
            "watermark_before": None,
            "watermark_after": state.row()["watermark"],
            "previous_status": None,
            "is_hard_dependency": True,
        }
    ]


def _local_run(state: LeftState, run_id: str, *, pid: int | None = None, exit_code: int | None = None) -> None:
    run_dir = state.config.state_dir / "local_runs" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "launched").write_text(str(pid or os.getpid()))
    if exit_code is not None:
        (run_dir / "result.json").write_text(
            json.dumps({"exit_code": exit_code, "ended_at": datetime.now(timezone.utc).isoformat()})
        )


# --- unit: what ends the tick from the snapshot, and what hands over ---------------------------------
@pytest.mark.unit
def test_nothing_new_ends_the_tick_from_the_snapshot_and_names_this_tick(left: LeftState) -> None:
    handover, report = left.cold()
    assert handover is None
    assert report.upstreams_checked == 1
    snapshot = read_snapshot(left.config.state_dir)
    assert snapshot is not None and snapshot["tick_id"] == "t1" and snapshot["rows"] == left.snapshot["rows"]
    # each sensed row's reason for waiting, for status and why
    assert list(waiting_reasons(left.config.state_dir)) == [
        f"{r['sensor_source']}:{r['sensor_id']} -> job {r['trigger_job_id']}" for r in left.snapshot["rows"]
    ]


@pytest.mark.unit
def test_a_landed_file_hands_over_to_the_full_tick(left: LeftState) -> None:
    (left.config.trigger_root / "in" / "batch2").write_text("2")  # type: ignore[operator]
    handover, _ = left.cold()
    assert handover is not None and "1 rows with new data" in handover.reason


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The trigger folders read from here on, one entry a check."""
    return spy_on_reads(monkeypatch, TriggerFileSensor)


@pytest.mark.unit
def test_the_full_tick_takes_the_first_looks_checks_of_the_rows_left_as_they_were(
    left: LeftState, checked: list[str]
) -> None:
    # GIVEN a landed file, which the cold tick found and handed over with
    (left.config.trigger_root / "in" / "batch2").write_text("2")  # type: ignore[operator]
    handover, _ = left.cold()
    assert handover is not None and handover.look is not None and checked == ["in"]
    look, registry = handover.look, build_registry(left.config, {SensorSource.TRIGGER_FILE})
    (row,) = look.rows.values()

    # WHEN the full tick senses the row as the look sensed it, THEN it takes the look's detection: the
    # folder is not read again
    outcome, taken = sense_once([row], look, registry, None, left.config)
    assert checked == ["in"] and taken == 1
    assert outcome.events == look.outcome.events and (outcome.upstreams, outcome.new_data) == (1, 1)

    # WHEN a fold moved the row since (another watermark), THEN the row is checked again
    moved = replace(row, watermark=look.outcome.events[0].watermark_after)
    outcome, taken = sense_once([moved], look, registry, None, left.config)
    assert checked == ["in", "in"] and taken == 0 and outcome.new_data == 0 and outcome.nothing_new


@pytest.mark.unit
def test_a_check_the_first_look_could_not_make_is_made_by_the_full_tick(left: LeftState, checked: list[str]) -> None:
    # GIVEN a first look whose check of folder `in` failed (the folder was not there yet)
    shutil.rmtree(left.config.trigger_root / "in")  # type: ignore[operator]
    handover, _ = left.cold()
    assert handover is not None and handover.look is not None and handover.look.outcome.errors == 1
    (row,) = handover.look.rows.values()

    # WHEN the folder is back with a new file and the full tick senses, THEN it checks the folder again
    (left.config.trigger_root / "in").mkdir()  # type: ignore[operator]
    (left.config.trigger_root / "in" / "batch2").write_text("2")  # type: ignore[operator]
    registry = build_registry(left.config, {SensorSource.TRIGGER_FILE})
    outcome, taken = sense_once([row], handover.look, registry, None, left.config)
    assert checked == ["in", "in"] and taken == 0 and (outcome.errors, outcome.new_data) == (0, 1)


def _failing_check(state: LeftState, *, last_tick_saw_it: bool, row_shows_it: bool) -> str:
    """Trigger folder `in` gone (its check fails); the message the check gives."""
    shutil.rmtree(state.config.trigger_root / "in")  # type: ignore[operator]
    folder = (state.config.trigger_root / "in").resolve()  # type: ignore[operator]
    message = f"trigger_file:in: trigger folder {folder} does not exist; create it or fix sensor_id"
    if row_shows_it:
        state.snapshot["rows"][0]["last_error"] = message
    record_tick(
        state.config.state_dir,
        TickResult("t0", datetime.now(timezone.utc), 0.1, None, failed_checks=[message] if last_tick_saw_it else []),
    )
    return message


@pytest.mark.unit
def test_a_check_failing_as_in_the_last_tick_and_recorded_keeps_the_tick_cold_and_says_it(left: LeftState) -> None:
    # GIVEN an upstream whose check fails as it failed in the last tick, which recorded it on its row
    message = _failing_check(left, last_tick_saw_it=True, row_shows_it=True)

    # WHEN a cold tick runs, THEN it has nothing to record: it ends without Spark, naming the failure
    handover, report = left.cold()
    assert handover is None
    assert report.check_errors == 1 and report.failed_checks == [message]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("last_tick_saw_it", "row_shows_it"),
    [(False, False), (False, True), (True, False)],
    ids=["a new failure", "failing again after a tick that checked fine", "failed before but never recorded"],
)
def test_a_check_failure_not_recorded_as_ongoing_hands_over_to_record_it(
    left: LeftState, last_tick_saw_it: bool, row_shows_it: bool
) -> None:
    _failing_check(left, last_tick_saw_it=last_tick_saw_it, row_shows_it=row_shows_it)
    handover, _ = left.cold()
    assert handover is not None and "1 checks to record" in handover.reason


@pytest.mark.unit
def test_a_hand_over_from_a_current_snapshot_gives_the_full_tick_its_readings_without_a_query(left: LeftState) -> None:
    # GIVEN a current snapshot and a landed file, WHEN the cold tick hands over
    (left.config.trigger_root / "in" / "batch2").write_text("2")  # type: ignore[operator]
    handover, _ = left.cold()
    assert handover is not None and handover.snapshot is not None

    # THEN the full tick's tables answer from the snapshot, with no Spark query, until the next fold
    events = LogCounters()
    tables = Tables(NoSpark(), left.config, events)  # type: ignore[arg-type]
    runtime = SimpleNamespace(tables=tables)
    cold.keep_readings(runtime, handover.snapshot)  # type: ignore[arg-type]
    assert [r.key for r in tables.control_rows()] == [RowKey("trigger_file", "in", "j")]
    assert [(d.job_id, d.should_start, d.reason) for d in tables.job_decisions()] == [("j", False, "waiting")]
    assert [r.watermark for r in tables.sensed_rows()] == [left.row()["watermark"]]
    assert tables.open_runs() == [] and tables.controls_digest() == left.snapshot["controls_sha256"]
    events.run_events += 1  # a run's events appended: the open runs (a view over them) are read again, the rest not
    assert tables.control_rows()[0].status == "COMPLETED"
    with pytest.raises(AssertionError, match="no Spark"):
        tables.open_runs()
    events.folds += 1  # a fold: everything is read again
    with pytest.raises(AssertionError, match="no Spark"):
        tables.control_rows()


@pytest.mark.unit
def test_the_snapshots_decisions_are_read_again_once_the_clock_alone_changes_them(left: LeftState) -> None:
    # GIVEN decisions that hold until a job waiting for time may start, kept from the snapshot
    tables = Tables(NoSpark(), left.config, LogCounters())  # type: ignore[arg-type]
    soon = datetime.now(timezone.utc) + timedelta(seconds=0.2)
    left.snapshot["decisions_valid_until"] = soon.isoformat()
    cold.keep_readings(SimpleNamespace(tables=tables), left.snapshot)  # type: ignore[arg-type]
    assert [d.should_start for d in tables.job_decisions()] == [False]
    # WHEN that time passes, THEN the trigger set is read again (its view says what the clock changed)
    time.sleep(0.3)
    with pytest.raises(AssertionError, match="no Spark"):
        tables.job_decisions()


@pytest.mark.unit
def test_a_stale_snapshot_hands_over_without_readings(left: LeftState) -> None:
    left.config.layout.events_unfolded.touch()
    handover, _ = left.cold()
    assert handover is not None and handover.snapshot is None


class NoSpark:
    """A session that fails any use: the readings must come from what was kept."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"no Spark expected, {name} was used")


@pytest.mark.unit
def test_a_source_read_through_spark_hands_over(left: LeftState) -> None:
    left.snapshot["rows"][0].update(sensor_source="hive_table", sensor_id="sales.orders")
    left.snapshot["sensed"] = [["hive_table", "sales.orders", "j"]]
    handover, _ = left.cold()
    assert handover is not None and "through Spark" in handover.reason


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda s: s.config.layout.events_unfolded.touch(), "events to fold"),
        (lambda s: s.config.layout.fold_id.write_text("fold-2"), "control table changed"),
        (lambda s: s.config.layout.models_digest.write_text("other"), "dbt project or its vars changed"),
        (lambda s: s.config.controls_csv.write_text(CSV_HEADER), "controls CSV changed"),
        (lambda s: inbox.submit(s.config.state_dir, inbox.new_request("retry", "j")), "queued"),
        (lambda s: s.snapshot["jobs"][0].update(should_start=True), "jobs ready"),
        (lambda s: s.snapshot.update(decisions_valid_until=datetime.now(timezone.utc).isoformat()), "retried"),
        (lambda s: s.snapshot.pop("fold_id"), "no status snapshot"),
    ],
)
@pytest.mark.unit
def test_state_the_snapshot_does_not_show_hands_over(left: LeftState, change: Any, reason: str) -> None:
    change(left)
    handover, _ = left.cold()
    assert handover is not None and reason in handover.reason


@pytest.mark.unit
def test_a_refused_controls_csv_already_recorded_keeps_the_tick_cold_and_says_why(left: LeftState) -> None:
    left.config.controls_csv.write_text(CSV_HEADER + "trigger_file,in,batch,in,,,j,j-name,MAYBE,TRUE\n")
    left.config.layout.controls_rejected.write_text(file_digest(left.config.controls_csv))
    handover, report = left.cold()
    assert handover is None
    assert report.controls_error is not None and "job_state" in report.controls_error


@pytest.mark.unit
def test_a_missing_controls_csv_hands_over_until_a_tick_recorded_it_then_stays_cold(left: LeftState) -> None:
    # GIVEN the controls CSV gone (the models' digest as a tick without it leaves it: its absence is a var)
    left.config.controls_csv.unlink()
    left.config.layout.models_digest.write_text(project_digest(left.config))
    handover, _ = left.cold()
    assert handover is not None and "controls CSV is missing" in handover.reason
    # WHEN a full tick has recorded it refused
    left.config.layout.controls_rejected.write_text(MISSING)
    handover, report = left.cold()
    # THEN the next cold ticks end from the snapshot, saying why
    assert handover is None
    assert report.controls_error is not None and "file not found" in report.controls_error


@pytest.mark.unit
def test_a_cold_tick_with_the_controls_csv_still_refused_says_so_in_its_log(
    left: LeftState, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a controls CSV refused, and recorded as refused, by an earlier tick
    left.config.controls_csv.write_text(CSV_HEADER + "trigger_file,in,batch,in,,,j,j-name,MAYBE,TRUE\n")
    left.config.layout.controls_rejected.write_text(file_digest(left.config.controls_csv))
    # WHEN a cold tick runs (it exits 1 for the refused file)
    with caplog.at_level(logging.WARNING, logger="harness"):
        _, report = left.cold()
    # THEN its log says why, naming the bad line, with the tick's id and step
    (record,) = [r for r in caplog.records if "still refused" in r.getMessage()]
    assert "line 2" in record.getMessage() and "python -m harness validate" in record.getMessage()
    assert (record.tick_id, record.step) == (report.tick_id, "fold")  # type: ignore[attr-defined]


@pytest.mark.unit
def test_a_run_still_going_is_polled_without_spark(left: LeftState) -> None:
    _open_run(left, "local-1")
    _local_run(left, "local-1")
    handover, report = left.cold()
    assert handover is None and report.runs_running == 1


@pytest.mark.unit
def test_a_run_that_ended_hands_over_to_record_it(left: LeftState) -> None:
    _open_run(left, "local-1")
    _local_run(left, "local-1", exit_code=0)
    handover, _ = left.cold()
    assert handover is not None and "run events to record" in handover.reason


@pytest.mark.unit
def test_a_start_not_confirmed_hands_over_to_resend_it(left: LeftState) -> None:
    _open_run(left, None)
    handover, _ = left.cold()
    assert handover is not None and "a start to confirm" in handover.reason


@pytest.mark.unit
def test_an_upstream_newly_past_its_expectation_hands_over(left: LeftState) -> None:
    left.snapshot["rows"][0].update(
        expected_within="1h",
        latest_event_fetched_timestamp=(datetime.now(timezone.utc) - timedelta(hours=2)).isoformat(),
    )
    handover, _ = left.cold()
    assert handover is not None and "stale" in handover.reason


@pytest.mark.unit
def test_a_row_expecting_data_that_never_had_any_hands_over_once_to_be_watched_then_is_judged_from_then(
    left: LeftState,
) -> None:
    # GIVEN a row with an expectation and no new data ever detected, not watched yet
    left.snapshot["rows"][0].update(expected_within="1h", latest_event_fetched_timestamp=None)
    # WHEN a cold tick runs, THEN it hands over: the full tick records when the watch began
    handover, _ = left.cold()
    assert handover is not None and "no data yet to watch" in handover.reason
    # and once watched, it ends cold until the expectation has passed since then, then hands over (stale)
    left.snapshot["rows"][0]["watched_since"] = (datetime.now(timezone.utc) - timedelta(minutes=30)).isoformat()
    handover, _ = left.cold()
    assert handover is None
    left.snapshot["rows"][0]["watched_since"] = (datetime.now(timezone.utc) - timedelta(hours=2)).isoformat()
    handover, _ = left.cold()
    assert handover is not None and "stale" in handover.reason


def test_a_row_with_start_from_now_first_checked_hands_over_to_record_where_its_upstream_is_not_new_data(
    left: LeftState,
) -> None:
    # GIVEN a row with start_from now never checked yet, whose folder already holds a file
    left.snapshot["rows"][0].update(start_from="now", status=None, watermark=None, latest_event_fetched_timestamp=None)
    # WHEN a cold tick runs
    handover, _ = left.cold()
    # THEN it hands over to record the watch: the folder's position, no new data, no job ready
    assert handover is not None and handover.look is not None
    assert "1 rows with start_from now to watch from where their upstream is" in handover.reason
    (watch,) = handover.look.outcome.events
    assert watch.event_type.value == "WATCH_STARTED" and watch.watermark_after == _watermark(left.config)
    assert handover.look.outcome.new_data == 0
    # and once watched from there, the next cold tick ends without Spark
    left.snapshot["rows"][0].update(
        watermark=watch.watermark_after, watched_since=datetime.now(timezone.utc).isoformat()
    )
    handover, _ = left.cold()
    assert handover is None


@pytest.mark.unit
def test_an_upstream_down_past_its_expectation_keeps_the_tick_cold_as_a_full_tick_records_nothing(
    left: LeftState,
) -> None:
    # GIVEN an upstream whose check fails as in the last tick, which recorded it, and whose last new data
    # is older than its expectation
    message = _failing_check(left, last_tick_saw_it=True, row_shows_it=True)
    left.snapshot["rows"][0].update(
        expected_within="1h",
        latest_event_fetched_timestamp=(datetime.now(timezone.utc) - timedelta(hours=2)).isoformat(),
    )

    # WHEN a cold tick runs, THEN it ends cold: freshness judges only rows checked without error (the
    # failure is the row's report), so a full tick would record nothing (it handed over at every tick)
    handover, report = left.cold()
    assert handover is None and report.failed_checks == [message]


@pytest.mark.unit
def test_a_job_with_parts_of_its_range_left_hands_over_to_start_the_next_without_new_data(left: LeftState) -> None:
    # GIVEN the last tick left job j catching up (max_range): its row NEW_EVENT_AVAILABLE again with steps
    # of its range left, no file landed since, and the trigger set starting the next part
    left.snapshot["rows"][0].update(
        status="NEW_EVENT_AVAILABLE", max_range=2, range_steps_consumed=2, range_part=2, range_parts=3
    )
    left.snapshot["jobs"][0].update(should_start=True, reason="catching up: part 2 of 3 of its range")
    left.snapshot["sensed"] = []  # a row with news is not sensed
    # WHEN a cold tick looks, THEN it hands over to the full tick, which starts the part
    handover, _ = left.cold()
    assert handover is not None and handover.reason == "jobs ready to start"


# --- scenario: a real tick's snapshot, and the hand-over's decisions --------------------------------
@pytest.mark.scenario
def test_a_real_ticks_snapshot_lets_the_next_cold_tick_end_and_a_landing_starts_the_job(
    heartbeat: HeartbeatHarness, checked: list[str]
) -> None:
    # GIVEN a heartbeat whose first tick found nothing
    heartbeat.given_working_job("j")
    opened: list[str] = []

    def open_runtime() -> Any:
        opened.append("spark")
        return heartbeat.runtime()

    # WHEN a cold tick runs with nothing new, THEN it ends without opening Spark
    report = run_cold_tick(heartbeat.config, open_runtime)
    assert report.error is None and report.started == [] and opened == []

    # WHEN a file lands, THEN the cold tick hands over and the full tick starts the job, as a warm tick
    # does, and the folder was read once in the tick: the full tick took the first look's check
    heartbeat.drop_trigger_file("in", "batch1")
    checked.clear()
    report = run_cold_tick(heartbeat.config, open_runtime)
    assert opened == ["spark"] and report.started == ["j"] and checked == ["in"]
    heartbeat.wait_for_runs()

    # AND the run's end is recorded by the next cold tick's hand-over, then ticks are cold again
    assert run_cold_tick(heartbeat.config, open_runtime).runs_succeeded == 1
    assert heartbeat.job_status("j") == {"COMPLETED"}
    assert run_cold_tick(heartbeat.config, open_runtime).error is None and opened == ["spark", "spark"]


@pytest.mark.scenario
def test_ticks_with_nothing_new_leave_the_snapshots_file_as_written_and_status_names_the_latest(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN a heartbeat whose first tick wrote the status snapshot
    heartbeat.given_working_job("j")
    path = heartbeat.config.layout.snapshot
    written = path.stat()
    opened: list[str] = []

    def open_runtime() -> Any:
        opened.append("spark")
        return heartbeat.runtime()

    # WHEN a warm tick, then a cold one, find nothing new
    assert heartbeat.tick().error is None
    cold_tick = run_cold_tick(heartbeat.config, open_runtime)
    assert cold_tick.error is None and opened == []

    # THEN the snapshot's file is as the first tick wrote it, and status reads it as the cold tick's
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    outline = read_snapshot_outline(heartbeat.config.state_dir)
    assert outline is not None and outline["tick_id"] == cold_tick.tick_id

    # WHEN a file lands and a warm tick starts the job
    heartbeat.drop_trigger_file("in", "batch1")
    started = heartbeat.tick()
    assert started.started == ["j"]

    # THEN the snapshot is written whole again: status shows the job running, as that tick's
    outline = read_snapshot_outline(heartbeat.config.state_dir)
    assert outline is not None and outline["tick_id"] == started.tick_id
    assert [r["status"] for r in outline[ROWS_OF]("j")] == ["IN_PROGRESS"]
    heartbeat.wait_for_runs()


@pytest.mark.scenario
def test_a_preprocess_query_that_kept_nothing_is_not_run_again_over_the_same_data(
    heartbeat: HeartbeatHarness, kafka: MockKafka
) -> None:
    # GIVEN a topic whose messages a row's preprocess_query drops (it waits for the marker `done`), and a
    # first tick that ran the query over them
    kafka.produce("cold_marker", "row 1", "row 2")
    heartbeat.with_sections(kafka={"bootstrap_servers": kafka.bootstrap_servers})
    marker = "SELECT * FROM sensor_new_data WHERE cast(value AS string) = 'done'"
    heartbeat.write_controls([control_row("kafka", "cold_marker", "j", preprocess_query=marker)])
    heartbeat.define_jobs("j")
    assert heartbeat.tick().new_data == 0
    opened: list[str] = []

    def open_runtime() -> Any:
        opened.append("spark")
        return heartbeat.runtime()

    def cold_tick() -> TickReport:
        report = run_cold_tick(heartbeat.config, open_runtime)
        assert report.error is None, report.error
        return report

    # WHEN cron ticks with no new message, THEN the tick stays cold: the query is not run again
    cold_tick()
    assert opened == []
    # WHEN a message the query drops lands, THEN a tick runs it over the new data, and the next is cold again
    kafka.produce("cold_marker", "row 3")
    assert cold_tick().started == [] and opened == ["spark"]
    cold_tick()
    assert opened == ["spark"]
    # WHEN the marker lands, THEN the job starts, and after its run the ticks are cold again
    kafka.produce("cold_marker", "done")
    assert cold_tick().started == ["j"]
    heartbeat.wait_for_runs()
    assert cold_tick().runs_succeeded == 1 and len(opened) == 3
    kafka.produce("cold_marker", "row 4")
    cold_tick()
    cold_tick()
    assert len(opened) == 4 and heartbeat.job_status("j") == {"COMPLETED"}


@pytest.mark.scenario
def test_a_hand_over_after_the_metastore_lost_the_seed_loads_it_again_and_starts_the_job(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN a heartbeat whose first tick found nothing, and a metastore that then lost the controls seed
    # and the control table (the status snapshot, which the hand-over's readings come from, still shows
    # the seed holding this very CSV)
    heartbeat.given_working_job("j")
    for table in (SEED, CONTROL_TABLE):
        heartbeat.spark.sql(f"DROP TABLE {heartbeat.config.table(table)}")
    heartbeat.restart()

    # WHEN a file lands and a cold tick hands over
    heartbeat.drop_trigger_file("in", "batch1")
    report = run_cold_tick(heartbeat.config, heartbeat.runtime)

    # THEN the full tick loads the seed again from the CSV (before, its fold failed on the missing seed
    # at every tick) and starts the job
    assert report.error is None and report.controls_applied and report.started == ["j"]


@pytest.mark.unit
def test_a_job_waiting_for_time_stays_cold_until_its_earliest_start_then_hands_over(left: LeftState) -> None:
    # GIVEN job j waits only for time (a quiet period, a minimum gap or a start window): the trigger set
    # gave it an earliest start, and the snapshot holds decisions only until then
    def waiting_until(moment: datetime) -> None:
        left.snapshot["jobs"][0].update(reason="minimum gap: started 1 min ago, every 1 h")
        left.snapshot["jobs"][0]["earliest_start_at"] = moment.isoformat()
        trigger_set = [{"trigger_job_id": "j", "should_start": False, "earliest_start_at": moment}]
        read_at = moment - timedelta(minutes=1)
        left.snapshot["decisions_valid_until"] = next_change(trigger_set, read_at).isoformat()

    # WHEN that time is ahead, THEN the tick ends cold, without Spark
    waiting_until(datetime.now(timezone.utc) + timedelta(minutes=5))
    handover, _ = left.cold()
    assert handover is None

    # WHEN it has passed, THEN the tick hands over to a full tick, which decides again
    waiting_until(datetime.now(timezone.utc) - timedelta(seconds=1))
    handover, _ = left.cold()
    assert handover is not None and "time condition met" in handover.reason


@pytest.mark.unit
def test_a_refused_start_whose_retry_time_passed_while_its_job_waits_for_more_keeps_the_tick_cold(
    left: LeftState,
) -> None:
    # GIVEN job j's start was refused, and its retry time passed while the job waits for something else (a
    # hard row paused, a minimum gap): the trigger set still shows the refusal and that time
    read_at = datetime.now(timezone.utc)
    refused = {"trigger_job_id": "j", "should_start": False, "is_start_refused": True, "earliest_start_at": None}
    passed = [{**refused, "retry_start_after": read_at - timedelta(minutes=5)}]
    left.snapshot["decisions_valid_until"] = next_change(passed, read_at).isoformat()

    # THEN its decisions hold until an event changes them: the cold tick ends cold (it handed over to a
    # full tick at every tick, which decided the same)
    handover, _ = left.cold()
    assert handover is None

    # AND a retry time still ahead of the read bounds them
    ahead = [{**refused, "retry_start_after": read_at + timedelta(minutes=5)}]
    assert next_change(ahead, read_at) == read_at + timedelta(minutes=5)


@pytest.mark.unit
def test_a_cron_tick_that_cannot_open_spark_is_a_failed_tick_in_the_health_record(tmp_path: Path) -> None:
    # GIVEN a state the tick needs Spark for (no snapshot yet), whose last tick found an upstream down,
    # and a session that cannot be opened (a secret a sensor needs missing from cron's environment, a
    # JVM that does not start)
    config = Config(config_path=None, project_dir=PROJECT_DIR, state_dir=tmp_path, controls_csv=tmp_path / "c.csv")
    down = "jdbc:sales.orders: cannot query default: connection refused"
    record_tick(tmp_path, TickResult("t0", datetime.now(timezone.utc), 0.1, None, failed_checks=[down]))

    def cannot_open() -> Any:
        raise ConfigError("kafka.password_env: the environment variable KAFKA_PASSWORD is not set")

    # WHEN a cron tick runs, THEN it fails with that error
    with pytest.raises(ConfigError):
        run_cold_tick(config, cannot_open)

    # AND the health record says so, with the step (`status` showed the last tick that ended cold as ok)
    health = read_json(config.layout.health)
    assert "KAFKA_PASSWORD" in health["last_tick"]["error"] and health["last_tick"]["step"] == "open spark"
    assert health["failures_in_a_row"] == 1
    # AND the upstream down is still known as recorded: this tick sensed nothing, so the next one that
    # senses does not record its failure again
    assert health["last_tick"]["failed_checks"] == [down]


@pytest.mark.unit
def test_a_run_loop_that_cannot_open_spark_is_a_failed_tick_in_the_health_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.commands import cli

    # GIVEN a heartbeat whose session cannot be opened
    config_file = tmp_path / "heartbeat.yml"
    config_file.write_text(f"state_dir: {tmp_path / 'state'}\nbackend: local\n")

    def cannot_open(config: Config, parse_ahead: bool = False) -> Any:
        raise ConfigError("kafka.password_env: the environment variable KAFKA_PASSWORD is not set")

    monkeypatch.setattr(cli, "_runtime", cannot_open)

    # WHEN `run` starts, THEN it fails, and the health record says so
    assert cli.main(["--config", str(config_file), "run", "--max-ticks", "1"]) != 0
    health = read_json(tmp_path / "state" / "health.json")
    assert "KAFKA_PASSWORD" in health["last_tick"]["error"] and health["last_tick"]["step"] == "open spark"
