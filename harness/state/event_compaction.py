"""Compaction of the event log's recent days: a day folder of many small files rewritten as one.

Every append is one file (harness.state.event_log), so a day of busy ticks leaves thousands of small
files in the day's folder; every fold and every read of the open runs reads today's folder (and
yesterday's early in the day), and opens each of them (docs/performance-notes.md: at 2,800 files, the
fold's query took 8 s instead of 2.4 s and the open runs 12.8 s instead of 2.0 s). At the end of a
tick, each of the `RECENT_DAYS` newest day folders holding at least `MAX_FILES` files is rewritten as
one file:

  1. the day's events, each event id once, are written by Spark to a scratch folder inside the table's
     folder (its name starts with `_`, which Spark and the readers without Spark skip), by time, in row
     groups of `ROW_GROUP_BYTES`: a reader of the events from a time on (a fold, the open runs) reads
     the row groups from that time only;
  2. a journal (`<state>/events.compaction.json`) names the new file and the files it replaces;
  3. the new file is moved into the day's folder (one rename), then the files it replaces are deleted,
     then the journal; Spark's listing of the table is refreshed.

A kill before the rename leaves the day as it was. After it, the day holds its events twice until
`finish_interrupted`, which every tick runs before anything reads the log, deletes the rest of the
files the journal names: a fold never sees an event twice. A reader without the lock (`why`, `events`,
the published-changes sensor) counts an event listed in two files once, and lists the folders again
when a file it listed is gone (harness.state.event_reader). Only the embedded default's parquet log is
compacted; a Delta log on Databricks is one table to OPTIMIZE.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from harness.core.faults import crash_point
from harness.core.state_layout import StateLayout
from harness.state.event_files import PARTITION_COLUMN, PARTITION_PREFIX
from harness.state.event_log import EVENT_SCHEMA
from harness.state.files import write_atomic

log = logging.getLogger(__name__)

MAX_FILES = 64  # a day folder with this many files is compacted (about 20 busy ticks' appends)
RECENT_DAYS = 2  # today and yesterday: what a fold and the open runs read, in the first hour of a day
# The new file's row groups: small, so that a reader of the events from a time on skips the day's earlier
# ones by their statistics (the file is sorted by time), where a busy day's one row group is read whole.
ROW_GROUP_BYTES = 1024 * 1024
SCRATCH = "_heartbeat_compaction"  # inside the table's folder: the new file's rename stays on its volume


@dataclass(frozen=True)
class Compacted:
    day: date
    replaced: int  # files
    events: int


def finish_interrupted(state_dir: Path) -> bool:
    """Complete a compaction a kill interrupted: after the new file's rename, delete the files it
    replaces; before it, leave the day as it is. True when there was one. Needs no Spark."""
    journal = StateLayout(state_dir).events_compaction
    if not journal.exists():
        return False
    recorded = json.loads(journal.read_text())
    day_folder = Path(recorded["day_folder"])
    if (day_folder / recorded["new_file"]).exists():
        for name in recorded["replaced"]:
            (day_folder / name).unlink(missing_ok=True)
        log.warning("finished the compaction of %s that a stop interrupted", day_folder.name)
    shutil.rmtree(day_folder.parent / SCRATCH, ignore_errors=True)
    journal.unlink()
    return True


def crowded_days(folder: Path, today: date) -> list[tuple[Path, date]]:
    """The recent day folders holding at least MAX_FILES files."""
    crowded = []
    for back in range(RECENT_DAYS):
        day = today - timedelta(days=back)
        day_folder = folder / f"{PARTITION_PREFIX}{day.isoformat()}"
        if day_folder.is_dir() and len(_part_files(day_folder)) >= MAX_FILES:
            crowded.append((day_folder, day))
    return crowded


def compact_days(spark: SparkSession, table: str, days: list[tuple[Path, date]], state_dir: Path) -> list[Compacted]:
    """Rewrite each of `days` (crowded_days) of the parquet log `table` as one file (see the module's text)."""
    done = [_compact(spark, day_folder, day, state_dir) for day_folder, day in days]
    if done:
        spark.sql(f"REFRESH TABLE {table}")  # Spark's listing of the table's files
    return done


def _part_files(day_folder: Path) -> list[str]:
    with os.scandir(day_folder) as entries:
        return sorted(e.name for e in entries if not e.name.startswith(("_", ".")) and e.is_file())


def _compact(spark: SparkSession, day_folder: Path, day: date, state_dir: Path) -> Compacted:
    replaced = _part_files(day_folder)
    scratch = day_folder.parent / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)
    # The files as they are (the partition column is in the folder's name), each event once, oldest first.
    columns = [name for name in EVENT_SCHEMA.fieldNames() if name != PARTITION_COLUMN]
    files = [str(day_folder / name) for name in replaced]  # a path: a URI would escape the `=` of the folder
    frame = spark.read.parquet(*files).select(*columns).dropDuplicates(["event_id"])
    events = frame.count()
    writer = frame.repartition(1).sortWithinPartitions("event_time").write
    writer.option("parquet.block.size", ROW_GROUP_BYTES).parquet(str(scratch))
    (new_file,) = _part_files(scratch)
    journal = StateLayout(state_dir).events_compaction
    write_atomic(journal, json.dumps({"day_folder": str(day_folder), "new_file": new_file, "replaced": replaced}))
    crash_point("events compaction:journal written")
    os.replace(scratch / new_file, day_folder / new_file)
    crash_point("events compaction:new file moved")
    for name in replaced:
        (day_folder / name).unlink()
    journal.unlink()
    shutil.rmtree(scratch, ignore_errors=True)
    return Compacted(day, len(replaced), events)
