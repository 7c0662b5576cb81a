"""The commands that steer a job's range: `rewind` and `backfill` (harness.tick.rewind and
harness.tick.backfill apply them).

Like `complete` and `retry`, a command checks what it can without Spark (its arguments, and the job and
its upstreams against the last tick's status snapshot), then queues the request for the next tick, which
applies or refuses it and records why. Nothing here reads an upstream: where an upstream was at a time
is the tick's to ask, with the sensors' settings and deadlines.
"""

from __future__ import annotations

import argparse
import getpass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from harness.commands import operator
from harness.core.errors import HeartbeatError, StateFileError
from harness.state.status_files import read_json, snapshot_rows

if TYPE_CHECKING:
    from harness.core.config import Config


def who() -> str:
    """The OS user who asked (recorded with the request)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a container's)
        return "unknown user"


def rewind_request(job_id: str, to: str, reason: str | None, watermarks: list[str], now: datetime) -> Any:
    """The queued request, with its arguments checked (HeartbeatError saying what to change)."""
    from harness.tick import inbox
    from harness.tick.rewind import RewindArgs, in_words, parse_time, parse_watermarks

    at = parse_time(to)
    if at > now:
        raise HeartbeatError(
            f"--to {to!r} is {in_words(at)}, after now ({in_words(now)}): a rewind goes back to a past time; "
            "nothing queued"
        )
    args = RewindArgs(at, reason.strip() if reason and reason.strip() else None, who(), parse_watermarks(watermarks))
    request = inbox.new_request("rewind", job_id, args.to_args())
    return request, args


def cmd_rewind(config: Config, args: argparse.Namespace) -> int:
    from harness.tick import inbox
    from harness.tick.rewind import run_going, unknown_upstreams

    request, rewind = rewind_request(args.job, args.to, args.reason, args.watermark, datetime.now(timezone.utc))
    rows = _job_rows(config, args.job)
    unknown = unknown_upstreams(rows, rewind.watermarks) if rows else []
    if unknown:
        labels = ", ".join(sorted(r.label for r in rows))
        raise HeartbeatError(
            f"--watermark names {', '.join(unknown)}, not an upstream of job {args.job} ({labels}); nothing queued"
        )
    going = run_going(rows)
    if going is not None:
        print(
            f"note: job {args.job}'s run {going} is going (as of the last tick): the rewind waits in the queue until "
            "a tick records that run's end, then applies (applied before, the run's success would record its own "
            "range as consumed over the rewind)"
        )
    path = inbox.submit(config.state_dir, request)
    print(
        f"job {args.job}: {rewind.said()}: queued ({path.name}); the next tick looks up where each upstream was then "
        f"and hands the job's next run the range from there (`python -m harness why --job {args.job}` says what it did)"
    )
    return 0


def backfill_request(
    job_id: str, start: str, end: str, max_range: str | None, reason: str | None, now: datetime
) -> Any:
    """The queued request, with its arguments checked (HeartbeatError saying what to change)."""
    from harness.tick import inbox
    from harness.tick.backfill import BackfillArgs, check_range, parse_max_range
    from harness.tick.rewind import parse_time

    args = BackfillArgs(
        parse_time(start, "--from"),
        parse_time(end, "--to"),
        parse_max_range(max_range) if max_range is not None else None,
        reason.strip() if reason and reason.strip() else None,
        who(),
    )
    check_range(args, now)
    return inbox.new_request("backfill", job_id, args.to_args()), args


def cmd_backfill(config: Config, args: argparse.Namespace) -> int:
    from harness.tick import inbox
    from harness.tick.rewind import in_words

    request, backfill = backfill_request(
        args.job, args.start, args.end, args.max_range, args.reason, datetime.now(timezone.utc)
    )
    rows = _job_rows(config, args.job)
    path = inbox.submit(config.state_dir, request)
    parts = backfill.parts()
    print(
        f"job {args.job}: backfill {in_words(backfill.start)} -> {in_words(backfill.end)} in {len(parts)} "
        f"part{'s' if len(parts) > 1 else ''}: queued ({path.name}); the next tick looks up where each upstream "
        "was at each part's bounds and starts the parts one at a time, each with its own token, while no other run "
        f"of the job is going; the job's watermark does not move{' (a run of it is going now)' if rows and any(r.status == 'IN_PROGRESS' for r in rows) else ''}"
    )
    return 0


def _job_rows(config: Config, job_id: str) -> list[Any]:
    """The job's rows in the last tick's snapshot; HeartbeatError when the snapshot does not hold the job."""
    try:
        snapshot = read_json(config.layout.snapshot)
    except StateFileError as exc:
        print(f"note: not checked against the control table, queued all the same: {exc}")
        return []
    rows = [r for r in snapshot_rows(snapshot) or [] if r.key.trigger_job_id == job_id]
    if snapshot is not None and not rows:
        raise HeartbeatError(
            f"job {job_id} is not in the control table (as of the last tick); "
            f"{operator.guess_before(snapshot, job_id)}check --job (trigger_job_id in the controls CSV); nothing queued"
        )
    return rows


def _job_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--job",
        "--job-id",
        dest="job",
        required=True,
        metavar="JOB",
        help="the job's trigger_job_id in the controls CSV",
    )


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    rewind = sub.add_parser(
        "rewind",
        help="hand a job's next run the range from a past time on every upstream",
        description="Rewind a job: its next run is handed the range from TIME on every upstream of the job up "
        "to now, once, as if its last successful run had ended then. The request is queued and applied at the "
        "next tick (docs/ranges.md).",
    )
    _job_option(rewind)
    rewind.add_argument(
        "--to",
        required=True,
        metavar="TIME",
        help="ISO 8601, UTC unless it names an offset: 2026-12-04T17:00, 2026-12-04T18:00+01:00",
    )
    rewind.add_argument("--reason", help="why, recorded with the rewind and shown by status, why and the report")
    rewind.add_argument(
        "--watermark",
        action="append",
        default=[],
        metavar="UPSTREAM=VALUE",
        help="the position of an upstream no time maps to (or to set by hand), as JSON, as `events` shows a "
        "watermark; UPSTREAM as status names it (kafka:orders) or its sensor_id; repeatable",
    )
    rewind.set_defaults(func=cmd_rewind)
    backfill = sub.add_parser(
        "backfill",
        help="run a job over a past range in one-off runs, moving no watermark",
        description="Backfill a job: one-off runs handed exactly the range FROM -> TO on every upstream of the job "
        "(in consecutive parts of at most --max-range each), each with its own idempotency token, one at a time "
        "while no other run of the job is going; the job's watermark does not move. The request is queued and "
        "applied by the next ticks (docs/ranges.md).",
    )
    _job_option(backfill)
    backfill.add_argument(
        "--from",
        dest="start",
        required=True,
        metavar="TIME",
        help="the range's start (ISO 8601, UTC unless it names an offset)",
    )
    backfill.add_argument("--to", dest="end", required=True, metavar="TIME", help="the range's end, in the past")
    backfill.add_argument(
        "--max-range",
        metavar="DURATION",
        help="the longest range one run is handed (6h, 1d): the range is cut into consecutive parts of that length",
    )
    backfill.add_argument("--reason", help="why, recorded with the backfill and shown with its runs")
    backfill.set_defaults(func=cmd_backfill)
