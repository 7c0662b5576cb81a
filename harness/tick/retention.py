"""Retention of the event log (`events.keep_days` in heartbeat.yml).

The control table carries every row's state, so old events are history, not state. Once a day, the
days older than `keep_days` are compacted:
  1. every event of the days that just passed the limit is copied to `heartbeat_events_archive`
     (partitioned like the log; an event id is copied once, so a repeat after a kill adds nothing);
  2. of all days past the limit, the log keeps only what a rebuild of the control table from scratch
     needs. That rule belongs to the dbt project, beside the control table's facets: the macro
     `heartbeat_kept_events` (macros/retention.sql, stated in words in macros/_heartbeat__macros.yml),
     run in-process as `dbt run-operation heartbeat_create_kept_events`, fills a scratch table;
  3. those days are rewritten with just these events; days left with none are dropped.
A rebuild from scratch after compaction gives the same control table. The open runs read only the
last `runs.track_days`, which is why `keep_days` may not be shorter. What compaction has done is
recorded in `<state>/events.retention.json`; if a process dies while rewriting the days of a parquet
log, the next compaction takes the kept events from the archive, which holds every event.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from harness.core.config import Config
from harness.core.state_layout import StateLayout
from harness.platform import dbt_runner
from harness.state.event_files import PARTITION_COLUMN
from harness.state.event_log import create_statement
from harness.state.event_reader import EVENTS_TABLE
from harness.state.files import write_atomic
from harness.tick.runtime import Runtime

log = logging.getLogger(__name__)

ARCHIVE_TABLE = "heartbeat_events_archive"
KEPT_TABLE = "heartbeat_events_kept"  # the kept events while the old days are rewritten


@dataclass(frozen=True)
class Compaction:
    before: date  # days before this one were compacted
    archived: int  # events copied to the archive
    kept: int  # events the compacted days still hold
    dropped_days: int  # days left with no event
    seconds: float


def cutoff(today: date, keep_days: int) -> date:
    return today - timedelta(days=keep_days)


def _record(state_dir: Path) -> tuple[date | None, bool]:
    path = StateLayout(state_dir).retention_record  # {"compacted_before": "YYYY-MM-DD" | null, "rewriting": bool}
    if not path.exists():
        return None, False
    recorded = json.loads(path.read_text())
    before = recorded.get("compacted_before")
    return (date.fromisoformat(before) if before else None), bool(recorded.get("rewriting"))


def _write_record(runtime: Runtime, before: date | None, rewriting: bool) -> None:
    text = json.dumps({"compacted_before": before.isoformat() if before else None, "rewriting": rewriting})
    write_atomic(runtime.config.layout.retention_record, text + "\n")


def due(config: Config, today: date) -> bool:
    """Retention is set and a day passed the limit since the last compaction (or one was interrupted)."""
    keep_days = config.settings.events.keep_days
    if keep_days is None:
        return False
    before, rewriting = _record(config.state_dir)
    return rewriting or before is None or before < cutoff(today, keep_days)


def compact(runtime: Runtime, today: date) -> Compaction | None:
    """Compact the days past `events.keep_days` (see the module's text); None when retention is off."""
    keep_days = runtime.config.settings.events.keep_days
    if keep_days is None:
        return None
    started = time.monotonic()
    spark, config = runtime.spark, runtime.config
    events, archive, kept = (config.table(EVENTS_TABLE), config.table(ARCHIVE_TABLE), config.table(KEPT_TABLE))
    limit = cutoff(today, keep_days)
    compacted_before, interrupted = _record(runtime.config.state_dir)
    first = compacted_before or date.min

    # An interrupted rewrite is repaired even when it left the log no old day at all.
    old = spark.sql(f"SELECT 1 FROM {events} WHERE {PARTITION_COLUMN} < DATE'{limit}' LIMIT 1").collect()
    if not old and not interrupted:
        _write_record(runtime, limit, rewriting=False)  # nothing is that old yet
        return Compaction(limit, 0, 0, 0, round(time.monotonic() - started, 2))
    if not spark.catalog.tableExists(archive):
        spark.sql(create_statement(archive, config.table_format))
    new_days = f"{PARTITION_COLUMN} BETWEEN DATE'{first}' AND DATE'{limit - timedelta(days=1)}'"
    archived = spark.sql(
        f"SELECT e.* FROM (SELECT * FROM {events} WHERE {new_days}) AS e "
        f"LEFT ANTI JOIN (SELECT event_id FROM {archive} WHERE {new_days}) AS a ON a.event_id = e.event_id"
    )
    archived_count = archived.count()
    archived.write.insertInto(archive)

    _write_record(runtime, compacted_before, rewriting=True)
    # After an interrupted rewrite a day of a parquet log may be missing: the archive has every event.
    source = ARCHIVE_TABLE if interrupted and config.table_format == "parquet" else EVENTS_TABLE
    dbt_runner.invoke(config, kept_events_operation(source, limit))
    kept_count = spark.table(kept).count()
    dropped = _rewrite_old_days(runtime, events, kept, limit)
    spark.sql(f"DROP TABLE {kept}")
    _write_record(runtime, limit, rewriting=False)
    runtime.events.changed()
    return Compaction(limit, archived_count, kept_count, dropped, round(time.monotonic() - started, 2))


def kept_events_operation(source: str, limit: date) -> list[str]:
    """The dbt command that fills the table KEPT_TABLE with the events of the days before `limit` that a
    rebuild of the control table needs, read from the table `source`: the rule is the macro
    `heartbeat_kept_events` (macros/retention.sql). Its values are the macro's arguments, not vars, so
    the folds' parse of the project serves it."""
    arguments = {"source_table": source, "before_date": limit.isoformat(), "kept_table": KEPT_TABLE}
    return ["run-operation", "heartbeat_create_kept_events", "--args", json.dumps(arguments), "--no-write-json"]


def _rewrite_old_days(runtime: Runtime, events: str, kept: str, limit: date) -> int:
    """Replace the days before `limit` with the kept events; returns how many days were left empty."""
    spark, config = runtime.spark, runtime.config
    if config.table_format == "delta":  # one transaction
        spark.sql(
            f"DELETE FROM {events} WHERE {PARTITION_COLUMN} < DATE'{limit}' "
            f"AND event_id NOT IN (SELECT event_id FROM {kept})"
        )
        return 0
    kept_days = {r[0] for r in spark.sql(f"SELECT DISTINCT {PARTITION_COLUMN} FROM {kept}").collect()}
    old_days = {
        r[0]
        for r in spark.sql(
            f"SELECT DISTINCT {PARTITION_COLUMN} FROM {events} WHERE {PARTITION_COLUMN} < DATE'{limit}'"
        ).collect()
    }
    if kept_days:
        spark.table(kept).write.option("partitionOverwriteMode", "dynamic").insertInto(events, overwrite=True)
    empty = sorted(old_days - kept_days)
    for day in empty:
        spark.sql(f"ALTER TABLE {events} DROP IF EXISTS PARTITION ({PARTITION_COLUMN} = DATE'{day}')")
    return len(empty)
