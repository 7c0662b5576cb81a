"""What `status` and `why` print from the files the last tick left (harness.state.status_files): jobs by what
needs attention, each row's state and waiting reason, the health of recent ticks, and a job's events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Collection, Sequence

from harness.core.durations import in_words
from harness.core.suggest import close_to, did_you_mean
from harness.core.vocabulary import JobState, RowKey, StartFrom, Status, latest_run_end, upstream_label
from harness.state import status_files
from harness.views.watermarks import describe, fit, when

LABEL_WIDTH = 48
# The statuses as the snapshot writes them (an enum member's `.value` is looked up anew at each use: 10,000
# rows ask several times each)
FAILED, IN_PROGRESS, COMPLETED = Status.FAILED.value, Status.IN_PROGRESS.value, Status.COMPLETED.value
PAUSED = JobState.PAUSED.value


class JobView(str, Enum):
    """What an operator asks of a job, from its decision and its rows' statuses (the rules themselves
    are the trigger set's: a job is `ready` exactly when the trigger set says it starts)."""

    READY = "ready"
    WAITING = "waiting"
    RUNNING = "running"
    FAILED = "failed"
    PAUSED = "paused"


def job_view(job: dict[str, Any], rows: Sequence[dict[str, Any]]) -> JobView:
    statuses = {r["status"] for r in rows}
    if FAILED in statuses:
        return JobView.FAILED
    if IN_PROGRESS in statuses:
        return JobView.RUNNING
    if job["should_start"]:
        return JobView.READY
    if (
        rows
        and all(r["job_state"] == PAUSED for r in rows)
        or any(r["job_state"] == PAUSED and r["is_hard_dependency"] for r in rows)
    ):
        return JobView.PAUSED
    return JobView.WAITING


STATE_CHOICES = [v.value for v in JobView] + [s.value for s in Status] + ["NULL"]


def _matches(state: str, view: JobView, rows: Sequence[dict[str, Any]]) -> bool:
    """`--state`: a job view (ready, waiting, running, failed, paused) or a row status (a job with such a row)."""
    if state.lower() in {v.value for v in JobView}:
        return view.value == state.lower()
    wanted = None if state.upper() == "NULL" else state.upper()
    return any(r["status"] == wanted for r in rows)


LISTED_JOBS = 50  # jobs `status` lists by default, the most urgent first (`--all`: every one)


@dataclass(frozen=True)
class Selection:
    job_id: str | None = None
    state: str | None = None
    listed: int | None = LISTED_JOBS  # at most this many jobs in the text (None: every one)

    def picks(self, job: dict[str, Any], rows: Sequence[dict[str, Any]], view: JobView) -> bool:
        """Whether the job is one `--job` and `--state` ask for (every job when neither is given)."""
        return (self.job_id is None or job["job_id"] == self.job_id) and (
            self.state is None or _matches(self.state, view, rows)
        )


ATTENTION_ORDER = [JobView.FAILED, JobView.READY, JobView.RUNNING, JobView.WAITING, JobView.PAUSED]


def jobs_of(snapshot: dict[str, Any]) -> list[tuple[dict[str, Any], list[dict[str, Any]], JobView]]:
    """Each job with its rows and state: failed jobs first, then ready, running, waiting, paused."""
    by_job: dict[str, list[dict[str, Any]]] = {}
    for row in snapshot["rows"]:
        by_job.setdefault(row["trigger_job_id"], []).append(row)
    out = []
    for job in snapshot["jobs"]:
        rows = by_job.get(job["job_id"], [])
        out.append((job, rows, job_view(job, rows)))
    return sorted(out, key=lambda item: ATTENTION_ORDER.index(item[2]))  # stable: by job id within a state


def whole_rows(snapshot: dict[str, Any], job_id: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A job's rows with every column: from an outline of the snapshot (status_files.read_snapshot_outline,
    which holds only what a job's state is told by), read for this job alone."""
    rows_of = snapshot.get(status_files.ROWS_OF)
    return rows if rows_of is None else list(rows_of(job_id))


def described(view: JobView, reason: str) -> str:
    """`<view>: <reason>`, once where the reason begins with its view already ("ready: new data on ...")."""
    return reason if reason.startswith(f"{view.value}: ") else f"{view.value}: {reason}"


def earliest_start(job: dict[str, Any]) -> str:
    """For a job waiting only for time (a quiet period, its minimum gap, its start window): when it may
    start at the earliest; '' otherwise (and in snapshots written before the trigger set said)."""
    earliest = job.get("earliest_start_at")
    return f"; starts at the earliest at {when(earliest)} UTC" if earliest else ""


def _age(written_at: str, now: datetime) -> str:
    return f"{in_words((now - datetime.fromisoformat(written_at)).total_seconds())} ago"


def summary(jobs: Sequence[tuple[dict[str, Any], list[dict[str, Any]], JobView]]) -> dict[str, int]:
    counts = {v.value: 0 for v in JobView}
    for _, _, view in jobs:
        counts[view.value] += 1
    return counts


SHOWN_PROBLEMS = 5  # failed checks and refused starts listed in the top lines; the rest counted


def render_health(
    health: dict[str, Any] | None,
    holder: str | None,
    snapshot: dict[str, Any] | None = None,
    set_aside: Sequence[str] = (),
    disk_free: int | None = None,
) -> list[str]:
    """The top lines: who holds the state, the last tick, and what needs a hand (a failed tick, a refused
    controls CSV, refused starts, failed checks, queued files set aside), each naming what failed and
    what to change."""
    lines = [f"heartbeat running: {holder}" if holder else "no heartbeat holds the state folder now"]
    lines.extend(low_disk_lines(disk_free))
    lines.extend(set_aside_lines(set_aside))
    if not health:
        return lines + ["no tick has run yet"]
    last = health.get("last_tick") or {}
    failed = failed_tick_lines(health)
    outcome = "ran, refusing the controls CSV" if last.get("controls_error") else "ok"
    lines += failed or [f"last tick {when(last.get('ended_at'))} {outcome} ({last.get('seconds')} s)"]
    if last.get("controls_error"):
        lines.extend(controls_refused(last["controls_error"]))
    lines.extend(refused_lines(refused_starts(snapshot, last.get("refused") or ())))
    lines.extend(failed_check_lines(last))
    return lines


LOW_DISK_BYTES = 100 * 1024 * 1024  # below this, a tick may not write its events, tables and health record


def low_disk_lines(free: int | None) -> list[str]:
    """A state folder's disk nearly full: a tick fails on its writes, and may not record its failure."""
    if free is None or free >= LOW_DISK_BYTES:
        return []
    return [
        f"WARNING: the state folder's disk has {free / 1024 / 1024:.0f} MB free: ticks fail on their writes (No "
        "space left on device), and a failed tick may not be in the lines below; free space, and the next tick "
        'goes on (docs/operations.md, "When the state folder\'s disk fills")'
    ]


def set_aside_lines(set_aside: Sequence[str]) -> list[str]:
    """Queued requests or publications a tick could not read, and set aside (harness.state.queue_files)."""
    if not set_aside:
        return []
    return (
        [
            f"WARNING: {len(set_aside)} queued request(s) or publication(s) could not be read, so they were not "
            "applied; queue each again (`complete`, `retry`, `publish`), then remove its file:"
        ]
        + [f"    {name}" for name in set_aside[:SHOWN_PROBLEMS]]
        + ([f"    ... and {len(set_aside) - SHOWN_PROBLEMS} more"] if len(set_aside) > SHOWN_PROBLEMS else [])
    )


def reasons_as_of(snapshot: dict[str, Any]) -> str:
    """When the jobs' reasons were worded, where a later tick that found nothing to do left the state: a
    reason's "changed 14 s ago" counts from then."""
    decided = snapshot.get("decided_at")
    return f"; the reasons as of {when(decided)} UTC" if decided and decided != snapshot["written_at"] else ""


def failed_tick_lines(health: dict[str, Any] | None) -> list[str]:
    """The ticks failing since the last successful one: how many, since when, the last one's step and
    root cause; none when the last tick went well."""
    failures = int((health or {}).get("failures_in_a_row") or 0)
    if not health or not failures:
        return []
    last = health.get("last_tick") or {}
    success = (
        f"last successful tick {when(health.get('last_success_at'))}"
        if health.get("last_success_at")
        else "no successful tick yet"
    )
    ticks = f"the last {failures} ticks" if failures > 1 else "the last tick"
    step = f"in step {last['step']}; " if last.get("step") else ""
    return [
        f"WARNING: {ticks} failed (since {when(health.get('first_failure_at'))}); {success}",
        f"    last error: {last.get('error')}",
        f"    {step}the heartbeat's log has the whole error and any trace (tick {last.get('tick_id')}); fix the "
        "cause and the next tick goes on",
    ]


def current_refusal(r: dict[str, Any]) -> str | None:
    """The row's latest refused start, while nothing has happened to the row since (a start ends it)."""
    if r.get("last_start_refusal") and (r.get("last_start_refused_at") or "") >= (
        r.get("status_change_timestamp") or ""
    ):
        return str(r["last_start_refusal"])
    return None


def refused_starts(snapshot: dict[str, Any] | None, refused_last_tick: Sequence[str] = ()) -> dict[str, str]:
    """Each job whose start its backend refused and that has not started since, with the backend's words
    (from the snapshot's rows: the job waits for the refused-start wait, ticks that do not retry included);
    a job the last tick refused that the snapshot does not show is named alone."""
    out: dict[str, str] = {}
    for r in (snapshot or {}).get("rows") or []:
        refusal = current_refusal(r)
        if refusal:
            out.setdefault(r["trigger_job_id"], refusal)
    for job_id in refused_last_tick:
        out.setdefault(job_id, f"job {job_id}: start refused by its backend (`why --job {job_id}` says why)")
    return out


def refused_lines(refused: dict[str, str]) -> list[str]:
    if not refused:
        return []
    jobs = f"{len(refused)} jobs' starts are" if len(refused) > 1 else "1 job's start is"
    lines = [
        f"WARNING: {jobs} refused by the backend; fix what it says, and the job is tried again after "
        "the refused-start wait:"
    ]
    lines += [f"    {one_line(message)}" for message in list(refused.values())[:SHOWN_PROBLEMS]]
    if len(refused) > SHOWN_PROBLEMS:
        lines.append(f"    ... and {len(refused) - SHOWN_PROBLEMS} more (`status --state waiting` lists each job)")
    return lines


def failed_check_lines(last: dict[str, Any]) -> list[str]:
    """The last tick's failed upstream checks, each in its own words (the upstream, the cause, what to
    check); a health record written before they were kept gives their count."""
    messages = list(last.get("failed_checks") or [])
    if not messages:  # a failure is recorded when it begins, however long ago: look back a month
        count = int(last.get("check_errors") or 0)
        where = "`events --type CHECK_FAILED --since 30d` has each"
        return [f"WARNING: {count} upstream check(s) failed in the last tick ({where})"] if count else []
    where = "`status --json` lists each, in health.last_tick.failed_checks"
    count = int(last.get("failed_check_count") or len(messages))
    checks = f"{count} upstream checks" if count > 1 else "1 upstream check"
    lines = [f"WARNING: {checks} failed in the last tick (their rows see no new data until a check succeeds):"]
    lines += [f"    {one_line(message)}" for message in messages[:SHOWN_PROBLEMS]]
    if count > SHOWN_PROBLEMS:
        lines.append(f"    ... and {count - SHOWN_PROBLEMS} more ({where})")
    return lines


def one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def controls_refused(message: str) -> list[str]:
    """The refused controls CSV, said where an operator looks first (`status`, `why`)."""
    return [
        "WARNING: the controls CSV is refused; the control table keeps the last valid one until it is fixed "
        "(check it with `python -m harness validate`):"
    ] + [f"    {line}" for line in message.splitlines()]


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    t = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _run_bounds(r: dict[str, Any]) -> tuple[Any, Any]:
    """The latest run's start and end as the row holds them: from when the backend confirmed it to when the
    backend says it ended (run_ended_at; the time a tick recorded the end only when the backend did not say)."""
    return (
        r.get("run_started_timestamp") or r.get("job_start_timestamp"),
        latest_run_end(r),
    )


def run_times(r: dict[str, Any]) -> tuple[datetime | None, datetime | None]:
    """The latest run's own start and end (_run_bounds). A run going (the row IN_PROGRESS) has no end, nor
    has one whose recorded end is an earlier run's."""
    started_at, ended_at = _run_bounds(r)
    started, ended = _time(started_at), _time(ended_at)
    if r.get("status") == IN_PROGRESS or ended is None or (started is not None and ended < started):
        return started, None
    return started, ended


def start_unconfirmed(r: dict[str, Any]) -> bool:
    """A start requested (the row IN_PROGRESS) whose run its backend has not confirmed: no run id since the
    request (the row's latest run id, if any, is an earlier run's)."""
    requested, confirmed = _time(r.get("job_start_timestamp")), _time(r.get("run_started_timestamp"))
    return r.get("status") == IN_PROGRESS and requested is not None and (confirmed is None or confirmed < requested)


def run_line(r: dict[str, Any]) -> str:
    started, ended = run_times(r)
    # the times in words from the row's own texts: `when` says them as it would the times read from them
    started_at, ended_at = _run_bounds(r)
    if ended is None:
        going = "still running" if r.get("status") == IN_PROGRESS else "no end recorded yet"
        return f"run {r['latest_run_id']} started {when(started_at)}, {going}"
    took = f" ({in_words((ended - started).total_seconds())})" if started else ""
    return f"run {r['latest_run_id']} started {when(started_at)}, ended {when(ended_at)}{took}"


def run_json(r: dict[str, Any]) -> dict[str, Any] | None:
    """The latest run's own times for `status --json` (run_times): a run going has no end, where the row's
    run_ended_at and job_end_timestamp still hold the previous run's."""
    if start_unconfirmed(r):  # the row's run id, if any, is an earlier run's
        return {"run_id": None, "requested_at": r["job_start_timestamp"], "confirmed": False, "going": True}
    if not r.get("latest_run_id"):
        return None
    started, ended = run_times(r)
    return {
        "run_id": r["latest_run_id"],
        "started_at": started.isoformat() if started else None,
        "ended_at": ended.isoformat() if ended else None,
        "seconds": round((ended - started).total_seconds(), 3) if started and ended else None,
        "going": r.get("status") == IN_PROGRESS,
    }


def waiting_reason(r: dict[str, Any], waiting: dict[str, str]) -> str | None:
    """The row's own reason for having nothing new, when it waits for data (status NULL or COMPLETED)."""
    if not waiting or r.get("status") not in (None, COMPLETED):
        return None
    return waiting.get(RowKey(r["sensor_source"], r["sensor_id"], r["trigger_job_id"]).ref)


def stale(r: dict[str, Any]) -> bool:
    """The row's upstream missed its expected_within since its last new data (`status`: STALE; the bundle's
    dashboard and alert say the same of the control table)."""
    return bool(r.get("freshness_missed_at")) and r["freshness_missed_at"] > (
        r.get("latest_event_fetched_timestamp") or ""
    )


def backfill_line(r: dict[str, Any]) -> str | None:
    """The row's latest backfill part's run (`python -m harness backfill`): going, or how it ended."""
    if not r.get("backfill_run_at"):
        return None
    ended = r.get("backfill_ended_at")
    if r.get("status") == "IN_PROGRESS" and (not ended or r["backfill_run_at"] > ended):
        return f"backfill run going (requested {when(r['backfill_run_at'])}): {r.get('backfill_run')}"
    if ended:
        outcome = str(r.get("backfill_outcome") or "").split(": ", 1)[-1]
        return f"last backfill run ended {when(ended)}: {outcome}"
    return None


def queued_lines(requests: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> list[str]:
    """A job's queued rewinds and backfills (the inbox's request bodies), and what each waits for."""
    going = any(r.get("status") == "IN_PROGRESS" for r in rows)
    lines = []
    for request in requests:
        args, command = request.get("args") or {}, request.get("command")
        if command == "rewind":
            what = f"rewind to {when(args.get('to'))} UTC"
            waits = "waits for the run going to end, then applies" if going else "applied at the next tick"
        elif command == "backfill":
            what = f"backfill {when(args.get('from'))} -> {when(args.get('to'))} UTC"
            waits = (
                "its next part waits for the run going to end (a job never runs twice at once)"
                if going
                else "its next part starts at the next tick"
            )
        else:
            continue
        reason = f" ({args['reason']})" if args.get("reason") else ""
        lines.append(
            f"    queued {when(request.get('requested_at'))} by {args.get('by', '?')}: {what}{reason}: {waits}"
        )
    return ["queued requests:", *lines] if lines else []


def rewind_line(r: dict[str, Any]) -> str | None:
    """The row's latest rewind (`python -m harness rewind`): where its next run starts while no run has
    succeeded since, else that a run consumed it."""
    if not r.get("rewound_at"):
        return None
    said = str(r.get("rewind_reason") or "rewound").split(": ", 1)[-1]
    if (r.get("last_success_timestamp") or "") < r["rewound_at"]:
        return f"{said} (applied {when(r['rewound_at'])}): the next run starts at {describe(r.get('rewound_to'))}"
    return f"{said} (applied {when(r['rewound_at'])}): consumed by the run that succeeded {when(r['last_success_timestamp'])}"


def _row_lines(r: dict[str, Any], waiting: dict[str, str] | None = None) -> list[str]:
    dep = "hard" if r["is_hard_dependency"] else "soft"
    label = r.get("upstream_label") or upstream_label(r["sensor_source"], r["sensor_id"])
    lines = [
        f"    {fit(label, LABEL_WIDTH).ljust(LABEL_WIDTH)} {(r['status'] or 'NULL').ljust(20)} {dep} "
        f"{r['job_state']:<8} changed {when(r['status_change_timestamp'])}  watermark {describe(r['watermark'])}"
    ]
    reason = waiting_reason(r, waiting or {})
    if reason:
        lines.append(f"        waiting: {reason}")
    if (r.get("range_parts") or 0) > 1:
        lines.append(
            f"        range in parts (max_range {r.get('max_range')}): part {r.get('range_part')} of {r['range_parts']}"
        )
    if start_unconfirmed(r):
        lines.append(
            f"        start requested {when(r['job_start_timestamp'])}, not confirmed by its backend yet: the next "
            "tick sends the request again with the same token (one run at most)"
        )
    elif r.get("latest_run_id"):
        lines.append(f"        {run_line(r)}")
    refusal = current_refusal(r)
    if (
        r.get("last_error")
        and (r.get("last_error_timestamp") or "") >= (r.get("status_change_timestamp") or "")
        and r["last_error"] != refusal  # the refusal is the row's error too: said once, below
    ):
        # a row with a waiting reason had its check succeed in the last tick: its error is over
        over = " (its upstream's check has succeeded since)" if reason else ""
        lines.append(f"        last error {when(r['last_error_timestamp'])}{over}: {r['last_error']}")
    if refusal:
        lines.append(f"        start refused {when(r['last_start_refused_at'])}: {refusal}")
    if r.get("request_dropped_at") and r["request_dropped_at"] >= (r.get("status_change_timestamp") or ""):
        lines.append(f"        request dropped {when(r['request_dropped_at'])}: {r.get('request_dropped')}")
    lines.extend(start_lines(r))
    for said in (rewind_line(r), backfill_line(r)):
        if said:
            lines.append(f"        {said}")
    if stale(r):
        lines.append(f"        STALE (freshness missed {when(r['freshness_missed_at'])}): {r.get('freshness_missed')}")
    elif r.get("expected_within") and r.get("watched_since") and not r.get("latest_event_fetched_timestamp"):
        lines.append(
            f"        no new data yet: expected within {r.get('expected_within')}, watched since {when(r['watched_since'])}"
        )
    return lines


def start_lines(r: dict[str, Any]) -> list[str]:
    """Where a row with start_from now watches from (until its first new data), or that its first check will
    say; when its state was imported from the lakehouse engine."""
    lines = []
    if r.get("start_from") == StartFrom.NOW.value and not r.get("latest_event_fetched_timestamp"):
        if r.get("watched_since"):
            position = describe(r["watermark"]) if r.get("watermark") else "the start (its upstream held nothing)"
            lines.append(f"        watching from {position} (start_from now), since {when(r['watched_since'])}")
        elif not r.get("status") and not r.get("watermark"):
            lines.append(
                "        start_from now: its first check records where the upstream is (what it holds then is "
                "not new data)"
            )
    if r.get("imported_at"):
        lines.append(f"        imported from the lakehouse engine {when(r['imported_at'])}")
    return lines


def render(
    snapshot: dict[str, Any] | None,
    health: dict[str, Any] | None,
    holder: str | None,
    selection: Selection = Selection(),
    now: datetime | None = None,
    waiting: dict[str, str] | None = None,
    set_aside: Sequence[str] = (),
    disk_free: int | None = None,
) -> str:
    now = now or datetime.now(timezone.utc)
    lines = render_health(health, holder, snapshot, set_aside, disk_free)
    if snapshot is None:
        lines.append("no control table yet: run `python -m harness tick` first")
        return "\n".join(lines)
    jobs = jobs_of(snapshot)
    counts = summary(jobs)
    lines.insert(
        0,
        f"{len(jobs)} jobs: "
        + ", ".join(f"{n} {view}" for view, n in counts.items())
        + f" ({len(snapshot['rows'])} rows)",
    )
    lines.append(
        f"state as the tick {snapshot['tick_id']} left it ({when(snapshot['written_at'])} UTC, "
        f"{_age(snapshot['written_at'], now)}){reasons_as_of(snapshot)}"
    )
    selected = [(job, rows, view) for job, rows, view in jobs if selection.picks(job, rows, view)]
    listed = selected if selection.listed is None else selected[: selection.listed]
    for job, rows, view in listed:
        lines.append(
            f"job {job['job_id']} ({job['job_name'] or '-'}): {described(view, job['reason'])}{earliest_start(job)}"
        )
        for r in whole_rows(snapshot, job["job_id"], rows):
            lines.extend(_row_lines(r, waiting))
    if not snapshot["jobs"]:
        lines.append("the control table has no rows: add rows to the controls CSV")
    elif not selected:
        known = {j["job_id"] for j in snapshot["jobs"]}
        guess = job_guess(snapshot, selection.job_id) if selection.job_id and selection.job_id not in known else ""
        lines.append(
            "no job matches "
            + " and ".join(f"{k} {v}" for k, v in (("--job", selection.job_id), ("--state", selection.state)) if v)
            + (f"; {guess}" if guess else "")
        )
    elif len(listed) < len(selected):
        lines.append(not_listed_line(selected[len(listed) :]))
    return "\n".join(lines)


def not_listed_line(rest: Sequence[tuple[dict[str, Any], list[dict[str, Any]], JobView]]) -> str:
    """The last line when `status` lists only the first jobs: how many more, by state, and how to see them."""
    counts = ", ".join(f"{n:,} {view}" for view, n in summary(rest).items() if n)
    return (
        f"... {len(rest):,} more jobs not listed ({counts}): add `--all` to list every one, or pick them "
        "with `--state STATE` or `--job ID`; `--json` prints them all"
    )


def render_json(
    snapshot: dict[str, Any] | None,
    health: dict[str, Any] | None,
    holder: str | None,
    selection: Selection = Selection(),
    now: datetime | None = None,
    waiting: dict[str, str] | None = None,
    set_aside: Sequence[str] = (),
    disk_free: int | None = None,
) -> str:
    now = now or datetime.now(timezone.utc)
    body: dict[str, Any] = {
        "holder": holder,
        "health": health,
        "set_aside": list(set_aside),
        "disk_free_bytes": disk_free,
        "snapshot": None,
    }
    if snapshot is not None:
        jobs = jobs_of(snapshot)
        body["snapshot"] = {
            "tick_id": snapshot["tick_id"],
            "written_at": snapshot["written_at"],
            "age_seconds": round((now - datetime.fromisoformat(snapshot["written_at"])).total_seconds(), 1),
            "summary": summary(jobs),
            "jobs": [
                job
                | {
                    "view": view.value,
                    "rows": [
                        r | {"waiting_reason": waiting_reason(r, waiting or {}), "latest_run": run_json(r)}
                        for r in rows
                    ],
                }
                for job, rows, view in jobs
                if selection.picks(job, rows, view)
            ],
        }
    return _indented(body)


_JOBS_HERE = "\u0000jobs"  # where the jobs go (a value no JSON text of a job holds unescaped)


def _indented(body: dict[str, Any]) -> str:
    """`body` as indented JSON, each job on a line of its own: indenting is json's pure-Python encoder, about
    five times its C encoder's time, 13 s for an estate's 25,000 jobs; one line a job stays readable and
    takes the C encoder."""
    snapshot = body.get("snapshot")
    if not snapshot or not snapshot.get("jobs"):
        return json.dumps(body, indent=2, default=str)
    text = json.dumps(body | {"snapshot": snapshot | {"jobs": _JOBS_HERE}}, indent=2, default=str)
    jobs = ",\n".join("    " + json.dumps(job, default=str) for job in snapshot["jobs"])
    return text.replace(json.dumps(_JOBS_HERE), "[\n" + jobs + "\n  ]", 1)


# --- why ------------------------------------------------------------------------------------------


def event_line(e: dict[str, Any], with_job: bool = True) -> str:
    label = upstream_label(e["sensor_source"], e["sensor_id"]) if e.get("sensor_source") else "-"
    parts = [when(e["event_time"]), f"{e['event_type']:<21}"]
    if with_job:
        parts.append(f"{e.get('trigger_job_id') or '-'}")
    parts.append(fit(label, LABEL_WIDTH))
    if e.get("status"):
        parts.append(f"-> {e['status']}")
    if e.get("run_id"):
        parts.append(f"run {e['run_id']}")
    if e.get("watermark_after"):
        parts.append(f"watermark {describe(e['watermark_after'])}")
    if e.get("message"):
        parts.append(f"- {e['message']}")
    return "  ".join(parts)


def _in_refused_csv(job_id: str, refusal: str, refused_jobs: Collection[str] | None) -> str:
    """What a job missing from the control table has to do with the refused controls CSV: in it (named
    in the refusal, or among the file's jobs), in neither file, or, the file unread, what holds if it is."""
    if (refused_jobs is not None and job_id in refused_jobs) or f"-> job {job_id})" in refusal:
        return "; it is in the refused controls CSV, which is not loaded until the file is fixed"
    if refused_jobs is not None:
        return "; it is not in the controls CSV either: check the job id"
    return "; a job only in the refused controls CSV is not loaded until the file is fixed"


def job_guess(snapshot: dict[str, Any] | None, job_id: str) -> str:
    """`did you mean A, B?` naming the snapshot's jobs close to `job_id` (by name), else nothing: the one
    guess of every command given a job id the control table does not hold."""
    return did_you_mean(close_to(job_id, sorted(j["job_id"] for j in (snapshot or {}).get("jobs", []))))


def render_why(
    snapshot: dict[str, Any] | None,
    job_id: str,
    events: Sequence[dict[str, Any]],
    since: datetime,
    health: dict[str, Any] | None = None,
    waiting: dict[str, str] | None = None,
    refused_jobs: Collection[str] | None = None,
) -> str:
    """`why --job`: the job's decision, reason, rows and latest events. `refused_jobs`: the jobs of the
    refused controls CSV, when it could be read, so that a job not in the control table is said to be in
    it, or in neither."""
    refused = ((health or {}).get("last_tick") or {}).get("controls_error")
    if snapshot is None:
        return "\n".join(
            ["no control table yet: run `python -m harness tick` first"]
            + (controls_refused(refused) if refused else [])
        )
    found = [(job, rows, view) for job, rows, view in jobs_of(snapshot) if job["job_id"] == job_id]
    if not found:
        guess = job_guess(snapshot, job_id)
        line = f"job {job_id} is not in the control table (as the tick {snapshot['tick_id']} left it)" + (
            f"; {guess}" if guess else ""
        )
        if refused:
            line = "\n".join([line + _in_refused_csv(job_id, refused, refused_jobs)] + controls_refused(refused))
        if not events:
            return line
        # a job whose rows left the controls CSV: its runs still going are followed to their end
        return "\n".join([line, *_event_lines(events, since)])
    job, rows, view = found[0]
    rows = whole_rows(snapshot, job_id, rows)
    verdict = "starts at the next tick" if job["should_start"] else "does not start"
    lines = failed_tick_lines(health)  # the decision below is as the last successful tick left it
    lines += controls_refused(refused) if refused else []
    lines += [
        f"job {job_id} ({job['job_name'] or '-'}): {view.value}: {verdict}",
        f"    because: {job['reason']}",
        *(
            [f"    starts at the earliest at {when(job['earliest_start_at'])} UTC"]
            if job.get("earliest_start_at")
            else []
        ),
        f"    (as the tick {snapshot['tick_id']} left it, {when(snapshot['written_at'])} UTC{reasons_as_of(snapshot)})",
        "rows:",
    ]
    for r in rows:
        lines.extend(_row_lines(r, waiting))
        lines.append(
            f"        last new data {when(r.get('latest_event_fetched_timestamp'))}; "
            f"last successful run consumed {describe(r.get('last_success_watermark'))}"
        )
    return "\n".join(lines + _event_lines(events, since))


def _event_lines(events: Sequence[dict[str, Any]], since: datetime) -> list[str]:
    head = (
        f"events since {when(since)} UTC ({len(events)}, newest last):"
        if events
        else f"no events of this job since {when(since)} UTC (widen with --since)"
    )
    return [head, *("    " + event_line(e, with_job=False) for e in events)]
