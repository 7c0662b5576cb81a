"""trigger_file: a file landing in `<trigger root>/<sensor_id>/` is new data.

Files are ordered by their change time (ctime: set when the file lands, by a copy, a move or a
write). The watermark keeps the newest change time seen and the names of the files that landed
within a grace window before it, so a file that lands while a check lists the folder, and so shows a
change time a little older than the newest, is still picked up by the next check, never skipped.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Sequence

from pyspark.sql import DataFrame
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from harness.core.config import Config
from harness.core.errors import ConsumeError, SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.context import CheckContext
from harness.sensors.declaration import PositionQuery, RangeRequest, SensorDeclaration

GRACE_NS = 10 * 60 * 1_000_000_000  # a file listed late by up to 10 minutes is still seen


@dataclass(frozen=True)
class LandedFile:
    name: str
    changed_ns: int
    modified_ns: int
    size: int


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat()


def _in_words(ns: int) -> str:
    """A change time as `status` and `why` print times: to the second, in UTC."""
    return f"{datetime.fromtimestamp(ns / 1e9, tz=timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


def folder_watermark(files: Iterable[LandedFile], floor_ns: int = 0) -> dict[str, object]:
    """The newest change time (at least `floor_ns`) and the names of the files landed shortly before it."""
    files = tuple(files)
    newest = max([f.changed_ns for f in files] + [floor_ns])
    recent = sorted(f.name for f in files if f.changed_ns >= newest - GRACE_NS)
    return {"changed_ns": newest, "recent": recent}


def landed_after(changed_ns: int, name: str, since: Watermark | None) -> bool:
    """A file landed after the folder's watermark: changed after it, or shortly before it and not among the
    names it records (a file listed late is not lost, nor counted twice). The rule a range's files follow too
    (`files_in_range`)."""
    seen_ns = int(since.get("changed_ns", 0)) if since else -1
    recent = set(since.get("recent", [])) if since else ()
    return changed_ns > seen_ns or (changed_ns >= seen_ns - GRACE_NS and name not in recent)


@dataclass(frozen=True)
class FolderListing:
    """The position of a trigger folder: the files in it."""

    files: tuple[LandedFile, ...]

    @property
    def watermark(self) -> Watermark:
        return folder_watermark(self.files)


def _is_plain_folder(path: Path, name: str) -> bool:
    """`path` (the trigger root / `name`) is a folder straight inside the root and not a symbolic link: it
    is then inside the root whatever links the root's own path holds. One `lstat`, where resolving the
    path and the root lists every folder above them (docs/performance-notes.md)."""
    if name in ("", ".", "..") or "/" in name:
        return False
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except (OSError, ValueError):  # missing, or not a name the system takes: the full checks say which
        return False


class TriggerFileSensor(Sensor[FolderListing]):
    def __init__(self, root: Path | None) -> None:
        self.root = root  # trigger_file.root (or HEARTBEAT_TRIGGER_ROOT); may be created after the start

    def _root(self, upstream: Upstream) -> Path:
        if self.root is None:
            raise SensorError(
                f"{upstream.label}: no trigger root configured; set trigger_file.root in heartbeat.yml "
                "or the HEARTBEAT_TRIGGER_ROOT environment variable"
            )
        return self.root

    def check_upstream(self, upstream: Upstream) -> None:
        """The root, and a sensor_id that names a folder under it as written (the folder may be created after
        the row, and symbolic links are followed by the check, which says when it is missing or leads out)."""
        root = self._root(upstream)
        written = os.path.normpath(upstream.sensor_id)
        if os.path.isabs(written) or written in (".", "..") or written.startswith("../"):
            raise self._outside(upstream, root)

    def doubt(self, upstream: Upstream) -> str | None:
        """A folder written another way than its plain form (`orders/`, `./orders`): a second row naming it
        plainly would be a second row of the same folder, which the CSV's duplicate check cannot tell."""
        plain = os.path.normpath(upstream.sensor_id)
        if plain == upstream.sensor_id:
            return None
        return f"the folder is written {upstream.sensor_id!r}; write it {plain!r}, as every row of that folder must be"

    @staticmethod
    def _outside(upstream: Upstream, root: Path) -> SensorError:
        return SensorError(
            f"{upstream.label}: sensor_id must name a folder inside the trigger root {root} (a path relative to it, "
            "e.g. orders_landed)"
        )

    def folder(self, upstream: Upstream) -> Path:
        """The upstream's trigger folder, a folder inside the trigger root once symbolic links are followed."""
        root = self._root(upstream)
        plain = root / upstream.sensor_id
        if _is_plain_folder(plain, upstream.sensor_id):
            return plain  # resolving it changes nothing inside the root, and would cost a check most of its time
        if not root.is_dir():
            raise SensorError(f"{upstream.label}: trigger root {root} does not exist or is not a folder")
        folder = plain.resolve()
        if root.resolve() not in folder.parents:
            raise self._outside(upstream, root)
        if not folder.is_dir():
            raise SensorError(f"{upstream.label}: trigger folder {folder} does not exist; create it or fix sensor_id")
        return folder

    def read_position(self, context: CheckContext, upstream: Upstream) -> FolderListing:
        folder = self.folder(upstream)
        files = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith(".") or not entry.is_file():
                        continue
                    st = entry.stat()
                    files.append(LandedFile(entry.name, st.st_ctime_ns, st.st_mtime_ns, st.st_size))
        except OSError as exc:
            raise SensorError(f"{upstream.label}: cannot list {folder}: {exc.strerror}") from exc
        return FolderListing(tuple(files))

    def detect(self, upstream: Upstream, position: FolderListing, since: Watermark | None) -> Detection:
        seen_ns = int(since.get("changed_ns", 0)) if since else -1
        new = [f for f in position.files if landed_after(f.changed_ns, f.name, since)]
        if not new:
            return NothingNew(f"no file newer than {_in_words(seen_ns) if seen_ns > 0 else 'the start'}")
        new.sort(key=lambda f: (f.changed_ns, f.name))
        changes = {
            "operation": "APPEND",
            "files": [{"name": f.name, "size": f.size, "landed": _iso(f.changed_ns)} for f in new],
            "file_count": len(new),
        }
        floor = max(seen_ns, 0)
        return NewData(
            watermark=folder_watermark(position.files, floor),
            changes=changes,
            steps=lambda: file_steps(position.files, new, floor),
        )


def file_steps(files: Sequence[LandedFile], new: Sequence[LandedFile], floor_ns: int) -> list[Watermark]:
    """The watermark after each new file (`new`, oldest first): the folder as if that file and the ones
    before it had landed. By `landed_after`, a range ending at one of them takes exactly those files, and
    the next range the rest (a file of the same change time as the last one taken goes to the next)."""
    taken = {f.name for f in new}
    listed = [f for f in files if f.name not in taken]  # seen before: in every step
    steps: list[Watermark] = []
    for landed in new:
        listed.append(landed)
        steps.append(folder_watermark(listed, floor_ns))
    return steps


# --- a job reading its range (harness.consume, harness.refresh.change_range.trigger_files) ----------
FILE_SCHEMA = StructType(
    [
        StructField("name", StringType()),
        StructField("path", StringType()),
        StructField("size", LongType()),
        StructField("landed", TimestampType()),
    ]
)


def files_in_range(folder: Path, start: Watermark | None, end: Watermark) -> list[Path]:
    """The files of a trigger folder inside a range, oldest first: landed after `start` and not after
    `end`, both by the sensor's own rule (`landed_after`: a file listed late is not lost). Consecutive
    ranges that chain (one's end the next one's start, as the parts of a range handed under max_range)
    therefore take each file exactly once."""
    found = []
    for path in folder.iterdir() if folder.is_dir() else []:
        if path.name.startswith(".") or not path.is_file():
            continue
        changed = path.stat().st_ctime_ns
        if landed_after(changed, path.name, start) and not landed_after(changed, path.name, end):
            found.append((changed, path.name, path))
    return [path for _, _, path in sorted(found)]


def read_range(request: RangeRequest) -> DataFrame:
    """The files landed in the range: name, path, size, landed (a job reads them as it likes)."""
    root, upstream = request.config.trigger_root, request.upstream
    if root is None:
        raise ConsumeError(f"{upstream.label}: no trigger root configured (trigger_file.root)")
    rows = []
    for path in files_in_range(Path(root) / upstream.sensor_id, request.start, request.end):
        st = path.stat()
        rows.append((path.name, str(path), st.st_size, datetime.fromtimestamp(st.st_ctime, timezone.utc)))
    return request.spark.createDataFrame(rows, FILE_SCHEMA)


def position_at(query: PositionQuery) -> Watermark:
    """The folder as it was at the time: the files landed by then (their change time at or before it), so a
    range from there takes exactly the files landed after it."""
    listing = query.sensor.read_position(query.context, query.upstream)
    at_ns = (query.at - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1) * 1000
    return folder_watermark(f for f in listing.files if f.changed_ns <= at_ns)


def build(config: Config, source: SensorSource) -> TriggerFileSensor:
    return TriggerFileSensor(config.trigger_root)


DECLARATION = SensorDeclaration(build=build, read_range=read_range, position_at=position_at)
