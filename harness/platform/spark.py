"""The harness's one SparkSession, shared in-process with dbt (dbt-spark `method: session`).

Embedded default: `local[*]`, Hive support with a Derby metastore and the warehouse inside the state
folder, so tables survive between processes. Delta is used when its jars are found (Config.table_format),
otherwise Spark's own parquet tables. The JVM's own output goes to `<state>/spark.log`, not the
terminal.

Spark Connect (`spark_remote:` in heartbeat.yml): `local` starts a Connect server inside this process
with the same metastore, warehouse and jars, and the harness (and dbt, whose session connection asks
for the active session) talk to it as a client; `sc://host:port` connects to a running server. Inside
a Databricks job the runtime's session is used (serverless and standard access mode are Spark
Connect), set to UTC before it is returned. On Spark Connect nothing in the harness touches a Spark
context, the JVM or resilient distributed datasets (on classic Spark, a check's jobs are cancelled at
its deadline through the classic context's job tags: see harness.sensors.context).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from pyspark import SparkContext
from pyspark.sql import SparkSession

from harness.core.config import Config
from harness.platform.jvm_options import java_options
from harness.platform.metastore_lock import wait_until_free

log = logging.getLogger(__name__)

JDBC_JARS = ("/usr/share/java/postgresql.jar", "/usr/share/java/sqlite-jdbc.jar")
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
# Spark keeps the classes it generates for a query's stages in a cache of this many (its default: 100).
# A tick at 10,000 rows generates more than 100 distinct ones (the fold, the as-if decisions, the
# readings), so with the default each tick evicted the last one's and compiled about 120 classes again
# (0.9-1.3 s of CPU); with room for them a warm tick compiles 10-18, those whose code holds the tick's
# time (docs/performance-notes.md, "What a warm tick paid again at every tick").
CODEGEN_CACHE_ENTRIES = 1000
# Spark 4 maps text's case (`lower`, `upper`, `initcap`) with ICU, and ICU's first use in a JVM builds a
# table of the title case of every code point: 2.2-2.5 s in a short process's JVM (its quick compiler
# only), paid by every busy cron tick, whose controls' staging lowers and uppers their words. Off, Spark
# maps case as Spark 3 did: ASCII text byte by byte, other text with the JVM's own mapping. The words the
# product maps are ASCII once the controls are validated, the same either way (docs/performance-notes.md).
ICU_CASE_MAPPINGS = "spark.sql.icu.caseMappings.enabled"
# At its start the embedded metastore (DataNucleus) looks for ORM files of its classes in every jar on the
# class path; Hive ships none (its mapping is package.jdo), so the search finds nothing, in 0.3-0.4 s.
METASTORE_ORM_FILES = "spark.hadoop.datanucleus.metadata.supportORM"


DATABRICKS_RUNTIME_ENV = "DATABRICKS_RUNTIME_VERSION"  # set on Databricks compute
SESSION_TIME_ZONE = "spark.sql.session.timeZone"


@contextmanager
def jvm_started_apart(output: Path) -> Iterator[None]:
    """A JVM started inside this block writes its own output (the start-up banner, the JDK's incubator
    warning, Spark's error log, what it prints when it dies) to `output`, and ignores SIGTERM, as PySpark
    starts it ignoring SIGINT; both are set on the JVM's process alone, as PySpark spawns it.
      - Its output: the JVM holds none of the command's own output open, so a reader of it (cron, a pipe)
        sees it end when the command does, not after the JVM's shutdown (about 0.5 s), which goes on
        behind it (harness.platform.metastore_lock). What the harness itself writes while the JVM starts
        (dbt's parse beside it, a `run` loop's "stopping" line) stays the command's.
      - SIGTERM: a stop sent to the heartbeat's process group (systemd's `systemctl stop`, `kill -- -PGID`)
        reached the JVM too, which died in the middle of the loop's tick while the loop was finishing it;
        now only the Python process takes the signal: a `run` loop finishes its tick, a `tick` process
        ends, and the JVM with it (PySpark's gateway exits when its stdin, the Python process's pipe,
        closes). HotSpot installs no handler for a signal ignored when it starts."""
    from pyspark import java_gateway

    spawn = java_gateway.Popen
    with output.open("ab") as target:

        def popen(*args: Any, **kwargs: Any) -> Any:
            pyspark_own = kwargs.get("preexec_fn")

            def before_exec() -> None:
                if pyspark_own is not None:
                    pyspark_own()
                signal.signal(signal.SIGTERM, signal.SIG_IGN)

            return spawn(*args, **{**kwargs, "preexec_fn": before_exec, "stdout": target, "stderr": target})

        java_gateway.Popen = popen  # type: ignore[assignment,misc]
        try:
            yield
        finally:
            java_gateway.Popen = spawn  # type: ignore[misc]


def java_option_string(options: list[str]) -> str:
    """JVM options as one setting. Spark's launcher splits it at white space outside quotes, so an option
    holding a space (a state folder such as `/srv/heart beat`) or a quote is put in double quotes."""
    return " ".join(_quoted(option) for option in options)


def _quoted(option: str) -> str:
    if not any(c.isspace() or c in "\"'\\" for c in option):
        return option
    escaped = option.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def metastore_url(config: Config) -> str:
    return f"jdbc:derby:;databaseName={config.metastore_dir};create=true"


def in_utc(spark: SparkSession) -> SparkSession:
    """A session the harness did not create (the Databricks runtime's, one already active) set to the
    UTC session time zone the heartbeat's timestamps rely on, before anything runs on it."""
    if spark.conf.get(SESSION_TIME_ZONE, None) != "UTC":
        spark.conf.set(SESSION_TIME_ZONE, "UTC")
    return spark


def _jvm_process() -> Any:
    """PySpark's Popen of the JVM this process started (spark-submit execs it), or None: none started
    (Spark Connect to a server, a Databricks job's own session)."""
    return getattr(SparkContext._gateway, "proc", None)


def jvm_ended() -> str | None:
    """How the Spark JVM this process started has ended, if it has (`killed by signal 9`: most often the
    kernel's out-of-memory killer, which picks the largest process), else None: while it runs, and
    where this process started none (Spark Connect, a Databricks job's own session). Every Spark call
    after its end fails, so a `run` loop starts again with a new one (harness.commands.cli)."""
    process = _jvm_process()
    code = process.poll() if process is not None else None
    if code is None:
        return None
    return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"


def end_jvm(timeout: float = 60.0) -> None:
    """End the Spark JVM this process started, if it runs, and wait for it: a `run` loop that starts again
    in its own place (a new program in the same process) would leave it a zombie until the process ends.
    PySpark's gateway exits once its stdin, this process's pipe, closes."""
    process = _jvm_process()
    if process is None or process.stdin is None or process.poll() is not None:
        return
    process.stdin.close()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def get_spark(config: Config) -> SparkSession:
    """Create (or reuse) the session; idempotent within a process."""
    # Timestamps are naive UTC everywhere; PySpark converts them with the process's local time zone,
    # so the process runs in UTC (as Spark's session does).
    os.environ["TZ"] = "UTC"
    time.tzset()
    active = SparkSession.getActiveSession()
    if active is not None:
        return in_utc(active)
    if os.environ.get(DATABRICKS_RUNTIME_ENV):
        # A Databricks job: the runtime's own session, whose time zone is the workspace's or the job's
        return in_utc(SparkSession.builder.getOrCreate())
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    remote = config.spark_remote
    if remote is not None and remote.startswith("sc://"):
        # A running server: its metastore, warehouse and jars are its own; only session settings apply.
        # SPARK_REMOTE lets a later `SparkSession.builder.getOrCreate()` (dbt-spark's session
        # connection) find this server too.
        os.environ["SPARK_REMOTE"] = remote
        log.info("Spark Connect session on %s", remote)
        return SparkSession.builder.remote(remote).config(SESSION_TIME_ZONE, "UTC").getOrCreate()
    if remote is not None:
        # The local Connect server takes the settings below when it starts; the client then tries to
        # set them again on its session and warns that the static ones cannot change.
        warnings.filterwarnings(
            "ignore", message=r"Failed to set .* due to \[CANNOT_MODIFY_CONFIG\]", category=UserWarning
        )
    config.state_dir.mkdir(parents=True, exist_ok=True)
    if SparkContext._gateway is None:  # this process starts its JVM: the last process's may still be ending
        wait_until_free(config.metastore_dir)
    jars = [j for j in JDBC_JARS if os.path.exists(j)]
    delta_jars = list(config.delta_jars)
    start = SparkSession.builder
    builder = (
        (start.remote(remote) if remote else start.master(os.environ.get("HEARTBEAT_SPARK_MASTER", "local[*]")))
        .appName("heartbeat")
        .config("spark.sql.warehouse.dir", str(config.warehouse_dir))
        .config("spark.hadoop.javax.jdo.option.ConnectionURL", metastore_url(config))
        .config(METASTORE_ORM_FILES, "false")
        .config(
            "spark.driver.extraJavaOptions",
            java_option_string(
                [
                    f"-Dderby.system.home={config.state_dir}",
                    f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
                    *java_options(),
                ]
            ),
        )
        .config(SESSION_TIME_ZONE, "UTC")
        # When the embedded metastore refuses a partition filter (a MetaException), Spark lists the
        # table's partitions and filters them itself: slower, the same rows, instead of a failed read.
        .config("spark.sql.hive.metastorePartitionPruningFallbackOnException", "true")
        .config("spark.sql.shuffle.partitions", "4")
        # Timestamps written with statistics (Spark's default, INT96, has none), as the appends without
        # Spark write them: a read of the events from a time on skips the row groups before it.
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES))
        .config(ICU_CASE_MAPPINGS, "false")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.jars", ",".join(jars + delta_jars))
        .enableHiveSupport()
    )
    if delta_jars:
        builder = builder.config("spark.sql.extensions", DELTA_EXTENSION).config(
            "spark.sql.catalog.spark_catalog", DELTA_CATALOG
        )
    with jvm_started_apart(config.layout.spark_log):
        spark = builder.getOrCreate()
    # PySpark also logs every failed query with its Java stack trace; the error itself is raised.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    if remote is not None:
        log.info("Spark Connect session on a local server (spark_remote: %s)", remote)
    return spark
