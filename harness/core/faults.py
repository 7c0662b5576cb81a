"""Named points where the fault-injection tests stop the heartbeat, as a lost node or an OOM kill would.

Only tests set them. A process test sets HEARTBEAT_CRASH_AT to `name` (the first time this process
reaches the point) or `name@T` (the first time it is reached during tick T of this process, so that the
ticks before it run whole); there the whole process group (the Python process, its Spark JVM, dbt) is
killed with SIGKILL. An in-process test arms a point with `stopping_at(name)`: there `Stopped` is
raised, which no handler of the harness catches, so nothing after the point runs (as after a kill) and
the test opens the state anew, as a restarted process does. Unarmed, a crash point costs one lookup.
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from typing import Iterator

CRASH_ENV = "HEARTBEAT_CRASH_AT"
_tick = 0
_armed: str | None = None


class Stopped(BaseException):
    """Raised at an armed crash point (in-process fault injection): a BaseException, so the harness's
    `except Exception` handlers let it through as they would let a kill."""


def tick_started() -> None:
    global _tick
    _tick += 1


@contextmanager
def stopping_at(name: str) -> Iterator[None]:
    """Within the block, the first time the point `name` is reached raises Stopped."""
    global _armed
    _armed = name
    try:
        yield
    finally:
        _armed = None


def crash_point(name: str) -> None:
    global _armed
    if _armed == name:
        _armed = None
        raise Stopped(name)
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    point, _, tick = wanted.partition("@")
    if point == name and (not tick or int(tick) == _tick):
        os.killpg(os.getpgid(0), signal.SIGKILL)
