"""The embedded metastore's own lock: while a JVM has the Derby metastore open, it holds a POSIX lock on
`metastore_db/dbex.lck`, and a second JVM that opens the same metastore fails with Derby's XSDB6
("Another instance of Derby may have already booted the database").

A heartbeat process lets the state folder's lock go when its command returns (harness.state.lock); its
JVM exits after it, about 0.4 s later on an idle machine, and holds the metastore until then. A process
that starts a JVM on the state folder first waits for that lock to be free.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from pathlib import Path

from harness.core.errors import StateBusyError

log = logging.getLogger(__name__)

DERBY_LOCK = "dbex.lck"
WAIT_SECONDS = 30.0  # far beyond a JVM's exit; a lock held longer is a JVM that is still running
SAY_AFTER_SECONDS = 1.0


def wait_until_free(metastore: Path, seconds: float = WAIT_SECONDS, poll: float = 0.05) -> None:
    """Return once no other process holds the metastore's lock (at once when none does, or there is no
    metastore yet); raise StateBusyError when one still holds it after `seconds`."""
    try:
        fd = os.open(metastore / DERBY_LOCK, os.O_RDWR)
    except OSError:  # no metastore yet, or not ours to lock: Derby says what is wrong, if anything
        return
    started = time.monotonic()
    try:
        said = False
        while not _free(fd):
            waited = time.monotonic() - started
            if waited >= seconds:
                raise StateBusyError(
                    f"the metastore {metastore} is still open in another process after {seconds:g} s (its "
                    f"{DERBY_LOCK} is locked): a JVM of an earlier heartbeat or dbt process still runs on "
                    "this state folder; let it end, or stop it, then start this command again"
                )
            if waited >= SAY_AFTER_SECONDS and not said:  # a JVM's usual exit (a fraction of a second) goes unsaid
                log.info("waiting for the last process's JVM to let the metastore %s go", metastore)
                said = True
            time.sleep(poll)
    finally:
        os.close(fd)


def _free(fd: int) -> bool:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held by another process (EAGAIN or EACCES)
        return False
    fcntl.lockf(fd, fcntl.LOCK_UN)
    return True
