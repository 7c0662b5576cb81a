"""A `run` loop looks at its heartbeat.yml after each tick: a valid change starts the loop again with it,
a refused one is said once and the loop goes on with the settings it has."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness.commands.config_watch import ConfigWatch, again_argv
from harness.errors import ConfigError


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
