"""The files a tick leaves for the operator's commands, which read them without starting Spark: the
snapshot of the control table and the trigger set (`status.json`), the health of recent ticks
(`health.json`), each sensed row's waiting reason (`waiting.json`) and each tick's seconds per step
(`ticks.jsonl`, for `report`). The JSON files are written atomically (a kill leaves the old file or the
new one); a tick line is appended whole, and a reader skips a line cut short. harness.views.status
renders them.

A tick's cost follows what changed, not the table's size: the snapshot (about 1 KB a row) and the waiting
reasons are written only when they changed. Every tick writes the small `status.tick.json` instead: the
tick that found the state as the snapshot shows it (by the snapshot's `body_id`), which `read_snapshot`
takes the tick id and time from. A kill between the snapshot's write and the tick file's leaves a tick
file naming the snapshot before: the snapshot's own tick and time then stand.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from harness.core.errors import StateFileError
from harness.core.faults import crash_point
from harness.core.state_layout import StateLayout, on_volume
from harness.core.vocabulary import ControlRow, control_row
from harness.state.files import append_line, write_atomic

if TYPE_CHECKING:
    from harness.state.tables import JobDecision

TICKS_KEPT = 20_000  # lines of ticks.jsonl kept (two weeks of a tick a minute)
TICKS_KEPT_ON_VOLUME = 2_100  # a week of 5-minute ticks


def _plain(value: Any) -> str:
    """A table's time or date as the snapshot holds it (json's `default`: called only for what JSON has no
    type for, so the snapshot's 400,000 other values at 10,000 rows are not looked at one by one)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not a value of a table")


def write_snapshot(
    state_dir: Path,
    tick_id: str,
    decisions: Sequence[JobDecision],
    rows: Sequence[dict[str, Any]],
    facts: dict[str, Any] | None = None,
) -> SnapshotWritten:
    """`facts`: what a later tick needs to go on from this snapshot without Spark (harness.tick.cold)."""
    written_at = datetime.now(timezone.utc).isoformat()
    body = {
        "written_at": written_at,
        "decided_at": written_at,  # when the jobs' reasons were worded ("changed 14 s ago"); a cold tick keeps it
        "tick_id": tick_id,
        "jobs": [
            {
                "job_id": d.job_id,
                "job_name": d.job_name,
                "should_start": d.should_start,
                "reason": d.reason,
                "earliest_start_at": None if d.earliest_start_at is None else d.earliest_start_at.isoformat(),
            }
            for d in decisions
        ],
        "rows": rows,
        **(facts or {}),
    }
    return write_snapshot_body(state_dir, body)


def snapshot_trigger_set(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """The snapshot's jobs as the trigger set's rows they were written from (write_snapshot), which
    JobDecision.of reads back."""
    return [
        {
            "trigger_job_id": job["job_id"],
            "trigger_job_name": job["job_name"],
            "should_start": job["should_start"],
            "reason": job["reason"],
            "earliest_start_at": job.get("earliest_start_at"),
        }
        for job in snapshot["jobs"]
    ]


@dataclass(frozen=True)
class SnapshotWritten:
    """A snapshot as written: its id, and its file as the write left it (to tell it was not replaced since)."""

    body_id: str
    file: tuple[int, int, int]  # inode, size, modification time (ns)


def _file_of(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def write_snapshot_body(state_dir: Path, body: dict[str, Any]) -> SnapshotWritten:
    """The snapshot whole, under a new `body_id`, its index, then the tick file naming it."""
    layout = StateLayout(state_dir)
    body = {**body, "body_id": uuid.uuid4().hex}
    pieces, index = _snapshot_text(body)
    write_atomic(layout.snapshot, pieces, before_replace=lambda: crash_point("status:snapshot"))
    written = SnapshotWritten(body["body_id"], _file_of(layout.snapshot) or (0, 0, 0))
    if index is not None:
        write_atomic(layout.snapshot_index, json.dumps(index))
    else:
        layout.snapshot_index.unlink(missing_ok=True)
    confirm_snapshot(state_dir, body["tick_id"], written, body["written_at"])
    return written


# A row as the index holds it: its status, job state and dependency, one letter each
_STATUS_CODES = {None: "-", "NEW_EVENT_AVAILABLE": "N", "IN_PROGRESS": "I", "COMPLETED": "C", "FAILED": "F"}
_STATE_CODES = {"UNPAUSED": "U", "PAUSED": "P"}
_REFUSAL = ("last_start_refusal", "last_start_refused_at", "status_change_timestamp")  # what a refused start shows


def _snapshot_text(body: dict[str, Any]) -> tuple[list[str], dict[str, Any] | None]:
    """The snapshot's JSON in pieces (`jobs` and `rows` last, each row's text after the other: 147 MB at
    100,000 rows, written piece by piece, never joined), and its index: where
    the text before them ends, where `jobs` is, and for each job where its rows are and their codes
    (`_STATUS_CODES`, `_STATE_CODES`, hard or soft), with the refused starts' fields. The text is ASCII
    (json's default), so its offsets are the file's bytes. No index when a job's rows are not side by side
    or a row holds a value the codes do not name: readers then read the whole snapshot."""
    head = json.dumps({k: v for k, v in body.items() if k not in ("jobs", "rows")}, default=_plain)[:-1]
    jobs = json.dumps(body["jobs"], default=_plain)
    pieces = [head, ', "jobs": ' if len(head) > 1 else '"jobs": ', jobs, ', "rows": [']
    jobs_at = len(head) + len(pieces[1])
    at = jobs_at + len(jobs) + len(pieces[3])
    spans: dict[str, list[Any]] = {}
    refusals: list[list[Any]] = []
    indexed, last_job = True, None
    for n, row in enumerate(body["rows"]):
        if n:
            pieces.append(", ")
            at += 2
        text = json.dumps(row, default=_plain)
        pieces.append(text)
        job, status, state = row.get("trigger_job_id"), row.get("status"), row.get("job_state")
        if indexed and (status not in _STATUS_CODES or state not in _STATE_CODES or (job in spans and job != last_job)):
            indexed = False
        if indexed:
            code = _STATUS_CODES[status] + _STATE_CODES[state] + ("h" if row.get("is_hard_dependency") else "s")
            span = spans.setdefault(job, [at, at, ""])
            span[1], span[2] = at + len(text), span[2] + code
            if row.get("last_start_refusal"):
                refusals.append([job, len(span[2]) // 3 - 1, *(_plain_or_none(row.get(k)) for k in _REFUSAL)])
        at += len(text)
        last_job = job
    pieces.append("]}")
    index = {
        "body_id": body["body_id"],
        "head": len(head),
        "jobs": [jobs_at, jobs_at + len(jobs)],
        "rows": spans,
        "refusals": refusals,
    }
    return pieces, index if indexed else None


def _plain_or_none(value: Any) -> Any:
    return None if value is None else value if isinstance(value, str) else _plain(value)


ROWS_OF = "rows_of"  # an outline's loader of one job's whole rows (read_snapshot_outline)


def read_snapshot_outline(state_dir: Path) -> dict[str, Any] | None:
    """The snapshot as `status` and `why` read it, whatever its size: its jobs, and for each row only what
    a job's state is told by (status, job state, dependency, a refused start); ROWS_OF(job_id) reads a
    job's whole rows. The whole snapshot (read_snapshot) where it has no index of its own."""
    layout = StateLayout(state_dir)
    index = read_json_or_none(layout.snapshot_index)
    if index is None:
        return read_snapshot(state_dir)
    try:
        with open(layout.snapshot, "rb") as handle:
            head = json.loads(handle.read(index["head"]) + b"}")
            if head.get("body_id") != index["body_id"]:  # an index of another snapshot
                return read_snapshot(state_dir)
            handle.seek(index["jobs"][0])
            jobs = json.loads(handle.read(index["jobs"][1] - index["jobs"][0]))
    except FileNotFoundError:
        return None
    except ValueError:
        return read_snapshot(state_dir)  # says what is wrong with the file
    statuses = {code: status for status, code in _STATUS_CODES.items()}
    states = {code: state for state, code in _STATE_CODES.items()}
    rows: list[dict[str, Any]] = []
    for job_id, (_, _, codes) in index["rows"].items():
        for i in range(0, len(codes), 3):
            rows.append(
                {
                    "trigger_job_id": job_id,
                    "status": statuses[codes[i]],
                    "job_state": states[codes[i + 1]],
                    "is_hard_dependency": codes[i + 2] == "h",
                }
            )
    offsets, n = {}, 0
    for job_id, (_, _, codes) in index["rows"].items():
        offsets[job_id] = n
        n += len(codes) // 3
    for job_id, position, *refused in index["refusals"]:
        rows[offsets[job_id] + position].update(zip(_REFUSAL, refused))

    def rows_of(job_id: str) -> list[dict[str, Any]]:
        span = index["rows"].get(job_id)
        if span is None:
            return []
        with open(layout.snapshot, "rb") as handle:
            handle.seek(span[0])
            return json.loads(b"[" + handle.read(span[1] - span[0]) + b"]")  # type: ignore[no-any-return]

    return _with_tick(layout, {**head, "jobs": jobs, "rows": rows, ROWS_OF: rows_of})


def confirm_snapshot(
    state_dir: Path, tick_id: str, written: SnapshotWritten, written_at: str | None = None
) -> SnapshotWritten | None:
    """The tick `tick_id` found the state as the snapshot `written` shows it: only the tick file is written.
    None, and nothing written, when the snapshot is no longer the one `written` says (another process's
    tick wrote its own, or the file was replaced): the caller writes it whole."""
    layout = StateLayout(state_dir)
    if _file_of(layout.snapshot) != written.file:
        return None
    at = written_at or datetime.now(timezone.utc).isoformat()
    write_atomic(layout.snapshot_tick, json.dumps({"tick_id": tick_id, "written_at": at, "body_id": written.body_id}))
    return written


def read_snapshot(state_dir: Path) -> dict[str, Any] | None:
    """The snapshot with the latest tick that found the state as it shows (the tick file, when it names
    this snapshot); None before the first tick."""
    layout = StateLayout(state_dir)
    body = read_json(layout.snapshot)
    return None if body is None else _with_tick(layout, body)


def _with_tick(layout: StateLayout, body: dict[str, Any]) -> dict[str, Any]:
    """`body` with the tick and time of the tick file, when it names this snapshot."""
    tick = read_json_or_none(layout.snapshot_tick)
    if tick is not None and body.get("body_id") is not None and tick.get("body_id") == body["body_id"]:
        body.update(tick_id=tick["tick_id"], written_at=tick["written_at"])
    return body


def snapshot_as_read(state_dir: Path, body: dict[str, Any]) -> SnapshotWritten | None:
    """The snapshot `read_snapshot` returned, as the tick file can name it again (None: it has no id yet,
    written before ids, and is written whole)."""
    file = _file_of(StateLayout(state_dir).snapshot)
    return None if file is None or body.get("body_id") is None else SnapshotWritten(body["body_id"], file)


def snapshot_rows(snapshot: dict[str, Any] | None) -> list[ControlRow] | None:
    """The control table's rows as the last tick left them, from its snapshot (read_json); None before
    the first tick."""
    return None if snapshot is None else [control_row(r) for r in snapshot["rows"]]


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON file a tick leaves; None before the first tick. One that cannot be read (a tick writes them
    whole: copied or edited by hand) is refused with what to do."""
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    except ValueError as exc:
        raise StateFileError(
            f"{path} cannot be read ({exc}): it is cut short or not JSON. A tick writes it whole "
            "(was it copied or edited by hand?); the next tick writes it again, or delete it "
            "and run `python -m harness tick`"
        ) from None


# The waiting reasons as this process last wrote or read them, by file (its inode, size and time): an
# unchanged sensing is not written again, and a file another process wrote since is never taken for it.
_waiting_seen: dict[Path, tuple[tuple[int, int, int] | None, dict[str, str], dict[str, str]]] = {}


def record_waiting(state_dir: Path, reasons: dict[str, str], filtered: dict[str, str] | None = None) -> None:
    """Why each row sensed this tick has nothing new (`waiting for partition ds=... (no data yet)`), by row
    (RowKey.ref): two rows of one table each keep their own reason. `filtered`: the new data each row's
    preprocess_query returned no row over (harness.tick.sensing.filtered_key), for the next tick. Written
    only when it changed (`sensed_at`: when it last did)."""
    path, filtered = StateLayout(state_dir).waiting, filtered or {}
    seen = _waiting_seen.get(path)
    if seen is not None and seen[0] == _file_of(path) and seen[1] == reasons and seen[2] == filtered:
        return
    body = {"sensed_at": datetime.now(timezone.utc).isoformat(), "rows": reasons, "filtered": filtered}
    write_atomic(path, json.dumps(body))
    _waiting_seen[path] = (_file_of(path), reasons, filtered)


def _waiting(state_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The waiting reasons and the filtered new data, as the file holds them (empty when it is missing or
    cut short: a reader never fails on it)."""
    path = StateLayout(state_dir).waiting
    file = _file_of(path)
    seen = _waiting_seen.get(path)
    if seen is not None and file is not None and seen[0] == file:
        return seen[1], seen[2]
    body = read_json_or_none(path) or {}
    rows, filtered = body.get("rows") or {}, body.get("filtered") or {}
    if file is not None:
        _waiting_seen[path] = (file, rows, filtered)
    return rows, filtered


def read_json_or_none(path: Path) -> dict[str, Any] | None:
    """A state file that may be missing or cut short (a reader never fails on it)."""
    try:
        return read_json(path)
    except StateFileError:
        return None


def waiting_reasons(state_dir: Path) -> dict[str, str]:
    return _waiting(state_dir)[0]


def filtered_before(state_dir: Path) -> dict[str, str]:
    """What the last tick's preprocess_queries returned no row over, by row (record_waiting): a cache, so a
    file missing or cut short only makes the next tick run the queries again."""
    return _waiting(state_dir)[1]


@dataclass(frozen=True)
class TickResult:
    tick_id: str
    started_at: datetime
    seconds: float
    error: str | None
    steps: dict[str, float] = field(default_factory=dict)
    started: Sequence[str] = ()
    refused: Sequence[str] = ()
    step: str | None = None  # the step that failed
    controls_error: str | None = None  # the controls CSV refused (the control table keeps the last valid one)
    check_errors: int = 0  # rows whose upstream's check failed
    # each failed check's message, once per upstream (it names the upstream); None: the tick ended before it
    # sensed, so the last sensing's stand
    failed_checks: Sequence[str] | None = None


def last_failed_checks(state_dir: Path) -> set[str]:
    """The failed checks' messages of the last tick, every one (a check failing as it did then is not
    recorded again: harness.tick.sensing.to_record)."""
    health = read_json_or_none(StateLayout(state_dir).health) or {}
    return set((health.get("last_tick") or {}).get("failed_checks") or [])


def record_tick(state_dir: Path, result: TickResult) -> dict[str, Any]:
    """Update the health record with one tick's result: the last successful tick, failures in a row."""
    health = read_json_or_none(StateLayout(state_dir).health) or {}  # one cut short starts again
    ended = datetime.now(timezone.utc).isoformat()
    last = health.get("last_tick") or {}
    checks = list(last.get("failed_checks") or []) if result.failed_checks is None else list(result.failed_checks)
    check_count = last.get("failed_check_count") if result.failed_checks is None else len(checks)
    health["last_tick"] = {
        "tick_id": result.tick_id,
        "started_at": result.started_at.isoformat(),
        "ended_at": ended,
        "seconds": round(result.seconds, 2),
        "error": result.error,
        "step": result.step,
        "controls_error": result.controls_error,
        "refused": list(result.refused),
        "check_errors": result.check_errors,
        "failed_checks": checks,  # every one: `status` shows the first few
        "failed_check_count": check_count,
    }
    if result.error is None:
        health.update(last_success_at=ended, failures_in_a_row=0, first_failure_at=None)
    else:
        health["failures_in_a_row"] = int(health.get("failures_in_a_row") or 0) + 1
        health["first_failure_at"] = health.get("first_failure_at") or result.started_at.isoformat()
    write_atomic(StateLayout(state_dir).health, json.dumps(health))
    _append_tick(
        state_dir,
        {
            "tick_id": result.tick_id,
            "started_at": result.started_at.isoformat(),
            "seconds": round(result.seconds, 2),
            "steps": result.steps,
            "error": result.error,
            "started": list(result.started),
            "refused": list(result.refused),
        },
    )
    return health


def _append_tick(state_dir: Path, line: dict[str, Any]) -> None:
    # On a volume the file is rewritten whole at every tick: a week of 5-minute ticks is kept there
    append_line(
        StateLayout(state_dir).ticks, json.dumps(line), TICKS_KEPT_ON_VOLUME if on_volume(state_dir) else TICKS_KEPT
    )


def read_ticks(state_dir: Path, since: datetime) -> list[dict[str, Any]]:
    """The ticks started since `since`, oldest first (a line cut short by a kill is skipped)."""
    path = StateLayout(state_dir).ticks
    if not path.exists():
        return []
    ticks = []
    for text in path.read_text().splitlines():
        try:
            tick = json.loads(text)
        except ValueError:
            continue
        if datetime.fromisoformat(tick["started_at"]) >= since:
            ticks.append(tick)
    return ticks
