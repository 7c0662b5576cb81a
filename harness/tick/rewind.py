"""Rewinding a job (`python -m harness rewind --job J --to TIME`): its next run is handed the range from
that time on every upstream of the job, as if its last successful run had ended then.

The command queues the request (no Spark); the tick applies it here, in its requests step: each upstream
of the job says where it was at that time (its sensor module's `position_at`, or the position the
operator gave with `--watermark UPSTREAM=VALUE`), and one REWOUND event per row records it, with who
asked and why. The control table's models do the rest (macros/rewind.sql): the rows are
NEW_EVENT_AVAILABLE and the job's next start hands each the range from there to its watermark, once,
through the same exactly-once start as any run; that run's success moves the watermark on as usual.

Refused, with nothing changed but a REQUEST_DROPPED on the job's rows saying why: a job not in the
control table, a time after the request, an upstream that no longer holds that time (vacuumed Delta
versions, expired Kafka offsets) or whose kind maps no time to a position (give `--watermark`).
A job whose run is going is not refused: the request waits in the queue until the tick that records the
run's end (applied before it, that run's success would record its own range as consumed over the rewind).
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Collection, Mapping, Sequence

from harness.core.errors import HeartbeatError, SensorError
from harness.core.vocabulary import ControlRow, EventType, RowKey, SensorSource, Status, dumps
from harness.sensors import declaration_of
from harness.sensors.base import Sensor, Watermark
from harness.sensors.context import CheckContext
from harness.sensors.declaration import PositionQuery
from harness.state.event_log import Event
from harness.tick.inbox import Request
from harness.tick.sensing import upstream_of

if TYPE_CHECKING:
    from harness.tick.runtime import Runtime

log = logging.getLogger(__name__)


class RangeRequestRefused(HeartbeatError):
    """A rewind or backfill that cannot be applied; the message says why and what to do."""


def parse_time(text: str, what: str = "--to") -> datetime:
    """An ISO 8601 time (`2026-12-04T17:00`, `2026-12-04 17:00:00+01:00`, `...Z`), UTC when it names no
    offset; aware."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise RangeRequestRefused(
            f"{what} {text!r} is not a time; write it as ISO 8601, e.g. 2026-12-04T17:00 (UTC) or "
            "2026-12-04T18:00+01:00"
        ) from None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed.astimezone(timezone.utc)


def in_words(at: datetime) -> str:
    return f"{at.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


def parse_watermarks(given: Sequence[str]) -> dict[str, Watermark]:
    """`--watermark UPSTREAM=VALUE` options: the upstream as `status` names it (`kafka:orders`, or its
    sensor_id alone) and the position as JSON, as `events` shows a watermark."""
    out: dict[str, Watermark] = {}
    for item in given:
        upstream, sep, value = item.partition("=")
        if not sep or not upstream.strip():
            raise RangeRequestRefused(
                f"--watermark {item!r}: expected UPSTREAM=VALUE, e.g. --watermark 'jdbc:sales.orders="
                '{"key": "id", "max": {"type": "int", "value": 1200}}\''
            )
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise RangeRequestRefused(f"--watermark {item!r}: the value is not JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise RangeRequestRefused(
                f"--watermark {item!r}: the value is a JSON object, as `events` shows a watermark"
            )
        out[upstream.strip()] = parsed
    return out


@dataclass(frozen=True)
class RewindArgs:
    """What a queued rewind asks (the request's `args`)."""

    to: datetime
    reason: str | None
    by: str
    watermarks: Mapping[str, Watermark]

    def to_args(self) -> dict[str, Any]:
        return {"to": self.to.isoformat(), "reason": self.reason, "by": self.by, "watermarks": dict(self.watermarks)}

    @classmethod
    def of(cls, request: Request) -> RewindArgs:
        args = request.args
        try:
            return cls(parse_time(str(args["to"])), args.get("reason"), str(args.get("by") or "?"), args["watermarks"])
        except (KeyError, TypeError) as exc:
            raise RangeRequestRefused(
                f"the queued request lacks {exc}; queue it again with `python -m harness rewind`"
            ) from None

    def said(self) -> str:
        """`rewound to … by … (reason)`, as status, why and the report show it."""
        reason = f" ({self.reason})" if self.reason else ""
        return f"rewound to {in_words(self.to)} by {self.by}{reason}"


def given_for(row: ControlRow, watermarks: Mapping[str, Watermark]) -> Watermark | None:
    """The position the operator gave for the row's upstream: by its label, or its sensor_id alone."""
    return watermarks.get(row.label, watermarks.get(row.key.sensor_id))


def unknown_upstreams(job_rows: Sequence[ControlRow], watermarks: Mapping[str, Watermark]) -> list[str]:
    """The `--watermark` upstreams that are none of the job's."""
    names = {r.label for r in job_rows} | {r.key.sensor_id for r in job_rows}
    return [name for name in watermarks if name not in names]


def refusal(request: Request, job_rows: Sequence[ControlRow], args: RewindArgs) -> str | None:
    """Why the rewind cannot be applied before any upstream is read, or None."""
    if not job_rows:
        return f"job {request.job_id} is not in the control table; check --job (trigger_job_id in the controls CSV)"
    if args.to > request.requested_at:
        return f"{in_words(args.to)} is after the request ({in_words(request.requested_at)}): rewind to a past time"
    unknown = unknown_upstreams(job_rows, args.watermarks)
    if unknown:
        labels = ", ".join(sorted(r.label for r in job_rows))
        return f"--watermark names {', '.join(unknown)}, not an upstream of job {request.job_id} ({labels})"
    return None


def positions(
    job_rows: Sequence[ControlRow],
    at: datetime,
    watermarks: Mapping[str, Watermark],
    sensors: Mapping[SensorSource, Sensor[Any]],
    context: CheckContext,
) -> dict[str, Watermark]:
    """Per upstream of the job (by label), where it was at `at`: given (`watermarks`), or asked of its sensor
    module. RangeRequestRefused naming every upstream that cannot say, and what to give instead."""
    found: dict[str, Watermark] = {}
    problems: list[str] = []
    for row in job_rows:
        if row.label in found:
            continue
        given = given_for(row, watermarks)
        if given is not None:
            found[row.label] = given
            continue
        kind = SensorSource(row.key.sensor_source)
        lookup = declaration_of(kind).position_at
        if row.partition_filter:
            problems.append(
                f"{row.label}: a partition trigger's position at a time is not looked up; give it with --watermark"
            )
        elif lookup is None or kind not in sensors:
            problems.append(
                f"{row.label}: a {kind.value} upstream maps no time to a position; give it with --watermark "
                f"'{row.label}=<its watermark as JSON, as `events` shows it>'"
            )
        else:
            try:
                found[row.label] = lookup(PositionQuery(sensors[kind], context, upstream_of(row), at))
            except SensorError as exc:
                problems.append(str(exc))
    if problems:
        raise RangeRequestRefused("; ".join(problems))
    return found


def rewound_events(
    request: Request, job_rows: Sequence[ControlRow], args: RewindArgs, at: Mapping[str, Any]
) -> list[Event]:
    """One REWOUND per row of the job: NEW_EVENT_AVAILABLE, from its position at the time. The ids derive
    from the request, so a request applied twice (a kill before its file was removed) is one rewind."""
    said = args.said()
    events = [
        Event(
            EventType.REWOUND,
            row=r.key,
            status=Status.NEW_EVENT_AVAILABLE.value,
            watermark_before=r.last_success_watermark,
            watermark_after=dumps(at[r.label]),
            message=f"job {request.job_id}: {said}",
            details={
                "to": args.to.isoformat(),
                "by": args.by,
                "reason": args.reason,
                "position": "given" if given_for(r, args.watermarks) is not None else "looked up",
                "requested_at": request.requested_at.isoformat(),
            },
        )
        for r in job_rows
    ]
    return [replace(e, event_id=rewound_id(request, e.row)) for e in events if e.row is not None]


def rewound_id(request: Request, row: RowKey) -> str:
    """The id of the request's REWOUND event on a row: the same however often the request is applied."""
    return uuid.uuid5(uuid.UUID(hex=request.request_id), f"rewound|{row.ref}").hex


def run_going(job_rows: Sequence[ControlRow]) -> str | None:
    """The job's run that is going as the control table says (a row IN_PROGRESS), or None."""
    going = [r for r in job_rows if r.status == Status.IN_PROGRESS.value]
    return (going[0].latest_run_id or "(start not confirmed yet)") if going else None


def apply(runtime: Runtime, request: Request, rows: Sequence[ControlRow], ended: Collection[str]) -> list[Event] | None:
    """The rewind's REWOUND events, or a refusal's REQUEST_DROPPED ones (said in the log), or none when the
    log holds its events already; None while the job's run is going (`ended`: the jobs whose run this tick
    recorded as ended, which it no longer waits for)."""
    job_rows = [r for r in rows if r.key.trigger_job_id == request.job_id]
    named = f"rewind of job {request.job_id} requested at {request.requested_at.isoformat()}"
    held = (datetime.now(timezone.utc) - request.requested_at).days + 2  # the log's days since the request
    if job_rows and runtime.events.existing_ids(
        [rewound_id(request, r.key) for r in job_rows], EventType.REWOUND, held
    ):
        # applied by a tick stopped before it removed the file: applied again, it would rewind a second time
        # over the run it may have started since
        log.info("%s: applied already (its events are in the log); removed from the queue", named)
        return []
    try:
        args = RewindArgs.of(request)
        why_not = refusal(request, job_rows, args)
        if why_not is None:
            going = run_going(job_rows)
            if going is not None and request.job_id not in ended:
                log.info("%s waits for run %s to end (then the rewind is applied)", named, going)
                return None
            context = CheckContext.starting_now(runtime.spark, runtime.config.settings.sensing.check_timeout_seconds)
            found = positions(job_rows, args.to, args.watermarks, runtime.sensors, context)
            events = rewound_events(request, job_rows, args, found)
            log.info("job %s: %s", request.job_id, args.said())
            return events
    except RangeRequestRefused as exc:
        why_not = str(exc)
    message = f"{named}: refused, nothing changed: {why_not}"
    log.warning("%s", message)
    return request.dropped(rows, message)
