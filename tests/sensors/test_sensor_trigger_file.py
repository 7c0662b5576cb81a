"""trigger_file: a file landing while a check lists the folder is picked up by the next check; a detection's
steps split its files one by one (max_range); a sensor_id names a folder inside the trigger root, or the
check says what to fix."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness.core.errors import SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.trigger_file import FolderListing, LandedFile, TriggerFileSensor, folder_watermark, landed_after
from tests.fixtures_sources import check_context


def test_file_landing_during_a_check_is_picked_up_by_the_next_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a file `late.done` that lands before `early.done` (older change time) but whose directory
    # entry the check's listing does not see yet: the race of a file landing while the folder is
    # listed, reproduced by hiding that one entry from os.scandir for the first check
    folder = tmp_path / "orders"
    folder.mkdir()
    (folder / "late.done").write_text("x")
    time.sleep(0.01)
    (folder / "early.done").write_text("x")
    sensor = TriggerFileSensor(root=tmp_path)
    upstream = Upstream(SensorSource.TRIGGER_FILE, "orders")
    real_scandir = os.scandir

    class Listing:
        def __init__(self, path: Path) -> None:
            self.inner = real_scandir(path)

        def __enter__(self) -> list[os.DirEntry[str]]:
            return [e for e in self.inner if e.name != "late.done"]

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

    monkeypatch.setattr(os, "scandir", Listing)
    first = sensor.detect(upstream, sensor.read_position(check_context(), upstream), None)
    monkeypatch.setattr(os, "scandir", real_scandir)

    # WHEN the next check lists the folder
    second = sensor.detect(upstream, sensor.read_position(check_context(), upstream), first.watermark)
    third = sensor.detect(
        upstream,
        sensor.read_position(check_context(), upstream),
        second.watermark if isinstance(second, NewData) else None,
    )

    # THEN the late file is new then, exactly once, although its change time is older than the watermark
    assert isinstance(first, NewData) and [f["name"] for f in first.changes["files"]] == ["early.done"]
    assert isinstance(second, NewData) and [f["name"] for f in second.changes["files"]] == ["late.done"]
    assert isinstance(third, NothingNew)


def test_a_folder_with_nothing_new_says_so_with_its_newest_file_time_to_the_second_in_utc(tmp_path: Path) -> None:
    # GIVEN a trigger folder whose one file is already the watermark
    folder = tmp_path / "orders"
    folder.mkdir()
    (folder / "a.done").write_text("x")
    changed = datetime.fromtimestamp((folder / "a.done").stat().st_ctime_ns / 1e9, tz=timezone.utc)
    sensor = TriggerFileSensor(root=tmp_path)
    upstream = Upstream(SensorSource.TRIGGER_FILE, "orders")
    first = sensor.detect(upstream, sensor.read_position(check_context(), upstream), None)
    assert isinstance(first, NewData)
    # WHEN the folder is checked again
    again = sensor.detect(upstream, sensor.read_position(check_context(), upstream), first.watermark)
    # THEN the reason names the newest file's time as status prints times, not as an ISO stamp
    assert isinstance(again, NothingNew)
    assert again.reason == f"no file newer than {changed:%Y-%m-%d %H:%M:%S} UTC"


def test_the_steps_of_a_detection_split_its_files_one_by_one_so_parts_chain_without_a_file_twice() -> None:
    # GIVEN a folder seen before (a.done, and b.done listed late, just before the watermark), and four new
    # files, two of them with the same change time
    second = 1_000_000_000
    seen = [LandedFile("a.done", 100 * second, 0, 1)]
    since = folder_watermark(seen)
    new = [
        LandedFile("b.done", 99 * second, 0, 1),
        LandedFile("c.done", 101 * second, 0, 1),
        LandedFile("d.done", 102 * second, 0, 1),
        LandedFile("e.done", 102 * second, 0, 1),
    ]
    listing = FolderListing(tuple([*seen, *reversed(new)]))
    upstream = Upstream(SensorSource.TRIGGER_FILE, "orders")

    # WHEN the folder is checked against the watermark
    found = TriggerFileSensor(root=None).detect(upstream, listing, since)
    assert isinstance(found, NewData)
    steps = list(found.steps())

    # THEN there is a step after each new file, the last one the detection's watermark, and the parts from
    # one step to the next (by the rule the range's files follow) take one file each, oldest first
    assert len(steps) == 4 and steps[-1] == found.watermark
    bounds = [since, *steps]
    parts = [
        [
            f.name
            for f in listing.files
            if landed_after(f.changed_ns, f.name, a) and not landed_after(f.changed_ns, f.name, b)
        ]
        for a, b in zip(bounds, bounds[1:])
    ]
    assert parts == [["b.done"], ["c.done"], ["d.done"], ["e.done"]]


def trigger_root(tmp_path: Path) -> Path:
    """A trigger root reached through a symbolic link, holding a plain folder `orders`, a file `notes`, a
    nested folder `eu/orders`, a link `alias` to `orders` and a link `escape` to a folder outside the root."""
    real = tmp_path / "real-root"
    (real / "orders").mkdir(parents=True)
    (real / "orders" / "a.done").write_text("x")
    (real / "notes").write_text("x")
    (real / "eu" / "orders").mkdir(parents=True)
    (real / "alias").symlink_to(real / "orders")
    (tmp_path / "outside").mkdir()
    (real / "escape").symlink_to(tmp_path / "outside")
    root = tmp_path / "root"
    root.symlink_to(real)
    return root


@pytest.mark.parametrize(
    ("sensor_id", "found", "files"),
    [
        ("orders", "root/orders", ["a.done"]),
        ("alias", "real-root/orders", ["a.done"]),
        ("eu/orders", "real-root/eu/orders", []),
    ],
)
def test_a_folder_inside_the_trigger_root_is_listed_whether_plain_nested_or_a_link(
    tmp_path: Path, sensor_id: str, found: str, files: list[str]
) -> None:
    # GIVEN a trigger root (itself a link) holding the folder `sensor_id`
    sensor = TriggerFileSensor(root=trigger_root(tmp_path))
    upstream = Upstream(SensorSource.TRIGGER_FILE, sensor_id)

    # WHEN its folder is looked up and listed
    folder = sensor.folder(upstream)
    listing = sensor.read_position(check_context(), upstream)

    # THEN it is that folder (a link followed), and its files are listed
    assert folder == tmp_path / found
    assert [f.name for f in listing.files] == files


@pytest.mark.parametrize(
    ("sensor_id", "message"),
    [
        ("escape", "sensor_id must name a folder inside the trigger root"),
        ("../outside", "sensor_id must name a folder inside the trigger root"),
        ("..", "sensor_id must name a folder inside the trigger root"),
        (".", "sensor_id must name a folder inside the trigger root"),
        ("missing", "trigger folder {real}/missing does not exist; create it or fix sensor_id"),
        ("notes", "trigger folder {real}/notes does not exist; create it or fix sensor_id"),
    ],
)
def test_a_sensor_id_that_is_not_a_folder_inside_the_root_is_refused_with_what_to_fix(
    tmp_path: Path, sensor_id: str, message: str
) -> None:
    # GIVEN a trigger root and a sensor_id that names a link out of it, a path out of it, the root itself,
    # nothing, or a file
    sensor = TriggerFileSensor(root=trigger_root(tmp_path))
    upstream = Upstream(SensorSource.TRIGGER_FILE, sensor_id)

    # WHEN its folder is looked up, THEN the check fails saying what is wrong
    with pytest.raises(SensorError) as refused:
        sensor.folder(upstream)
    assert message.format(real=tmp_path / "real-root") in str(refused.value)


def test_a_missing_trigger_root_is_named() -> None:
    # GIVEN a trigger root that does not exist, WHEN a folder in it is looked up, THEN the root is named
    sensor = TriggerFileSensor(root=Path("/nonexistent/heartbeat-triggers"))
    with pytest.raises(SensorError, match="trigger root /nonexistent/heartbeat-triggers does not exist"):
        sensor.folder(Upstream(SensorSource.TRIGGER_FILE, "orders"))
