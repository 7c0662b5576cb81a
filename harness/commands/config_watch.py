"""A `run` loop's heartbeat.yml, looked at after each tick: the loop's settings are those it started
with, so a changed file that is valid is applied by starting the loop again (the same command, a new
process: a new JVM, once); a changed file that is refused is said, once, and the loop goes on with the
settings it has, as a cron tick would refuse to start with it.

How the loop starts again lives here too (`start_again`), for a changed file as for a JVM that ended
under it, with how many times in a row the JVM ended and how long the loop waits before it starts again."""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from harness.core.controls import file_version
from harness.core.errors import HeartbeatError

log = logging.getLogger("harness.run")


@dataclass
class ConfigWatch:
    path: Path | None  # None: the loop runs on the defaults, with no file to watch
    load: Callable[[], object]  # the file parsed and checked as the loop's start did (raises HeartbeatError)
    seen: str | None = None

    def __post_init__(self) -> None:
        self.seen = file_version(self.path) if self.path else None

    def changed(self) -> bool:
        """Whether the file changed since it was last looked at and is valid: the loop should start again."""
        if self.path is None:
            return False
        version = file_version(self.path)
        if version == self.seen:
            return False
        self.seen = version
        try:
            self.load()
        except HeartbeatError as exc:
            log.warning(
                "%s changed and is refused, so this loop goes on with the settings it started with (once it is "
                "fixed, the loop starts again with it): %s",
                self.path,
                exc,
            )
            return False
        log.info("%s changed: the loop starts again with it", self.path)
        return True


def watch(config_path: Path | None, args_config: str | None, overrides: Mapping[str, str]) -> ConfigWatch:
    from harness.core.config import load_config

    return ConfigWatch(config_path, lambda: load_config(args_config, overrides))


def start_again(ticks_left: int | None = None) -> None:
    """The same command in this process's place (its state lock released and its handlers restored by
    then): Spark's JVM ends as its pipe from this process closes. A loop started with `--max-ticks`
    goes on with the ticks it has left (the last `--max-ticks` given is the one read)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    logging.shutdown()
    os.execv(sys.executable, [sys.executable, *again_argv(sys.orig_argv[1:], ticks_left)])


# How many times in a row Spark's JVM ended under the loop, carried to the process that starts again.
JVM_ENDINGS_ENV = "HEARTBEAT_JVM_ENDINGS"
LONGEST_WAIT_SECONDS = 300.0  # a JVM that keeps ending: the loop starts again at least every 5 minutes


def jvm_ended_again() -> int:
    """One more ending of Spark's JVM under the loop: how many in a row now (none between them ended a tick
    well), carried to the process that starts again."""
    endings = jvm_endings() + 1
    os.environ[JVM_ENDINGS_ENV] = str(endings)
    return endings


def jvm_endings() -> int:
    text = os.environ.get(JVM_ENDINGS_ENV, "")
    return int(text) if text.isdigit() else 0


def tick_ended_well() -> None:
    """A tick that ended without an error: the next ending of the JVM is the first again."""
    os.environ.pop(JVM_ENDINGS_ENV, None)


def wait_before_starting_again(endings: int, interval: float) -> float:
    """Seconds a loop whose JVM ended `endings` times in a row waits before it starts again: none the first
    time (a new JVM is the next tick), then the interval, doubled at each ending, up to 5 minutes. A JVM that
    keeps ending (a node too small for the heartbeat beside its jobs) then costs the node a start-up every
    few minutes, not at every tick."""
    if endings <= 1:
        return 0.0
    return float(min(LONGEST_WAIT_SECONDS, max(interval, 1.0) * 2 ** (endings - 2)))


def again_argv(argv: list[str], ticks_left: int | None) -> list[str]:
    return [*argv, "--max-ticks", str(ticks_left)] if ticks_left else list(argv)
