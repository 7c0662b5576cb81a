"""Starting jobs exactly once and tracking every run to its end.

A start is three steps, each leaving a trace that the next tick can repair from:
  1. TRIGGER_REQUESTED per row (status IN_PROGRESS), carrying the idempotency token derived from the
     job, the watermarks it consumes and the job's previous token; written before any API call;
  2. the backend call with that token;
  3. RUN_STARTED per row with the run id (or RUN_START_FAILED when the backend refused for sure).
A token with a request but no outcome is re-sent as is by the next tick: the backend returns the same
run for the same token, so a crash anywhere yields neither a second run nor a lost one.

Each run is handed its change range: per upstream, from the watermark consumed by the job's last
successful run to the watermark now (with a max_range, to the end of the range's next part, as the
control table says), so a failed run's range folds into the next run; for table
sources also the data change events in it (`harness.tick.range_events`, from the log's detections).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shlex
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, Sequence, cast

from harness.backends.base import JobBackend, RunRequest, RunState, StartRefused, StartUncertain
from harness.core.durations import in_words
from harness.core.errors import BackendError
from harness.core.faults import crash_point
from harness.core.redact import redact
from harness.core.vocabulary import ControlRow, EventType, JobState, RowKey, Status, dumps
from harness.refresh.change_range import ChangeRange, UpstreamRange
from harness.state.event_log import Event, EventLog, now
from harness.state.tables import OpenRunRow
from harness.tick.range_events import DetectionIndex, RangeEvents, RowRange

log = logging.getLogger(__name__)

# An identical poll failure of the same run is recorded again only after this long.
POLL_FAILURE_REPEAT = timedelta(hours=1)


def make_token(job_id: str, rows: Sequence[ControlRow], previous_token: str | None) -> str:
    """Same job, same consumed watermarks, same previous run -> same token (<= 64 chars)."""
    basis = dumps(
        {
            "job": job_id,
            "watermarks": sorted((r.label, r.range_end or "") for r in rows),
            "previous": previous_token or "",
        }
    )
    return "hb-" + hashlib.sha256(basis.encode()).hexdigest()[:48]


def previous_token(rows: Sequence[ControlRow]) -> str | None:
    """The token of the job's latest run: its row started last's (a row added since has never started)."""
    started = [(r.job_start_timestamp, r.latest_trigger_token) for r in rows if r.job_start_timestamp is not None]
    return max(started, key=lambda pair: pair[0])[1] if started else None


def _json(text: str | None) -> Any:
    return json.loads(text) if text else None


@dataclass
class TriggeredRow:
    key: RowKey
    from_watermark: str | None
    to_watermark: str | None
    previous_status: str | None
    is_hard: bool

    @classmethod
    def of(cls, row: ControlRow) -> TriggeredRow:
        """A row started now: its range runs from its last successful run's watermark to where the models
        end it (its watermark, or with a max_range the end of the range's next part)."""
        return cls(row.key, row.last_success_watermark, row.range_end, row.status, row.is_hard_dependency)


@dataclass
class OpenRun:
    """A run request whose outcome is not recorded yet."""

    token: str
    job_id: str
    job_name: str | None
    requested_at: datetime
    rows: list[TriggeredRow] = field(default_factory=list)
    run_id: str | None = None
    flagged_stuck: bool = False
    last_poll_error: str | None = None
    last_poll_error_at: datetime | None = None
    change_events: dict[RowKey, RangeEvents] = field(default_factory=dict)  # per row, when described
    backfill: dict[str, Any] | None = None  # a backfill part's run (harness.tick.backfill): which part

    def request(self) -> RunRequest:
        return RunRequest(
            self.job_id, self.job_name, self.token, change_range(self.job_id, self.token, self.rows, self.change_events)
        )


def change_range(
    job_id: str, token: str, rows: Iterable[TriggeredRow], change_events: Mapping[RowKey, RangeEvents] | None = None
) -> dict[str, Any]:
    """What a run is handed: per upstream its range of watermarks, and the change events in it when the
    upstream is a table (`events`, oldest first; `events_complete` false when part of the range's
    detections could not be found)."""
    upstreams = tuple(
        UpstreamRange(
            r.key.sensor_source,
            r.key.sensor_id,
            "hard" if r.is_hard else "soft",
            _json(r.from_watermark),
            _json(r.to_watermark),
            (change_events or {}).get(r.key, {}),
        )
        for r in sorted(rows, key=lambda r: (r.key.sensor_source, r.key.sensor_id))
    )
    return ChangeRange(job_id, token, upstreams).to_json()


RECENT_DETECTION_DAYS = 7  # a range's detections are looked for in the last week first,
MAX_DETECTION_DAYS = 448  # then 8 and 64 times as far back, then in the whole log


def describe_ranges(events: EventLog, runs: Sequence[OpenRun], recent: Sequence[Event] = ()) -> None:
    """Attach to each run the change events of its rows' ranges, indexed once for every run: from `recent`
    (this tick's detections, appended already) when they reach back to every range's start, as a range
    that began with this tick's detection does; else from one read of the log's detections."""
    if not runs:
        return
    ranges = [(r.key, r.from_watermark, r.to_watermark) for run in runs for r in run.rows]
    index = DetectionIndex([e.as_record() for e in recent if e.event_type is EventType.DATA_CHANGED])
    if not (recent and index.reach_their_starts(ranges)):
        index = _logged_detections(events, sorted({run.job_id for run in runs}), ranges)
    for run in runs:
        run.change_events = index.range_events([(r.key, r.from_watermark, r.to_watermark) for r in run.rows])


def _logged_detections(events: EventLog, jobs: Sequence[str], ranges: Sequence[RowRange]) -> DetectionIndex:
    """The log's detections of `jobs`, read from recent days back, only as far as the oldest range needs."""
    days: int | None = RECENT_DETECTION_DAYS
    while True:
        index = DetectionIndex(events.detections(jobs, days))
        if days is None or index.reach_their_starts(ranges):
            return index
        days = days * 8 if days < MAX_DETECTION_DAYS else None


def _row_events(
    run: OpenRun,
    event_type: EventType,
    *,
    status: str | None | Callable[[TriggeredRow], str | None] = None,
    run_id: str | None = None,
    message: str | None = None,
    details: Callable[[TriggeredRow], dict[str, Any]] | None = None,
) -> list[Event]:
    """One event per row of the run, carrying its token and range; `status` may depend on the row. A
    backfill part's run records its own events where a regular run's would move the row's state
    (BACKFILL_TYPES): its end puts back the status the row had, and no watermark moves."""
    if run.backfill is not None and event_type in BACKFILL_TYPES:
        regular, event_type = event_type, BACKFILL_TYPES[event_type]
        part = f"job {run.job_id}: {part_in_words(run.backfill)}"
        if event_type is EventType.BACKFILL_REQUESTED:
            message = part_in_words(run.backfill)
        elif event_type is EventType.BACKFILL_SUCCEEDED:
            message = f"{part}: succeeded" + (f" ({message})" if message else "")
        elif event_type is EventType.BACKFILL_FAILED:
            what = {EventType.RUN_START_FAILED: "not started", EventType.RUN_SKIPPED: "skipped"}.get(regular, "failed")
            message = f"{part}: {what}: {message}; its range is not covered: queue it again ({again(run)})"
        if event_type in (EventType.BACKFILL_SUCCEEDED, EventType.BACKFILL_FAILED):
            status = lambda r: r.previous_status  # noqa: E731 - the same rule for every end
        details = _with_part(run.backfill, details)
    return [
        Event(
            event_type,
            row=r.key,
            idempotency_token=run.token,
            watermark_before=r.from_watermark,
            watermark_after=r.to_watermark,
            status=status(r) if callable(status) else status,
            run_id=run_id,
            message=message,
            details=details(r) if details else {},
        )
        for r in run.rows
    ]


# What a backfill part's run records instead of the regular run's events that move a row's state.
BACKFILL_TYPES = {
    EventType.TRIGGER_REQUESTED: EventType.BACKFILL_REQUESTED,
    EventType.RUN_STARTED: EventType.BACKFILL_STARTED,
    EventType.RUN_SUCCEEDED: EventType.BACKFILL_SUCCEEDED,
    EventType.RUN_FAILED: EventType.BACKFILL_FAILED,
    EventType.RUN_START_FAILED: EventType.BACKFILL_FAILED,  # refused: the part is said failed, to queue again
    EventType.RUN_SKIPPED: EventType.BACKFILL_FAILED,  # nothing ran: the same
}


def part_in_words(backfill: Mapping[str, Any]) -> str:
    """`backfill part 2 of 3: 2026-12-01 00:00:00 UTC -> 2026-12-02 00:00:00 UTC (reason)`."""
    reason = f" ({backfill['reason']})" if backfill.get("reason") else ""
    return (
        f"backfill part {backfill['part']} of {backfill['parts']}: {_time_in_words(backfill['from'])} -> "
        f"{_time_in_words(backfill['to'])}{reason}"
    )


def again(run: OpenRun) -> str:
    """The command that queues a backfill part's range again."""
    backfill = run.backfill or {}
    return f"python -m harness backfill --job {shlex.quote(run.job_id)} --from {backfill.get('from')} --to {backfill.get('to')}"


def _time_in_words(text: str) -> str:
    return f"{datetime.fromisoformat(text).astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


def _with_part(
    backfill: dict[str, Any], details: Callable[[TriggeredRow], dict[str, Any]] | None
) -> Callable[[TriggeredRow], dict[str, Any]]:
    """The event's details and the backfill part it is of."""
    return lambda r: {**(details(r) if details else {}), "backfill": backfill}


def intents(run: OpenRun) -> list[Event]:
    """TRIGGER_REQUESTED per row, written before the backend is called; what a repair rebuilds from."""
    return _row_events(
        run,
        EventType.TRIGGER_REQUESTED,
        status=Status.IN_PROGRESS.value,
        details=lambda r: {
            "job_name": run.job_name,
            "previous_status": r.previous_status,
            "dependency": "hard" if r.is_hard else "soft",
        },
    )


class StartResult(str, Enum):
    STARTED = "started"
    REFUSED = "refused"
    UNCONFIRMED = "unconfirmed"


@dataclass
class StartOutcome:
    started: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each refused or unconfirmed start's message, once

    def add(self, result: StartResult, job_id: str) -> None:
        {
            StartResult.STARTED: self.started,
            StartResult.REFUSED: self.refused,
            StartResult.UNCONFIRMED: self.unconfirmed,
        }[result].append(job_id)


def call_start(backend: JobBackend, run: OpenRun) -> tuple[list[Event], StartResult]:
    """Send the request; return the outcome's events and what the backend said."""
    try:
        run_id = backend.start(run.request())
    except StartRefused as exc:
        message = redact(f"job {run.job_id}: start refused by the {backend.name} backend: {exc}")
        return _row_events(
            run, EventType.RUN_START_FAILED, message=message, status=lambda r: r.previous_status
        ), StartResult.REFUSED
    except (StartUncertain, BackendError) as exc:
        message = redact(
            f"job {run.job_id}: start not confirmed by the {backend.name} backend, "
            f"the same request is re-sent next tick: {exc}"
        )
        return _row_events(run, EventType.RUN_START_UNCONFIRMED, message=message), StartResult.UNCONFIRMED
    finally:
        crash_point("start:backend-called")
    run.run_id = run_id
    return _row_events(run, EventType.RUN_STARTED, run_id=run_id, status=Status.IN_PROGRESS.value), StartResult.STARTED


def start_jobs(
    ready: Sequence[tuple[str, str | None]],
    rows_by_job: dict[str, list[ControlRow]],
    backend: JobBackend,
    events: EventLog,
    parallel: int = 1,
    recent: Sequence[Event] = (),
) -> StartOutcome:
    """Start every ready job once: record intents, call the backend (`parallel` requests at a time),
    record outcomes. `recent`: this tick's events, appended already (its detections describe the ranges)."""
    runs: list[OpenRun] = []
    for job_id, job_name in ready:
        rows = [r for r in rows_by_job.get(job_id, []) if r.job_state == JobState.UNPAUSED.value]
        if not rows:
            continue
        token = make_token(job_id, rows, previous_token(rows))
        run = OpenRun(
            token,
            job_id,
            job_name,
            now(),
            [TriggeredRow.of(r) for r in rows],
        )
        runs.append(run)
    outcome = StartOutcome()
    if not runs:
        return outcome
    describe_ranges(events, runs, recent)
    events.append([event for run in runs for event in intents(run)])
    crash_point("start:intent-recorded")
    recorded: list[Event] = []
    # Each request is its own, with its own token: sent side by side (a backend call is mostly waiting).
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(runs))), thread_name_prefix="start") as pool:
        answers = list(pool.map(lambda run: call_start(backend, run), runs))
    for run, (run_events, result) in zip(runs, answers):
        recorded.extend(run_events)
        outcome.add(result, run.job_id)
        if result is not StartResult.STARTED and run_events:
            outcome.problems.append(run_events[0].message or f"job {run.job_id}: start {result.value}")
    events.append(recorded)
    crash_point("start:outcome-recorded")
    return outcome


def open_runs(rows: Sequence[OpenRunRow]) -> list[OpenRun]:
    """Run requests without a recorded outcome (the heartbeat_open_runs model), one per token."""
    runs: dict[str, OpenRun] = {}
    for r in rows:
        run = runs.setdefault(
            r.token,
            OpenRun(
                r.token,
                r.job_id,
                r.job_name,
                r.requested_at,
                run_id=r.run_id,
                flagged_stuck=r.is_flagged_stuck,
                last_poll_error=r.last_poll_error,
                last_poll_error_at=r.last_poll_error_at,
                backfill=_json(r.backfill),
            ),
        )
        run.rows.append(
            TriggeredRow(r.key, r.watermark_before, r.watermark_after, r.previous_status, r.is_hard_dependency)
        )
    return list(runs.values())


@dataclass
class TrackOutcome:
    events: list[Event] = field(default_factory=list)
    running: int = 0
    running_jobs: dict[str, str] = field(default_factory=dict)  # job -> its run the backend says is running
    succeeded: int = 0
    failed_jobs: list[str] = field(default_factory=list)  # each failed run's job, named in the tick's log
    skipped: int = 0
    repaired: int = 0

    @property
    def failed(self) -> int:
        return len(self.failed_jobs)


def track_runs(runs: Sequence[OpenRun], backend: JobBackend, stuck_after_seconds: float) -> TrackOutcome:
    """Re-send requests whose outcome is unknown; poll started runs; record how each ended."""
    outcome = TrackOutcome()
    for run in runs:
        if run.run_id is None:
            run_events, result = call_start(backend, run)
            said = next((e.message or "" for e in run_events), "")
            if result is not StartResult.UNCONFIRMED or _is_new_poll_failure(run, said):
                outcome.events.extend(run_events)
            outcome.repaired += result is StartResult.STARTED
            continue
        try:
            status = backend.poll(run.job_id, run.run_id)
        except BackendError as exc:
            said = str(exc)  # a backend's message that names the run is not prefixed again
            named = said if f"run {run.run_id}" in said else f"job {run.job_id}: cannot read run {run.run_id}: {said}"
            message = redact(named) or ""
            if _is_new_poll_failure(run, message):
                outcome.events.extend(_row_events(run, EventType.RUN_POLL_FAILED, run_id=run.run_id, message=message))
            continue
        if status.state is RunState.RUNNING:
            outcome.running += 1
            outcome.running_jobs[run.job_id] = run.run_id
            if run.last_poll_error is not None:  # it could not be read before: the row's error is past
                outcome.events.extend(
                    _row_events(
                        run,
                        EventType.RUN_POLL_RECOVERED,
                        run_id=run.run_id,
                        message=f"job {run.job_id}: run {run.run_id} reads again: still running",
                    )
                )
            age = (datetime.now(timezone.utc) - run.requested_at).total_seconds()
            if age > stuck_after_seconds and not run.flagged_stuck:
                outcome.events.extend(
                    _row_events(
                        run,
                        EventType.RUN_STUCK,
                        run_id=run.run_id,
                        message=f"job {run.job_id}: run {run.run_id} still running after {in_words(age)} "
                        f"(runs.stuck_after_seconds = {stuck_after_seconds:g})",
                    )
                )
            continue
        # When the run itself ended (the event records when the heartbeat learned it).
        ended = _ended_at(status.ended_at)
        if status.state is RunState.SKIPPED:
            # Not a failure: nothing ran. The rows go back as they were and the job is started again,
            # with the same range (or a longer one) and a new token, after the refused-start wait.
            outcome.skipped += 1
            outcome.events.extend(
                _row_events(
                    run,
                    EventType.RUN_SKIPPED,
                    run_id=run.run_id,
                    status=lambda r: r.previous_status,
                    message=redact(
                        f"job {run.job_id}: run {run.run_id} was skipped by the {backend.name} backend, "
                        f"nothing ran ({status.message}); a run of the job was probably going (started "
                        "by hand or by another trigger): the same range is started again"
                    ),
                    details=lambda r: ended,
                )
            )
        elif status.state is RunState.SUCCEEDED:
            outcome.succeeded += 1
            outcome.events.extend(
                _row_events(
                    run,
                    EventType.RUN_SUCCEEDED,
                    run_id=run.run_id,
                    status=Status.COMPLETED.value,
                    message=status.message or None,
                    details=lambda r: ended,
                )
            )
        else:
            outcome.failed_jobs.append(run.job_id)
            outcome.events.extend(
                _row_events(
                    run,
                    EventType.RUN_FAILED,
                    run_id=run.run_id,
                    status=Status.FAILED.value,
                    message=redact(f"job {run.job_id}: run {run.run_id} failed: {status.message}"),
                    details=lambda r: ended,
                )
            )
    return outcome


def _is_new_poll_failure(run: OpenRun, message: str) -> bool:
    """An identical failure of the backend to answer for the same run (to read it, or to confirm its start
    sent again) is recorded once an hour, not on every tick."""
    if run.last_poll_error != message or run.last_poll_error_at is None:
        return True
    return datetime.now(timezone.utc) - run.last_poll_error_at >= POLL_FAILURE_REPEAT


def manual_events(
    job_rows: Sequence[ControlRow],
    event_type: EventType,
    message: str,
    run_id: str | None = None,
    run_ended_at: datetime | None = None,
) -> list[Event]:
    """Close a job's latest run by hand: MANUAL_COMPLETE (its range counts as consumed) or
    RETRY_REQUESTED (its range is handed to the next run). Only rows IN_PROGRESS or FAILED move. A run
    that failed keeps the end it had: closing it by hand is not when it ended. A later run found to have
    succeeded (`run_id`) closes it with that run's own end, `run_ended_at`, when the backend said it."""
    status = Status.COMPLETED if event_type is EventType.MANUAL_COMPLETE else Status.NEW_EVENT_AVAILABLE
    return [
        Event(
            event_type,
            row=r.key,
            status=status.value,
            idempotency_token=r.latest_trigger_token,
            run_id=run_id or r.latest_run_id,
            watermark_before=r.last_success_watermark,
            watermark_after=r.trigger_watermark if event_type is EventType.MANUAL_COMPLETE else None,
            message=message,
            details=_ended_before(r) if run_id is None else _ended_at(run_ended_at),
        )
        for r in job_rows
        if r.status in (Status.IN_PROGRESS.value, Status.FAILED.value)
    ]


def _ended_before(row: ControlRow) -> dict[str, str]:
    """The end of the row's latest run, when it ended before it was closed by hand (it failed)."""
    return _ended_at(row.run_ended_at) if row.status == Status.FAILED.value else {}


def _ended_at(ended: datetime | None) -> dict[str, str]:
    return {"run_ended_at": ended.isoformat()} if ended is not None else {}


def recover_failed_jobs(rows: Sequence[ControlRow], backend: JobBackend) -> list[Event]:
    """A FAILED job resumes when the backend shows a run of it that succeeded after the failure (not for a job
    that ran a backfill part since: that run's success is no run of the failed range)."""
    failed: dict[str, list[ControlRow]] = defaultdict(list)
    for r in rows:
        if r.status == Status.FAILED.value:
            failed[r.key.trigger_job_id].append(r)
    out: list[Event] = []
    for job_id, job_rows in failed.items():
        started = [r for r in job_rows if r.job_start_timestamp is not None]
        if not started:
            continue
        last = max(started, key=lambda r: cast(datetime, r.job_start_timestamp))
        since = cast(datetime, last.job_start_timestamp)
        if any(r.backfill_run_at is not None and r.backfill_run_at > since for r in job_rows):
            continue  # a backfill part ran since the failure: its own run would be taken for the later success
        try:
            found = backend.successful_run_after(
                job_id, since.replace(tzinfo=since.tzinfo or timezone.utc), last.latest_run_id
            )
        except BackendError as exc:
            log.warning("job %s: cannot look for a later successful run: %s", job_id, redact(str(exc)))
            continue
        if found:
            out.extend(
                manual_events(
                    job_rows,
                    EventType.MANUAL_COMPLETE,
                    f"job {job_id}: run {found.run_id} succeeded after the failure",
                    found.run_id,
                    found.ended_at,
                )
            )
    return out
