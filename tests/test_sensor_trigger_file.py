"""trigger_file: a file landing while a check lists the folder is picked up by the next check."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.trigger_file import TriggerFileSensor
from harness.vocabulary import SensorSource
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
