"""What `python -m harness status` shows, without starting Spark: the snapshot of the control table and
the trigger set the last tick left (`<state>/status.json`), and the health of recent ticks
(`<state>/health.json`). Both are written atomically (a kill leaves the old file or the new one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from harness.files import write_atomic
from harness.faults import crash_point
from harness.tables import JobDecision

SNAPSHOT_FILE = "status.json"
HEALTH_FILE = "health.json"


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def write_snapshot(state_dir: Path, tick_id: str, decisions: Sequence[JobDecision],
                   rows: Sequence[dict[str, Any]]) -> None:
    body = {
        "written_at": datetime.now(timezone.utc).isoformat(),
        "tick_id": tick_id,
        "jobs": [{"job_id": d.job_id, "job_name": d.job_name, "should_start": d.should_start, "reason": d.reason}
                 for d in decisions],
        "rows": [{k: _plain(v) for k, v in row.items()} for row in rows],
    }
    write_atomic(state_dir / SNAPSHOT_FILE, json.dumps(body), before_replace=lambda: crash_point("status:snapshot"))


def read_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


@dataclass(frozen=True)
class TickResult:
    tick_id: str
    started_at: datetime
    seconds: float
    error: str | None


def record_tick(state_dir: Path, result: TickResult) -> dict[str, Any]:
    """Update the health record with one tick's result: the last successful tick, failures in a row."""
    health = read_json(state_dir / HEALTH_FILE) or {}
    ended = datetime.now(timezone.utc).isoformat()
    health["last_tick"] = {"tick_id": result.tick_id, "started_at": result.started_at.isoformat(),
                           "ended_at": ended, "seconds": round(result.seconds, 2), "error": result.error}
    if result.error is None:
        health.update(last_success_at=ended, failures_in_a_row=0, first_failure_at=None)
    else:
        health["failures_in_a_row"] = int(health.get("failures_in_a_row") or 0) + 1
        health["first_failure_at"] = health.get("first_failure_at") or result.started_at.isoformat()
    write_atomic(state_dir / HEALTH_FILE, json.dumps(health))
    return health


def _when(value: Any) -> str:
    if not value:
        return "-"
    return datetime.fromisoformat(str(value)).strftime("%Y-%m-%d %H:%M:%S")


def _short_watermark(text: str | None) -> str:
    if not text:
        return "-"
    value = json.loads(text)
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "recent"}
    out = json.dumps(value, separators=(",", ":"))
    return out if len(out) <= 48 else out[:45] + "..."


def render_health(health: dict[str, Any] | None, holder: str | None) -> list[str]:
    lines = [f"heartbeat running: {holder}" if holder else "no heartbeat holds the state folder now"]
    if not health:
        return lines + ["no tick has run yet"]
    last = health.get("last_tick") or {}
    failures = int(health.get("failures_in_a_row") or 0)
    success = f"last successful tick {_when(health.get('last_success_at'))}" if health.get("last_success_at") \
        else "no successful tick yet"
    if failures:
        lines.append(f"WARNING: the last {failures} tick{'s' if failures > 1 else ''} failed "
                     f"(since {_when(health.get('first_failure_at'))}); {success}")
        lines.append(f"    last error: {last.get('error')}")
    else:
        lines.append(f"last tick {_when(last.get('ended_at'))} ok ({last.get('seconds')} s)")
    return lines


def render(snapshot: dict[str, Any] | None, health: dict[str, Any] | None, holder: str | None) -> str:
    lines = render_health(health, holder)
    if snapshot is None:
        lines.append("no control table yet: run `python -m harness tick` first")
        return "\n".join(lines)
    lines.append(f"state as the tick {snapshot['tick_id']} left it ({_when(snapshot['written_at'])})")
    by_job: dict[str, list[dict[str, Any]]] = {}
    for row in snapshot["rows"]:
        by_job.setdefault(row["trigger_job_id"], []).append(row)
    for job in snapshot["jobs"]:
        verdict = "START" if job["should_start"] else "wait"
        lines.append(f"job {job['job_id']} ({job['job_name'] or '-'}): {verdict}: {job['reason']}")
        for r in by_job.get(job["job_id"], []):
            dep = "hard" if r["is_hard_dependency"] else "soft"
            lines.append(
                f"    {r['upstream_label']:<48} {r['status'] or 'NULL':<20} {dep} {r['job_state']:<8} "
                f"watermark {_short_watermark(r['watermark'])}  changed {_when(r['status_change_timestamp'])}"
            )
            if r.get("latest_run_id"):
                lines.append(f"        run {r['latest_run_id']} started {_when(r['job_start_timestamp'])}"
                             f" ended {_when(r['job_end_timestamp'])}")
            if r.get("last_error") and (r.get("last_error_timestamp") or "") >= (r.get("status_change_timestamp") or ""):
                lines.append(f"        last error {_when(r['last_error_timestamp'])}: {r['last_error']}")
    if not snapshot["jobs"]:
        lines.append("the control table has no rows: add rows to the controls CSV")
    return "\n".join(lines)
