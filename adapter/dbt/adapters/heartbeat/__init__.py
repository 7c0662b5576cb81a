"""The `heartbeat` dbt adapter: dbt-spark's `method: session`, guarded by Heartbeat's state lock.

The embedded default keeps its metastore in an embedded Derby database, which admits one process at
a time. Run from the command line (`dbt seed`, `dbt build`, `dbt docs generate`), this adapter takes
the same lock a heartbeat tick takes before Spark touches the metastore, and holds it until dbt exits:
  - between ticks, the command runs as usual (and a tick starting meanwhile waits for the next one);
  - while a heartbeat holds the state folder, the command stops at once with a message saying so,
    instead of a metastore stack trace.
Inside the harness (Spark already runs in the process) the lock is the harness's own.
Macros and materializations are dbt-spark's (`dependencies=["spark"]`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.base import AdapterPlugin
from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark import SparkAdapter, SparkConnectionManager, SparkCredentials
from dbt_common.exceptions import DbtRuntimeError

from dbt.include import heartbeat as heartbeat_include

_held: list[Any] = []  # the lock of this dbt process, kept until it exits


def _state_dir() -> Path:
    return Path(os.environ.get("HEARTBEAT_STATE_DIR", "state")).resolve()


def guard_state() -> None:
    """Take the heartbeat's state lock for this dbt process, or stop with a clear message."""
    from pyspark import SparkContext

    # A Spark context already in this process is the harness's (it holds the lock); a session is
    # per thread and dbt runs models on worker threads, so the context is what tells.
    if _held or SparkContext._active_spark_context is not None:
        return
    from harness.errors import StateBusyError
    from harness.state_lock import StateLock

    try:
        _held.append(StateLock(_state_dir(), holder=f"dbt (pid {os.getpid()})").acquire())
    except StateBusyError as exc:
        raise DbtRuntimeError(
            f"{exc}. dbt cannot open the embedded metastore while it runs. A changed controls CSV "
            "needs no `dbt seed`: the heartbeat validates and loads it at its next tick. For other dbt "
            "commands, stop `python -m harness run` (Ctrl-C) or run them between ticks."
        ) from None


@dataclass
class HeartbeatCredentials(SparkCredentials):
    @property
    def type(self) -> str:
        return "heartbeat"


class HeartbeatConnectionManager(SparkConnectionManager):
    TYPE = "heartbeat"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        guard_state()
        return super().open(connection)


class HeartbeatAdapter(SparkAdapter):
    ConnectionManager = HeartbeatConnectionManager


Plugin = AdapterPlugin(
    adapter=HeartbeatAdapter,  # type: ignore[arg-type]
    credentials=HeartbeatCredentials,
    include_path=heartbeat_include.PACKAGE_PATH,
    dependencies=["spark"],
)
