"""What a tick reports: its counts, its error, its seconds per step, and each step's progress line."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.state.status_files import TickResult

log = logging.getLogger("harness.tick.run")


@dataclass
class TickReport:
    tick_id: str
    requests_applied: int = 0
    runs_running: int = 0
    runs_succeeded: int = 0
    runs_failed: int = 0
    runs_skipped: int = 0
    starts_repaired: int = 0
    controls_applied: bool = False
    controls_error: str | None = None
    upstreams_checked: int = 0
    new_data: int = 0
    check_errors: int = 0
    failed_checks: list[str] | None = None  # each failed check's message, once; None: this tick did not sense
    freshness_missed: int = 0
    started: list[str] = field(default_factory=list)
    start_refused: list[str] = field(default_factory=list)
    start_unconfirmed: list[str] = field(default_factory=list)
    dbt_builds: int = 0
    error: str | None = None
    step: str | None = None  # the step going (the one that failed, when the tick failed)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def idle(self) -> bool:
        """Nothing started, nothing waiting for confirmation, no run going (a start re-sent and confirmed
        this tick is a run going), no error."""
        return not (self.started or self.start_unconfirmed or self.runs_running or self.starts_repaired or self.error)

    def result(self, started_at: datetime, seconds: float) -> TickResult:
        """What the health record keeps of this tick."""
        return TickResult(
            self.tick_id,
            started_at,
            seconds,
            self.error,
            steps=dict(self.seconds),
            started=self.started,
            refused=self.start_refused,
            step=self.step if self.error else None,
            controls_error=self.controls_error,
            check_errors=self.check_errors,
            failed_checks=self.failed_checks,
        )


class Step:
    """Times a step and prints its progress line."""

    def __init__(self, report: TickReport, name: str) -> None:
        self.report, self.name = report, name

    def __enter__(self) -> "Step":
        self.started = time.monotonic()
        self.report.step = self.name
        return self

    def __exit__(self, *exc: object) -> None:
        self.report.seconds[self.name] = round(
            self.report.seconds.get(self.name, 0.0) + time.monotonic() - self.started, 2
        )

    def done(self, summary: str, **counts: Any) -> None:
        """The step's progress line; `counts` (numbers, job ids) also go to structured logs as fields."""
        seconds = time.monotonic() - self.started
        log.info(
            "%-15s %s (%.1fs)",
            self.name,
            summary,
            seconds,
            extra={"tick_id": self.report.tick_id, "step": self.name, "seconds": round(seconds, 3), **counts},
        )

    def warn(self, message: str) -> None:
        """A line that needs a hand, with the step's tick id and name (fields of a JSON log line)."""
        log.warning("%s", message, extra={"tick_id": self.report.tick_id, "step": self.name})
