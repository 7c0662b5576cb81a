"""What `status`, `why` and `events` tell an operator, as functions of the state a tick leaves (no Spark,
no process): a refused controls CSV, a failed tick's root cause, run times, each row's waiting reason."""

from __future__ import annotations

import errno
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.commands import cli
from harness.core.config import load_config
from harness.core.errors import ONE_LINE_CHARS, ConfigError, DbtError, HeartbeatError, disk_full, root_cause
from harness.core.state_layout import StateLayout
from harness.jobs import publish
from harness.state import status_files
from harness.tick.steps import Step, TickReport
from harness.views import status

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
REFUSAL = "controls.csv: 1 bad row\n  line 3 (trigger_fil 'other' -> job new_job): unknown sensor_source 'trigger_fil'"


def row(job: str, sensor_id: str = "t", **values: Any) -> dict[str, Any]:
    return {
        "sensor_source": "trigger_file",
        "sensor_id": sensor_id,
        "trigger_job_id": job,
        "status": None,
        "is_hard_dependency": True,
        "job_state": "UNPAUSED",
        "watermark": None,
        "last_success_watermark": None,
        "status_change_timestamp": None,
        "latest_event_fetched_timestamp": None,
        "latest_run_id": None,
        "job_start_timestamp": None,
        "job_end_timestamp": None,
        "upstream_key": None,
        "preprocess_query": None,
        "trigger_job_name": None,
        "trigger_watermark": None,
        "latest_trigger_token": None,
        **values,
    }


def snapshot(*rows: dict[str, Any], reason: str = "waiting for hard dependency trigger_file:t") -> dict[str, Any]:
    jobs = sorted({r["trigger_job_id"] for r in rows})
    return {
        "written_at": T0.isoformat(),
        "tick_id": "t1",
        "rows": list(rows),
        "jobs": [{"job_id": j, "job_name": None, "should_start": False, "reason": reason} for j in jobs],
    }


def ticked(tmp_path: Path, report: TickReport) -> dict[str, Any]:
    return status_files.record_tick(tmp_path, report.result(T0, 1.0))


# --- a refused controls CSV -------------------------------------------------------------------------


def test_a_refused_controls_csv_reaches_the_health_record_and_the_top_of_status(tmp_path: Path) -> None:
    # GIVEN a tick that refused the controls CSV (and otherwise went well)
    health = ticked(tmp_path, TickReport("t1", controls_error=REFUSAL))
    # WHEN status renders
    out = status.render(snapshot(row("old_job")), health, None, now=T0).splitlines()
    # THEN the refusal is in the top lines, with the bad line of the file and what to do
    top = "\n".join(out[:6])
    assert "WARNING: the controls CSV is refused" in top and "python -m harness validate" in top
    assert "line 3 (trigger_fil 'other' -> job new_job): unknown sensor_source 'trigger_fil'" in top
    # and the last tick is not said to be ok
    assert out[2].startswith("last tick ") and " ok " not in out[2] and "refusing the controls CSV" in out[2]


def test_why_of_a_job_only_in_the_refused_csv_says_the_file_is_refused(tmp_path: Path) -> None:
    health = ticked(tmp_path, TickReport("t1", controls_error=REFUSAL))
    out = status.render_why(snapshot(row("old_job")), "new_job", [], T0, health)
    assert out.startswith("job new_job is not in the control table")
    assert "it is in the refused controls CSV, which is not loaded until the file is fixed" in out
    assert "unknown sensor_source 'trigger_fil'" in out


@pytest.mark.parametrize(
    "job, says",
    [
        ("nosuch", "; it is not in the controls CSV either: check the job id"),
        ("fine_new_job", "; it is in the refused controls CSV, which is not loaded until the file is fixed"),
        ("new_job", "; it is in the refused controls CSV, which is not loaded until the file is fixed"),
    ],
)
def test_why_of_a_job_missing_from_the_control_table_says_whether_the_refused_csv_has_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], job: str, says: str
) -> None:
    # GIVEN a controls CSV refused for another job's row, beside a valid row of a new job
    csv_path = tmp_path / "heartbeat_controls.csv"
    csv_path.write_text(
        "sensor_source,sensor_id,trigger_job_id\ntrigger_file,t,old_job\ntrigger_fil,other,new_job\n"
        "trigger_file,t,fine_new_job\n"
    )
    config = _state_with_rows(tmp_path, row("old_job"))
    (log := tmp_path / "events").mkdir()  # an event log with no event yet
    (tmp_path / "state" / "events.location").write_text(log.as_uri() + "\n")
    refusal = f"{csv_path}: refused, nothing was changed:\n  line 3 (trigger_fil 'other' -> job new_job): unknown"
    ticked(tmp_path / "state", TickReport("t1", controls_error=refusal))
    # WHEN why is asked about a job not in the control table
    assert cli.main(["--config", config, "why", "--job", job]) == 1
    # THEN it says whether the refused file holds the job, then the refusal
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"job {job} is not in the control table") and out[0].endswith(says)
    assert out[1].startswith("WARNING: the controls CSV is refused")


def test_a_fixed_csv_clears_the_warning(tmp_path: Path) -> None:
    ticked(tmp_path, TickReport("t1", controls_error=REFUSAL))
    health = ticked(tmp_path, TickReport("t2"))
    assert "refused" not in status.render(snapshot(row("old_job")), health, None, now=T0)


# --- a failed tick ------------------------------------------------------------------------------------


class Py4JJavaError(Exception):
    """Stands for py4j's exception (its text is Java's: the call, then the trace with `Caused by:`)."""


JAVA_TEXT = (
    "An error occurred while calling o70.collectToPython.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed\n"
    "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n"
    + "\tat somewhere.Else(X.java:1)\n"
    * 200
    + "Caused by: java.lang.RuntimeException: file:/state/controls.parquet is not a Parquet file. "
    "Expected magic number at tail, but found [65, 66, 67, 10]\n\tat org.apache.parquet.Reader(R.java:1)\n"
)


def test_a_full_disk_is_told_from_pythons_error_and_from_spark_jvms_whatever_wraps_it() -> None:
    java = JAVA_TEXT.replace(
        "file:/state/controls.parquet is not a Parquet file", "java.io.IOException: No space left on device"
    )
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as exc:
            raise RuntimeError("cannot append the events") from exc
    except RuntimeError as wrapped:
        assert disk_full(wrapped)
    assert disk_full(Py4JJavaError(java))
    assert not disk_full(Py4JJavaError(JAVA_TEXT)) and not disk_full(OSError(errno.EACCES, "Permission denied"))


def test_the_root_cause_of_a_java_failure_is_one_line_leading_with_the_cause() -> None:
    line = root_cause(Py4JJavaError(JAVA_TEXT))
    assert "\n" not in line
    # the Java cause, not py4j's line over it (which names a call, not a problem)
    assert line.startswith("java.lang.RuntimeException: file:/state/controls.parquet is not a Parquet file")
    assert "An error occurred while calling" not in line


def test_the_root_cause_of_a_java_failure_is_its_own_chains_not_a_suppressed_or_circular_one() -> None:
    # GIVEN Spark's trace: the exception's own chain ends at the parquet file, then a Suppressed exception
    # whose causes Java prints indented, the last a circular reference to one already printed
    text = JAVA_TEXT + (
        "\tSuppressed: org.apache.spark.util.Utils$OriginalTryStackTraceException: Full stacktrace of caller\n"
        "\t\tat org.apache.spark.util.Utils$.doTryWithCallerStacktrace(Utils.scala:1)\n"
        "\tCaused by: [CIRCULAR REFERENCE: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] "
        "Encountered error while reading file file:///state/controls.parquet.  SQLSTATE: KD001]\n"
    )
    # WHEN reduced to one line
    line = root_cause(Py4JJavaError(text))
    # THEN it is the file that is not parquet
    assert line.startswith("java.lang.RuntimeException: file:/state/controls.parquet is not a Parquet file")


def test_the_root_cause_of_a_chained_python_failure_is_the_innermost() -> None:
    try:
        try:
            raise FileNotFoundError("/state/warehouse/x: no such file")
        except FileNotFoundError as inner:
            raise RuntimeError("cannot read the control table\nmore") from inner
    except RuntimeError as exc:
        line = root_cause(exc)
    assert line == (
        "RuntimeError: cannot read the control table - cause: FileNotFoundError: /state/warehouse/x: no such file"
    )


def test_the_root_cause_of_an_error_heading_a_list_names_its_first_problem() -> None:
    # GIVEN a refusal whose first line only heads its problems (a variable cron's environment lacks)
    exc = ConfigError("/etc/hb/heartbeat.yml: refused:\n  jdbc.connections.pg.password_env: PG_PW is not set\n  x: y\n")
    # THEN its one line (the health record's, status's) names the first problem and how many more
    assert root_cause(exc) == (
        "ConfigError: /etc/hb/heartbeat.yml: refused: jdbc.connections.pg.password_env: PG_PW is not set (and 1 more)"
    )


def test_a_failed_tick_shows_its_step_and_root_cause_in_status(tmp_path: Path) -> None:
    report = TickReport("t9")
    with pytest.raises(ValueError), Step(report, "sense"):
        raise ValueError("boom")
    report.error = root_cause(Py4JJavaError(JAVA_TEXT))
    health = ticked(tmp_path, report)
    out = status.render(snapshot(row("j")), health, None, now=T0)
    assert "WARNING: the last tick failed (since " in out
    assert "    last error: java.lang.RuntimeException: file:/state/controls.parquet is not a Parquet file" in out
    assert "    in step sense; the heartbeat's log has the whole error and any trace (tick t9)" in out


def test_why_says_the_ticks_are_failing_before_a_decision_they_left_behind(tmp_path: Path) -> None:
    # GIVEN ticks failing since the snapshot was written
    report = TickReport("t9", step="fold", error="java.lang.RuntimeException: x.parquet is not a Parquet file")
    ticked(tmp_path, report)
    health = ticked(tmp_path, report)
    # WHEN why is asked about a job
    out = status.render_why(snapshot(row("j")), "j", [], T0, health).splitlines()
    # THEN it starts with the failing ticks, the step and the root cause, then the job's decision
    assert out[0].startswith("WARNING: the last 2 ticks failed (since ")
    assert out[1] == "    last error: java.lang.RuntimeException: x.parquet is not a Parquet file"
    assert out[2].startswith("    in step fold; the heartbeat's log has the whole error and any trace (tick t9)")
    assert out[3].startswith("job j (-): waiting: does not start")


@pytest.mark.parametrize("command", [["tick"], ["run", "--max-ticks", "1"]])
def test_a_tick_refusing_heartbeat_yml_is_a_failed_tick_in_the_health_record_and_status(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a state folder whose last tick went well, and a heartbeat.yml with a misspelt key
    config = _state_with_rows(tmp_path, row("j"))
    state = tmp_path / "state"
    ticked(state, TickReport("t1"))
    with open(config, "a") as file:
        file.write("sensing: {check_timeout_secnds: 30}\n")
    # WHEN two ticks run on it
    assert [cli.main(["--config", config, *command]) for _ in range(2)] == [2, 2]
    # THEN each says why it refused the file, and each is a failed tick in step config
    assert "sensing.check_timeout_secnds: unknown key" in capsys.readouterr().err
    health = status_files.read_json(StateLayout(state).health)
    assert health is not None and health["failures_in_a_row"] == 2
    assert health["last_tick"]["step"] == "config"
    error = health["last_tick"]["error"]
    assert "sensing.check_timeout_secnds: unknown key; did you mean 'check_timeout_seconds'?" in error
    # and status says the ticks fail, with the key to fix on one line
    assert cli.main(["--config", config, "status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].startswith("WARNING: the last 2 ticks failed (since ")
    assert out[3].startswith("    last error: ConfigError: ") and "check_timeout_secnds: unknown key" in out[3]
    assert out[4].startswith("    in step config; ")


def test_a_tick_whose_state_folder_cannot_be_told_records_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a heartbeat.yml that is not a mapping of keys
    (config := tmp_path / "heartbeat.yml").write_text("- state_dir\n")
    # WHEN a tick runs on it
    assert cli.main(["--config", str(config), "tick"]) == 2
    # THEN it says why, and that the failed tick is not in the health record
    err = capsys.readouterr().err
    assert "expected a mapping of keys at the top level" in err
    assert "not in the health record" in err
    assert not (tmp_path / "state").exists()


def test_a_dry_run_refusing_heartbeat_yml_leaves_the_health_record_alone(tmp_path: Path) -> None:
    # GIVEN a state folder whose last tick went well, and a heartbeat.yml with a misspelt key
    config = _state_with_rows(tmp_path, row("j"))
    ticked(tmp_path / "state", TickReport("t1"))
    with open(config, "a") as file:
        file.write("sensing: {check_timeout_secnds: 30}\n")
    # WHEN a dry run refuses it
    assert cli.main(["--config", config, "tick", "--dry-run"]) == 2
    # THEN the health record is as the last tick left it (a dry run is no tick)
    health = status_files.read_json(StateLayout(tmp_path / "state").health)
    assert health is not None and health["failures_in_a_row"] == 0


class FailingTables:
    """The tables of a tick whose first read (the open runs) fails as Spark fails (a stand-in: the point
    is the tick's handling of the failure, not Spark)."""

    def list_again(self) -> None:
        pass

    def open_runs(self) -> list[Any]:
        raise Py4JJavaError(JAVA_TEXT)


def runtime_of(tables: FailingTables, state_dir: Path) -> Any:
    return SimpleNamespace(
        events=SimpleNamespace(tick_id=""), tables=tables, config=SimpleNamespace(state_dir=state_dir)
    )


def test_a_failed_tick_logs_its_trace_with_tick_id_and_step_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.tick.run import run_tick

    # GIVEN JSON logs and a tick whose first step fails
    cli.setup_logging("json", False)
    # WHEN it runs
    report = run_tick(runtime_of(FailingTables(), tmp_path))
    # THEN the error line carries the tick id, the step and the full trace; the health record the root cause
    (line,) = [json.loads(text) for text in capsys.readouterr().err.splitlines() if '"ERROR"' in text]
    assert (line["tick_id"], line["step"]) == (report.tick_id, "track runs")
    assert "is not a Parquet file" in line["message"] and "Caused by:" in line["exception"]
    last = json.loads(StateLayout(tmp_path).health.read_text())["last_tick"]
    assert last["step"] == "track runs" and last["error"].startswith("java.lang.RuntimeException: ")


class FullDiskTables(FailingTables):
    """The tables of a tick whose first write finds the state folder's disk full."""

    def open_runs(self) -> list[Any]:
        raise OSError(errno.ENOSPC, "No space left on device", "/state/heartbeat.lock")


def test_a_tick_on_a_full_disk_says_what_to_do_in_one_line_and_a_run_loop_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.tick import run

    # GIVEN JSON logs, a full disk under the state folder: the tick's step and its health record fail to write
    cli.setup_logging("json", False)

    def no_space(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/state/health.json")

    monkeypatch.setattr(run, "record_tick", no_space)
    # WHEN a tick runs, THEN it returns its report (a `run` loop goes on to its next tick)
    report = run.run_tick(runtime_of(FullDiskTables(), tmp_path))
    assert report.error is not None and "No space left on device" in report.error
    # AND its error line says what to do, with no trace; a warning says the health record missed the tick
    lines = [json.loads(text) for text in capsys.readouterr().err.splitlines()]
    (error,) = [line for line in lines if line["level"] == "ERROR"]
    assert "disk is full: free space, nothing else is needed" in error["message"] and "exception" not in error
    assert (error["tick_id"], error["step"]) == (report.tick_id, "track runs")
    assert [line["message"] for line in lines if line["level"] == "WARNING"] == [
        f"tick {report.tick_id} is not in the health record: [Errno 28] No space left on device: '/state/health.json'"
    ]


class EndedJvm:
    """PySpark's Popen of a JVM that ended with `code` (negative: killed by that signal)."""

    def __init__(self, code: int | None) -> None:
        self.code = code

    def poll(self) -> int | None:
        return self.code


@pytest.mark.parametrize(
    "gateway, said",
    [
        (None, None),  # no JVM started by this process (before Spark opens, Spark Connect)
        (SimpleNamespace(proc=EndedJvm(None)), None),  # running
        (SimpleNamespace(proc=EndedJvm(-9)), "was killed by signal 9"),
        (SimpleNamespace(proc=EndedJvm(1)), "exited with code 1"),
    ],
)
def test_how_the_spark_jvm_ended_is_told_from_its_process(
    gateway: object, said: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark import SparkContext

    from harness.platform.spark import jvm_ended

    monkeypatch.setattr(SparkContext, "_gateway", gateway)
    assert jvm_ended() == said


class NoJvmTables(FailingTables):
    """The tables of a tick whose Spark JVM was killed: a call to it is refused, as py4j refuses it."""

    def open_runs(self) -> list[Any]:
        raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")


def test_a_tick_whose_spark_jvm_was_killed_says_so_and_what_happens_next_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark import SparkContext

    from harness.tick.run import run_tick

    # GIVEN JSON logs and a tick whose JVM the kernel killed (the out-of-memory killer's signal)
    cli.setup_logging("json", False)
    monkeypatch.setattr(SparkContext, "_gateway", SimpleNamespace(proc=EndedJvm(-9)))
    # WHEN it runs
    report = run_tick(runtime_of(NoJvmTables(), tmp_path))
    # THEN its error, in the health record too, names the JVM's end before the refused call, and its one
    # error line (no trace) says what happens next and where to look
    assert report.error == "Spark's JVM was killed by signal 9 (ConnectionRefusedError: [Errno 111] Connection refused)"
    (error,) = [json.loads(text) for text in capsys.readouterr().err.splitlines() if '"ERROR"' in text]
    assert "exception" not in error and report.error in error["message"]
    assert "a `run` loop starts again at once" in error["message"] and "dmesg" in error["message"]
    assert json.loads(StateLayout(tmp_path).health.read_text())["last_tick"]["error"] == report.error


def test_py4j_own_trace_of_a_call_the_jvm_did_not_answer_is_left_out_of_the_log(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import logging

    from py4j import java_gateway

    # GIVEN the harness's JSON logs
    cli.setup_logging("json", False)
    # WHEN py4j logs a failed call on the root logger, as its send_command does, and another library warns
    root_record = logging.LogRecord(
        "root", logging.ERROR, java_gateway.__file__, 1059, "Exception while sending command.", None, None
    )
    other = logging.LogRecord("urllib3", logging.WARNING, logging.__file__, 1, "retrying", None, None)
    # THEN py4j's record is dropped (the tick reports the error raised, in one line); the other one is kept
    assert not logging.getLogger().filter(root_record) and logging.getLogger().filter(other)
    cli.setup_logging("json", False)  # set up again (each command does): one filter, not two
    assert sum(isinstance(f, cli.Py4jRootRecords) for f in logging.getLogger().filters) == 1


LONG_PATH = "file:/work/state/warehouse/heartbeat.db/heartbeat_control_table__v20261125T060430_65ea0c66/" + (
    "part-00000-66c59aa5-aa4d-44d0-9a0d-bf2b4c77ae5b-c000.snappy.parquet"
)


class FailingFoldTables(FailingTables):
    """The tables of a tick whose dbt build fails, as a damaged control table makes it fail: dbt's report
    of the model, with Spark's whole trace."""

    def open_runs(self) -> list[Any]:
        raise DbtError(
            "dbt build failed: heartbeat_control_table: Compilation Error in model heartbeat_control_table "
            "(models/marts/heartbeat_control_table.sql)\n  "
            + JAVA_TEXT.replace("\n", "\n  ").replace("file:/state/controls.parquet", LONG_PATH)
        )


def test_a_tick_failed_in_dbt_shows_the_models_root_cause_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.tick.run import run_tick

    # GIVEN a tick whose dbt build fails on a control table file that is not parquet
    cli.setup_logging("json", False)
    # WHEN it runs
    report = run_tick(runtime_of(FailingFoldTables(), tmp_path))
    # THEN the health record, and so status, has the model and the root cause on one line, not dbt's report
    out = status.render(snapshot(row("j")), status_files.read_json(StateLayout(tmp_path).health), None, now=T0)
    (error,) = [line for line in out.splitlines() if line.startswith("    last error: ")]
    assert error.startswith("    last error: DbtError: dbt build failed: heartbeat_control_table: Compilation Error")
    assert error.endswith(
        f"{LONG_PATH} is not a Parquet file. Expected magic number at tail, but found [65, 66, 67, 10]"
    )
    assert len(error) <= len("    last error: ") + ONE_LINE_CHARS
    assert "\tat " not in out
    # AND the log's error line carries dbt's whole report, with the tick id and the step
    (line,) = [json.loads(text) for text in capsys.readouterr().err.splitlines() if '"ERROR"' in text]
    assert (line["tick_id"], line["step"]) == (report.tick_id, "track runs") and "\tat " in line["message"]


# --- run times ----------------------------------------------------------------------------------------


def test_a_runs_duration_is_from_its_own_start_to_its_own_end() -> None:
    # GIVEN a run that started at 12:00:00, ended at 12:00:03.1, and whose end a tick recorded 18 s later
    r = row(
        "j",
        status="COMPLETED",
        latest_run_id="run-1",
        job_start_timestamp="2026-11-22T11:59:59+00:00",
        run_started_timestamp="2026-11-22T12:00:00+00:00",
        run_ended_at="2026-11-22T12:00:03.100000+00:00",
        job_end_timestamp="2026-11-22T12:00:21+00:00",
    )
    # THEN status and why say 3.1 s, ending at the run's own end
    assert status.run_line(r) == "run run-1 started 2026-11-22 12:00:00, ended 2026-11-22 12:00:03 (3.1 s)"
    assert "(3.1 s)" in status.render_why(snapshot(r), "j", [], T0)


def test_a_running_run_shows_no_end_not_the_previous_runs() -> None:
    # GIVEN a run going, whose row still holds the previous run's end (earlier than this run's start)
    r = row(
        "j",
        status="IN_PROGRESS",
        latest_run_id="run-2",
        job_start_timestamp="2026-11-22T13:19:47+00:00",
        run_started_timestamp="2026-11-22T13:19:48+00:00",
        run_ended_at="2026-11-22T13:19:02+00:00",
        job_end_timestamp="2026-11-22T13:19:02+00:00",
    )
    assert status.run_line(r) == "run run-2 started 2026-11-22 13:19:48, still running"
    assert "ended" not in status.render(snapshot(r), None, None, now=T0)


def test_status_json_gives_a_running_run_its_own_start_and_no_end() -> None:
    # GIVEN a run going, whose row still holds the previous run's end; and a run that ended in 3.1 s
    going = row(
        "j",
        status="IN_PROGRESS",
        latest_run_id="run-2",
        run_started_timestamp="2026-11-22T13:19:48+00:00",
        run_ended_at="2026-11-22T13:19:02+00:00",
        job_end_timestamp="2026-11-22T13:19:02+00:00",
    )
    ended = row(
        "k",
        status="COMPLETED",
        latest_run_id="run-1",
        run_started_timestamp="2026-11-22T12:00:00+00:00",
        run_ended_at="2026-11-22T12:00:03.100000+00:00",
        job_end_timestamp="2026-11-22T12:00:21+00:00",
    )
    # WHEN status prints JSON
    body = json.loads(status.render_json(snapshot(going, ended), None, None, now=T0))
    runs = {j["job_id"]: j["rows"][0]["latest_run"] for j in body["snapshot"]["jobs"]}
    # THEN each row's latest run has its own start, and an end only once it ended
    assert runs["j"] == {
        "run_id": "run-2",
        "started_at": "2026-11-22T13:19:48+00:00",
        "ended_at": None,
        "seconds": None,
        "going": True,
    }
    assert runs["k"]["ended_at"] == "2026-11-22T12:00:03.100000+00:00" and runs["k"]["seconds"] == 3.1


def test_the_reports_run_ends_when_the_backend_says_not_when_a_tick_learned_it() -> None:
    from harness.core.config import PROJECT_DIR
    from harness.views import report

    events = [
        {
            "event_time": T0,
            "event_type": "RUN_STARTED",
            "trigger_job_id": "j",
            "run_id": "r1",
            "sensor_source": "trigger_file",
            "sensor_id": "t",
        },
        {
            "event_time": T0.replace(second=21),
            "event_type": "RUN_SUCCEEDED",
            "trigger_job_id": "j",
            "run_id": "r1",
            "sensor_source": "trigger_file",
            "sensor_id": "t",
            "details": json.dumps({"run_ended_at": "2026-11-22T12:00:03.100000+00:00"}),
        },
    ]
    (run,) = report.job_histories(events, report.event_facets(PROJECT_DIR))["j"].runs
    assert run.seconds == pytest.approx(3.1)


# --- each row's waiting reason ----------------------------------------------------------------------------


def test_two_partition_rows_of_one_table_each_say_why_they_wait(tmp_path: Path) -> None:
    from harness.core.vocabulary import RowKey

    # GIVEN two jobs' partition rows on one table, sensed with nothing new for different reasons
    a, b = (row(job, "/lake/orders", sensor_source="delta_table") for job in ("daily", "hourly"))
    status_files.record_waiting(
        tmp_path,
        {
            RowKey("delta_table", "/lake/orders", "daily").ref: "waiting for partition ds=2026-11-22 (no data yet)",
            RowKey("delta_table", "/lake/orders", "hourly").ref: "partition ds=2026-11-22/hour=11 already acted on",
        },
    )
    waiting = status_files.waiting_reasons(tmp_path)
    # WHEN status and why render
    out = status.render(snapshot(a, b), None, None, now=T0, waiting=waiting)
    # THEN each row carries its own reason
    assert "        waiting: waiting for partition ds=2026-11-22 (no data yet)" in out
    assert "        waiting: partition ds=2026-11-22/hour=11 already acted on" in out
    assert "waiting for partition ds=2026-11-22" in status.render_why(snapshot(a, b), "daily", [], T0, None, waiting)
    assert "already acted on" not in status.render_why(snapshot(a, b), "daily", [], T0, None, waiting)
    body = json.loads(status.render_json(snapshot(a, b), None, None, now=T0, waiting=waiting))
    assert [r["waiting_reason"][:12] for j in body["snapshot"]["jobs"] for r in j["rows"]] == [
        "waiting for ",
        "partition ds",
    ]


def test_a_rows_check_error_is_said_to_be_over_once_its_check_succeeded() -> None:
    # GIVEN a row whose first check failed (its folder was missing), and a later tick whose check of it succeeded
    r = row(
        "j",
        sensor_id="wait_b",
        last_error="trigger_file:wait_b: trigger folder /t/wait_b does not exist; create it or fix sensor_id",
        last_error_timestamp="2026-11-22T11:00:00+00:00",
    )
    ref = "trigger_file:wait_b -> job j"
    # WHEN status renders, with and without the last tick's waiting reason for the row
    fine = status.render(snapshot(r), None, None, now=T0, waiting={ref: "no file newer than the start"})
    failing = status.render(snapshot(r), None, None, now=T0, waiting={})
    # THEN the error is said to be over only when the check has succeeded since
    assert "last error 2026-11-22 11:00:00 (its upstream's check has succeeded since): trigger_file:wait_b" in fine
    assert "last error 2026-11-22 11:00:00: trigger_file:wait_b" in failing


# --- publish ------------------------------------------------------------------------------------------


def _state_with_rows(tmp_path: Path, *rows: dict[str, Any]) -> str:
    state = tmp_path / "state"
    state.mkdir()
    StateLayout(state).snapshot.write_text(json.dumps(snapshot(*rows)))
    config = tmp_path / "heartbeat.yml"
    config.write_text(f"state_dir: {state}\n")
    return str(config)


def _queued(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in (tmp_path / "state" / "inbox" / "published").glob("*.json")]


def test_publish_refuses_a_partition_the_filters_would_refuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _state_with_rows(tmp_path, row("j", "sales.orders", sensor_source="published"))
    code = cli.main(["--config", config, "publish", "--table", "sales.orders", "--partition", "ds=2026-01-01/hour"])
    assert code == 2 and _queued(tmp_path) == []
    err = capsys.readouterr().err
    assert "--partition 'ds=2026-01-01/hour' refused: 'hour': expected column=value, e.g. ds=2026-11-22/hour=03" in err
    assert "{{" not in err  # a filter's time expression is not for publishing
    with pytest.raises(HeartbeatError, match="must be a literal partition value"):
        publish.publish("sales.orders", partition={"ds": "{{ today }}"}, config=load_config(config))


def test_publish_reads_several_columns_in_the_folder_form_and_names_the_rows_watching(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _state_with_rows(tmp_path, row("j", "sales.orders", sensor_source="published"))
    assert (
        cli.main(["--config", config, "publish", "--table", "sales.orders", "--partition", "ds=2026-01-01/hour=03"])
        == 0
    )
    assert [q["partition_values"] for q in _queued(tmp_path)] == [{"ds": "2026-01-01", "hour": "03"}]
    assert "watched by 1 row(s): j" in capsys.readouterr().out


def test_publish_of_a_table_no_row_watches_says_so_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _state_with_rows(tmp_path, row("j", "sales.orders", sensor_source="published"))
    assert cli.main(["--config", config, "publish", "--table", "nobody.watches"]) == 0
    assert (
        "note: no row of the control table (as of the last tick) has sensor_source published and sensor_id "
        "'nobody.watches'" in capsys.readouterr().out
    )
    assert [q["table"] for q in _queued(tmp_path)] == ["nobody.watches"]


@pytest.mark.parametrize("command", ["complete", "retry"])
def test_complete_and_retry_help_says_what_the_job_id_is(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN the command's help is asked for
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    # THEN --job (or --job-id) is said to be the trigger_job_id of the controls CSV
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--job JOB, --job-id JOB the job's trigger_job_id in the controls CSV" in help_text


def test_an_unknown_option_prints_the_commands_own_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["publish", "--table", "t", "--bogus"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("usage: python -m harness publish ")
    assert "unrecognized arguments: --bogus" in err


@pytest.mark.parametrize(
    "argv, refusal",
    [
        (["events", "--limit", "-1"], "argument --limit: expected a whole number, 0 or more, got '-1'"),
        (["why", "--job", "j", "--limit", "-2"], "argument --limit: expected a whole number, 0 or more, got '-2'"),
        (["report", "--max-jobs", "-1"], "argument --max-jobs: expected a whole number, 0 or more, got '-1'"),
        (["run", "--max-ticks", "-3"], "argument --max-ticks: expected a whole number, 0 or more, got '-3'"),
        (["run", "--interval", "-5"], "argument --interval: expected a number of seconds above 0, got '-5'"),
        (["run", "--interval", "0"], "argument --interval: expected a number of seconds above 0, got '0'"),
        (["run", "--interval", "nan"], "argument --interval: expected a number of seconds above 0, got 'nan'"),
        (["events", "--limit", "ten"], "argument --limit: expected a whole number, 0 or more, got 'ten'"),
    ],
)
def test_a_negative_count_or_a_non_positive_interval_is_refused_with_the_commands_usage(
    argv: list[str], refusal: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a count or an interval that means nothing (events dropped, a loop that never waits)
    # WHEN the command line is read
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    # THEN it is refused before anything runs, saying what it expects
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith(f"usage: python -m harness {argv[0]} ")
    assert refusal in err


def test_the_counts_zero_and_a_fraction_of_a_second_are_taken() -> None:
    for argv in (["events", "--limit", "0"], ["report", "--max-jobs", "0"], ["run", "--interval", "0.5"]):
        cli.parser().parse_args(argv)


# --- exit codes and unreadable state ----------------------------------------------------------------------


def test_an_unknown_event_type_is_refused_with_the_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _state_with_rows(tmp_path, row("j"))
    assert cli.main(["--config", config, "events", "--type", "BOGUS"]) == 2
    err = capsys.readouterr().err
    assert "--type BOGUS: not an event type; choose from " in err and "RUN_SUCCEEDED" in err


def test_status_why_and_events_of_an_unknown_job_all_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _state_with_rows(tmp_path, row("j"))
    (log := tmp_path / "events").mkdir()  # an event log with no event yet
    (tmp_path / "state" / "events.location").write_text(log.as_uri() + "\n")
    assert [cli.main(["--config", config, *args, "--job", "nope"]) for args in (["status"], ["why"], ["events"])] == [
        1,
        1,
        1,
    ]
    assert cli.main(["--config", config, "status", "--job", "j"]) == 0
    assert "job nope is not in the control table" in capsys.readouterr().out


def test_a_mistyped_job_id_is_refused_naming_the_jobs_it_is_close_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a control table of daily_orders and hourly_orders (no event yet)
    config = _state_with_rows(tmp_path, row("daily_orders"), row("hourly_orders", "u"))
    (log := tmp_path / "events").mkdir()
    (tmp_path / "state" / "events.location").write_text(log.as_uri() + "\n")
    # WHEN `why` and `complete` are given a job id with two letters swapped
    assert cli.main(["--config", config, "why", "--job", "daily_ordres"]) == 1
    why = capsys.readouterr().out
    assert cli.main(["--config", config, "complete", "--job-id", "daily_ordres"]) == 2
    complete = capsys.readouterr().err
    # THEN each names the job it is a typo of, and queues nothing
    assert why.startswith("job daily_ordres is not in the control table") and "; did you mean daily_orders?" in why
    assert (
        "is not in the control table (as of the last tick); did you mean daily_orders? check trigger_job_id" in complete
    )
    assert not (tmp_path / "state" / "inbox").exists() or not list((tmp_path / "state" / "inbox").glob("*.json"))
    # and a part of a name lists the jobs holding it, in `status`, `events` and `report` too
    assert cli.main(["--config", config, "why", "--job", "orders"]) == 1
    assert "; did you mean daily_orders, hourly_orders?" in capsys.readouterr().out
    assert cli.main(["--config", config, "status", "--job", "orders"]) == 1
    assert "no job matches --job orders; did you mean daily_orders, hourly_orders?" in capsys.readouterr().out
    assert cli.main(["--config", config, "events", "--job", "hourly"]) == 1
    assert "; did you mean hourly_orders? check trigger_job_id" in capsys.readouterr().out
    assert cli.main(["--config", config, "report", "--job", "daily"]) == 1
    assert "; did you mean daily_orders? check trigger_job_id" in capsys.readouterr().err
    # a known job that another filter leaves out gets no guess
    assert cli.main(["--config", config, "status", "--job", "daily_orders", "--state", "failed"]) == 0
    assert "no job matches --job daily_orders and --state failed\n" in capsys.readouterr().out + "\n"


def test_status_lists_the_most_urgent_jobs_first_and_counts_the_rest_which_all_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN more jobs than status lists: two failed, the rest waiting
    many = [row(f"job_{i:03d}", status="FAILED" if i in (7, 55) else None) for i in range(status.LISTED_JOBS + 10)]
    config = _state_with_rows(tmp_path, *many)
    # WHEN status runs with no option
    assert cli.main(["--config", config, "status"]) == 0
    out = capsys.readouterr().out.splitlines()
    # THEN the failed jobs come first, LISTED_JOBS jobs are listed, and the last line counts the others
    listed = [line for line in out if line.startswith("job ")]
    assert len(listed) == status.LISTED_JOBS
    assert [line.split()[1] for line in listed[:2]] == ["job_007", "job_055"]
    assert out[-1].startswith("... 10 more jobs not listed (10 waiting): add `--all` to list every one")
    # WHEN --all, --state or --json is given, THEN every job asked for is there
    assert cli.main(["--config", config, "status", "--all"]) == 0
    assert sum(line.startswith("job ") for line in capsys.readouterr().out.splitlines()) == len(many)
    assert cli.main(["--config", config, "status", "--state", "failed"]) == 0
    assert "not listed" not in capsys.readouterr().out
    assert cli.main(["--config", config, "status", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["snapshot"]["jobs"]) == len(many)


def test_report_of_an_unknown_job_warns_and_exits_1_as_why_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a control table holding job j
    config = _state_with_rows(tmp_path, row("j"))
    (log := tmp_path / "events").mkdir()  # an event log with no event yet
    (tmp_path / "state" / "events.location").write_text(log.as_uri() + "\n")
    # WHEN the report is asked for j and for a job it does not hold
    code = cli.main(["--config", config, "report", "--job", "j", "--job", "nosuch"])
    # THEN the report is written, the unknown job is named on stderr, and the exit code is 1
    out, err = capsys.readouterr()
    assert code == 1 and out.startswith("report written to ")
    assert err.startswith("warning: job nosuch is not in the control table (as of the last tick)")
    assert "job j " not in err
    assert cli.main(["--config", config, "report", "--job", "j"]) == 0


def test_status_and_why_of_a_job_before_the_first_tick_both_exit_1(tmp_path: Path) -> None:
    (tmp_path / "heartbeat.yml").write_text(f"state_dir: {tmp_path / 'state'}\n")
    config = str(tmp_path / "heartbeat.yml")
    assert [cli.main(["--config", config, command, "--job", "nope"]) for command in ("status", "why")] == [1, 1]
    assert cli.main(["--config", config, "status"]) == 0


def test_a_truncated_status_file_is_said_plainly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _state_with_rows(tmp_path, row("j"))
    path = StateLayout(tmp_path / "state").snapshot
    path.write_text(path.read_text()[:40])
    assert cli.main(["--config", config, "status"]) == 2
    err = capsys.readouterr().err
    assert f"{path} cannot be read" in err and "cut short or not JSON" in err and "Traceback" not in err


def test_a_truncated_status_file_never_crashes_report_publish_or_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a state whose status.json was cut short, and an event log with no event yet
    config = _state_with_rows(tmp_path, row("j", "sales.orders", sensor_source="published"))
    (log := tmp_path / "events").mkdir()
    (tmp_path / "state" / "events.location").write_text(log.as_uri() + "\n")
    path = StateLayout(tmp_path / "state").snapshot
    path.write_text(path.read_text()[:40])
    # WHEN report runs, THEN it says so plainly, as status does
    assert cli.main(["--config", config, "report"]) == 2
    assert f"{path} cannot be read" in capsys.readouterr().err
    # WHEN a producer publishes and a job's last task completes, THEN both are queued all the same, saying
    # the control table could not be checked
    assert cli.main(["--config", config, "publish", "--table", "sales.orders"]) == 0
    assert cli.main(["--config", config, "complete", "--job-id", "j"]) == 0
    out = capsys.readouterr().out
    assert out.count("note: not checked against the control table, queued all the same") == 2
    assert [q["table"] for q in _queued(tmp_path)] == ["sales.orders"]
    assert len(list((tmp_path / "state" / "inbox").glob("*.json"))) == 1


def test_a_retry_of_a_job_in_progress_says_what_it_does_to_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a job whose run r7 the last tick left IN_PROGRESS, and one FAILED
    config = _state_with_rows(
        tmp_path, row("j", status="IN_PROGRESS", latest_run_id="r7"), row("k", "u", status="FAILED")
    )
    # WHEN a retry of each is queued
    assert cli.main(["--config", config, "retry", "--job-id", "j"]) == 0
    running = capsys.readouterr().out
    assert cli.main(["--config", config, "retry", "--job-id", "k"]) == 0
    failed = capsys.readouterr().out
    # THEN the first says what becomes of the run still going; the second is a plain retry
    assert "note: job j's run r7 is IN_PROGRESS as of the last tick" in running
    assert "the request is queued" in running and "note:" not in failed
    assert len(list((tmp_path / "state" / "inbox").glob("*.json"))) == 2


# --- the report page ------------------------------------------------------------------------------------


def test_the_report_header_warns_that_the_ticks_since_the_snapshot_failed_or_that_it_is_stale() -> None:
    from datetime import timedelta

    from harness.views import report

    snap = snapshot(row("j"))
    failing = {
        "failures_in_a_row": 3,
        "first_failure_at": T0.isoformat(),
        "last_tick": {"error": "Py4JJavaError: boom", "controls_error": None},
    }
    (warning,) = report.state_warnings(snap, failing, [], T0 + timedelta(minutes=3))
    assert warning.startswith("The last 3 ticks failed") and "Py4JJavaError: boom" in warning
    (one,) = report.state_warnings(snap, failing | {"failures_in_a_row": 1}, [], T0 + timedelta(minutes=3))
    assert one.startswith("The last tick failed (since ")
    ticks = [{"started_at": (T0 - timedelta(minutes=m)).isoformat()} for m in (3, 2, 1, 0)]
    assert report.state_warnings(snap, {"last_tick": {}}, ticks, T0 + timedelta(minutes=2)) == []
    (stale,) = report.state_warnings(snap, {"last_tick": {}}, ticks, T0 + timedelta(minutes=30))
    assert stale.startswith("No tick has written the state for 30 min (the ticks came every 60 s)")
    page = report.render_report([], [], {}, T0, T0, warnings=[stale])
    assert '<p class="warning" role="alert">No tick has written the state' in page


def test_the_report_header_shows_the_refused_controls_csvs_problem_lines() -> None:
    from harness.views import report

    # GIVEN a controls CSV refused for seven bad lines
    problems = [f"line {n} (trigger_fil 'other' -> job new_job): unknown sensor_source 'trigger_fil'" for n in range(7)]
    refusal = "/p/heartbeat_controls.csv: refused, nothing was changed:\n  " + "\n  ".join(problems)
    # WHEN the report's header is made
    (warning,) = report.state_warnings(snapshot(row("j")), {"last_tick": {"controls_error": refusal}}, [], T0)
    # THEN it names the file and its first problems, each with its line, and counts the rest
    assert warning == (
        "The controls CSV is refused; the control table keeps the last valid one: /p/heartbeat_controls.csv: "
        f"refused, nothing was changed: {'; '.join(problems[:5])}; and 2 more "
        "(`python -m harness validate` lists every problem)."
    )
    # and a refusal of one line is that line
    (header,) = report.state_warnings(None, {"last_tick": {"controls_error": "/p/c.csv: header refused (x)"}}, [], T0)
    assert "last valid one: /p/c.csv: header refused (x) (`python -m harness validate`" in header


def test_the_report_labels_starts_with_their_upstreams_and_points_with_their_job() -> None:
    from harness.core.config import PROJECT_DIR
    from harness.views import report

    events = [
        {
            "event_time": T0.replace(minute=m),
            "event_type": kind,
            "trigger_job_id": "j",
            "run_id": run,
            "sensor_source": "kafka",
            "sensor_id": topic,
        }
        for m, kind, run, topic in (
            (0, "DATA_CHANGED", None, "orders"),
            (1, "DATA_CHANGED", None, "lines"),
            (2, "RUN_STARTED", "r1", "orders"),
        )
    ]
    jobs = list(report.job_histories(events, report.event_facets(PROJECT_DIR)).values())
    assert report.trigger_text(jobs[0].runs[0]) == "kafka:orders, kafka:lines"
    (start,) = [t for t in report.timeline_figure(jobs, T0).data if t.name.startswith("start")]
    assert "text" in start.mode and list(start.text) == ["kafka:orders, kafka:lines"]
    (points,) = report.wait_figure(jobs).data
    assert "text" in points.mode and list(points.text) == ["j"]


def test_jobs_started_in_one_tick_after_the_same_wait_share_one_label() -> None:
    from harness.views import report

    # GIVEN three jobs started in the same second, two after the same wait, and one job started later
    def run(job: str, second: int, wait: float) -> report.Run:
        started = T0.replace(second=second)
        return report.Run(job, f"r-{job}", started, first_detection_at=started - timedelta(seconds=wait))

    runs = [run("a", 5, 3.2), run("b", 5, 2.9), run("c", 5, 40.0), run("d", 30, 3.0)]
    # WHEN the points are labelled
    labels = report.point_labels(runs)
    # THEN the two points drawn on one spot carry one label naming both; each other point its own job
    assert labels == ["a, b", "", "c", "d"]


def test_the_tick_chart_lies_flat_across_a_pause_instead_of_a_slope() -> None:
    from datetime import timedelta

    from harness.views import report

    times = [T0 + timedelta(minutes=m) for m in (0, 1, 2, 90, 91)]
    ticks = [{"started_at": t.isoformat(), "steps": {"sense": 1.0}} for t in times]
    x, rows = report.with_gaps(times, ticks)
    assert [r is None for r in rows] == [False, False, False, True, True, False, False]
    assert x[3] == times[2] + timedelta(seconds=1) and x[4] == times[3] - timedelta(seconds=1)
    (trace,) = report.ticks_figure(ticks).data
    assert list(trace.y) == [1.0, 1.0, 1.0, None, None, 1.0, 1.0]


MISSING_TABLE = (
    'delta_table:/lake/nope: cannot read the Delta table: Local path "/lake/nope" does not exist; check the path '
    "(sensor_id) and delta.storage_options"
)
DB_DOWN = "jdbc:sales.orders: cannot query default: Connection to 127.0.0.1:1 refused."
NOT_DEFINED = "job daily: start refused by the local backend: job daily is not defined in local_runner.jobs"


def test_the_failed_checks_of_the_last_tick_are_in_the_top_lines_in_their_own_words(tmp_path: Path) -> None:
    # GIVEN a tick whose checks of two upstreams failed (one of them read by two rows)
    health = ticked(tmp_path, TickReport("t1", check_errors=3, failed_checks=[MISSING_TABLE, DB_DOWN]))
    # WHEN status renders
    top = status.render(snapshot(row("j")), health, None, now=T0).splitlines()[:6]
    # THEN its top lines name each upstream, the cause and what to check
    assert top[3:6] == [
        "WARNING: 2 upstream checks failed in the last tick (their rows see no new data until a check succeeds):",
        f"    {MISSING_TABLE}",
        f"    {DB_DOWN}",
    ]


def test_more_failed_checks_than_the_top_lines_show_are_each_in_status_json(tmp_path: Path) -> None:
    # GIVEN a tick whose checks of more upstreams failed than the top lines list (outages of any age)
    down = [f"jdbc:sales.t{i}: cannot query default: Connection to 127.0.0.1:1 refused." for i in range(8)]
    health = ticked(tmp_path, TickReport("t1", check_errors=8, failed_checks=down))
    # WHEN status renders as text and as JSON
    text = status.render(snapshot(row("j")), health, None, now=T0)
    body = json.loads(status.render_json(snapshot(row("j")), health, None, now=T0))
    # THEN the text names where the rest are, and that place has every one
    more = "    ... and 3 more (`status --json` lists each, in health.last_tick.failed_checks)"
    assert more in text.splitlines() and down[5] not in text
    assert body["health"]["last_tick"]["failed_checks"] == down


def test_a_health_record_without_the_checks_messages_gives_their_count(tmp_path: Path) -> None:
    health = {"last_tick": {"check_errors": 2}, "failures_in_a_row": 0}
    assert (
        "WARNING: 2 upstream check(s) failed in the last tick (`events --type CHECK_FAILED --since 30d`"
        in status.render(snapshot(row("j")), health, None, now=T0)
    )


def test_a_refused_start_stays_in_the_top_lines_with_the_backends_words_until_the_job_starts(tmp_path: Path) -> None:
    # GIVEN a job whose start the local backend refused two ticks ago, and a last tick that did not try again
    ticked(tmp_path, TickReport("t1", start_refused=["daily"]))
    health = ticked(tmp_path, TickReport("t2"))
    refused = row(
        "daily",
        status="NEW_EVENT_AVAILABLE",
        status_change_timestamp="2026-11-22T11:59:00+00:00",
        last_start_refused_at="2026-11-22T11:59:00+00:00",
        last_start_refusal=NOT_DEFINED,
        last_error_timestamp="2026-11-22T11:59:00+00:00",
        last_error=NOT_DEFINED,
    )
    # WHEN status renders
    out = status.render(snapshot(refused), health, None, now=T0).splitlines()
    # THEN the top lines say the start is refused, in the backend's words (what to define, and where)
    assert out[3:5] == [
        "WARNING: 1 job's start is refused by the backend; fix what it says, and the job is tried again after "
        "the refused-start wait:",
        f"    {NOT_DEFINED}",
    ]
    # AND the row says it once
    assert sum(NOT_DEFINED in line for line in out) == 2
    # AND once the job started, neither says it
    started = refused | {"status": "IN_PROGRESS", "status_change_timestamp": "2026-11-22T12:01:00+00:00"}
    assert NOT_DEFINED not in status.render(snapshot(started), health, None, now=T0)


def test_a_start_the_last_tick_refused_is_named_even_without_the_snapshots_rows(tmp_path: Path) -> None:
    health = ticked(tmp_path, TickReport("t1", start_refused=["daily"]))
    assert "    job daily: start refused by its backend (`why --job daily` says why)" in status.render(
        None, health, None, now=T0
    )


def test_why_of_a_job_removed_from_the_controls_csv_shows_its_latest_events() -> None:
    # GIVEN a job whose row left the controls CSV while its start was re-sent, and its events
    started = {
        "event_time": "2026-11-22T11:58:00+00:00",
        "event_type": "RUN_STARTED",
        "sensor_source": "trigger_file",
        "sensor_id": "solo",
        "status": "IN_PROGRESS",
        "run_id": "1015",
    }
    # WHEN why is asked about it, THEN it is not in the control table, and its run is there to see
    out = status.render_why(snapshot(row("other")), "107", [started], T0).splitlines()
    assert out[0].startswith("job 107 is not in the control table")
    assert out[1].startswith("events since ") and "RUN_STARTED" in out[2] and "run 1015" in out[2]
    # AND a job with no events says only that
    assert status.render_why(snapshot(row("other")), "107", [], T0).count("\n") == 0


def test_why_says_why_the_latest_start_was_refused() -> None:
    r = row(
        "daily",
        status="NEW_EVENT_AVAILABLE",
        status_change_timestamp="2026-11-22T11:00:00+00:00",
        last_start_refused_at="2026-11-22T11:59:00+00:00",
        last_start_refusal="job daily: the local runner has no job daily (define it in local_runner.jobs)",
    )
    assert (
        "        start refused 2026-11-22 11:59:00: job daily: the local runner has no job daily"
        in status.render_why(snapshot(r), "daily", [], T0)
    )


# --- a job waiting for time ---------------------------------------------------------------------------


def test_status_and_why_show_a_time_waiting_reason_and_the_earliest_start(tmp_path: Path) -> None:
    # GIVEN a job the last tick found waiting for its minimum gap, with the earliest time it may start
    left = snapshot(row("j", status="NEW_EVENT_AVAILABLE"), reason="minimum gap: started 12 min ago, every 1 h")
    left["jobs"][0]["earliest_start_at"] = "2026-11-22T12:48:00+00:00"

    # THEN status gives both on the job's line, and why on a line of its own
    assert (
        "minimum gap: started 12 min ago, every 1 h; starts at the earliest at 2026-11-22 12:48:00 UTC"
        in status.render(left, None, None, now=T0)
    )
    assert "    starts at the earliest at 2026-11-22 12:48:00 UTC" in status.render_why(left, "j", [], T0).splitlines()
    # AND a snapshot written before the column existed shows the reason alone
    del left["jobs"][0]["earliest_start_at"]
    assert "earliest" not in status.render(left, None, None, now=T0)


def test_the_report_shows_a_waiting_jobs_reason_and_earliest_start_as_status_does() -> None:
    from harness.views import report

    # GIVEN the last tick left job j waiting for its minimum gap, and job k catching up (no earliest start)
    left = snapshot(row("j", status="NEW_EVENT_AVAILABLE"), reason="minimum gap: started 12 min ago, every 1 h")
    left["jobs"][0]["earliest_start_at"] = "2026-11-22T12:48:00+00:00"
    decisions = {
        "j": left["jobs"][0],
        "k": {"job_id": "k", "should_start": True, "reason": "catching up: part 2 of 5 of its range"},
    }
    history = [
        {
            "event_type": "DATA_CHANGED",
            "trigger_job_id": job,
            "event_time": T0,
            "sensor_source": "kafka",
            "sensor_id": "t",
        }
        for job in ("j", "k")
    ]
    # WHEN the page is rendered
    page = report.render_report(history, [], {"DATA_CHANGED": {"detection"}}, T0, T0, decisions=decisions)
    # THEN a section lists the job waiting for time with its earliest start, and each job's row says what it
    # waits for now, in the words of status
    assert "<h2>Waiting to start</h2>" in page
    assert "<td>j</td><td>2026-11-22 12:48:00 UTC</td><td>minimum gap: started 12 min ago, every 1 h</td>" in page
    assert (
        "<td>minimum gap: started 12 min ago, every 1 h; starts at the earliest at 2026-11-22 12:48:00 UTC</td>" in page
    )
    assert "<td>catching up: part 2 of 5 of its range</td>" in page
    # AND without a job waiting for time there is no such section
    assert "Waiting to start" not in report.render_report(history, [], {}, T0, T0, decisions={"k": decisions["k"]})


def test_why_shows_a_row_catching_up_with_its_part() -> None:
    # GIVEN job j catching up: its row's range is handed in three parts, the second next
    left = snapshot(
        row("j", status="NEW_EVENT_AVAILABLE", max_range=2, range_part=2, range_parts=3),
        reason="catching up: part 2 of 3 of its range",
    )
    # THEN why gives the job's reason and the row's part
    why = status.render_why(left, "j", [], T0).splitlines()
    assert "    because: catching up: part 2 of 3 of its range" in why
    assert "        range in parts (max_range 2): part 2 of 3" in why


# --- tick --dry-run ---------------------------------------------------------------------------------------


def test_the_dry_run_says_why_a_job_would_start_even_when_it_retries_a_refused_start() -> None:
    from harness.commands.operator import dry_run_lines
    from harness.state.tables import JobDecision
    from harness.tick.dry_run import DryRun

    # GIVEN a job ready again after the local backend refused its start (not defined in local_runner.jobs)
    reason = f"ready: new data on trigger_file:t; retrying the start refused at 2026-11-22 11:59:00: {NOT_DEFINED}"
    result = DryRun(
        rows_sensed=1,
        upstreams_checked=1,
        decisions=[JobDecision("daily", None, True, reason)],
        would_start=[{"job_id": "daily", "upstreams": []}],
    )
    # THEN the dry run says, under the job it would start, the reason: the refusal that will come again
    lines = dry_run_lines(result, T0)
    assert lines[lines.index("job daily would start with:") + 1] == f"    because: {reason}"


def test_the_dry_run_says_a_new_range_with_a_max_range_is_handed_in_parts() -> None:
    from harness.commands.operator import dry_run_lines
    from harness.state.tables import JobDecision
    from harness.tick.dry_run import DryRun

    # GIVEN a job that would start, whose row with a max_range of 1 found three new files
    result = DryRun(
        rows_sensed=1,
        upstreams_checked=1,
        decisions=[JobDecision("daily", None, True, "ready: new data on trigger_file:t")],
        would_start=[{"job_id": "daily", "upstreams": []}],
        parted={"daily": ["trigger_file:t (max_range 1)"]},
    )
    # THEN under the job the dry run says the range shown is handed in parts, not all to this run
    lines = dry_run_lines(result, T0)
    assert (
        "    note: trigger_file:t (max_range 1) has new data: the tick folds it first and hands this run at most "
        "max_range steps of the range above, oldest first (the rest to the runs after it)"
    ) in lines


def test_the_dry_run_says_when_the_controls_csv_is_not_the_one_the_control_table_holds(tmp_path: Path) -> None:
    from harness.commands.operator import dry_run_lines
    from harness.core.controls import file_digest
    from harness.tick.dry_run import DryRun, controls_note

    # GIVEN the controls CSV the control table holds
    csv = tmp_path / "heartbeat_controls.csv"
    header = "sensor_source,sensor_id,sensor_read_type,asset_description,upstream_key,preprocess_query,"
    header += "trigger_job_id,trigger_job_name,job_state,dependency_flag\n"
    csv.write_text(header + "trigger_file,a,batch,,,,j,,UNPAUSED,TRUE\n")
    held = file_digest(csv)
    # THEN the dry run has nothing to say of it
    assert controls_note(csv, held) is None
    # WHEN a row is added, THEN it says the next tick loads the file first, which may change its answer
    csv.write_text(header + "trigger_file,a,batch,,,,j,,UNPAUSED,TRUE\ntrigger_file,b,batch,,,,k,,UNPAUSED,TRUE\n")
    note = controls_note(csv, held)
    assert note is not None and "the next tick loads it first" in note
    assert f"note: {note}" in dry_run_lines(DryRun(controls_note=note), T0)
    # WHEN the file is refused, THEN it says so, with the first problem, and that ticks keep the valid one
    csv.write_text(header + "trigger_file,a,batch,,,,j,,SOMETIMES,TRUE\n")
    note = controls_note(csv, held) or ""
    assert note.startswith("the controls CSV is refused, so ticks keep the last valid one: ") and "SOMETIMES" in note
    # WHEN it is gone, THEN that too
    csv.unlink()
    assert "is missing or unreadable" in (controls_note(csv, held) or "")


def test_queued_files_a_tick_set_aside_are_in_the_top_lines_of_status_until_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.tick import inbox

    # GIVEN a request written by hand that the tick could not read, so it set it aside
    config = _state_with_rows(tmp_path, row("j"))
    queue = StateLayout(tmp_path / "state").inbox
    queue.mkdir()
    (queue / "by-hand.json").write_text("{complete j}")
    assert inbox.pending(tmp_path / "state") == []

    # WHEN status runs, THEN its top lines name the file and what to do (the tick's log said it once)
    assert cli.main(["--config", config, "status"]) == 0
    out = capsys.readouterr().out
    assert "WARNING: 1 queued request(s) or publication(s) could not be read" in out
    assert f"    {queue / 'by-hand.json.refused'}" in out and "`complete`, `retry`, `publish`" in out
    # AND once the file is removed, nothing more
    (queue / "by-hand.json.refused").unlink()
    assert cli.main(["--config", config, "status"]) == 0
    assert "could not be read" not in capsys.readouterr().out


def test_reasons_left_by_an_earlier_tick_say_when_they_were_worded() -> None:
    # GIVEN a snapshot whose reasons a full tick worded at T0, left as it was by a cold tick a minute later
    left = snapshot(row("j"), reason="quiet period: trigger_file:t changed 14 s ago, needs 1 min")
    left |= {"decided_at": T0.isoformat(), "written_at": (T0 + timedelta(minutes=1)).isoformat(), "tick_id": "t2"}
    # WHEN why and status render it THEN each says when the reasons' "ago" counts from
    why = status.render_why(left, "j", [], T0 + timedelta(minutes=2))
    assert "(as the tick t2 left it, 2026-11-22 12:01:00 UTC; the reasons as of 2026-11-22 12:00:00 UTC)" in why
    out = status.render(left, None, None, now=T0 + timedelta(minutes=2))
    assert "; the reasons as of 2026-11-22 12:00:00 UTC" in out
    # AND a snapshot whose reasons are its own tick's says nothing more
    assert "the reasons as of" not in status.render_why(left | {"decided_at": left["written_at"]}, "j", [], T0)
