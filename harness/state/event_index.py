"""The index of the event log's recent files, so that `why`, `events` and the other readers without Spark
answer without opening parquet files (or importing pyarrow) whatever the number of appends.

The event log stays the one record of every event: the index is a cache of its last INDEX_DAYS days,
derived from its files and checked against them at every read. It is a SQLite database
(`<state>/events.index.sqlite`, on the node's disk when the state folder is a volume) that holds, for
each file it has read, the file's name, size and modification time and the file's events as the
parquet reader returns them. The tick refreshes it at its end, under the state's lock (`refresh`): the
files it has not read yet are added, newest first, a batch of files per transaction; the files that are
gone or changed (retention rewrote a day) or older than INDEX_DAYS are removed.

A reader (`indexed_events`) lists the log's files as before and takes from the index only the events of
the files it lists with the same name, size and modification time; every other file is read from its
parquet (harness.state.event_reader). So each event is read once at every instant whatever the index
holds: an index that lags (a tick killed before its refresh), runs ahead (a file removed since), is
missing, damaged or of another folder changes how fast a read is, never what it returns. The files and
their events are added and removed in one SQLite transaction, and a reader reads in one transaction.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Sequence

from harness.core.faults import crash_point
from harness.state.event_files import EventFilter, LogFile, UnreadableFile, epoch_micros, file_events, log_files

log = logging.getLogger(__name__)

INDEX_DAYS = 9  # today and the 8 days before: all that `why` reads by default (7 d, and the clock's slack)
FILES_PER_REFRESH = 2000  # a first refresh of a long log: over several ticks (about 3 s each), newest first
FILES_PER_TRANSACTION = 200
VERSION = "1"  # of the tables below: an index of another version is made anew
_BUSY_SECONDS = 10.0  # a reader's transaction or the tick's refresh holds the file at most a moment

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    file_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    day TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    columns TEXT NOT NULL,
    error TEXT
);
CREATE TABLE events (
    file_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    event_time INTEGER,
    event_type TEXT,
    trigger_job_id TEXT,
    sensor_source TEXT,
    sensor_id TEXT,
    row_values TEXT NOT NULL,
    PRIMARY KEY (file_id, position)
);
CREATE INDEX files_by_day ON files (day);
CREATE INDEX events_by_time ON events (event_time);
CREATE INDEX events_by_job ON events (trigger_job_id, event_time);
CREATE INDEX events_by_type ON events (event_type, event_time);
"""


@dataclass(frozen=True)
class Refresh:
    indexed: int  # files read into the index
    removed: int  # files gone, changed or older than INDEX_DAYS
    waiting: int  # files left for the next refresh (FILES_PER_REFRESH)


def first_day(today: date) -> date:
    return today - timedelta(days=INDEX_DAYS - 1)


def refresh(path: Path, folder: Path, today: date, limit: int = FILES_PER_REFRESH) -> Refresh:
    """Bring the index of the parquet log in `folder` up to date with its files of the last INDEX_DAYS days."""
    listed = {f.name: f for f in log_files(folder, first_day(today)) if f.day >= first_day(today)}
    with _open_for_writing(path, folder) as db:
        known = {
            name: (file_id, size, mtime)
            for file_id, name, size, mtime in db.execute("SELECT file_id, name, size, mtime_ns FROM files")
        }
        stale = [
            file_id
            for name, (file_id, size, mtime) in known.items()
            if name not in listed or (listed[name].size, listed[name].mtime_ns) != (size, mtime)
        ]
        with _transaction(db):
            db.executemany("DELETE FROM events WHERE file_id = ?", [(i,) for i in stale])
            db.executemany("DELETE FROM files WHERE file_id = ?", [(i,) for i in stale])
        gone = set(stale)
        fresh = {name for name, (file_id, _, _) in known.items() if file_id not in gone}
        new = sorted((f for f in listed.values() if f.name not in fresh), key=lambda f: f.mtime_ns, reverse=True)
        for start in range(0, min(len(new), limit), FILES_PER_TRANSACTION):
            _add(db, new[start : min(start + FILES_PER_TRANSACTION, limit)])
            crash_point("event index:added files")
    return Refresh(indexed=min(len(new), limit), removed=len(stale), waiting=max(len(new) - limit, 0))


def _add(db: sqlite3.Connection, files: Sequence[LogFile]) -> None:
    """The files and their events, in one transaction (the files are read before it begins)."""
    read: list[tuple[LogFile, list[dict[str, Any]], str | None]] = []
    for file in files:
        try:
            read.append((file, file_events(file), None))
        except UnreadableFile as exc:
            read.append((file, [], str(exc)))
    with _transaction(db):
        for file, events, error in read:
            columns = list(events[0]) if events else []
            cursor = db.execute(
                "INSERT INTO files (name, day, size, mtime_ns, columns, error) VALUES (?, ?, ?, ?, ?, ?)",
                (file.name, file.day.isoformat(), file.size, file.mtime_ns, json.dumps(columns), error),
            )
            db.executemany(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        cursor.lastrowid,
                        position,
                        epoch_micros(e["event_time"]) if isinstance(e.get("event_time"), datetime) else None,
                        e.get("event_type"),
                        e.get("trigger_job_id"),
                        e.get("sensor_source"),
                        e.get("sensor_id"),
                        json.dumps([e[c] for c in columns], default=_encode, separators=(",", ":")),
                    )
                    for position, e in enumerate(events)
                ],
            )


@dataclass(frozen=True)
class Indexed:
    covered: frozenset[str]  # the names of the listed files whose events the index gave
    events: list[tuple[tuple[int, str, int], dict[str, Any]]]  # ((time, file name, position), event), newest first


def indexed_events(
    path: Path, folder: Path, files: Sequence[LogFile], since: datetime, wanted: EventFilter, limit: int
) -> Indexed | None:
    """Of the listed `files`, those the index holds as they are now, and their newest `limit` events (0:
    all) since `since` that `wanted` keeps; None when there is no index of `folder` to read."""
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=_BUSY_SECONDS, isolation_level=None)
    except sqlite3.Error as exc:
        log.debug("the event index cannot be opened: %s", exc)
        return None
    try:
        with _transaction(db):  # one snapshot: the files and their events as one refresh left them
            if dict(db.execute("SELECT key, value FROM meta")) != {"version": VERSION, "folder": str(folder)}:
                return None
            return _read(db, files, since, wanted, limit)
    except sqlite3.Error as exc:
        log.debug("the event index cannot be read: %s", exc)
        return None
    finally:
        db.close()


def _read(
    db: sqlite3.Connection, files: Sequence[LogFile], since: datetime, wanted: EventFilter, limit: int
) -> Indexed:
    listed = {f.name: f for f in files}
    covered: dict[int, tuple[str, list[str]]] = {}  # file id: its name and columns
    first = min((f.day for f in files), default=date.max).isoformat()  # only the listed days' files
    for file_id, name, size, mtime, columns, error in db.execute(
        "SELECT file_id, name, size, mtime_ns, columns, error FROM files WHERE day >= ?", (first,)
    ):
        file = listed.get(name)
        if file is not None and (file.size, file.mtime_ns) == (size, mtime):
            covered[file_id] = (name, json.loads(columns))
            if error is not None:
                log.warning("skipped %s in the event log: %s", name, error)
    conditions: list[str] = ["e.event_time >= ?"]
    args: list[int | str] = [epoch_micros(since)]
    if wanted.job_id is not None:
        conditions.append("e.trigger_job_id = ?")
        args.append(wanted.job_id)
    if wanted.event_types:
        conditions.append(f"e.event_type IN ({', '.join('?' for _ in wanted.event_types)})")
        args.extend(wanted.event_types)
    if wanted.upstream:
        conditions.append("instr(e.sensor_source || ':' || e.sensor_id, ?) > 0")
        args.append(wanted.upstream)
    cursor = db.execute(
        "SELECT e.file_id, e.position, e.event_time, f.name, e.row_values FROM events AS e "
        "JOIN files AS f USING (file_id) "
        f"WHERE {' AND '.join(conditions)} ORDER BY e.event_time DESC, f.name DESC, e.position DESC",
        args,
    )
    events = []
    for file_id, position, event_time, name, values in cursor:
        if file_id in covered:
            event = dict(zip(covered[file_id][1], json.loads(values, object_hook=_decode)))
            events.append(((event_time, name, position), event))
            if limit and len(events) == limit:
                break
    return Indexed(frozenset(name for name, _ in covered.values()), events)


class _open_for_writing:
    """The index of `folder`, created (or made anew, when it is of another folder, another version or
    damaged) for the tick's refresh."""

    def __init__(self, path: Path, folder: Path) -> None:
        self.path, self.folder = path, folder

    def __enter__(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = self._connect()
        except sqlite3.DatabaseError as exc:  # not a database any more: it is only a cache
            log.warning("the event index %s is damaged (%s): made anew", self.path, exc)
            for stale in (self.path, self.path.with_name(self.path.name + "-journal")):
                stale.unlink(missing_ok=True)
            self.db = self._connect()
        return self.db

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=_BUSY_SECONDS, isolation_level=None)
        try:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            meta = dict(db.execute("SELECT key, value FROM meta")) if "meta" in tables else {}
            if meta != {"version": VERSION, "folder": str(self.folder)}:
                with _transaction(db):
                    for table in tables:
                        db.execute(f"DROP TABLE {table}")
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    db.executemany(
                        "INSERT INTO meta VALUES (?, ?)", [("version", VERSION), ("folder", str(self.folder))]
                    )
        except BaseException:
            db.close()
            raise
        return db

    def __exit__(self, *exc: object) -> None:
        self.db.close()


class _transaction:
    """BEGIN ... COMMIT on a connection in autocommit mode; ROLLBACK when the block raises (or is stopped)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def _encode(value: Any) -> Any:
    """A time or date of an event, in the index's JSON."""
    if isinstance(value, datetime):
        return {"$t": value.isoformat()}
    if isinstance(value, date):
        return {"$d": value.isoformat()}
    raise TypeError(f"an event's value of type {type(value).__name__} cannot be indexed")


def _decode(obj: dict[str, Any]) -> Any:
    if obj.keys() == {"$t"}:
        return datetime.fromisoformat(obj["$t"])
    if obj.keys() == {"$d"}:
        return date.fromisoformat(obj["$d"])
    return obj
