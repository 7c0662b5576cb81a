"""Launches the local runs' supervisors by forking itself: one small Python process per heartbeat
process, instead of a new interpreter per run (which cost each start about 30-70 ms of CPU: 250 starts
of one busy tick took 18 s).

The heartbeat writes one run folder per line (JSON text) to this process's stdin. For each, it forks
twice: the grandchild, in a session of its own with /dev/null as its standard streams, is the run's
supervisor (harness.backends.local_supervisor: the same claim, so the same one-run-per-token rule); the
child between them exits at once, so the supervisor belongs to no heartbeat process and outlives both.
The launcher ends when its stdin closes, that is when the heartbeat process that started it ended; a
line written before that is still launched.
Usage: python -m harness.backends.local_launcher
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from harness.backends.local_supervisor import supervise


def main() -> int:
    for line in sys.stdin:
        if line.strip():
            launch(Path(json.loads(line)))
    return 0


def launch(run_dir: Path) -> None:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setsid()
            if os.fork() == 0:
                code = _supervise_detached(run_dir)
        except BaseException:  # noqa: BLE001 - a forked child never returns into the launcher's loop
            code = 1
        os._exit(code)
    os.waitpid(pid, 0)


def _supervise_detached(run_dir: Path) -> int:
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        return supervise(run_dir)
    except BaseException:  # noqa: BLE001 - nothing to report to: the run's poll sees no result
        return 1


if __name__ == "__main__":
    sys.exit(main())
