"""The operator's commands: `status`, `why`, `events`, `report`, and the output of `tick --dry-run`.

None of them starts Spark (except the dry run, which senses): they read what every tick leaves in the
state folder (harness.state.status_files) and the event log's files (harness.state.event_reader), so they answer in a moment
and work while a heartbeat holds the state.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from harness.core.config_source import CONTROLS_FILE, InStateFolder
from harness.core.errors import HeartbeatError
from harness.core.vocabulary import EventType
from harness.state import event_reader, queue_files, status_files
from harness.state.lock import StateLock
from harness.views import status
from harness.views.watermarks import describe, when

if TYPE_CHECKING:
    from harness.core.config import Config
    from harness.tick.dry_run import DryRun
    from harness.tick.runtime import Runtime


def _snapshot(config: InStateFolder, *, whole: bool = False) -> dict[str, Any] | None:
    """The snapshot the last tick left: its outline (each job's rows read when shown), or `whole`."""
    read = status_files.read_snapshot if whole else status_files.read_snapshot_outline
    return read(config.state_dir)


def _unknown_job(snapshot: dict[str, Any] | None, job_id: str | None) -> bool:
    """A job asked for that the control table does not hold (none before the first tick)."""
    return job_id is not None and (snapshot is None or all(j["job_id"] != job_id for j in snapshot["jobs"]))


def guess_before(snapshot: dict[str, Any] | None, job_id: str) -> str:
    """The guess of a job id not in the control table (status.job_guess), as the start of the sentence
    that says what to check (`did you mean X? check ...`), else nothing."""
    guess = status.job_guess(snapshot, job_id)
    return f"{guess} " if guess else ""


def _events(config: InStateFolder, query: event_reader.EventQuery) -> list[dict[str, Any]]:
    return event_reader.read_events(config.state_dir, query, config.schema_folder)


def cmd_status(config: InStateFolder, args: argparse.Namespace) -> int:
    """The snapshot the last tick left and the health of recent ticks; never starts Spark."""
    state = config.state_dir
    if args.state is not None and args.state.lower() not in {c.lower() for c in status.STATE_CHOICES}:
        raise HeartbeatError(f"--state {args.state}: choose one of {', '.join(status.STATE_CHOICES)}")
    selection = status.Selection(job_id=args.job, state=args.state, listed=None if args.all else status.LISTED_JOBS)
    render = status.render_json if args.json else status.render
    snapshot = _snapshot(config, whole=args.json or args.all)  # every job shown: one read of the whole
    print(
        render(
            snapshot,
            status_files.read_json(config.layout.health),
            StateLock(state).current_holder(),
            selection,
            waiting=status_files.waiting_reasons(state),
            set_aside=[str(path) for path in queue_files.set_aside(config.layout.inbox)],
            disk_free=_disk_free(state),
        )
    )
    return 1 if _unknown_job(snapshot, args.job) else 0  # as `why` of a job not in the control table


def _disk_free(folder: Path) -> int | None:
    """The bytes free for the state folder's writes (None when it cannot be told: the folder is gone)."""
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def cmd_why(config: InStateFolder, args: argparse.Namespace) -> int:
    text, code = why_text(config, args.job, args.since, args.limit)
    print(text)
    return code


def why_text(config: InStateFolder, job_id: str, since_text: str = "7d", limit: int = 30) -> tuple[str, int]:
    """What `why --job` prints, and its exit code (1: the job is not in the control table); the live
    page's `why` is this text too."""
    since = event_reader.parse_since(since_text)
    lines = []
    try:
        events = _events(config, event_reader.EventQuery(since, job_id=job_id, limit=limit))
    except Exception as exc:  # noqa: BLE001 - the decision and rows are still worth printing
        events = []
        lines.append(f"(the event log could not be read: {exc})")
    snapshot = _snapshot(config)
    health = status_files.read_json(config.layout.health)
    refusal = ((health or {}).get("last_tick") or {}).get("controls_error")
    lines.append(
        status.render_why(
            snapshot,
            job_id,
            events,
            since,
            health,
            status_files.waiting_reasons(config.state_dir),
            refused_jobs=_refused_csv_jobs(refusal) if refusal and _unknown_job(snapshot, job_id) else None,
        )
    )
    rows = [r for r in (snapshot or {}).get("rows", []) if r["trigger_job_id"] == job_id]
    queued = [q for q in queue_files.peek(config.layout.inbox) if (q.get("args") or {}).get("job_id") == job_id]
    lines.extend(status.queued_lines(queued, rows))
    return "\n".join(lines), 1 if _unknown_job(snapshot, job_id) else 0


def _refused_csv_jobs(refusal: str) -> set[str] | None:
    """The job ids of the refused controls CSV, which the refusal names first (`<path>: refused, ...`);
    None when the file cannot be told or read (then `why` says what holds if the job is in it)."""
    first = refusal.splitlines()[0] if refusal else ""
    end = first.find(f"{CONTROLS_FILE}: ")
    if end < 0:
        return None
    try:
        rows = csv.reader(io.StringIO(Path(first[: end + len(CONTROLS_FILE)]).read_text(encoding="utf-8"), newline=""))
        header = [h.strip() for h in next(rows, [])]
        if "trigger_job_id" not in header:
            return None
        column = header.index("trigger_job_id")
        return {row[column].strip() for row in rows if len(row) > column}
    except (OSError, UnicodeDecodeError, csv.Error):
        return None


def event_types(given: list[str] | None) -> list[str]:
    """--type values as event types; an unknown one is refused with the list."""
    known = [t.value for t in EventType]
    wanted = [t.strip().upper() for t in given or []]
    unknown = [t for t in wanted if t not in known]
    if unknown:
        raise HeartbeatError(f"--type {', '.join(unknown)}: not an event type; choose from {', '.join(known)}")
    return wanted


def cmd_events(config: InStateFolder, args: argparse.Namespace) -> int:
    since = event_reader.parse_since(args.since)
    types = event_types(args.type)
    events = _events(
        config,
        event_reader.EventQuery(since, job_id=args.job, upstream=args.upstream, event_types=types, limit=args.limit),
    )
    if not events and args.job is not None:
        snapshot = _snapshot(config)
        if _unknown_job(snapshot, args.job):
            print(
                f"job {args.job} is not in the control table (as of the last tick) and has no events since "
                f"{since.strftime('%Y-%m-%d %H:%M:%S')} UTC; {guess_before(snapshot, args.job)}check trigger_job_id "
                "in the controls CSV"
            )
            return 1
    if args.json:
        for event in events:
            print(json.dumps(event_reader.plain(event), default=str))
        return 0
    if not events:
        print(f"no events since {since.strftime('%Y-%m-%d %H:%M:%S')} UTC match (widen with --since)")
    for event in events:
        print(status.event_line(event))
    return 0


def cmd_report(config: Config, args: argparse.Namespace) -> int:
    from harness.state.files import write_atomic

    path = Path(args.output) if args.output else config.layout.report
    write_atomic(path, report_page(config, args.since, job_ids=args.job or (), max_jobs=args.max_jobs))
    print(f"report written to {path} ({path.stat().st_size // 1024} KiB)")
    snapshot = _snapshot(config)
    unknown = [job_id for job_id in dict.fromkeys(args.job or ()) if _unknown_job(snapshot, job_id)]
    for job_id in unknown:  # as `why` of a job not in the control table: said, and the exit code 1
        print(
            f"warning: job {job_id} is not in the control table (as of the last tick), so the report has no "
            f"timeline for it; {guess_before(snapshot, job_id)}check trigger_job_id in the controls CSV",
            file=sys.stderr,
        )
    return 1 if unknown else 0


def report_page(
    config: Config,
    since_text: str,
    *,
    job_ids: Sequence[str] = (),
    max_jobs: int = 40,
    live_version: str | None = None,
) -> str:
    """The report's page over the window `since_text` (`report` writes it, `serve` serves it live)."""
    from harness.views import report

    since = event_reader.parse_since(since_text)
    notes = []
    try:
        events = _events(config, event_reader.EventQuery(since, limit=0))
    except HeartbeatError as exc:  # the live page goes on without the timelines (before the first tick, say)
        if live_version is None:
            raise
        events, notes = [], [f"The event log could not be read: {exc}"]
    return report.report_page(
        config.state_dir,
        config.project_dir,
        since,
        events,
        job_ids=job_ids,
        max_jobs=max_jobs,
        publishes=config.settings.publish.on_success,
        live_version=live_version,
        notes=notes,
    )


def print_dry_run(runtime: "Runtime") -> int:
    from harness.tick.dry_run import dry_run

    print("\n".join(dry_run_lines(dry_run(runtime), datetime.now(timezone.utc))))
    return 0


def dry_run_lines(result: "DryRun", now: datetime) -> list[str]:
    """What `tick --dry-run` prints: what the sensing found, and which jobs would start, why, and with
    which range."""
    lines = [f"dry run: nothing started, nothing appended ({now:%Y-%m-%d %H:%M:%S} UTC)"]
    if result.unfolded:
        lines.append("note: events wait to be folded into the control table; the next tick folds them first")
    if result.controls_note:
        lines.append(f"note: {result.controls_note}")
    lines.append(
        f"sensed {result.rows_sensed} rows, {result.upstreams_checked} upstreams: "
        f"{len(result.detections)} rows with new data, {len(result.check_errors)} check errors"
    )
    lines += [
        f"    new data  {d.key.sensor_source}:{d.key.sensor_id} -> {d.key.trigger_job_id}: "
        f"watermark {describe(d.watermark)}"
        for d in result.detections
    ]
    lines += [f"    error     {message}" for message in result.check_errors]
    if result.decisions is None:
        return lines + ["no decision: the trigger set is not built yet (run `python -m harness tick` once)"]
    lines.append(f"{len(result.would_start)} of {len(result.decisions)} jobs would start")
    reasons = {d.job_id: d.reason for d in result.decisions}
    for change in result.would_start:
        # the reason says when this start retries one the backend refused, and in its words why
        lines += [f"job {change['job_id']} would start with:", f"    because: {reasons.get(change['job_id'])}"]
        lines += [
            f"    {u['sensor_source']}:{u['sensor_id']} ({u['dependency']}): "
            f"from {describe(json.dumps(u['from']) if u['from'] is not None else None)} "
            f"to {describe(json.dumps(u['to']) if u['to'] is not None else None)}"
            for u in change["upstreams"]
        ]
        lines += [
            f"    note: {row} has new data: the tick folds it first and hands this run at most max_range steps "
            "of the range above, oldest first (the rest to the runs after it)"
            for row in result.parted.get(change["job_id"], [])
        ]
    lines += [
        f"job {d.job_id} waits for time: {d.reason}; starts at the earliest at {when(d.earliest_start_at)} UTC"
        for d in result.decisions
        if not d.should_start and d.earliest_start_at is not None
    ]
    return lines


def count(text: str) -> int:
    """A count option's value (`--limit`, `--max-jobs`, `--max-ticks`): a whole number, 0 or more, what 0
    means being the option's. A negative one is refused: `--limit -1` read as a slice dropped events."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, got {text!r}")
    return value


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    states = ", ".join(status.STATE_CHOICES)
    p = sub.add_parser("status", help="jobs by state, then each job's decision and rows (no Spark)")
    p.add_argument("--job", "--job-id", dest="job", metavar="JOB", help="only this job (trigger_job_id)")
    p.add_argument(
        "--state",
        type=str.strip,
        metavar="STATE",
        help=f"only jobs in this state, or with a row of this status: {states}",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help=f"list every job (by default the first {status.LISTED_JOBS}, the most urgent first, and a count of the rest)",
    )
    p.add_argument("--json", action="store_true", help="one JSON document (every job) instead of text")
    p.set_defaults(func=cmd_status, state_only=True)

    p = sub.add_parser("why", help="why a job starts or not: its reason, rows and latest events (no Spark)")
    p.add_argument("--job", "--job-id", dest="job", metavar="JOB", required=True, help="the trigger_job_id")
    p.add_argument("--since", default="7d", help="events since (30m, 2h, 7d, or an ISO time; default 7d)")
    p.add_argument("--limit", type=count, default=30, help="at most this many events, the newest (default 30)")
    p.set_defaults(func=cmd_why, state_only=True)

    types = ", ".join(t.value for t in EventType)
    p = sub.add_parser("events", help="browse the event log (no Spark)")
    p.add_argument("--job", "--job-id", dest="job", metavar="JOB", help="only this job's events")
    p.add_argument("--upstream", help="only events of upstreams whose label (source:sensor_id) contains this")
    p.add_argument("--type", action="append", metavar="TYPE", help=f"only this event type (repeatable): {types}")
    p.add_argument(
        "--since",
        default=event_reader.DEFAULT_SINCE,
        help=f"events since (90s, 30m, 2h, 7d, or an ISO time; default {event_reader.DEFAULT_SINCE})",
    )
    p.add_argument(
        "--limit",
        type=count,
        default=event_reader.DEFAULT_LIMIT,
        help=f"at most this many events, the newest (default {event_reader.DEFAULT_LIMIT}; 0: all)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per event and line")
    p.set_defaults(func=cmd_events, state_only=True)

    p = sub.add_parser("report", help="write the timeline page (HTML) into the state folder")
    p.add_argument("--since", default="2d", help="the window (30m, 2h, 7d, or an ISO time; default 2d)")
    p.add_argument(
        "--job",
        "--job-id",
        dest="job",
        metavar="JOB",
        action="append",
        help="only this job (repeatable); default: the busiest jobs",
    )
    p.add_argument("--max-jobs", type=count, default=40, help="at most this many jobs on the timeline (default 40)")
    p.add_argument("--output", help="the HTML file (default <state>/report.html)")
    p.set_defaults(func=cmd_report)
