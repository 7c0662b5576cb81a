"""Follows a heartbeat command's calls across the harness's shelves (docs/contributing.md) and counts the
calls that climb back up: from a module into one on a higher shelf (a callback, say). Prints the count
and each climb. For example, the demo's first ticks in a state folder of their own:

    HEARTBEAT_STATE_DIR=/tmp/walk/state HEARTBEAT_TRIGGER_ROOT=/tmp/walk/triggers \
      .venv/bin/python scripts/shelf_walk.py run --interval 5 --until-idle --max-ticks 6
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_shelves import SHELVES, shelf_of  # noqa: E402  (the shelves' order: one home, the test's)

calls: Counter[tuple[str, str]] = Counter()
climbs: Counter[tuple[str, str]] = Counter()


def harness_module(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    return name if name == "harness" or name.startswith("harness.") else None


def on_call(frame: FrameType, event: str, arg: Any) -> None:
    callee = harness_module(frame) if event == "call" else None
    if callee is None:
        return
    caller_frame = frame.f_back
    while caller_frame is not None and harness_module(caller_frame) is None:
        caller_frame = caller_frame.f_back
    caller = harness_module(caller_frame) if caller_frame is not None else None
    if caller is None or caller == callee:
        return
    calls[(caller, callee)] += 1
    if SHELVES.index(shelf_of(callee)) > SHELVES.index(shelf_of(caller)):
        climbs[(f"{caller}.{caller_frame.f_code.co_qualname}", f"{callee}.{frame.f_code.co_qualname}")] += 1  # type: ignore[union-attr]


def main() -> None:
    from harness.commands import cli

    sys.setprofile(on_call)
    threading.setprofile(on_call)
    try:
        cli.main(sys.argv[1:])
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    modules = {m for pair in calls for m in pair}
    print(f"harness modules called: {len(modules)}; calls between modules: {sum(calls.values())}")
    print(f"calls climbing to a higher shelf: {sum(climbs.values())}")
    for (caller, callee), n in climbs.most_common():
        print(f"  {n:5d}  {caller} -> {callee}")


if __name__ == "__main__":
    main()
