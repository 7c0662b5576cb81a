"""One heartbeat process at a time per state folder (the embedded Derby metastore admits one JVM).

The lock file is opened read-write and locked with `flock`, which a Unity Catalog volume does not
provide: for a state folder on a volume it lives on the node's local disk (harness.core.state_layout.local_folder),
so it excludes a second heartbeat on the same node only. Two heartbeat jobs are kept apart by the job's
own setting (`max_concurrent_runs: 1`, queueing off): see docs/production.md.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from harness.core.errors import HeartbeatError, StateBusyError
from harness.core.state_layout import StateLayout


class StateLock:
    """An exclusive, non-blocking lock on `<state>/heartbeat.lock`, released when the process ends."""

    def __init__(self, state_dir: Path, holder: str | None = None) -> None:
        self.path = StateLayout(state_dir).lock
        self.description = holder or f"heartbeat (pid {os.getpid()})"
        self._fd: int | None = None

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def acquire(self) -> "StateLock":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # read-only, no permission, a file in the folder's place: said in a line
            raise HeartbeatError(
                f"the state folder {self.path.parent} cannot be written ({exc.strerror}: {exc.filename}): a tick "
                "writes its lock, events and tables there; check that it is mounted read-write and that this "
                "user may write it"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StateBusyError(
                f"another heartbeat process ({self.holder()}) holds the state folder {self.path.parent}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, self.description.encode())
        self._fd = fd
        return self

    def current_holder(self) -> str | None:
        """Who holds the lock now, or None when nobody does (probed without keeping it)."""
        if not self.path.exists():
            return None
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return self.holder()
        finally:
            os.close(fd)
        return None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "StateLock":
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
