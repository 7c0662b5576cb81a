"""Named points where the fault-injection tests stop the heartbeat, as a lost node or an OOM kill would.

Only tests set HEARTBEAT_CRASH_AT, to `name` or `name@N` (the N-th time this process reaches the point).
There the whole process group (the Python process, its Spark JVM, dbt) is killed with SIGKILL. Unset,
a crash point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

CRASH_ENV = "HEARTBEAT_CRASH_AT"
_reached: Counter[str] = Counter()


def crash_point(name: str) -> None:
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition("@")
    if point != name:
        return
    _reached[name] += 1
    if _reached[name] == int(nth or 1):
        os.killpg(os.getpgid(0), signal.SIGKILL)
