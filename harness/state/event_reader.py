"""Reading the event log without Spark, for `events`, `why` and `report`.

The event table (harness.state.event_log) is a folder of files: Spark's parquet tables on the embedded default
(one file per append, each committed by one rename, so every file a reader lists is whole; an
interrupted append leaves only a `_temporary` folder, which is skipped like every name starting with
`_` or `.`), or a Delta table (read through its log with delta-rs, so only committed files count).
Its folder is recorded in `<state>/events.location` each time a heartbeat opens the log, so these
reads need neither Spark nor the metastore, and work while a heartbeat holds the state.

Reads are bounded: a file written before `since` holds only events older than `since` (an event's
time is taken before its file is written), so those files are not opened at all, and at most `limit`
events are returned (the newest).
"""

from __future__ import annotations

import json
import logging
import re
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import unquote, urlparse

from harness.durations import parse_duration
from harness.errors import HeartbeatError
from harness.state.files import write_atomic
from harness.state.layout import StateLayout

log = logging.getLogger(__name__)

EVENTS_TABLE = "heartbeat_events"
PARTITION_COLUMN = "event_date"  # the event table is partitioned by the UTC date of event_time
PARTITION_PREFIX = f"{PARTITION_COLUMN}="  # its day folders
DEFAULT_SINCE = "24h"
DEFAULT_LIMIT = 500
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
        return now - duration
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


def events_folder(state_dir: Path, schema_folder: Path | None = None) -> Path:
    """The folder the last heartbeat recorded; without a record, the table's default folder in the
    schema's folder of a local warehouse, when it exists."""
    path = StateLayout(state_dir).events_location
    if not path.exists():
        if schema_folder is not None and (schema_folder / EVENTS_TABLE).is_dir():
            return schema_folder / EVENTS_TABLE
        raise HeartbeatError(f"no event log recorded in {state_dir}: run `python -m harness tick` first")
    location = path.read_text().strip()
    parsed = urlparse(location)
    if parsed.scheme not in ("", "file"):
        raise HeartbeatError(
            f"the event log is at {location}, which only Spark can read: query the table "
            "heartbeat_events there (this command reads local folders only)"
        )
    return Path(unquote(parsed.path))


def read_events(state_dir: Path, query: EventQuery, schema_folder: Path | None = None) -> list[dict[str, Any]]:
    """Matching events, oldest first; the newest `query.limit` of them.

    Filtered in Arrow with no Python value handed to pyarrow: pyarrow converts a Python value (and a
    timestamp with a time zone) through its pandas shim, and importing pandas alone costs an operator's
    command about 0.4 s. Texts are matched as patterns, the time as an integer read from bytes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = _read_table(events_folder(state_dir, schema_folder), query)
    if table is None or table.num_rows == 0:
        return []
    table = _times_as_utc_naive(table)
    since = query.since.astimezone(timezone.utc).replace(tzinfo=None)
    mask = pc.greater_equal(
        table["event_time"].cast(pa.timestamp("us")).cast(pa.int64()), _int64_scalar(_epoch_micros(since))
    )
    rows = table.filter(mask).to_pylist()  # a null (a column without a value) drops the row
    rows.sort(key=lambda r: r["event_time"])
    rows = rows[-query.limit :] if query.limit else rows
    for row in rows:
        for name, value in row.items():
            if isinstance(value, datetime):
                row[name] = value.replace(tzinfo=timezone.utc)
    return rows


def _filter_columns(query: EventQuery) -> list[str]:
    """The columns the query's filters other than the time read."""
    columns = ["trigger_job_id"] if query.job_id is not None else []
    columns += ["event_type"] if query.event_types else []
    return columns + (["sensor_source", "sensor_id"] if query.upstream else [])


def _matching(table: Any, query: EventQuery) -> Any:
    """The rows the query's filters other than the time keep (a mask), or None when it has none."""
    import pyarrow.compute as pc

    masks = []
    if query.job_id is not None:
        masks.append(pc.match_substring_regex(table["trigger_job_id"], f"^{re.escape(query.job_id)}$"))
    if query.event_types:
        types = "|".join(re.escape(t) for t in query.event_types)
        masks.append(pc.match_substring_regex(table["event_type"], f"^(?:{types})$"))
    if query.upstream:
        label = pc.binary_join_element_wise(table["sensor_source"], table["sensor_id"], _text_scalar(":"))
        masks.append(pc.match_substring(label, query.upstream))
    if not masks:
        return None
    mask = masks[0]
    for more in masks[1:]:
        mask = pc.and_(mask, more)
    return mask


def _times_as_utc_naive(table: Any) -> Any:
    """Every timestamp column as UTC without a zone (the same instants; read back as UTC)."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and field.type.tz is not None:
            table = table.set_column(i, field.name, table.column(i).cast(pa.timestamp(field.type.unit)))
    return table


def _epoch_micros(when: datetime) -> int:
    return (when - datetime(1970, 1, 1)) // timedelta(microseconds=1)


def _int64_scalar(value: int) -> Any:
    """An Arrow int64 scalar made from its bytes (see read_events: no Python value through pyarrow)."""
    import pyarrow as pa

    return pa.Array.from_buffers(pa.int64(), 1, [None, pa.py_buffer(struct.pack("<q", value))])[0]


def _text_scalar(text: str) -> Any:
    """An Arrow string scalar made from its bytes (as _int64_scalar)."""
    import pyarrow as pa

    data = text.encode()
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])[0]


def _read_table(folder: Path, query: EventQuery) -> Any:
    """The events of the files that may hold events since `query.since`, of them only those the query's
    other filters (job, type, upstream) keep."""
    import pyarrow as pa

    if not folder.is_dir():
        return None
    if (folder / "_delta_log").is_dir():
        from deltalake import DeltaTable

        table = DeltaTable(str(folder)).to_pyarrow_table()
        matching = _matching(table, query)
        return table if matching is None else table.filter(matching)
    oldest = query.since - _CLOCK_SLACK
    files = [
        file
        for day in _day_folders(folder, oldest.date())
        for file in sorted(day.iterdir())
        if file.is_file() and not file.name.startswith(("_", ".")) and file.stat().st_mtime >= oldest.timestamp()
    ]
    if not files:
        return None
    # File by file on a few threads (the reads release the GIL), with pyarrow.parquet's file reader (not
    # pyarrow.dataset, a large import); a file that is not whole parquet is skipped alone.
    with ThreadPoolExecutor(max_workers=min(4, len(files))) as pool:
        tables = [t for t in pool.map(lambda file: _read_file(file, query), files) if t is not None]
    return pa.concat_tables(tables, promote_options="default") if tables else None


def _read_file(file: Path, query: EventQuery) -> Any:
    """The file's events that the query's filters by job, type or upstream keep; None when it is not whole
    parquet or none match. Only the filters' columns are read first (one file per append: a day of ticks a
    minute is 1,440 files, and most hold no event of a given job)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(file)
        columns = _filter_columns(query)
        if not columns:
            return parquet.read()
        matching = _matching(parquet.read(columns=columns), query)
        return parquet.read().filter(matching) if pc.any(matching).as_py() else None
    except (pa.ArrowInvalid, OSError) as exc:  # not a whole parquet file: never taken as events
        log.warning("skipped %s in the event log: %s", file.name, exc)
        return None


def _day_folders(folder: Path, first_day: date) -> list[Path]:
    """The table's folder (an event log written before it was partitioned) and its day folders
    (`event_date=YYYY-MM-DD`) from `first_day` on: only the days asked for are listed."""
    days = [folder]
    for child in sorted(folder.glob(f"{PARTITION_PREFIX}*")):
        try:
            day = date.fromisoformat(child.name.removeprefix(PARTITION_PREFIX))
        except ValueError:
            continue
        if child.is_dir() and day >= first_day:
            days.append(child)
    return days


def plain(event: dict[str, Any]) -> dict[str, Any]:
    """An event as JSON-ready values: times in ISO 8601 UTC, details parsed."""
    out = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in event.items()}
    if isinstance(out.get("details"), str):
        try:
            out["details"] = json.loads(out["details"])
        except ValueError:
            pass
    return out
