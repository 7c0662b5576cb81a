"""`python -m harness tick --dry-run`: what a tick would do now, doing none of it.

It senses every eligible row (the same checks as a tick), then asks the trigger set's own SQL which
jobs would start over the control table as those detections would leave it (harness.tables), and
prints each such job with its change range. It appends no event, starts no run, and folds nothing:
when events wait to be folded, it says so (the next tick folds them first, which may change the answer).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from harness.model import ControlRow, EventType, JobState
from harness.runtime import Runtime
from harness.sensing import sense
from harness.tables import Detection, JobDecision
from harness.triggering import TriggeredRow, change_range

log = logging.getLogger("harness.dry_run")


@dataclass
class DryRun:
    rows_sensed: int = 0
    upstreams_checked: int = 0
    detections: list[Detection] = field(default_factory=list)
    check_errors: list[str] = field(default_factory=list)
    decisions: list[JobDecision] | None = None
    would_start: list[dict[str, Any]] = field(default_factory=list)  # change ranges, as a start would send them
    unfolded: bool = False


def dry_run(runtime: Runtime) -> DryRun:
    out = DryRun(unfolded=runtime.events.unfolded)
    rows = runtime.tables.sensed_rows()
    sensed = sense(rows, runtime.sensors, runtime.spark, runtime.config)
    out.rows_sensed, out.upstreams_checked = len(rows), sensed.upstreams
    for event in sensed.events:
        if event.event_type is EventType.DATA_CHANGED and event.row is not None and event.status:
            out.detections.append(Detection(event.row, event.status, event.watermark_after, event.event_time))
        elif event.event_type is EventType.CHECK_FAILED:
            out.check_errors.append(event.message or "")
    out.decisions = runtime.tables.job_decisions_as_if(out.detections)
    if out.decisions is None:
        return out
    detected = {d.key: d for d in out.detections}
    rows_by_job: dict[str, list[ControlRow]] = {}
    for row in runtime.tables.control_rows():
        if row.key in detected:
            row = replace(row, status=detected[row.key].status, watermark=detected[row.key].watermark)
        rows_by_job.setdefault(row.key.trigger_job_id, []).append(row)
    for decision in out.decisions:
        if decision.should_start:
            started = [TriggeredRow(r.key, r.last_success_watermark, r.watermark, r.status, r.is_hard_dependency)
                       for r in rows_by_job.get(decision.job_id, []) if r.job_state == JobState.UNPAUSED.value]
            out.would_start.append(change_range(decision.job_id, "dry-run", started))
    return out
