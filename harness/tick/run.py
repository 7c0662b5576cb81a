"""The tick: the one place that orders the steps.

  1. track runs: re-send unconfirmed starts, poll started runs, record their ends (a success publishes
     the tables its job writes, `publications.on_success`), find hand-made successes of failed jobs;
  2. requests: apply `complete` / `retry` requests, imports of the lakehouse engine's state
     (harness.tick.imports) and publications queued in the inbox (after the runs' ends, so a request made
     before its run was seen to succeed does not undo the success);
  3. fold: bring the control table up to date (dbt), only when something changed (harness.tick.fold);
  4. sense every eligible row, one check per distinct upstream; append what changed;
     rows with an expected_within that missed it get FRESHNESS_MISSED (harness.tick.freshness);
  5. start the jobs the trigger set marks ready: its rules over the control table as this tick's
     detections leave it (the model heartbeat_trigger_set_as_if, Tables.job_decisions_as_if), so that
     they need no fold of their own; then the next part of each queued backfill whose job is free
     (harness.tick.backfill);
  6. fold what this tick appended (one fold for its detections, intents and outcomes), and write the
     status snapshot: what `status` shows is the state this tick left. A tick with nothing new does no
     dbt work and reads no table (harness.state.tables);
  7. once a day, when `events.keep_days` is set, compact the old days of the event log (harness.tick.retention);
     a recent day crowded with small files (one an append) is rewritten as one (harness.state.event_compaction);
  8. add the files this tick appended to the event index, which `why` and `events` read
     (harness.state.event_index).
Every tick's outcome goes to the health record (`status` shows failing ticks).
"""

from __future__ import annotations

import logging
import shlex
import sqlite3
import time
import uuid
from collections import defaultdict
from datetime import date, datetime, timezone
from typing import Callable, Collection, Mapping, Sequence

from harness.core.config import Config
from harness.core.controls import read_controls
from harness.core.errors import ControlsError, DbtError, HeartbeatError, disk_full, root_cause
from harness.core.faults import crash_point, tick_started
from harness.core.vocabulary import ControlRow, EventType, RowKey
from harness.state import event_compaction, event_index
from harness.state.event_log import Event
from harness.state.event_reader import events_folder, refresh_index
from harness.state.status_files import (
    confirm_snapshot,
    filtered_before,
    last_failed_checks,
    record_tick,
    record_waiting,
    write_snapshot,
)
from harness.state.tables import as_detected, detections
from harness.tick import backfill, cold, fold, imports, inbox, publications, retention, rewind
from harness.tick.freshness import freshness_events, watch_events
from harness.tick.runtime import Runtime
from harness.tick.sensing import FirstLook, sense_once, to_record
from harness.tick.steps import Step, TickReport
from harness.tick.triggering import (
    OpenRun,
    describe_ranges,
    open_runs,
    recover_failed_jobs,
    start_jobs,
    track_runs,
)

log = logging.getLogger("harness.tick.run")


# The events that record the end of a run (a rewind waiting for its job's run applies in their tick).
RUN_ENDS = (EventType.RUN_SUCCEEDED, EventType.RUN_FAILED, EventType.RUN_SKIPPED, EventType.RUN_START_FAILED)


def apply_requests(runtime: Runtime, tracked: list[Event], running: Mapping[str, str]) -> int:
    """The queued publications and `complete` / `retry` requests, oldest first, after this tick's run
    ends (`tracked`). A request closes its job's latest run once: one that finds no run of its job to
    close, or a run this tick already closed (found succeeded, or closed by an earlier request), is
    dropped (the run's own outcome, or the first request, stands). A `retry` of a job whose run its
    backend says is still going (`running`: job -> run, from this tick's polls) is dropped: it would
    start the job a second time beside that run, whose end would never be recorded. (A run the backend
    cannot tell of, lost or unreadable, is retried: that is what `retry` is for.) A dropped request is
    said in the log and recorded on its job's rows (REQUEST_DROPPED), which `status` and `why` show.
    A `rewind` (harness.tick.rewind) waits in the queue while its job's run is going, and is applied in
    the tick that records the run's end, after it."""
    published = publications.apply_queued(runtime.events, runtime.config.state_dir)
    requests = inbox.pending(runtime.config.state_dir)
    if not requests:
        return published
    closed = {  # job -> what closed its run in this tick
        e.row.trigger_job_id: f"its run succeeded ({e.message or e.event_type.value})"
        for e in tracked
        if e.row is not None and e.event_type in (EventType.RUN_SUCCEEDED, EventType.MANUAL_COMPLETE)
    }
    rows = runtime.tables.control_rows()
    ended = {e.row.trigger_job_id for e in tracked if e.row is not None and e.event_type in RUN_ENDS}
    applied = 0
    imported: set[RowKey] = set()  # rows an import of this tick set already
    for request in requests:
        when = f"requested at {request.requested_at.isoformat()}"
        if request.command == imports.COMMAND:
            applied += apply_import(runtime, request, rows, imported)
            crash_point("requests:applied")
            inbox.done(request)
            continue
        named = f"{request.command} of job {request.job_id} {when}"
        dropped = None
        if request.command == "backfill":
            continue  # planned and started by the start step (harness.tick.backfill)
        if request.command == "rewind":
            events = rewind.apply(runtime, request, rows, ended | closed.keys())
            if events is None:
                continue  # it waits in the queue for the job's run to end
            runtime.events.append(events)
            crash_point("request:rewind-recorded")
            applied += any(e.event_type is EventType.REWOUND for e in events)
            inbox.done(request)
            continue
        if request.job_id in closed:
            dropped = f"{named}: {closed[request.job_id]} before it was applied; nothing done"
        elif any(r.backfill_going for r in rows if r.key.trigger_job_id == request.job_id):
            dropped = (
                f"{named}: the job's run going is a backfill part's, whose end puts its rows back as they were "
                f"(moving no watermark); a {request.command} applies to a regular run; nothing done"
            )
        elif request.command == "retry" and request.job_id in running:
            dropped = (
                f"{named}: its run {running[request.job_id]} is still running (its backend says so this tick): a "
                "retry would start the job a second time beside it; nothing done. Wait for the run to end (retry "
                "it if it fails), or cancel it in its backend, then retry"
            )
        elif events := request.events(rows, when):
            runtime.events.append(with_publications(runtime, events))
            closed[request.job_id] = f"its run was closed by the {request.command} {when}"
            applied += 1
        else:
            dropped = f"{named}: the job has no run IN_PROGRESS or FAILED (check --job-id); nothing done"
        if dropped is not None:
            log.warning("%s", dropped)
            runtime.events.append(request.dropped(rows, dropped))
        crash_point("requests:applied")
        inbox.done(request)
    return published + applied


def apply_import(runtime: Runtime, request: inbox.Request, rows: Sequence[ControlRow], imported: set[RowKey]) -> int:
    """An import of the lakehouse engine's state: one STATE_IMPORTED per row without state in Heartbeat;
    each row left as it is said in the log. Returns 1 when it set a row."""
    carried = [imports.Carried.from_json(row) for row in request.args["rows"]]
    held = {r.key for r in rows}
    try:  # the CSV's rows this tick's fold loads (an import made before the first tick)
        new_rows = {
            RowKey(s.sensor_source, s.sensor_id, s.trigger_job_id) for s in read_controls(runtime.config.controls_csv)
        }
    except ControlsError:  # refused: the fold says so; its rows come with a valid file, and an import again
        new_rows = set()
    events, left = imports.events(rows, carried, request.request_id, request.requested_at, imported, new_rows - held)
    for message in left:
        log.warning("import-lakehouse-engine requested at %s: %s", request.requested_at.isoformat(), message)
    if events:
        runtime.events.append(events)
    imported.update(e.row for e in events if e.row is not None)
    log.info("import-lakehouse-engine: %d rows set, %d left as they were", len(events), len(left))
    return 1 if events else 0


def with_publications(runtime: Runtime, events: list[Event]) -> list[Event]:
    """`events` and, in the same append, the publications of the successful runs among them."""
    published = publications.on_success(runtime.config.settings.publish, events)
    return events + publications.new_events(runtime.events, runtime.config.state_dir, published)


def fold_now(runtime: Runtime, report: TickReport, step: Step, *, with_seed: bool = False) -> None:
    seconds = fold.fold(runtime, with_seed=with_seed)
    report.dbt_builds += 1
    report.controls_applied = report.controls_applied or with_seed
    step.done(
        f"control table refreshed{' with the new controls CSV' if with_seed else ''} (dbt {seconds:.1f}s)",
        dbt_seconds=round(seconds, 3),
        with_seed=with_seed,
    )


def new_report() -> TickReport:
    return TickReport(tick_id=uuid.uuid4().hex[:12])


def run_cold_tick(config: Config, open_runtime: Callable[[], Runtime]) -> TickReport:
    """One tick of a process that starts cold (`python -m harness tick`): from the status snapshot, with
    no Spark or dbt, when there is nothing to record (harness.tick.cold); otherwise the full tick, on a
    runtime opened for it, with the same tick id and one health record."""
    report = new_report()
    started_at, started = datetime.now(timezone.utc), time.monotonic()
    event_compaction.finish_interrupted(config.state_dir)  # before anything reads the log
    try:
        handover = cold.run(config, report)
    except Exception as exc:  # noqa: BLE001 - the full tick meets the same problem and records it
        handover = cold.Handover(f"{type(exc).__name__}: {exc}")
    if handover is None:
        record_tick(config.state_dir, report.result(started_at, time.monotonic() - started))
        return report
    with Step(report, "open spark") as step:
        log.info("%s: this tick goes on with Spark and dbt", handover.reason)
        runtime = open_recorded(config, open_runtime, report, started_at, started)
        if handover.snapshot is not None:
            cold.keep_readings(runtime, handover.snapshot)
        step.done("Spark session and event log opened")
    return run_tick(runtime, report, started_at, started, handover.look)


def open_recorded(
    config: Config,
    open_runtime: Callable[[], Runtime],
    report: TickReport | None = None,
    started_at: datetime | None = None,
    started: float | None = None,
) -> Runtime:
    """The runtime a tick runs on. One that cannot be opened (a setting or a secret a sensor needs, the
    JVM) is a failed tick in the health record, in step "open spark", so `status` says so; the error
    goes on to the caller."""
    started_at = started_at if started_at is not None else datetime.now(timezone.utc)
    started = started if started is not None else time.monotonic()
    try:
        return open_runtime()
    except Exception as exc:
        report = report or new_report()
        report.error, report.step = root_cause(exc), "open spark"
        record_result(config, report, started_at, started)  # the error that matters is the session's
        raise


def record_result(config: Config, report: TickReport, started_at: datetime, started: float) -> None:
    """The tick's result in the health record. A write that fails (a full disk) is said in the log and
    ends nothing: a `run` loop goes on, and `status` says the disk is full from the disk itself."""
    try:
        record_tick(config.state_dir, report.result(started_at, time.monotonic() - started))
    except OSError as unrecorded:
        log.warning("tick %s is not in the health record: %s", report.tick_id, unrecorded)


DISK_FULL = (
    "The state folder's disk is full: free space, nothing else is needed (what a failed write left is never "
    "read; docs/operations.md, When the state folder's disk fills)"
)
JVM_ENDED = (
    "The next tick starts a new one (a `run` loop starts again at once); when it recurs, the kernel's log "
    "(`dmesg`) says whether its out-of-memory killer ended it (docs/operations.md, Seeing that ticks fail)"
)


def run_tick(
    runtime: Runtime,
    report: TickReport | None = None,
    started_at: datetime | None = None,
    started: float | None = None,
    look: FirstLook | None = None,
) -> TickReport:
    """One full tick; `report`, the start times and the look's sensing when it goes on from a cold tick's
    first look."""
    report = report or new_report()
    runtime.events.tick_id = report.tick_id
    tick_started()
    if event_compaction.finish_interrupted(runtime.config.state_dir):  # before anything reads the log
        runtime.spark.sql(f"REFRESH TABLE {runtime.events.table}")  # Spark's listing of its files
    started_at, started = started_at or datetime.now(timezone.utc), started or time.monotonic()
    try:
        _steps(runtime, report, look)
    except Exception as exc:  # noqa: BLE001 - an unexpected failure ends this tick, never the `run` loop
        say_failed(report, exc)
    finally:
        record_result(runtime.config, report, started_at, started)
    return report


def say_failed(report: TickReport, exc: Exception) -> None:
    """The failed tick's error in one line (report.error, for the health record) and in the log: with what to
    do where the cause is known (a full disk, Spark's JVM ended), else with its trace; dbt's own report
    (which holds Spark's trace) or what to change in the controls CSV as they are."""
    from harness.platform.spark import jvm_ended  # loaded already: the full tick opened Spark

    ended = jvm_ended()
    report.error = root_cause(exc) if ended is None else f"Spark's JVM {ended} ({root_cause(exc)})"
    where = {"tick_id": report.tick_id, "step": report.step}
    advice = JVM_ENDED if ended is not None else DISK_FULL if disk_full(exc) else None
    if advice is not None:  # its trace would only fill the log
        log.error("tick %s failed in step %s: %s. %s", report.tick_id, report.step, report.error, advice, extra=where)
    elif isinstance(exc, (DbtError, ControlsError)):
        log.error("%s", exc, extra=where)
    else:
        log.exception("tick %s failed in step %s: %s", report.tick_id, report.step, report.error, extra=where)


def say_removed_jobs(unconfirmed: Sequence[OpenRun], jobs: Collection[str]) -> None:
    """A start whose outcome is unknown is sent again (with its token: the backend runs it at most once)
    even when its job's rows left the controls CSV since, as the backend may have started it already:
    said, since `status` no longer lists the job. `jobs`: the control table's."""
    for run in unconfirmed:
        if run.job_id not in jobs:
            log.warning(
                "job %s is no longer in the controls CSV, but its start requested at %s is unconfirmed: sent again "
                "with the same token (at most one run); `python -m harness why --job %s` shows its events",
                run.job_id,
                run.requested_at.isoformat(timespec="seconds"),
                run.job_id,
            )


def say_failed_runs(events: Sequence[Event]) -> None:
    """Each run this tick found failed, once, as a WARNING line of the tick's log (cron's mail): its rows
    are not sensed and its job not started until then."""
    failed = {e.row.trigger_job_id: e.message for e in events if e.event_type is EventType.RUN_FAILED and e.row}
    for job_id, message in failed.items():
        log.warning(
            "%s; the job starts no new run until it is retried or completed by hand, or a later run of it "
            "succeeds (`python -m harness why --job %s`)",
            message,
            shlex.quote(job_id),
        )


def _steps(runtime: Runtime, report: TickReport, look: FirstLook | None) -> None:
    config = runtime.config
    runtime.tables.list_again()  # the schema as it is now, not as the last tick left it (an operator may drop a table)

    with Step(report, "track runs") as step:
        runs = open_runs(runtime.tables.open_runs())
        unconfirmed = [run for run in runs if run.run_id is None]
        describe_ranges(runtime.events, unconfirmed)  # re-sent as first sent
        rows = runtime.tables.control_rows()
        say_removed_jobs(unconfirmed, {r.key.trigger_job_id for r in rows})
        tracked = track_runs(runs, runtime.backend, config.settings.runs.stuck_after_seconds)
        recovered = recover_failed_jobs(rows, runtime.backend)
        runtime.events.append(with_publications(runtime, tracked.events + recovered))
        report.runs_running, report.runs_succeeded = tracked.running, tracked.succeeded
        report.runs_failed, report.starts_repaired = tracked.failed, tracked.repaired
        report.runs_skipped = tracked.skipped
        step.done(
            f"{len(runs)} open: {tracked.running} running, {tracked.succeeded} succeeded, "
            f"{_named(tracked.failed_jobs, 'failed')}, {tracked.skipped} skipped, {tracked.repaired} starts repaired, "
            f"{len(recovered)} rows recovered by a later success",
            open=len(runs),
            running=tracked.running,
            succeeded=tracked.succeeded,
            failed=tracked.failed,
            skipped=tracked.skipped,
            repaired=tracked.repaired,
            recovered=len(recovered),
        )
        say_failed_runs(tracked.events)

    with Step(report, "requests") as step:
        report.requests_applied = apply_requests(runtime, tracked.events + recovered, tracked.running_jobs)
        step.done(f"{report.requests_applied} applied", applied=report.requests_applied)

    with Step(report, "fold") as step:
        planned = fold.plan(runtime)
        report.controls_error = planned.controls_error
        if planned.needed:
            fold_now(runtime, report, step, with_seed=planned.with_seed)
        else:
            step.done(f"skipped: {planned.reason}", skipped=True)

    with Step(report, "sense") as step:
        rows = runtime.tables.sensed_rows()
        sensed, looked = sense_once(
            rows, look, runtime.sensors, runtime.spark, config, filtered_before(config.state_dir)
        )
        recorded = to_record(sensed, rows, last_failed_checks(config.state_dir))
        runtime.events.append(recorded)
        record_waiting(config.state_dir, sensed.nothing_new, sensed.filtered)
        crash_point("tick:sensed")
        report.upstreams_checked, report.new_data, report.check_errors = (
            sensed.upstreams,
            sensed.new_data,
            sensed.errors,
        )
        report.failed_checks = sensed.failed_checks
        for message in report.failed_checks:
            log.warning("%s", message)
        for ref, reason in sensed.nothing_new.items():
            log.debug("%s: nothing new: %s", ref, reason)
        step.done(
            f"{len(rows)} rows, {sensed.upstreams} upstreams checked"
            f"{f' ({looked} rows by the first look)' if looked else ''}: {sensed.new_data} rows with new data, "
            f"{sensed.errors} errors",
            rows=len(rows),
            first_look=looked,
            upstreams=sensed.upstreams,
            new_data=sensed.new_data,
            errors=sensed.errors,
        )

    if any(r.expected_within for r in rows):
        with Step(report, "freshness") as step:
            missed = freshness_events(rows, sensed.events, config.settings.freshness, config.base_dir)
            watched = watch_events(rows, sensed.events)
            runtime.events.append(missed + watched)
            report.freshness_missed = len(missed)
            for e in missed:
                log.warning("%s", e.message)
            step.done(
                f"{len(missed)} upstreams newly stale, {len(watched)} with no data yet watched from now",
                missed=len(missed),
                watched=len(watched),
            )

    found = detections(sensed.events)
    bounded = {r.key for r in rows if r.max_range is not None}
    watching = any(e.event_type is EventType.WATCH_STARTED and e.watermark_after for e in sensed.events)
    if watching or (found and (not runtime.tables.can_decide_as_if() or any(d.key in bounded for d in found))):
        # the trigger set's SQL is not compiled in this state yet, or a row with a max_range has new
        # steps: where its next part ends is the control table's to say; or a row with start_from now
        # was first checked: a job started before its position is folded would be handed it from nothing
        with Step(report, "fold") as step:
            fold_now(runtime, report, step)
        found = []

    with Step(report, "start jobs") as step:
        if not found:  # the decisions read the trigger set, the snapshot its other tables: read side by side
            runtime.tables.snapshot_readings()
        decisions = (runtime.tables.job_decisions_as_if(found) if found else None) or runtime.tables.job_decisions()
        ready = [(d.job_id, d.job_name) for d in decisions if d.should_start]
        rows_by_job: dict[str, list[ControlRow]] = defaultdict(list)
        if ready:
            for row in as_detected(runtime.tables.control_rows(), found):
                rows_by_job[row.key.trigger_job_id].append(row)
        started = start_jobs(
            ready, rows_by_job, runtime.backend, runtime.events, config.settings.runs.max_parallel_starts, recorded
        )
        report.started, report.start_refused = started.started, started.refused
        report.start_unconfirmed = started.unconfirmed
        for message in started.problems:  # a tick goes on past them: warnings, as a failed check's
            log.warning("%s", message)
        step.done(
            f"{len(decisions)} jobs, {len(ready)} ready: {_named(started.started, 'started')}, "
            f"{_named(started.refused, 'refused')}, {_named(started.unconfirmed, 'unconfirmed')}",
            jobs=len(decisions),
            ready=len(ready),
            started=started.started,
            refused=started.refused,
            unconfirmed=started.unconfirmed,
        )

    if any(r.command == "backfill" for r in inbox.pending(config.state_dir)):
        with Step(report, "backfill") as step:
            parts = backfill.start_parts(runtime, [*started.started, *started.unconfirmed])
            report.started += parts
            step.done(f"{_named(parts, 'backfill parts started')}", started=parts)

    if runtime.events.unfolded:
        with Step(report, "fold") as step:
            fold_now(runtime, report, step)
    with Step(report, "snapshot") as step:
        whole = snapshot(runtime, report.tick_id)
        step.done("status snapshot written" if whole else "status snapshot unchanged: the tick recorded", whole=whole)

    today = datetime.now(timezone.utc).date()
    if retention.due(runtime.config, today):
        with Step(report, "retention") as step:
            done = retention.compact(runtime, today)
            if done is not None:
                step.done(
                    f"events before {done.before} compacted: {done.archived} archived, {done.kept} kept, "
                    f"{done.dropped_days} days dropped",
                    archived=done.archived,
                    kept=done.kept,
                    dropped_days=done.dropped_days,
                )

    compact_crowded_days(runtime, report, today)

    if runtime.indexed_version != runtime.events.version:  # the log changed since this process's last refresh
        with Step(report, "event index") as step:
            indexed = index_events(config, today)
            if indexed is not None:
                runtime.indexed_version = runtime.events.version if not indexed.waiting else None
                step.done(
                    f"{indexed.indexed} files added, {indexed.removed} removed, {indexed.waiting} left for "
                    "the next tick",
                    indexed=indexed.indexed,
                    removed=indexed.removed,
                    waiting=indexed.waiting,
                )


def compact_crowded_days(runtime: Runtime, report: TickReport, today: date) -> None:
    """Rewrite each recent day of a local parquet log that appends crowded with small files as one file."""
    config = runtime.config
    if config.table_format != "parquet":
        return
    try:
        folder = events_folder(config.state_dir, config.schema_folder)
    except HeartbeatError:  # a log only Spark reads
        return
    crowded = event_compaction.crowded_days(folder, today)
    if not crowded:
        return
    with Step(report, "compaction") as step:
        done = event_compaction.compact_days(runtime.spark, runtime.events.table, crowded, config.state_dir)
        runtime.indexed_version = None  # the index drops the files replaced and adds the new ones
        step.done(
            ", ".join(f"{c.day}: {c.replaced} files rewritten as one ({c.events} events)" for c in done),
            days=len(done),
            files=sum(c.replaced for c in done),
        )


def index_events(config: Config, today: date) -> event_index.Refresh | None:
    """The event index's refresh; it is a cache, so a failure is said and the tick goes on (the readers
    then read the files it lacks from their parquet)."""
    try:
        return refresh_index(config.state_dir, today, config.schema_folder)
    except (sqlite3.Error, OSError) as exc:
        log.warning("the event index was not refreshed (%s): `why` and `events` read the files it lacks", exc)
        return None


def snapshot(runtime: Runtime, tick_id: str) -> bool:
    """The status snapshot of the state this tick left: what `status` shows and a cold tick goes on from.
    Written whole only when its readings changed since this process last wrote it (and it is still the
    one on disk); else the tick only says it found the state so. Returns whether it was written whole."""
    tables, state_dir = runtime.tables, runtime.config.state_dir
    shown = tables.readings_shown()
    if runtime.snapshot_written is not None:
        before, written = runtime.snapshot_written
        if all(a is b for a, b in zip(before, shown)) and confirm_snapshot(state_dir, tick_id, written):
            return False
    written = write_snapshot(state_dir, tick_id, tables.job_decisions(), tables.control_table(), cold.facts(runtime))
    runtime.snapshot_written = (shown, written)
    return True


def _named(job_ids: list[str], what: str) -> str:
    return f"{len(job_ids)} {what}" + (f" ({', '.join(job_ids)})" if job_ids else "")
