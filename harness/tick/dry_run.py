"""`python -m harness tick --dry-run`: what a tick would do now, doing none of it.

It senses every eligible row (the same checks as a tick), then asks the trigger set's rules which jobs
would start over the control table as those detections would leave it (the model
heartbeat_trigger_set_as_if, the query a tick starts its jobs by: harness.state.tables), and
prints each such job with its change range. It appends no event, starts no run, and folds nothing:
when events wait to be folded, or the controls CSV is not the one the control table holds, it says so
(the next tick folds them or loads it first, which may change the answer).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.controls import MISSING, file_version
from harness.core.errors import ControlsError
from harness.core.vocabulary import ControlRow, JobState
from harness.state.tables import Detection, JobDecision, as_detected, detections
from harness.tick.fold import csv_changed, refusal
from harness.tick.runtime import Runtime
from harness.tick.sensing import sense
from harness.tick.triggering import TriggeredRow, change_range

log = logging.getLogger("harness.tick.dry_run")


@dataclass
class DryRun:
    rows_sensed: int = 0
    upstreams_checked: int = 0
    detections: list[Detection] = field(default_factory=list)
    check_errors: list[str] = field(default_factory=list)
    decisions: list[JobDecision] | None = None
    would_start: list[dict[str, Any]] = field(default_factory=list)  # change ranges, as a start would send them
    unfolded: bool = False
    controls_note: str | None = None  # the controls CSV differs from the one the control table holds
    parted: dict[str, list[str]] = field(default_factory=dict)  # job -> its rows whose new range a tick parts


def dry_run(runtime: Runtime) -> DryRun:
    out = DryRun(
        unfolded=runtime.events.unfolded,
        controls_note=controls_note(runtime.config.controls_csv, runtime.tables.controls_digest()),
    )
    rows = runtime.tables.sensed_rows()
    sensed = sense(rows, runtime.sensors, runtime.spark, runtime.config)
    out.rows_sensed, out.upstreams_checked = len(rows), sensed.upstreams
    out.detections = detections(sensed.events)
    out.check_errors = sensed.failed_checks
    out.decisions = runtime.tables.job_decisions_as_if(out.detections)
    if out.decisions is None:
        return out
    rows_by_job: dict[str, list[ControlRow]] = {}
    for row in as_detected(runtime.tables.control_rows(), out.detections):
        rows_by_job.setdefault(row.key.trigger_job_id, []).append(row)
    detected = {d.key for d in out.detections}
    for decision in out.decisions:
        if decision.should_start:
            rows = [r for r in rows_by_job.get(decision.job_id, []) if r.job_state == JobState.UNPAUSED.value]
            out.would_start.append(change_range(decision.job_id, "dry-run", [TriggeredRow.of(r) for r in rows]))
            # a tick folds first for these (the control table says where the part ends); a dry run folds nothing
            parted = [f"{r.label} (max_range {r.max_range})" for r in rows if r.max_range and r.key in detected]
            if parted:
                out.parted[decision.job_id] = parted
    return out


def controls_note(path: Path, held: str | None) -> str | None:
    """None when the control table holds the controls CSV at `path` as it is (`held`: the digest of the one
    it holds); else what the next tick does with the file."""
    try:
        if not csv_changed(path, held):  # what a tick's fold asks of the file
            return None
    except ControlsError as exc:
        if file_version(path) == MISSING:
            return f"the controls CSV {path} is missing or unreadable: ticks keep the control table as it is"
        return f"the controls CSV is refused, so ticks keep the last valid one: {refusal(str(exc))}"
    return (
        "the controls CSV changed since the control table loaded it: the next tick loads it first, which may "
        "change this answer"
    )
