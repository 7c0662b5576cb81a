"""A `run` loop looks at its heartbeat.yml after each tick: a valid change starts the loop again with it,
a refused one is said once and the loop goes on with the settings it has."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness.commands.config_watch import (
    JVM_ENDINGS_ENV,
    ConfigWatch,
    again_argv,
    jvm_ended_again,
    tick_ended_well,
    wait_before_starting_again,
)
from harness.core.errors import ConfigError


def watching(path: Path) -> ConfigWatch:
    def load() -> object:
        if "typo" in path.read_text():
            raise ConfigError(f"{path}: refused:\n  sensing.check_timeout_secnds: unknown key")
        return object()

    return ConfigWatch(path, load)


@pytest.mark.unit
def test_a_valid_change_starts_the_loop_again_and_a_refused_one_is_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "heartbeat.yml"
    path.write_text("state_dir: state\n")
    watch = watching(path)
    assert not watch.changed()  # as the loop started with it
    with caplog.at_level(logging.INFO, logger="harness"):
        path.write_text("state_dir: state\nsensing: {typo: 1}\n")
        assert not watch.changed() and not watch.changed()
        path.write_text("state_dir: state\nlocal_runner: {jobs: {j: {command: 'true'}}}\n")
        assert watch.changed()
    refused = [r for r in caplog.records if "changed and is refused" in r.getMessage()]
    assert len(refused) == 1 and "check_timeout_secnds: unknown key" in refused[0].getMessage()
    assert refused[0].levelno == logging.WARNING
    assert any(r.getMessage() == f"{path} changed: the loop starts again with it" for r in caplog.records)


@pytest.mark.unit
def test_a_loop_on_the_defaults_has_no_file_to_watch() -> None:
    assert not ConfigWatch(None, lambda: object()).changed()


@pytest.mark.unit
def test_a_loop_started_again_goes_on_with_the_ticks_it_has_left() -> None:
    from harness.commands.cli import parser

    started = ["-m", "harness", "--config", "hb.yml", "run", "--interval", "1", "--max-ticks=5"]
    again = again_argv(started, 3)
    assert again[:2] == ["-m", "harness"] and parser().parse_args(again[2:]).max_ticks == 3
    assert again_argv(started, None) == started  # a loop until stopped: the same command


@pytest.mark.unit
def test_a_jvm_that_keeps_ending_makes_the_loop_wait_longer_each_time_until_a_tick_ends_well(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(JVM_ENDINGS_ENV, "0")  # put back as it was after the test, as the functions change it
    # WHEN Spark's JVM ends under the loop four times in a row (each loop's process starts the next one,
    # which inherits its environment)
    waits = [wait_before_starting_again(jvm_ended_again(), 10) for _ in range(4)]
    # THEN the first restart is at once (a new JVM is the next tick), then after the interval, doubled each time
    assert waits == [0.0, 10.0, 20.0, 40.0]
    # AND a JVM that never stays up is started again at least every 5 minutes, however short the interval
    assert wait_before_starting_again(20, 10) == 300.0 and wait_before_starting_again(3, 0) == 2.0
    # WHEN a tick then ends well, THEN the next ending is the first again
    tick_ended_well()
    assert wait_before_starting_again(jvm_ended_again(), 10) == 0.0
