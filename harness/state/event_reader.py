"""Reading the event log without Spark, for `events`, `why`, `report`, publications and their sensor.

The event table (harness.state.event_log) is a folder of files: Spark's parquet tables on the embedded
default (harness.state.event_files: one file per append, each whole once listed), or a Delta table
(read through its log with delta-rs, so only committed files count).
Its folder is recorded in `<state>/events.location` each time a heartbeat opens the log, so these
reads need neither Spark nor the metastore, and work while a heartbeat holds the state.

Reads are bounded: only the day folders from `since` on are listed; the events of the files the event
index holds as they are come from the index (harness.state.event_index: no parquet opened, no pyarrow
imported); a file written before `since` holds only older events and is not opened; at most `limit`
events are returned (the newest).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from harness.core.durations import parse_duration
from harness.core.errors import HeartbeatError
from harness.core.state_layout import StateLayout
from harness.state.event_files import (
    EventFilter,
    LogFile,
    UnreadableFile,
    epoch_micros,
    file_events,
    log_files,
    times_as_utc_naive,
)
from harness.state.files import write_atomic
from harness.state.locations import table_folder

if TYPE_CHECKING:
    from harness.state import event_index

log = logging.getLogger(__name__)

EVENTS_TABLE = "heartbeat_events"
DEFAULT_SINCE = "24h"
DEFAULT_LIMIT = 500
RELISTS = 3  # times a read lists the folders again when a listed file was gone before it was read
_CLOCK_SLACK = timedelta(minutes=5)  # file times and event times come from the same clock; some slack anyway


def record_location(state_dir: Path, location: str) -> None:
    path = StateLayout(state_dir).events_location
    if not path.exists() or path.read_text().strip() != location:
        write_atomic(path, location + "\n")


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`90s`, `30m`, `2h`, `7d`, `1w` ago, or an ISO 8601 time (UTC when it names no zone)."""
    now = now or datetime.now(timezone.utc)
    duration = parse_duration(text)
    if duration is not None:
        try:
            return now - duration
        except OverflowError:
            raise HeartbeatError(f"--since {text!r} reaches back before the year 1: give a shorter duration") from None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise HeartbeatError(
            f"--since {text!r}: give a duration (90s, 30m, 2h, 7d, 1w) or a time (2026-11-22T21:40:00)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class EventQuery:
    since: datetime
    job_id: str | None = None
    upstream: str | None = None  # `source:sensor_id`, or a part of it
    event_types: Sequence[str] = ()
    limit: int = DEFAULT_LIMIT

    @property
    def wanted(self) -> EventFilter:
        return EventFilter(job_id=self.job_id, event_types=tuple(self.event_types), upstream=self.upstream)


def events_folder(state_dir: Path, schema_folder: Path | None = None) -> Path:
    """The folder the last heartbeat recorded; without a record, the table's default folder in the
    schema's folder of a local warehouse, when it exists."""
    path = StateLayout(state_dir).events_location
    if not path.exists():
        if schema_folder is not None and (schema_folder / EVENTS_TABLE).is_dir():
            return schema_folder / EVENTS_TABLE
        raise HeartbeatError(f"no event log recorded in {state_dir}: run `python -m harness tick` first")
    location = path.read_text().strip()
    folder = table_folder(location)
    if folder is None:
        raise HeartbeatError(
            f"the event log is at {location}, which only Spark can read: query the table "
            "heartbeat_events there (this command reads local folders only)"
        )
    return folder


def refresh_index(state_dir: Path, today: date, schema_folder: Path | None = None) -> event_index.Refresh | None:
    """The tick's refresh of the event index (harness.state.event_index), for a parquet log in a local
    folder; None for a Delta log, or one only Spark reads."""
    try:
        folder = events_folder(state_dir, schema_folder)
    except HeartbeatError:
        return None
    if not folder.is_dir() or (folder / "_delta_log").is_dir():
        return None
    from harness.state import event_index  # here, with its sqlite3: `status` reads no event log

    return event_index.refresh(StateLayout(state_dir).events_index, folder, today)


def read_events(state_dir: Path, query: EventQuery, schema_folder: Path | None = None) -> list[dict[str, Any]]:
    """Matching events, oldest first; the newest `query.limit` of them (0: all)."""
    folder = events_folder(state_dir, schema_folder)
    if not folder.is_dir():
        return []
    if (folder / "_delta_log").is_dir():
        found = _delta_events(folder, query)
    else:
        found = _parquet_events(StateLayout(state_dir).events_index, folder, query)
    found.sort(key=lambda keyed: keyed[0])
    found = _each_event_once(found)
    rows = [event for _, event in (found[-query.limit :] if query.limit else found)]
    for row in rows:
        for name, value in row.items():
            if isinstance(value, datetime):
                row[name] = value.replace(tzinfo=timezone.utc)
    return rows


Keyed = tuple[tuple[int, str, int], dict[str, Any]]  # ((event time, file, position), event): the log's order


def _each_event_once(found: list[Keyed]) -> list[Keyed]:
    """An event listed twice (a recent day being rewritten as one file while it was listed: the new file
    is in place before the ones it replaces are deleted, harness.state.event_compaction) counts once."""
    seen: set[str] = set()
    once = []
    for keyed in found:
        event_id = keyed[1].get("event_id")
        if event_id in seen:
            continue
        once.append(keyed)
        if event_id is not None:
            seen.add(event_id)
    return once


def _parquet_events(index: Path, folder: Path, query: EventQuery) -> list[Keyed]:
    """The events of the files that may hold events since `query.since`: from the event index for the
    files it holds as they are (no parquet opened), from their parquet for the others. A file gone
    between the listing and its read was replaced (a day rewritten as one file, or by retention): the
    folders are listed again, at most `RELISTS` times."""
    for _ in range(RELISTS):
        try:
            return _listed_events(index, folder, query, skip_gone=False)
        except _Gone:
            continue
    return _listed_events(index, folder, query, skip_gone=True)


class _Gone(Exception):
    """A listed file was deleted before it was read."""


def _listed_events(index: Path, folder: Path, query: EventQuery, *, skip_gone: bool) -> list[Keyed]:
    from concurrent.futures import ThreadPoolExecutor

    from harness.state import event_index

    oldest = query.since - _CLOCK_SLACK
    files = log_files(folder, oldest.date())
    indexed = event_index.indexed_events(index, folder, files, query.since, query.wanted, query.limit)
    covered = indexed.covered if indexed is not None else frozenset()
    # a file written before `since` holds only older events (an event's time is taken before its file is written)
    unread = [f for f in files if f.name not in covered and f.mtime_ns >= oldest.timestamp() * 1e9]
    found = list(indexed.events) if indexed is not None else []
    if not unread:
        return found
    since = epoch_micros(query.since)
    # File by file on a few threads (the reads release the GIL); a file that is not whole parquet is skipped alone.
    with ThreadPoolExecutor(max_workers=min(4, len(unread))) as pool:
        for file, events in zip(unread, pool.map(lambda f: _events_of(f, query.wanted, skip_gone), unread)):
            found.extend(
                ((epoch_micros(e["event_time"]), file.name, position), e)
                for position, e in enumerate(events)
                if isinstance(e.get("event_time"), datetime) and epoch_micros(e["event_time"]) >= since
            )
    return found


def _events_of(file: LogFile, wanted: EventFilter, skip_gone: bool) -> list[dict[str, Any]]:
    try:
        return file_events(file, wanted)
    except UnreadableFile as exc:
        if not skip_gone and not Path(file.path).exists():
            raise _Gone(file.name) from None
        log.warning("skipped %s in the event log: %s", file.name, exc)
        return []


def _delta_events(folder: Path, query: EventQuery) -> list[Keyed]:
    """A Delta log's events, read through its log with delta-rs (only committed files count)."""
    from deltalake import DeltaTable

    since = epoch_micros(query.since)
    found = []
    for position, event in enumerate(times_as_utc_naive(DeltaTable(str(folder)).to_pyarrow_table()).to_pylist()):
        at = event.get("event_time")
        if isinstance(at, datetime) and epoch_micros(at) >= since and _keeps(query.wanted, event):
            found.append(((epoch_micros(at), "", position), event))
    return found


def _keeps(wanted: EventFilter, event: dict[str, Any]) -> bool:
    if wanted.job_id is not None and event.get("trigger_job_id") != wanted.job_id:
        return False
    if wanted.event_types and event.get("event_type") not in wanted.event_types:
        return False
    if wanted.upstream:
        source, sensor_id = event.get("sensor_source"), event.get("sensor_id")
        return source is not None and sensor_id is not None and wanted.upstream in f"{source}:{sensor_id}"
    return True


def plain(event: dict[str, Any]) -> dict[str, Any]:
    """An event as JSON-ready values: times in ISO 8601 UTC, details parsed."""
    out = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in event.items()}
    if isinstance(out.get("details"), str):
        try:
            out["details"] = json.loads(out["details"])
        except ValueError:
            pass
    return out
