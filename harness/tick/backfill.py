"""Backfilling a job (`python -m harness backfill --job J --from T1 --to T2 [--max-range D]`): one-off runs
handed exactly that past range, in consecutive parts of at most D each, moving no watermark.

The command queues the request (no Spark). A tick's last start step plans it once: where each upstream of
the job was at T1, at each part's end and at T2 (its sensor module's `position_at`, as a rewind asks), one
BACKFILL_PLANNED event per part and row, with the part's own idempotency token (derived from the request and
the part's number). Then, tick by tick, it starts the next part through the same exactly-once path as any
run (harness.tick.triggering): its intent (BACKFILL_REQUESTED, the rows IN_PROGRESS) before the backend is
called, the run id after; the open-runs model tracks it to its end, which puts the rows back to the status
they had (BACKFILL_SUCCEEDED / BACKFILL_FAILED). A job never runs twice at once: a part starts only while
no run of the job is going and the tick started none, and a regular start waits while a part runs (its
rows are IN_PROGRESS: the trigger set's rule 1). The request stays queued until its last part is requested.

Refused, with nothing changed but a REQUEST_DROPPED on the job's rows saying why: a job not in the control
table, a range that is empty or ends after the request, an upstream that no longer holds the range's start.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Collection, Sequence

from harness.core.durations import in_words as duration_in_words
from harness.core.durations import parse_duration
from harness.core.errors import HeartbeatError
from harness.core.faults import crash_point
from harness.core.vocabulary import ControlRow, EventType, dumps
from harness.sensors.context import CheckContext
from harness.state.event_log import Event, now
from harness.tick import inbox
from harness.tick.inbox import Request
from harness.tick.rewind import RangeRequestRefused, in_words, parse_time, positions
from harness.tick.triggering import OpenRun, StartResult, TriggeredRow, call_start, describe_ranges, intents

if TYPE_CHECKING:
    from harness.tick.runtime import Runtime

log = logging.getLogger(__name__)

MAX_PARTS = 1000  # a backfill's parts at most (a --max-range far shorter than the range is a typo)


@dataclass(frozen=True)
class BackfillArgs:
    """What a queued backfill asks (the request's `args`)."""

    start: datetime
    end: datetime
    max_range: timedelta | None
    reason: str | None
    by: str

    def to_args(self) -> dict[str, Any]:
        return {
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "max_range_seconds": self.max_range.total_seconds() if self.max_range else None,
            "reason": self.reason,
            "by": self.by,
        }

    @classmethod
    def of(cls, request: Request) -> BackfillArgs:
        args = request.args
        try:
            seconds = args.get("max_range_seconds")
            return cls(
                parse_time(str(args["from"]), "--from"),
                parse_time(str(args["to"]), "--to"),
                timedelta(seconds=float(seconds)) if seconds else None,
                args.get("reason"),
                str(args.get("by") or "?"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RangeRequestRefused(
                f"the queued request lacks {exc}; queue it again with `python -m harness backfill`"
            ) from None

    def parts(self) -> list[tuple[datetime, datetime]]:
        """The consecutive parts of the range, oldest first: each at most max_range long, the last up to the end."""
        if self.max_range is None:
            return [(self.start, self.end)]
        bounds = [self.start]
        while bounds[-1] + self.max_range < self.end:
            bounds.append(bounds[-1] + self.max_range)
        return list(zip(bounds, [*bounds[1:], self.end]))


def parse_max_range(text: str) -> timedelta:
    """`--max-range`: a length of time (`6h`, `1d`): the backfill's range is given in time, so are its parts."""
    length = parse_duration(text)
    if length is None or length <= timedelta(0):
        raise HeartbeatError(
            f"--max-range {text!r} is not a length of time; write how long each part's range may be, e.g. 6h, 1d "
            "(a number, then s, m, h, d or w)"
        )
    return length


def check_range(args: BackfillArgs, latest: datetime) -> None:
    """HeartbeatError when the range is empty, ends after `latest` (the request), or has too many parts."""
    if args.start >= args.end:
        raise HeartbeatError(
            f"--from {in_words(args.start)} is not before --to {in_words(args.end)}: the range is empty"
        )
    if args.end > latest:
        raise HeartbeatError(
            f"--to {in_words(args.end)} is after {in_words(latest)}: a backfill covers a past range (what comes "
            "after now is the job's regular runs')"
        )
    if len(args.parts()) > MAX_PARTS:
        length = duration_in_words(args.max_range.total_seconds()) if args.max_range else ""
        raise HeartbeatError(
            f"--max-range {length} cuts {in_words(args.start)} -> {in_words(args.end)} into more than {MAX_PARTS} "
            "parts; give a longer one"
        )


def part_token(request: Request, part: int) -> str:
    """A backfill part's idempotency token: its own, the same however often it is started."""
    return "hb-bf-" + hashlib.sha256(f"{request.request_id}|{part}".encode()).hexdigest()[:40]


def planned_events(
    request: Request, job_rows: Sequence[ControlRow], args: BackfillArgs, bounds: Sequence[dict[str, Any]]
) -> list[Event]:
    """BACKFILL_PLANNED per part and row: the part's range on that row (`bounds[k]` the positions, by label,
    at the start of part k+1; the last at the range's end), its token, and which part it is."""
    namespace = uuid.UUID(hex=request.request_id)
    parts = args.parts()
    events = []
    for k, (start, end) in enumerate(parts, start=1):
        part = part_of(request, args, k, len(parts), start, end)
        for r in job_rows:
            events.append(
                Event(
                    EventType.BACKFILL_PLANNED,
                    row=r.key,
                    idempotency_token=part_token(request, k),
                    watermark_before=dumps(bounds[k - 1][r.label]),
                    watermark_after=dumps(bounds[k][r.label]),
                    message=f"job {request.job_id}: backfill planned: part {k} of {len(parts)}",
                    details={"backfill": part},
                    event_id=uuid.uuid5(namespace, f"planned|{k}|{r.key.ref}").hex,
                )
            )
    return events


def part_of(request: Request, args: BackfillArgs, k: int, n: int, start: datetime, end: datetime) -> dict[str, Any]:
    return {
        "id": request.request_id,
        "part": k,
        "parts": n,
        "from": start.isoformat(),
        "to": end.isoformat(),
        "reason": args.reason,
        "by": args.by,
    }


@dataclass(frozen=True)
class Part:
    """A planned part: its token, which part it is, and its range per row (by row key)."""

    token: str
    backfill: dict[str, Any]
    ranges: dict[tuple[str, str, str], tuple[str | None, str | None]]


def plan_of(events: Sequence[dict[str, Any]], request: Request) -> list[Part]:
    """The request's parts, oldest first, from its BACKFILL_PLANNED events as the log holds them."""
    import json

    parts: dict[str, Part] = {}
    for e in events:
        details = json.loads(e["details"]) if isinstance(e["details"], str) else (e["details"] or {})
        backfill = details.get("backfill") or {}
        if backfill.get("id") != request.request_id:
            continue
        part = parts.setdefault(e["idempotency_token"], Part(e["idempotency_token"], backfill, {}))
        part.ranges[(e["sensor_source"], e["sensor_id"], e["trigger_job_id"])] = (
            e["watermark_before"],
            e["watermark_after"],
        )
    return sorted(parts.values(), key=lambda p: int(p.backfill["part"]))


def plan(runtime: Runtime, request: Request, job_rows: Sequence[ControlRow]) -> list[Event]:
    """The request's plan (BACKFILL_PLANNED events); RangeRequestRefused saying why it cannot be planned."""
    args = BackfillArgs.of(request)
    if not job_rows:
        raise RangeRequestRefused(
            f"job {request.job_id} is not in the control table; check --job (trigger_job_id in the controls CSV)"
        )
    try:
        check_range(args, request.requested_at)
    except HeartbeatError as exc:
        raise RangeRequestRefused(str(exc)) from None
    timeout = runtime.config.settings.sensing.check_timeout_seconds
    bounds = []
    for at in [start for start, _ in args.parts()] + [args.end]:
        context = CheckContext.starting_now(runtime.spark, timeout)
        bounds.append(positions(job_rows, at, {}, runtime.sensors, context))
    return planned_events(request, job_rows, args, bounds)


def start_parts(runtime: Runtime, busy: Collection[str]) -> list[str]:
    """Plan the queued backfills not planned yet, and start the next part of each whose job is free: no
    row IN_PROGRESS, not started by this tick (`busy`), no other part started now. The job ids started."""
    requests = [r for r in inbox.pending(runtime.config.state_dir) if r.command == "backfill"]
    if not requests:
        return []
    rows = runtime.tables.control_rows()
    started: list[str] = []
    taken = set(busy)
    for request in requests:
        job_rows = [r for r in rows if r.key.trigger_job_id == request.job_id]
        since = request.requested_at - timedelta(minutes=1)
        logged = runtime.events.history(
            event_types=[EventType.BACKFILL_PLANNED.value], job_id=request.job_id, since=since
        )
        parts = plan_of(logged, request)
        if not parts:
            named = f"backfill of job {request.job_id} requested at {request.requested_at.isoformat()}"
            try:
                planned = plan(runtime, request, job_rows)
            except RangeRequestRefused as exc:
                message = f"{named}: refused, nothing changed: {exc}"
                log.warning("%s", message)
                runtime.events.append(request.dropped(rows, message))
                inbox.done(request)
                continue
            runtime.events.append(planned)
            crash_point("backfill:planned")
            parts = plan_of([e.as_record() for e in planned], request)
            log.info("%s: planned in %d parts", named, len(parts))
        requested = {
            e["idempotency_token"]
            for e in runtime.events.history(
                event_types=[EventType.BACKFILL_REQUESTED.value], job_id=request.job_id, since=since
            )
        }
        waiting = [p for p in parts if p.token not in requested]
        if not waiting:
            inbox.done(request)  # every part is requested: the open runs follow them to their end
            continue
        if request.job_id in taken or any(r.status == "IN_PROGRESS" for r in job_rows):
            log.info(
                "job %s: backfill part %s of %s waits: a run of the job is going",
                request.job_id,
                waiting[0].backfill["part"],
                waiting[0].backfill["parts"],
            )
            taken.add(request.job_id)
            continue
        taken.add(request.job_id)
        if start_part(runtime, request, job_rows, waiting[0]):
            started.append(request.job_id)
    return started


def start_part(runtime: Runtime, request: Request, job_rows: Sequence[ControlRow], part: Part) -> bool:
    """Record the part's intent, call the backend with its token, record the outcome (as a start does)."""
    triggered = [
        TriggeredRow(
            r.key,
            *part.ranges[(r.key.sensor_source, r.key.sensor_id, r.key.trigger_job_id)],
            r.status,
            r.is_hard_dependency,
        )
        for r in job_rows
        if (r.key.sensor_source, r.key.sensor_id, r.key.trigger_job_id) in part.ranges
    ]
    job_name = next((r.trigger_job_name for r in job_rows if r.trigger_job_name), None)
    run = OpenRun(part.token, request.job_id, job_name, now(), triggered, backfill=part.backfill)
    describe_ranges(runtime.events, [run])
    runtime.events.append(intents(run))
    crash_point("backfill:intent-recorded")
    events, result = call_start(runtime.backend, run)
    runtime.events.append(events)
    crash_point("backfill:outcome-recorded")
    if result is not StartResult.STARTED:
        log.warning("%s", events[0].message if events else f"job {request.job_id}: backfill part not started")
    return result is StartResult.STARTED
