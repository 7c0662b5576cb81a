"""The files a tick leaves for the operator's commands, which read them without starting Spark: the
snapshot of the control table and the trigger set (`status.json`), the health of recent ticks
(`health.json`), each sensed row's waiting reason (`waiting.json`) and each tick's seconds per step
(`ticks.jsonl`, for `report`). The JSON files are written atomically (a kill leaves the old file or the
new one); a tick line is appended whole, and a reader skips a line cut short. harness.views.status
renders them.
"""

from __future__ import annotations

import json
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
) -> None:
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
    write_snapshot_body(state_dir, body)


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


def write_snapshot_body(state_dir: Path, body: dict[str, Any]) -> None:
    write_atomic(
        StateLayout(state_dir).snapshot,
        json.dumps(body, default=_plain),
        before_replace=lambda: crash_point("status:snapshot"),
    )


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


def record_waiting(state_dir: Path, reasons: dict[str, str], filtered: dict[str, str] | None = None) -> None:
    """Why each row sensed this tick has nothing new (`waiting for partition ds=... (no data yet)`), by row
    (RowKey.ref): two rows of one table each keep their own reason. `filtered`: the new data each row's
    preprocess_query returned no row over (harness.tick.sensing.filtered_key), for the next tick."""
    body = {"sensed_at": datetime.now(timezone.utc).isoformat(), "rows": reasons, "filtered": filtered or {}}
    write_atomic(StateLayout(state_dir).waiting, json.dumps(body))


def read_json_or_none(path: Path) -> dict[str, Any] | None:
    """A state file that may be missing or cut short (a reader never fails on it)."""
    try:
        return read_json(path)
    except StateFileError:
        return None


def waiting_reasons(state_dir: Path) -> dict[str, str]:
    return ((read_json_or_none(StateLayout(state_dir).waiting) or {}).get("rows")) or {}


def filtered_before(state_dir: Path) -> dict[str, str]:
    """What the last tick's preprocess_queries returned no row over, by row (record_waiting): a cache, so a
    file missing or cut short only makes the next tick run the queries again."""
    return ((read_json_or_none(StateLayout(state_dir).waiting) or {}).get("filtered")) or {}


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
