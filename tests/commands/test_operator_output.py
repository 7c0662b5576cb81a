"""The operator's output without Spark: watermarks in words, the event log's files read safely, the
report built from a known history, structured log lines."""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.commands.cli import setup_logging
from harness.core.config import PROJECT_DIR
from harness.state import event_reader
from harness.tick.steps import Step, TickReport
from harness.views import report, status
from harness.views.status import JobView, described
from harness.views.watermarks import describe, fit

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
FACETS = report.event_facets(PROJECT_DIR)


@pytest.mark.parametrize(
    "watermark, words",
    [
        ({"version": 12}, "version 12"),
        (
            {"version": 3, "key": "updated_at", "max": {"type": "timestamp", "value": "2026-11-22T10:00:00+00:00"}},
            "version 3, max(updated_at) = 2026-11-22 10:00:00",
        ),
        ({"offsets": {"1": 98, "0": 120}}, "offsets p0=120 p1=98"),
        (
            {"changed_ns": 1795241417889429472, "recent": ["a.done", "b.done", "c.done"]},
            "file 2026-11-21 06:10:17 a.done, b.done +1 more",
        ),
        ({"sap_time": "20261122214007"}, "2026-11-22 21:40:07 (SAP time)"),
        ({"key": "id", "max": {"type": "int", "value": 41}}, "max(id) = 41"),
        ({"status_change_timestamp": "2026-11-22T08:00:00+00:00"}, "load 2026-11-22 08:00:00"),
    ],
)
def test_watermarks_read_as_versions_offsets_times_and_file_names(watermark: dict[str, Any], words: str) -> None:
    assert describe(json.dumps(watermark)) == words


def test_a_long_label_keeps_its_start_and_its_end() -> None:
    assert fit("kafka:product: some.topic.name.that.goes.on.and.on.v2", 30) == "kafka:product:…es.on.and.on.v2"
    assert fit("short", 30) == "short"


def _event_file(path: Path, times: list[datetime], written: datetime) -> None:
    pq.write_table(
        pa.table(
            {
                "event_id": [f"{path.name}-{i}" for i in range(len(times))],
                "event_time": pa.array([t.replace(tzinfo=None) for t in times], pa.timestamp("us")),
                "event_type": ["DATA_CHANGED"] * len(times),
                "trigger_job_id": ["j"] * len(times),
                "sensor_source": ["kafka"] * len(times),
                "sensor_id": ["t"] * len(times),
            }
        ),
        path,
    )
    os.utime(path, (written.timestamp(), written.timestamp()))


def test_a_jobs_state_is_said_once_before_its_reason() -> None:
    # the trigger set words a ready job's reason "ready: ...", a waiting one's without its state
    assert described(JobView.READY, "ready: new data on kafka:a; retrying the start refused at 12:00") == (
        "ready: new data on kafka:a; retrying the start refused at 12:00"
    )
    assert described(JobView.WAITING, "waiting for hard dependency kafka:b") == (
        "waiting: waiting for hard dependency kafka:b"
    )


def test_the_event_log_reader_takes_only_whole_files_written_in_the_window(tmp_path: Path) -> None:
    # GIVEN a table folder: an old file, a recent one, an interrupted append, a hidden and a broken file
    folder, now = tmp_path / "heartbeat_events", datetime.now(timezone.utc)
    (folder / "_temporary" / "0").mkdir(parents=True)
    _event_file(folder / "part-old.parquet", [now - timedelta(days=3)], now - timedelta(days=3))
    _event_file(folder / "part-new.parquet", [now - timedelta(minutes=10), now - timedelta(minutes=5)], now)
    _event_file(folder / "_temporary" / "0" / "part-cut.parquet", [now], now)
    _event_file(folder / ".part-new.parquet.crc", [now], now)
    (folder / "part-broken.parquet").write_bytes(b"PAR1 not a whole file")
    event_reader.record_location(tmp_path, folder.as_uri())
    # WHEN the last hour is read
    events = event_reader.read_events(tmp_path, event_reader.EventQuery(now - timedelta(hours=1)))
    # THEN only the recent file's events, oldest first, in UTC
    assert [e["event_id"] for e in events] == ["part-new.parquet-0", "part-new.parquet-1"]
    assert events[0]["event_time"].tzinfo is timezone.utc
    assert [
        e["event_id"]
        for e in event_reader.read_events(tmp_path, event_reader.EventQuery(now - timedelta(hours=1), limit=1))
    ] == ["part-new.parquet-1"]


def test_a_length_of_time_is_said_in_the_unit_that_fits() -> None:
    from harness.core.durations import in_words

    assert [in_words(s) for s in (-1, 0.4, 95, 119.9, 120, 7199, 7200, 172799, 172800)] == [
        "0.0 s",
        "0.4 s",
        "95 s",
        "119 s",
        "2 min",
        "119 min",
        "2.0 h",
        "48.0 h",
        "2.0 days",
    ]


def test_since_takes_durations_and_times() -> None:
    assert event_reader.parse_since("2h", now=T0) == T0 - timedelta(hours=2)
    assert event_reader.parse_since("2026-11-22T10:00:00", now=T0) == datetime(2026, 11, 22, 10, tzinfo=timezone.utc)
    with pytest.raises(event_reader.HeartbeatError, match="give a duration"):
        event_reader.parse_since("yesterday")


def _e(minutes: float, kind: str, job: str, run_id: str | None = None, sensor_id: str = "in") -> dict[str, Any]:
    return {
        "event_time": T0 + timedelta(minutes=minutes),
        "event_type": kind,
        "trigger_job_id": job,
        "run_id": run_id,
        "sensor_source": "trigger_file",
        "sensor_id": sensor_id,
        "message": None,
    }


KNOWN_HISTORY = [
    _e(0, "DATA_CHANGED", "j1"),
    _e(2, "DATA_CHANGED", "j1", sensor_id="other"),
    _e(5, "TRIGGER_REQUESTED", "j1"),
    _e(5, "RUN_STARTED", "j1", "r1"),
    _e(5, "RUN_STARTED", "j1", "r1", "other"),
    _e(15, "RUN_SUCCEEDED", "j1", "r1"),
    _e(15, "RUN_SUCCEEDED", "j1", "r1", "other"),
    _e(20, "DATA_CHANGED", "j1"),
    _e(21, "RUN_STARTED", "j1", "r2"),
    _e(24, "RUN_FAILED", "j1", "r2"),
    _e(30, "DATA_CHANGED", "j2"),
    _e(31, "RUN_STARTED", "j2", "r3"),
    _e(32, "CHECK_FAILED", "j3") | {"message": "kafka: brokers unreachable"},
]


def test_the_report_derives_runs_durations_outcomes_and_waits_from_a_known_history() -> None:
    jobs = report.job_histories(KNOWN_HISTORY, FACETS)
    assert [(r.run_id, r.outcome, r.seconds, r.wait_seconds) for r in jobs["j1"].runs] == [
        ("r1", "succeeded", 600.0, 300.0),
        ("r2", "failed", 180.0, 60.0),
    ]
    assert [(r.run_id, r.outcome, r.seconds) for r in jobs["j2"].runs] == [("r3", "running", None)]
    assert len(jobs["j1"].detections) == 3
    assert jobs["j3"].errors[0][1:] == ("CHECK_FAILED", "kafka: brokers unreachable")


def test_the_report_page_plots_the_known_history_and_the_ticks() -> None:
    ticks = [
        {
            "tick_id": f"t{i}",
            "started_at": (T0 + timedelta(minutes=i)).isoformat(),
            "seconds": 2.0 + i,
            "steps": {"sense": 1.0, "fold": 1.0 + i},
            "error": "dbt failed" if i == 2 else None,
        }
        for i in range(3)
    ]
    page = report.render_report(KNOWN_HISTORY, ticks, FACETS, T0, T0 + timedelta(hours=1))
    jobs = list(report.job_histories(KNOWN_HISTORY, FACETS).values())
    figures = [report.timeline_figure(jobs, T0 + timedelta(hours=1)), report.ticks_figure(ticks)]
    runs = {t.name: t for t in figures[0].data}
    assert list(runs["run succeeded"].x) == [600_000.0] and list(runs["run failed"].y) == ["j1"]
    assert list(runs["run running"].y) == ["j2"] and list(runs["detection"].y).count("j1") == 3
    assert [t.name for t in figures[1].data] == ["sense", "fold", "failed tick"]
    assert "<script src=" not in page and page.count("Plotly.newPlot") == 3
    assert "<td>j1</td><td>3</td><td>2</td><td>1</td><td>390 s</td><td>180 s</td>" in page


def test_a_step_line_carries_its_fields_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging("json", False)
    try:
        Step(TickReport(tick_id="abc123"), "start jobs").__enter__().done(
            "2 jobs, 2 ready: 1 started (j1), 1 refused (j2)", started=["j1"], refused=["j2"]
        )
    finally:
        logging.getLogger("harness").handlers.clear()
    line = json.loads(capsys.readouterr().err)
    assert (line["tick_id"], line["step"], line["started"], line["refused"], line["level"]) == (
        "abc123",
        "start jobs",
        ["j1"],
        ["j2"],
        "INFO",
    )
    assert datetime.fromisoformat(line["time"]).utcoffset() == timedelta(0)
    assert isinstance(line["seconds"], float) and "(j1)" in line["message"]


def test_a_text_log_line_gives_its_time_in_utc_whatever_the_processs_time_zone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a process in New York (cron's own zone: Spark's opening sets TZ=UTC partway through a tick)
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    setup_logging("text", False)
    try:
        logging.getLogger("harness").info("one line")
    finally:
        logging.getLogger("harness").handlers.clear()
        monkeypatch.delenv("TZ")
        time.tzset()
    # THEN its time is UTC's, as status says times (New York's is 4 or 5 hours behind)
    hours, minutes, seconds = (int(part) for part in capsys.readouterr().err.split()[0].split(":"))
    now = datetime.now(timezone.utc)
    apart = abs(hours * 3600 + minutes * 60 + seconds - (now.hour * 3600 + now.minute * 60 + now.second))
    assert min(apart, 86400 - apart) < 60


def test_status_warns_of_a_nearly_full_state_disk_before_the_last_ticks_lines() -> None:
    # GIVEN a last tick that went well, as the health record says (a failed tick could not write its own)
    health = {"last_tick": {"ended_at": "2026-11-28T08:00:00+00:00", "seconds": 1.0}, "failures_in_a_row": 0}
    # WHEN status is read with 12 MB free for the state folder, THEN it says so first, and what to do
    lines = status.render_health(health, None, disk_free=12 * 1024 * 1024)
    assert lines[1].startswith("WARNING: the state folder's disk has 12 MB free: ticks fail on their writes")
    assert "free space, and the next tick goes on" in lines[1]
    # AND with room, or when it cannot be told, nothing is said
    assert not any("disk" in line for line in status.render_health(health, None, disk_free=10 * 1024**3))
    assert not any("disk" in line for line in status.render_health(health, None, disk_free=None))


@pytest.mark.parametrize("command", [["tick", "--dry-run"], ["docs"]])
def test_a_command_that_opens_the_metastore_while_a_loop_holds_the_state_says_what_to_do_instead(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.commands import cli
    from harness.state.lock import StateLock

    config_file = tmp_path / "heartbeat.yml"
    config_file.write_text(f"state_dir: {tmp_path / 'state'}\n")
    # GIVEN a `run` loop holding the state folder
    with StateLock(tmp_path / "state", holder="heartbeat run (pid 7)"):
        # WHEN an operator asks for a dry run (or the docs)
        code = cli.main(["--config", str(config_file), *command])
    # THEN it is refused in one line naming the holder, why, and what shows the decisions meanwhile
    assert code == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "(heartbeat run (pid 7)) holds the state folder" in line
    assert f"`{' '.join(command)}` opens the state's metastore" in line
    assert "`status` and `why --job ID`" in line
