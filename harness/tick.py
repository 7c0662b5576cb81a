"""The tick: the one place that orders the steps.

  1. apply requests queued in the inbox (`complete`, `retry`);
  2. track runs: re-send unconfirmed starts, poll started runs, record their ends, find hand-made
     successes of failed jobs;
  3. dbt build of the heartbeat models (with the controls seed when the CSV changed);
  4. sense every eligible row, one check per distinct upstream; append what changed;
  5. dbt build again when step 4 found something;
  6. start the jobs the trigger set marks ready.
Runs ended in step 2 are visible to this tick's sensing; jobs started in step 6 are polled next tick.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from harness import dbt_runner, inbox, tables
from harness.controls import file_digest, read_controls
from harness.errors import ControlsError, DbtError, HeartbeatError
from harness.events import Event
from harness.model import ControlRow, EventType
from harness.runtime import Runtime
from harness.sensing import sense
from harness.triggering import manual_events, open_runs, recover_failed_jobs, start_jobs, track_runs

log = logging.getLogger("harness.tick")

# dbt unit tests check the rules themselves (run by the test suite), not the data: never in a tick.
NO_UNIT_TESTS = ["--exclude-resource-type", "unit_test"]
# Without a new CSV: refresh the models only (the seed and its data tests ran when it was loaded).
MODELS_ONLY = NO_UNIT_TESTS + ["--exclude-resource-type", "test", "--exclude-resource-type", "seed"]


@dataclass
class TickReport:
    tick_id: str
    requests_applied: int = 0
    runs_running: int = 0
    runs_succeeded: int = 0
    runs_failed: int = 0
    starts_repaired: int = 0
    controls_applied: bool = False
    controls_error: str | None = None
    upstreams_checked: int = 0
    new_data: int = 0
    check_errors: int = 0
    started: list[str] = field(default_factory=list)
    start_refused: list[str] = field(default_factory=list)
    start_unconfirmed: list[str] = field(default_factory=list)
    dbt_builds: int = 0
    error: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)


class Step:
    """Times a step and prints its progress line."""

    def __init__(self, report: TickReport, name: str) -> None:
        self.report, self.name = report, name

    def __enter__(self) -> "Step":
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.report.seconds[self.name] = round(time.monotonic() - self.started, 2)

    def done(self, summary: str) -> None:
        log.info("%-15s %s (%.1fs)", self.name, summary, time.monotonic() - self.started)


def applied_digest_path(runtime: Runtime) -> Path:
    return runtime.config.state_dir / "controls.applied.sha256"


def apply_requests(runtime: Runtime) -> int:
    """`complete` and `retry` requests queued while this process held the state."""
    requests = inbox.pending(runtime.config.state_dir)
    if not requests:
        return 0
    rows = tables.control_rows(runtime.spark)
    for request in requests:
        events = request_events(rows, request.command, str(request.args.get("job_id")),
                                f"requested at {request.requested_at.isoformat()}")
        runtime.events.append(events)
        inbox.done(request)
    return len(requests)


def request_events(rows: list[ControlRow], command: str, job_id: str, when: str) -> list[Event]:
    job_rows = [r for r in rows if r.key.trigger_job_id == job_id]
    if command == "complete":
        return manual_events(job_rows, EventType.MANUAL_COMPLETE, f"job {job_id}: completed by hand ({when})")
    if command == "retry":
        return manual_events(job_rows, EventType.RETRY_REQUESTED,
                             f"job {job_id}: retry requested ({when}); the next run covers the failed range")
    raise HeartbeatError(f"unknown request {command!r}")


def controls_changed(runtime: Runtime) -> bool:
    """Validate a changed CSV; True when it must be (re)loaded. A bad file keeps the last good one."""
    path = runtime.config.controls_csv
    digest = file_digest(path) if path.exists() else ""
    applied = applied_digest_path(runtime)
    seeded = tables.exists(runtime.spark, "heartbeat_controls")
    if seeded and applied.exists() and applied.read_text().strip() == digest:
        return False
    read_controls(path)  # raises ControlsError naming every bad row
    return True


def record_rejection(runtime: Runtime, message: str) -> None:
    """One CONFIG_REJECTED event per refused version of the CSV, not one per tick."""
    marker = runtime.config.state_dir / "controls.rejected.sha256"
    digest = file_digest(runtime.config.controls_csv) if runtime.config.controls_csv.exists() else "missing"
    if marker.exists() and marker.read_text().strip() == digest:
        return
    runtime.events.append([Event(EventType.CONFIG_REJECTED, message=message)])
    marker.write_text(digest)


def build(runtime: Runtime, report: TickReport, with_seed: bool) -> None:
    """Refresh the heartbeat models. The views (staging, intermediate, eligibility, trigger set) are
    created by the process's first build; after that only the control table, the one table, is rebuilt."""
    if with_seed or not runtime.views_built:
        select = ["+heartbeat_trigger_set", "+heartbeat_sensing_eligibility"]
    else:
        select = ["heartbeat_control_table"]
    args = ["build", "--select", *select, *(NO_UNIT_TESTS if with_seed else MODELS_ONLY)]
    # The digest of the file dbt is about to load: a file edited during the build is loaded next tick.
    loaded = file_digest(runtime.config.controls_csv) if with_seed else None
    dbt_runner.invoke(runtime.config, runtime.table_format, args)
    if loaded:
        applied_digest_path(runtime).write_text(loaded)
        report.controls_applied = True
    runtime.views_built = True
    report.dbt_builds += 1


def run_tick(runtime: Runtime) -> TickReport:
    report = TickReport(tick_id=uuid.uuid4().hex[:12])
    runtime.events.tick_id = report.tick_id
    config = runtime.config

    with Step(report, "requests") as step:
        report.requests_applied = apply_requests(runtime)
        step.done(f"{report.requests_applied} applied")

    with Step(report, "track runs") as step:
        runs = open_runs(runtime.events, track_days=max(30.0, config.runs.stuck_after_seconds / 86400 * 4))
        tracked = track_runs(runs, runtime.backend, config.runs.stuck_after_seconds)
        recovered = recover_failed_jobs(tables.control_rows(runtime.spark), runtime.backend)
        runtime.events.append(tracked.events + recovered)
        report.runs_running, report.runs_succeeded = tracked.running, tracked.succeeded
        report.runs_failed, report.starts_repaired = tracked.failed, tracked.repaired
        step.done(f"{len(runs)} open: {tracked.running} running, {tracked.succeeded} succeeded, "
                  f"{tracked.failed} failed, {tracked.repaired} starts repaired, "
                  f"{len(recovered)} rows recovered by a later success")

    with Step(report, "dbt build") as step:
        try:
            with_seed = controls_changed(runtime)
        except ControlsError as exc:
            with_seed = False
            report.controls_error = str(exc)
            record_rejection(runtime, str(exc))
            log.error("%s", exc)
            log.error("the control table keeps the last valid controls CSV until the file is fixed")
        try:
            build(runtime, report, with_seed)
        except DbtError as exc:
            report.error = str(exc)
            log.error("%s", exc)
            return report
        step.done(f"control table refreshed{' with the new controls CSV' if with_seed else ''}")

    with Step(report, "sense") as step:
        rows = tables.sensed_rows(runtime.spark)
        sensed = sense(rows, runtime.sensors, runtime.spark, config)
        runtime.events.append(sensed.events)
        report.upstreams_checked, report.new_data, report.check_errors = sensed.upstreams, sensed.new_data, sensed.errors
        for e in sensed.events:
            if e.event_type is EventType.CHECK_FAILED:
                log.warning("%s", e.message)
        for label, reason in sensed.nothing_new.items():
            log.debug("%s: nothing new: %s", label, reason)
        step.done(f"{len(rows)} rows, {sensed.upstreams} upstreams checked: {sensed.new_data} with new data, "
                  f"{sensed.errors} errors")

    if sensed.new_data:
        with Step(report, "dbt rebuild") as step:
            try:
                build(runtime, report, with_seed=False)
            except DbtError as exc:
                report.error = str(exc)
                log.error("%s", exc)
                return report
            step.done("control table refreshed with the new data")

    with Step(report, "start jobs") as step:
        decisions = tables.job_decisions(runtime.spark)
        ready = [(d.job_id, d.job_name) for d in decisions if d.should_start]
        rows_by_job: dict[str, list[ControlRow]] = defaultdict(list)
        if ready:
            for row in tables.control_rows(runtime.spark):
                rows_by_job[row.key.trigger_job_id].append(row)
        started = start_jobs(ready, rows_by_job, runtime.backend, runtime.events)
        report.started, report.start_refused = started.started, started.refused
        report.start_unconfirmed = started.unconfirmed
        step.done(f"{len(decisions)} jobs, {len(ready)} ready: {len(started.started)} started, "
                  f"{len(started.refused)} refused, {len(started.unconfirmed)} unconfirmed")
    return report
