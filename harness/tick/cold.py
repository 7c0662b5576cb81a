"""A tick process's first look, without Spark or dbt: when there is nothing to record, it ends there.

`python -m harness tick` from cron starts cold. Most ticks find nothing new, and a JVM, a metastore and
a dbt parse cost 30 s before the first step. The last tick left everything a tick with nothing new
reads in its status snapshot (`status.json`, harness.state.status_files): every row's status and watermark, which
rows are sensed, the jobs' decisions and until when they hold, the open runs, the controls CSV's
digest and the fold the snapshot shows. When that snapshot is current, this tick does what a warm tick
does: polls the open runs, checks every sensed upstream whose check needs no Spark (the README names
them) and judges freshness.

At the first thing that would be recorded or started (an ended run, new data, a failed check, a stale
upstream or one to start watching, a ready job, a queued request, a changed CSV or dbt project) or that
needs Spark (a source read through Spark), it hands over: the full tick (harness.tick.run) opens Spark
and does everything again from the tables, so every decision is a warm tick's. It takes this look's
checks of the rows the tables still show as the snapshot did (harness.tick.sensing.FirstLook), so each
upstream is checked once a tick. Nothing here writes an event, so a kill at any point leaves the state
as it was.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from harness.core.config import Config
from harness.core.controls import MISSING, file_version, read_controls
from harness.core.errors import ControlsError
from harness.core.vocabulary import EventType, RowKey, SensorSource, control_row, utc
from harness.platform.dbt_runner import project_digest
from harness.sensors import build_registry
from harness.state.event_log import now
from harness.state.status_files import (
    confirm_snapshot,
    filtered_before,
    last_failed_checks,
    read_snapshot,
    record_waiting,
    snapshot_as_read,
    snapshot_trigger_set,
    write_snapshot_body,
)
from harness.state.tables import FOREVER, open_run_row
from harness.tick import inbox, publications, retention
from harness.tick.fold import fold_id, still_refused
from harness.tick.freshness import judged, stale_rows, to_watch
from harness.tick.runtime import build_backend
from harness.tick.sensing import FirstLook, sense, to_record
from harness.tick.steps import Step, TickReport
from harness.tick.triggering import open_runs, recover_failed_jobs, track_runs

if TYPE_CHECKING:
    from harness.tick.runtime import Runtime

log = logging.getLogger("harness.tick.run")
SOURCE_KINDS = {s.value for s in SensorSource}


def facts(runtime: Runtime) -> dict[str, Any]:
    """What the snapshot keeps for the next cold tick, read from the tables this tick already read."""
    tables = runtime.tables
    return {
        "fold_id": fold_id(runtime.config.state_dir),
        "controls_sha256": tables.controls_digest(),
        "sensed": [[r.key.sensor_source, r.key.sensor_id, r.key.trigger_job_id] for r in tables.sensed_rows()],
        "open_runs": tables.open_run_records(),
        "decisions_valid_until": tables.decisions_valid_until().isoformat(),
    }


@dataclass(frozen=True)
class Handover:
    """Why this tick needs the full tick; the snapshot when it shows the tables as they are now, and the
    look's sensing when it got that far."""

    reason: str
    snapshot: dict[str, Any] | None = None
    look: FirstLook | None = None


def keep_readings(runtime: Runtime, snapshot: dict[str, Any]) -> None:
    """The full tick takes what a current snapshot holds as its readings of the tables (they change only
    at a fold, and none happened since; the decisions also with the clock, at `decisions_until`): it reads
    none of them again before its first fold, so a tick that records nothing reads no table (nor writes
    the snapshot whole again)."""
    runtime.tables.keep(
        snapshot["rows"],
        {RowKey(*key) for key in snapshot["sensed"]},
        snapshot["open_runs"],
        snapshot["controls_sha256"],
        snapshot_trigger_set(snapshot),
        decisions_until(snapshot),
    )
    as_read = snapshot_as_read(runtime.tables.config.state_dir, snapshot)
    if as_read is not None:
        runtime.snapshot_written = (runtime.tables.readings_shown(), as_read)


def run(config: Config, report: TickReport) -> Handover | None:
    """The tick from the snapshot; None when it is done (nothing to record), else why Spark is needed."""
    snapshot = read_snapshot(config.state_dir)
    stale = _snapshot_stale(config, snapshot)
    if stale or snapshot is None:
        return Handover(stale or "no status snapshot yet")
    handover = _first_look(config, report, snapshot)
    return None if handover is None else replace(handover, snapshot=snapshot)


def _first_look(config: Config, report: TickReport, snapshot: dict[str, Any]) -> Handover | None:
    """What a warm tick does, from a current snapshot, up to the first thing to record or start."""
    with Step(report, "requests") as step:
        queued = len(inbox.pending(config.state_dir)) + len(publications.queued(config.state_dir))
        if queued:
            return Handover(f"{queued} requests or publications queued")
        step.done("0 applied", applied=0)

    rows = {r.key: r for r in map(control_row, snapshot["rows"])}
    with Step(report, "track runs") as step:
        runs = open_runs([open_run_row(r) for r in snapshot["open_runs"]])
        if any(run.run_id is None for run in runs):
            return Handover("a start to confirm")
        backend = build_backend(config)
        tracked = track_runs(runs, backend, config.settings.runs.stuck_after_seconds)
        recovered = recover_failed_jobs(list(rows.values()), backend)
        if tracked.events or recovered:
            return Handover(f"{len(tracked.events) + len(recovered)} run events to record")
        report.runs_running = tracked.running
        step.done(
            f"{len(runs)} open: {tracked.running} running, 0 succeeded, 0 failed, 0 starts repaired, "
            "0 rows recovered by a later success",
            open=len(runs),
            running=tracked.running,
        )

    with Step(report, "fold") as step:
        controls_error = _controls_error(config, snapshot)
        if isinstance(controls_error, Handover):
            return controls_error
        report.controls_error = controls_error
        if controls_error:
            step.warn(still_refused(controls_error))
        step.done("skipped: nothing new since the last fold", skipped=True)

    with Step(report, "sense") as step:
        sensed = [row for row in (rows.get(RowKey(*key)) for key in snapshot["sensed"]) if row is not None]
        kinds = {SensorSource(r.key.sensor_source) for r in sensed if r.key.sensor_source in SOURCE_KINDS}
        at = now()
        outcome = sense(
            sensed,
            build_registry(config, kinds),
            None,
            config,
            at=at,
            filtered_before=filtered_before(config.state_dir),
        )
        look = FirstLook({r.key: r for r in sensed}, outcome, at)
        recorded = to_record(outcome, sensed, last_failed_checks(config.state_dir))
        if recorded:
            failed = sum(1 for e in recorded if e.event_type is EventType.CHECK_FAILED)
            watched = sum(1 for e in recorded if e.event_type is EventType.WATCH_STARTED)
            return Handover(
                f"{outcome.new_data} rows with new data, {failed} checks to record or to read through Spark"
                + (f", {watched} rows with start_from now to watch from where their upstream is" if watched else ""),
                look=look,
            )
        record_waiting(config.state_dir, outcome.nothing_new, outcome.filtered)
        report.upstreams_checked, report.check_errors = outcome.upstreams, outcome.errors
        report.failed_checks = outcome.failed_checks  # failing as in the last tick, and recorded then
        for message in report.failed_checks:
            log.warning("%s", message)
        step.done(
            f"{len(sensed)} rows, {outcome.upstreams} upstreams checked: 0 rows with new data, {outcome.errors} errors",
            rows=len(sensed),
            upstreams=outcome.upstreams,
            new_data=0,
            errors=outcome.errors,
        )

    judged_rows = judged(sensed, outcome.events)
    if stale_rows(sensed, judged_rows, datetime.now(timezone.utc)):
        return Handover("upstreams newly stale", look=look)
    if to_watch(sensed, judged_rows):
        return Handover("rows with an expected_within and no data yet to watch from now", look=look)

    with Step(report, "start jobs") as step:
        jobs = snapshot["jobs"]
        if any(job["should_start"] for job in jobs):
            return Handover("jobs ready to start", look=look)
        step.done(f"{len(jobs)} jobs, 0 ready: 0 started, 0 refused, 0 unconfirmed", jobs=len(jobs), ready=0)

    as_read = snapshot_as_read(config.state_dir, snapshot)
    if as_read is None or confirm_snapshot(config.state_dir, report.tick_id, as_read) is None:
        snapshot.update(written_at=datetime.now(timezone.utc).isoformat(), tick_id=report.tick_id)
        write_snapshot_body(config.state_dir, snapshot)
    return None


def decisions_until(snapshot: dict[str, Any]) -> datetime:
    """Until when the snapshot's decisions hold without a new event (the clock alone changes them then)."""
    return utc(snapshot["decisions_valid_until"] or FOREVER.isoformat())


def _snapshot_stale(config: Config, snapshot: dict[str, Any] | None) -> str | None:
    """Why the snapshot does not show the state as it is now (None: it does)."""
    if snapshot is None or "fold_id" not in snapshot:
        return "no status snapshot of a previous tick"
    if config.layout.events_unfolded.exists():
        return "events to fold"
    if snapshot["fold_id"] is None or snapshot["fold_id"] != fold_id(config.state_dir):
        return "the control table changed since the last snapshot"
    recorded = config.layout.models_digest
    if not recorded.exists() or recorded.read_text().strip() != project_digest(config):
        return "the dbt project or its vars changed since the models were built (a controls CSV gone or back is a var)"
    if datetime.now(timezone.utc) >= decisions_until(snapshot):
        return "a waiting job may start now (a refused start retried, or its time condition met)"
    if retention.due(config, datetime.now(timezone.utc).date()):
        return "retention is due"
    return None


def _controls_error(config: Config, snapshot: dict[str, Any]) -> str | Handover | None:
    """None when the seed holds the controls CSV; its refusal when this version (or its absence) was
    refused (and recorded) before; a Handover when it changed."""
    path = config.controls_csv
    digest = file_version(path)
    if digest == snapshot["controls_sha256"]:
        return None
    marker = config.layout.controls_rejected
    if not marker.exists() or marker.read_text().strip() != digest:
        return Handover(
            "the controls CSV is missing or unreadable" if digest == MISSING else "the controls CSV changed"
        )
    try:
        read_controls(path)
    except ControlsError as exc:
        return str(exc)
    return Handover("the controls CSV changed")
