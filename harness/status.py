"""`python -m harness status`: every job, why it did or did not start, and each of its rows."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Sequence

from harness.tables import JobDecision


def _when(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, datetime) else "-"


def _short_watermark(text: str | None) -> str:
    if not text:
        return "-"
    value = json.loads(text)
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "recent"}
    out = json.dumps(value, separators=(",", ":"))
    return out if len(out) <= 48 else out[:45] + "..."


def render(decisions: Sequence[JobDecision], rows: Sequence[dict[str, Any]]) -> str:
    by_job: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_job.setdefault(row["trigger_job_id"], []).append(row)
    lines: list[str] = []
    for d in decisions:
        verdict = "START" if d.should_start else "wait"
        lines.append(f"job {d.job_id} ({d.job_name or '-'}): {verdict}: {d.reason}")
        for r in by_job.get(d.job_id, []):
            dep = "hard" if r["is_hard_dependency"] else "soft"
            lines.append(
                f"    {r['upstream_label']:<48} {r['status'] or 'NULL':<20} {dep} {r['job_state']:<8} "
                f"watermark {_short_watermark(r['watermark'])}  changed {_when(r['status_change_timestamp'])}"
            )
            if r.get("latest_run_id"):
                lines.append(f"        run {r['latest_run_id']} started {_when(r['job_start_timestamp'])}"
                             f" ended {_when(r['job_end_timestamp'])}")
            if r.get("last_error") and (r.get("last_error_timestamp") or datetime.min) >= (
                r.get("status_change_timestamp") or datetime.min
            ):
                lines.append(f"        last error {_when(r['last_error_timestamp'])}: {r['last_error']}")
    if not lines:
        lines.append("no control table yet: run `python -m harness tick` first")
    return "\n".join(lines)
