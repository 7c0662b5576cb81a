"""The job backend interface: start a run idempotently, poll it, find a later success by hand."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Mapping


@dataclass(frozen=True)
class RunRequest:
    job_id: str
    job_name: str | None
    idempotency_token: str  # the same request always carries the same token (<= 64 chars)
    change_range: Mapping[str, Any] = field(default_factory=dict)  # handed to the run


class RunState(str, Enum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"  # failed, timed out or cancelled
    # The workspace did not run it: another run of the job was going (max_concurrent_runs), its queue
    # or the workspace's run limit was full. Nothing ran, so nothing failed: the range is started again.
    SKIPPED = "SKIPPED"


@dataclass(frozen=True)
class RunStatus:
    state: RunState
    message: str = ""
    ended_at: datetime | None = None


@dataclass(frozen=True)
class LaterSuccess:
    """A run of a failed job that succeeded after the failure (started or repaired by hand)."""

    run_id: str
    ended_at: datetime | None = None  # the run's own end, when the backend says it


class StartRefused(Exception):
    """The backend definitely did not start the run (unknown job, no permission, bad request).
    A later attempt may use a new token."""


class StartUncertain(Exception):
    """The backend did not confirm the start (timeout, 5xx, retries exhausted): the run may exist.
    The same token must be re-sent; a new token could start a second run."""


class JobBackend(ABC):
    name: str

    @abstractmethod
    def start(self, request: RunRequest) -> str:
        """Start (or find, for a token already used) the run; return its run id.
        Raise StartRefused or StartUncertain."""

    @abstractmethod
    def poll(self, job_id: str, run_id: str) -> RunStatus:
        """The run's state now. Raise BackendError when it cannot be read."""

    def successful_run_after(
        self, job_id: str, since: datetime, failed_run_id: str | None = None
    ) -> LaterSuccess | None:
        """A run of the job that succeeded after `since` (started by hand), or the failed run
        `failed_run_id` itself, repaired since and succeeded, if the backend can tell."""
        return None
