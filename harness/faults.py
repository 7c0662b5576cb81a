"""Named points where the fault-injection tests stop the heartbeat, as a lost node or an OOM kill would.

Only tests set HEARTBEAT_CRASH_AT, to `name` (the first time this process reaches the point) or
`name@T` (the first time it is reached during tick T of this process, so that the ticks before it run
whole). There the whole process group (the Python process, its Spark JVM, dbt) is killed with SIGKILL.
Unset, a crash point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "HEARTBEAT_CRASH_AT"
_tick = 0


def tick_started() -> None:
    global _tick
    _tick += 1


def crash_point(name: str) -> None:
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    point, _, tick = wanted.partition("@")
    if point == name and (not tick or int(tick) == _tick):
        os.killpg(os.getpgid(0), signal.SIGKILL)
