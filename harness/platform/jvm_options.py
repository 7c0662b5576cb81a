"""The Java options of the harness's own Spark JVM (the embedded default and a local Spark Connect server).

A heartbeat process is mostly short: cron starts it, it folds and starts its jobs, it ends. Most of
such a process's time went to the JVM starting up (measured on 2 cores: about 20 s before the first
table was read, on a warm metastore), not to the work. Two options cut that:

  - a short process's JVM compiles with its quick compiler only (`-XX:TieredStopAtLevel=1`): the
    optimising compiler's threads took most of the CPU of a short process, for code that runs a few
    times (with the code cache both compilers get: the quick compiler's own default filled up). A
    process that loops until it is stopped (`run` without `--max-ticks` or `--until-idle`, and the
    test suite's one session) says so first (`expect_long_life`): there the optimised code
    pays back (with the quick compiler only, the suite's in-process layer took 2,066 s, not 1,832 s);
  - it maps the classes Spark, Hive and Derby load at start-up from a class-data archive instead of
    reading and verifying them from the jars every time. The archive is made once per installation
    (`python -m harness.platform.jvm_options`, which scripts/setup.sh runs) by a Spark session that does what a
    tick does, and lives in the Python environment beside pyspark (one archive per pyspark version, and
    per Spark configuration folder: Spark's launcher puts `SPARK_CONF_DIR` at the head of the class path,
    and the JVM maps an archive only under the class path it was made with). Without it (or with a JDK
    or jars it was not made with: make it again after such an update) the JVM loads its classes as usual,
    about 4 s longer to a busy tick: the archive only ever saves time, and a process whose
    `SPARK_CONF_DIR` has none says how to make it. The JVM's notes about the archive are switched off, so that a
    tick's output stays its own.

Together: about 20 s -> 9 s from the process's start to its first table written (docs/performance-notes.md).
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from pyspark import __version__ as PYSPARK_VERSION

log = logging.getLogger(__name__)

QUICK_COMPILER_ONLY = "-XX:TieredStopAtLevel=1"
# With the quick compiler only, the JVM reserves a 48 MB code cache (240 MB with both compilers). A
# process that runs many distinct queries filled it (the 10,000-row benchmark's busy tick: "CodeCache is
# full. Compiler has been disabled", then "Out of space in CodeCache for adapters", which stopped
# Spark). The size both compilers get: only what is used is committed.
QUICK_COMPILER_CODE_CACHE = "-XX:ReservedCodeCacheSize=240m"
ARCHIVE_QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
# Set for the process that makes the archive: its JVM writes the classes it loaded there when it exits.
DUMP_ENV = "HEARTBEAT_CLASS_ARCHIVE_DUMP"
# The process that trains the archive: it ticks a heartbeat, so it lives on the tick's shelf (named here,
# not imported: this module sits below it).
TRAINER = "harness.tick.archive_training"


# Moves when the training changes what the archive holds: set-up then makes the new archive where an older
# one was made (it makes one only where none of its name exists), and the older one is removed.
TRAINING_VERSION = 2  # 2: the ticks of a heartbeat, besides a session's statements


ARCHIVE_STEM = f"spark-{PYSPARK_VERSION}-classes-{TRAINING_VERSION}"
CONF_DIR_ENV = "SPARK_CONF_DIR"  # the folder Spark's launcher puts first on the JVM's class path


def archive_path() -> Path:
    """This installation's archive for the Spark configuration folder of this process's environment."""
    conf_dir = os.environ.get(CONF_DIR_ENV)
    tag = f"-conf-{hashlib.sha256(os.path.abspath(conf_dir).encode()).hexdigest()[:8]}" if conf_dir else ""
    return Path(sys.prefix) / "share" / "heartbeat" / f"{ARCHIVE_STEM}{tag}.jsa"


def _of_this_version(archive: Path) -> bool:
    """An archive of this pyspark version and training, for whichever Spark configuration folder."""
    return archive.name == f"{ARCHIVE_STEM}.jsa" or archive.name.startswith(f"{ARCHIVE_STEM}-conf-")


_long_lived = False


def expect_long_life() -> None:
    """This process runs until it is stopped: its JVM (started after this call) compiles for the long run."""
    global _long_lived
    _long_lived = True


def java_options() -> list[str]:
    """The options for `spark.driver.extraJavaOptions`, besides the harness's system properties."""
    compiler = [] if _long_lived else [QUICK_COMPILER_ONLY, QUICK_COMPILER_CODE_CACHE]
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return [*compiler, f"-XX:ArchiveClassesAtExit={dump}", *ARCHIVE_QUIET]
    archive = archive_path()
    if archive.exists():
        return [*compiler, f"-XX:SharedArchiveFile={archive}", *ARCHIVE_QUIET]
    if any(_of_this_version(other) for other in archive.parent.glob("*.jsa")):  # another configuration folder's
        log.warning(
            "the JVM's class archive was made with another %s than this process's (%s), so Spark starts "
            "without it, about 4 s longer: make one for it with `python -m harness.platform.jvm_options`",
            CONF_DIR_ENV,
            os.environ.get(CONF_DIR_ENV, "unset"),
        )
    return compiler


# What a tick asks of Spark, so that the archive holds the classes a tick loads: the metastore, a
# partitioned parquet table appended to, a join with aggregates and a window, a table written to a new
# folder and switched to it, its statistics.
TRAINING_SQL = (
    "CREATE DATABASE IF NOT EXISTS archive_training",
    "CREATE TABLE archive_training.events (id STRING, at TIMESTAMP, kind STRING, day DATE) USING parquet "
    "PARTITIONED BY (day)",
    "INSERT INTO archive_training.events VALUES ('a', TIMESTAMP'2026-01-01 10:00:00', 'x', DATE'2026-01-01'), "
    "('b', TIMESTAMP'2026-01-02 10:00:00', 'y', DATE'2026-01-02')",
    "CREATE TABLE archive_training.state USING parquet AS SELECT kind, max(at) AS at FROM archive_training.events "
    "GROUP BY kind",
    "CREATE OR REPLACE TEMPORARY VIEW folded AS SELECT e.kind, max_by(e.id, e.at) AS id, count(*) AS n, "
    "row_number() OVER (ORDER BY e.kind) AS r FROM archive_training.events e LEFT JOIN archive_training.state s "
    "USING (kind) WHERE e.at > coalesce(s.at, TIMESTAMP'1970-01-01 00:00:00') OR s.at IS NULL GROUP BY e.kind",
    "SHOW TABLE EXTENDED IN archive_training LIKE '*'",
    "DESCRIBE EXTENDED archive_training.state",
)


def train(state_dir: Path, then: Callable[[Path], None]) -> None:
    """Run what a tick runs on a session of its own (in `state_dir`), then `then` (the ticks of a
    heartbeat: harness.tick.archive_training); the JVM writes the archive as it exits."""
    from harness.core.config import PROJECT_DIR, Config
    from harness.core.state_layout import StateLayout
    from harness.platform.spark import end_jvm, get_spark

    spark = get_spark(Config(config_path=None, project_dir=PROJECT_DIR, state_dir=state_dir))
    for statement in TRAINING_SQL:
        spark.sql(statement).collect()
    folder = StateLayout(state_dir).warehouse / "archive_training_v2"
    spark.sql(f"INSERT OVERWRITE DIRECTORY '{folder.as_uri()}' USING parquet SELECT * FROM folded")
    spark.sql(f"ALTER TABLE archive_training.state SET LOCATION '{folder.as_uri()}'")
    spark.sql("REFRESH TABLE archive_training.state")
    spark.sql("ANALYZE TABLE archive_training.state COMPUTE STATISTICS")
    spark.createDataFrame([("c", None, "z", None)], "id string, at timestamp, kind string, day date").write.insertInto(
        "archive_training.events"
    )
    spark.table("archive_training.events").orderBy("id").collect()
    then(state_dir)
    spark.stop()
    end_jvm()  # the JVM writes the archive as it exits: whole once this process ends


def make_archive() -> Path:
    """Make (or make again) the archive of this installation; returns its path."""
    target = archive_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    dump = target.with_name(f"{target.name}.{os.getpid()}.part")
    with tempfile.TemporaryDirectory(prefix="heartbeat-class-archive-") as work:
        env = {**os.environ, DUMP_ENV: str(dump), "SPARK_LOCAL_IP": "127.0.0.1"}
        # The trainer waits for its JVM's exit (train), so the archive is whole before it is moved into place.
        done = subprocess.run(
            [sys.executable, "-m", TRAINER, str(Path(work) / "state")],
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not dump.exists():
            dump.unlink(missing_ok=True)
            raise RuntimeError(f"no class archive was written: {done.stderr.strip()[-2000:]}")
    os.replace(dump, target)
    remove_older_archives(target)
    return target


def remove_older_archives(kept: Path) -> None:
    """Remove the archives beside `kept` that an earlier training or pyspark version made (200 MB each);
    those of this version for other Spark configuration folders stay."""
    for older in kept.parent.glob("spark-*-classes*.jsa"):
        if older != kept and not _of_this_version(older):
            older.unlink()


if __name__ == "__main__":
    print(f"class archive written: {make_archive()}")
