"""Sensing's workers: at most `max_parallel_checks` checks at once, each abandoned at its deadline
while a new worker takes its place, so a hung upstream never holds up the others. Unit tests: real
trigger folders, sensors slowed or held by the test."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

from harness.core.config import Config, SensingSettings
from harness.core.vocabulary import ControlRow, EventType, SensorSource
from harness.sensors.base import Upstream
from harness.sensors.context import CheckContext
from harness.sensors.trigger_file import FolderListing, TriggerFileSensor
from harness.tick.sensing import SensingOutcome, sense
from tests.fixtures_sources import sensed_row, sensor_config


def row(folder: str) -> ControlRow:
    return sensed_row("trigger_file", folder, f"job_{folder}")


def folders_with_a_file(tmp_path: Path, names: list[str], *, timeout: float, parallel: int) -> Config:
    root = tmp_path / "triggers"
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "a.done").write_text("1")
    base = sensor_config(tmp_path, timeout=timeout)
    settings = base.settings.model_copy(
        update={"sensing": SensingSettings(check_timeout_seconds=timeout, max_parallel_checks=parallel)}
    )
    return replace(base, trigger_root=root, settings=settings)


class CountingSensor(TriggerFileSensor):
    """The real trigger_file sensor, each read taking 20 ms; counts the reads running at once."""

    def __init__(self, root: Path | None) -> None:
        super().__init__(root)
        self.lock, self.now, self.most = threading.Lock(), 0, 0

    def read_position(self, context: CheckContext, upstream: Upstream) -> FolderListing:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.02)
        with self.lock:
            self.now -= 1
        return super().read_position(context, upstream)


class HeldSensor(TriggerFileSensor):
    """The real trigger_file sensor, whose read of the folder `held` waits until the test lets it go."""

    def __init__(self, root: Path | None, held: str) -> None:
        super().__init__(root)
        self.held, self.release = held, threading.Event()

    def read_position(self, context: CheckContext, upstream: Upstream) -> FolderListing:
        if upstream.sensor_id == self.held:
            self.release.wait(30)
        return super().read_position(context, upstream)


def test_no_more_checks_run_at_once_than_max_parallel_checks(tmp_path: Path) -> None:
    # GIVEN 40 trigger folders with a file each, and at most 3 checks at once
    names = [f"up{i:02d}" for i in range(40)]
    config = folders_with_a_file(tmp_path, names, timeout=20, parallel=3)
    sensor = CountingSensor(config.trigger_root)

    # WHEN they are sensed
    outcome = sense([row(n) for n in names], {SensorSource.TRIGGER_FILE: sensor}, None, config)

    # THEN every folder has its detection, and three reads ran at once at most (and more than one did)
    assert sorted(e.row.sensor_id for e in outcome.events if e.row) == names
    assert {e.event_type for e in outcome.events} == {EventType.DATA_CHANGED}
    assert 1 < sensor.most <= 3


def test_a_hung_check_is_abandoned_and_the_others_still_run_with_one_worker(tmp_path: Path) -> None:
    # GIVEN one check at a time, a 1 s timeout, and the first of four folders held far beyond it
    names = ["held", "b", "c", "d"]
    config = folders_with_a_file(tmp_path, names, timeout=1, parallel=1)
    sensor = HeldSensor(config.trigger_root, "held")

    # WHEN they are sensed (on a thread of the test's, so that a sensing that waits for the held check
    # fails the test instead of hanging it)
    outcomes: list[SensingOutcome] = []
    sensing = threading.Thread(  # a daemon: a sensing that never ends does not keep the test session up
        target=lambda: outcomes.append(
            sense([row(n) for n in names], {SensorSource.TRIGGER_FILE: sensor}, None, config)
        ),
        daemon=True,
    )
    sensing.start()
    sensing.join(15)
    sensor.release.set()
    assert outcomes, "sensing waited for the held check"
    outcome = outcomes[0]

    # THEN the held one timed out, and a new worker sensed the three others after it
    by_folder = {e.row.sensor_id: e for e in outcome.events if e.row}
    assert by_folder["held"].event_type is EventType.CHECK_FAILED
    assert by_folder["held"].message == ("trigger_file:held: check timed out after 1s (sensing.check_timeout_seconds)")
    assert {n: by_folder[n].event_type for n in ("b", "c", "d")} == dict.fromkeys(
        ("b", "c", "d"), EventType.DATA_CHANGED
    )
    assert len(outcome.events) == 4  # the held check's late result, if it came, was not added
