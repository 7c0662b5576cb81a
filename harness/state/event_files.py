"""The event log's parquet files, without Spark: which files a reader looks at, and their events (pyarrow).

Spark's parquet table (the embedded default) is a folder with one folder per day (`event_date=YYYY-MM-DD`),
each file one append, committed by one rename, so every file listed is whole; an interrupted append
leaves only a `_temporary` folder, which is skipped like every name starting with `_` or `.`. Spark
names each file it writes anew (a job's id is in the name), so a file's name, size and modification
time identify its contents. pyarrow is imported only where a file is opened (about 0.1–0.2 s of an
operator's command).
"""

from __future__ import annotations

import logging
import os
import re
import struct
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

log = logging.getLogger(__name__)

PARTITION_COLUMN = "event_date"  # the event table is partitioned by the UTC date of event_time
PARTITION_PREFIX = f"{PARTITION_COLUMN}="  # its day folders


@dataclass(frozen=True)
class EventFilter:
    """The filters other than the time: a job, event types, a part of an upstream's label."""

    job_id: str | None = None
    event_types: Sequence[str] = ()
    upstream: str | None = None  # `source:sensor_id`, or a part of it


@dataclass(frozen=True)
class LogFile:
    """One file of the log: its name relative to the table's folder, its day, size and modification time."""

    path: str
    name: str  # `event_date=YYYY-MM-DD/part-….parquet`, or `part-….parquet` in the table's own folder
    day: date
    size: int
    mtime_ns: int


def log_files(folder: Path, first_day: date) -> list[LogFile]:
    """The whole files of the table's folder (an event log written before it was partitioned) and of its
    day folders from `first_day` on: only the days asked for are listed."""
    files = []
    for day_folder, day in _day_folders(folder, first_day):
        prefix = "" if day_folder == folder else f"{day_folder.name}/"
        with os.scandir(day_folder) as entries:
            for entry in entries:
                if entry.name.startswith(("_", ".")) or not entry.is_file():
                    continue
                stat = entry.stat()
                modified = day or datetime.fromtimestamp(stat.st_mtime, timezone.utc).date()
                files.append(LogFile(entry.path, prefix + entry.name, modified, stat.st_size, stat.st_mtime_ns))
    return sorted(files, key=lambda f: f.name)


def _day_folders(folder: Path, first_day: date) -> list[tuple[Path, date | None]]:
    days: list[tuple[Path, date | None]] = [(folder, None)]
    for child in sorted(folder.glob(f"{PARTITION_PREFIX}*")):
        try:
            day = date.fromisoformat(child.name.removeprefix(PARTITION_PREFIX))
        except ValueError:
            continue
        if child.is_dir() and day >= first_day:
            days.append((child, day))
    return days


class UnreadableFile(Exception):
    """The file is not whole parquet: never taken as events."""


def file_events(file: LogFile, wanted: EventFilter | None = None) -> list[dict[str, Any]]:
    """The file's events (times as UTC without a zone) that `wanted` keeps, in the file's order. With a
    filter, only the filter's columns are read first, and the whole file only when one of its events
    matches (one file per append: a day of ticks a minute is 1,440 files, most holding no event of a
    given job). UnreadableFile when the file is not whole parquet."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(file.path)
        columns = _filter_columns(wanted) if wanted else []
        if not columns:
            table = parquet.read()
        else:
            matching = _matching(parquet.read(columns=columns), wanted or EventFilter())
            if not pc.any(matching).as_py():
                return []
            table = parquet.read().filter(matching)
    except (pa.ArrowInvalid, OSError) as exc:
        raise UnreadableFile(str(exc)) from None
    return list(times_as_utc_naive(table).to_pylist())


def _filter_columns(wanted: EventFilter) -> list[str]:
    """The columns the filters read."""
    columns = ["trigger_job_id"] if wanted.job_id is not None else []
    columns += ["event_type"] if wanted.event_types else []
    return columns + (["sensor_source", "sensor_id"] if wanted.upstream else [])


def _matching(table: Any, wanted: EventFilter) -> Any:
    """The rows the filters keep (a mask). Filtered in Arrow with no Python value handed to pyarrow:
    pyarrow converts a Python value through its pandas shim, and importing pandas alone costs an
    operator's command about 0.4 s. Texts are matched as patterns."""
    import pyarrow.compute as pc

    masks = []
    if wanted.job_id is not None:
        masks.append(pc.match_substring_regex(table["trigger_job_id"], f"^{re.escape(wanted.job_id)}$"))
    if wanted.event_types:
        types = "|".join(re.escape(t) for t in wanted.event_types)
        masks.append(pc.match_substring_regex(table["event_type"], f"^(?:{types})$"))
    if wanted.upstream:
        label = pc.binary_join_element_wise(table["sensor_source"], table["sensor_id"], _text_scalar(":"))
        masks.append(pc.match_substring(label, wanted.upstream))
    mask = masks[0]
    for more in masks[1:]:
        mask = pc.and_(mask, more)
    return mask  # a null (a column without a value) is not a match: `any` and `filter` drop it


def times_as_utc_naive(table: Any) -> Any:
    """Every timestamp column in microseconds, as UTC without a zone (the same instants; read back as
    UTC). Spark's times are microseconds; one read as nanoseconds would become a pandas value."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and (field.type.tz is not None or field.type.unit != "us"):
            table = table.set_column(i, field.name, table.column(i).cast(pa.timestamp("us")))
    return table


def epoch_micros(when: datetime) -> int:
    """A time (UTC when it names no zone) as microseconds since the epoch."""
    naive = when.astimezone(timezone.utc).replace(tzinfo=None) if when.tzinfo else when
    return (naive - datetime(1970, 1, 1)) // timedelta(microseconds=1)


def _text_scalar(text: str) -> Any:
    """An Arrow string scalar made from its bytes (see _matching: no Python value through pyarrow)."""
    import pyarrow as pa

    data = text.encode()
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])[0]
