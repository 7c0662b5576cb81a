"""The session the harness works with is in UTC before anything runs on it, also when it did not create
it: inside a Databricks job the runtime's session (the workspace's or job's time zone) is returned only
after the UTC settings the heartbeat's naive-UTC timestamps rely on are applied."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest
from pyspark import java_gateway
from pyspark.sql import SparkSession

from harness.core.config import PROJECT_DIR, Config
from harness.platform.spark import (
    DATABRICKS_RUNTIME_ENV,
    ICU_CASE_MAPPINGS,
    SESSION_TIME_ZONE,
    get_spark,
    jvm_started_apart,
)

pytestmark = pytest.mark.scenario


def test_on_databricks_the_runtimes_session_is_returned_in_utc(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a Databricks runtime whose session and process are in another time zone
    monkeypatch.setenv(DATABRICKS_RUNTIME_ENV, "16.4")
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    spark.conf.set(SESSION_TIME_ZONE, "America/New_York")
    try:
        # WHEN the harness asks for its session
        session = get_spark(Config(config_path=None, project_dir=PROJECT_DIR, state_dir=tmp_path / "state"))
        # THEN it is the runtime's, already in UTC: the session's time zone and the process's
        assert session is spark
        assert session.conf.get(SESSION_TIME_ZONE) == "UTC"
        assert time.strftime("%Z") == "UTC"
        assert session.sql("SELECT timestamp'2026-01-05 10:00:00' AS t").collect()[0].t == datetime(2026, 1, 5, 10)
    finally:
        spark.conf.set(SESSION_TIME_ZONE, "UTC")
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()


def test_the_harness_jvm_runs_with_its_start_up_options(spark: SparkSession) -> None:
    # The session of the test session is the harness's own (harness.platform.spark.get_spark): its JVM was started
    # with the quick compiler only and, when setup made one, the installation's class-data archive.
    from harness.platform.jvm_options import java_options

    arguments = list(
        spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()  # type: ignore[union-attr]
    )
    assert set(java_options()) <= set(arguments), arguments


def test_the_harness_session_maps_case_as_the_controls_validator_does_without_icus_table(spark: SparkSession) -> None:
    # ICU's case mapping builds a table of every code point at its first use in a JVM (about 2 s of a busy
    # cron tick): the harness's session maps case with the JVM's own, which gives the words the validator
    # reads (Python's mapping) for the controls' words and for text beyond ASCII alike.
    assert spark.conf.get(ICU_CASE_MAPPINGS) == "false"
    # (the Kelvin sign lowers to an ASCII k in both: the validator accepts '\u212aafka' as kafka)
    words = ["Trigger_File", "DELTA", "unPaused", " TrUe ", "\u212aafka", "Ärger", "straße", "ΣΊΣΥΦΟΣ", "Ǆemal"]
    rows = spark.createDataFrame([(w,) for w in words], "w string").selectExpr("w", "lower(w) l", "upper(w) u")
    assert {(r.w, r.l, r.u) for r in rows.collect()} == {(w, w.lower(), w.upper()) for w in words}


def test_the_harness_jvm_holds_none_of_the_commands_own_output(spark: SparkSession) -> None:
    # A reader of a command's output (cron, a pipe) sees it end when the command does: the JVM writes its
    # own output to the state's spark.log, so its shutdown after the command holds no pipe of the command's.
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    pid = jvm.java.lang.ProcessHandle.current().pid()
    jvm_output = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (1, 2)}
    assert all(target.endswith("/spark.log") for target in jvm_output.values()), jvm_output
    assert os.readlink("/proc/self/fd/1") not in jvm_output.values()


def test_only_the_jvms_process_writes_to_its_log_and_ignores_sigterm(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a process PySpark spawns as it spawns the JVM, while the harness starts it apart
    log_file = tmp_path / "spark.log"
    with jvm_started_apart(log_file):
        os.write(1, b"the command's own line\n")  # as the process writes them: to its descriptors
        os.write(2, b"a run loop's stopping line\n")
        child = java_gateway.Popen(
            ["sh", "-c", "echo the jvm line; grep SigIgn /proc/self/status"], stdin=subprocess.PIPE
        )
        child.communicate()
    # THEN what the command writes meanwhile stays its own, and the JVM's output goes to the log
    written = capfd.readouterr()
    assert "the command's own line" in written.out and "a run loop's stopping line" in written.err
    assert "the jvm line" not in written.out + written.err
    jvm_line, ignored = log_file.read_text().splitlines()
    assert jvm_line == "the jvm line"
    # AND the JVM's process ignores SIGTERM (a stop to the process group is the loop's to handle), this one does not
    assert int(ignored.split()[1], 16) & (1 << (signal.SIGTERM - 1))
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
    assert java_gateway.Popen is subprocess.Popen  # PySpark's own again after the block
