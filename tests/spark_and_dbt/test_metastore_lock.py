"""A process that starts its JVM waits for the last process's JVM to let the embedded metastore go
(harness.platform.metastore_lock). Process tests: the lock is a POSIX lock, which only another process
can hold against this one; the holder here is a small Python process, not a JVM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import StateBusyError
from harness.platform.metastore_lock import DERBY_LOCK, wait_until_free

pytestmark = pytest.mark.process

# Locks the file as Derby's JVM does, says so, holds it `seconds`, marks the moment it lets go, then stays.
HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
open(sys.argv[3], "w").close()
fcntl.lockf(fd, fcntl.LOCK_UN)
time.sleep(30)
"""


def hold(metastore: Path, seconds: float, released: Path) -> subprocess.Popen[str]:
    metastore.mkdir(parents=True)
    (metastore / DERBY_LOCK).write_text("")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(metastore / DERBY_LOCK), str(seconds), str(released)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_new_jvm_waits_until_the_last_one_lets_the_metastore_go(tmp_path: Path) -> None:
    # GIVEN the metastore's lock held by another process (the last tick's JVM, ending)
    released = tmp_path / "released"
    holder = hold(tmp_path / "metastore_db", 1.0, released)
    try:
        # WHEN this process is about to start its JVM, THEN it goes on only once the lock was let go
        wait_until_free(tmp_path / "metastore_db")
        assert released.exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_metastore_held_on_is_named_with_what_to_do(tmp_path: Path) -> None:
    # GIVEN the metastore's lock held by a process that does not end
    holder = hold(tmp_path / "metastore_db", 60.0, tmp_path / "released")
    try:
        # WHEN a process waits for it longer than it allows, THEN it is refused, naming the metastore
        with pytest.raises(StateBusyError, match=r"metastore .*metastore_db is still open in another process"):
            wait_until_free(tmp_path / "metastore_db", seconds=0.5)
    finally:
        holder.kill()
        holder.wait()


def test_no_metastore_yet_or_a_free_one_needs_no_wait(tmp_path: Path) -> None:
    wait_until_free(tmp_path / "metastore_db")  # a state folder's first process: nothing to open yet
    (tmp_path / "metastore_db").mkdir()
    (tmp_path / "metastore_db" / DERBY_LOCK).write_text("")
    wait_until_free(tmp_path / "metastore_db", seconds=0.0)  # free: no wait, so no refusal either
