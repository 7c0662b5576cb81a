"""Freshness: a row's `expected_within` (the controls CSV) says how often its upstream should change.

Checked by the tick right after sensing, on the rows sensed in it: a row whose check found nothing
new, and whose last new data (`latest_event_fetched_timestamp`, when the harness detected it) is
older than `expected_within`, gets one FRESHNESS_MISSED event. One per lapse: the row's latest
FRESHNESS_MISSED being newer than its last new data means this lapse was reported; the next detection
ends the lapse. Rows not sensed this tick (their job is running or FAILED, they are PAUSED) and rows
whose check failed (that is reported as CHECK_FAILED) are not judged.

A row that never had new data counts from when it was first watched: its first check that found nothing
new records WATCH_STARTED (the control table's `watched_since`), and an upstream that never delivers is
stale once `expected_within` has passed since then, as one whose data stopped.

Each lapse is notified once (`freshness.notify_command` and/or `freshness.webhook_url` in heartbeat.yml),
before its event is appended, and the outcome is recorded in the event's details. A failing
notification is logged and recorded, never retried (the lapse is reported once), and never fails the tick.
"""

from __future__ import annotations

import json
import logging
import subprocess
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Sequence

from harness.core.config import FreshnessSettings
from harness.core.durations import in_words, parse_duration
from harness.core.redact import redact
from harness.core.vocabulary import ControlRow, EventType, RowKey
from harness.state.event_log import Event, now

log = logging.getLogger(__name__)


def judged(rows: Sequence[ControlRow], sensing_events: Sequence[Event]) -> set[RowKey]:
    """The rows of `rows` (sensed in a tick, `sensing_events` its checks' events) that freshness judges:
    those checked without error that found nothing new."""
    answered = {e.row for e in sensing_events if e.row is not None}
    return {r.key for r in rows} - answered


def since(row: ControlRow) -> datetime | None:
    """From when a row's freshness counts: its last new data, else when it was first watched."""
    return row.latest_event_fetched_timestamp or row.watched_since


def to_watch(rows: Sequence[ControlRow], judged: set[RowKey]) -> list[ControlRow]:
    """The rows of `judged` with an expectation and nothing to count it from yet: no new data, not watched."""
    return [r for r in rows if r.expected_within and since(r) is None and r.key in judged]


def watch_events(rows: Sequence[ControlRow], sensing_events: Sequence[Event]) -> list[Event]:
    """WATCH_STARTED for each row sensed in this tick (`rows`, `sensing_events` its checks' events) that
    has an expected_within and neither new data nor a watch yet: its freshness counts from now."""
    return [
        Event(
            EventType.WATCH_STARTED,
            row=row.key,
            message=f"{row.label}: no new data yet; expected within {row.expected_within}, counted from now",
            details={"expected_within": row.expected_within},
        )
        for row in to_watch(rows, judged(rows, sensing_events))
    ]


def stale_rows(rows: Sequence[ControlRow], judged: set[RowKey], at: datetime) -> list[tuple[ControlRow, timedelta]]:
    """The rows of `judged` past their expectation at `at` whose lapse has no FRESHNESS_MISSED yet,
    each with how long its upstream has been unchanged (or, with no new data yet, watched)."""
    out = []
    for row in rows:
        expected = parse_duration(row.expected_within or "")
        last = since(row)
        if not expected or last is None or row.key not in judged:
            continue
        if row.freshness_missed_at is not None and row.freshness_missed_at > last:
            continue  # this lapse was reported
        if at - last > expected:
            out.append((row, at - last))
    return out


def freshness_events(
    rows: Sequence[ControlRow],
    sensing_events: Sequence[Event],
    settings: FreshnessSettings,
    cwd: Path,
    at: datetime | None = None,
) -> list[Event]:
    """FRESHNESS_MISSED for each row sensed in this tick (`rows`, with `sensing_events` the events its
    checks produced) whose lapse is new, each notified once."""
    at = at or now()
    events = []
    for row, age in stale_rows(rows, judged(rows, sensing_events), at):
        last_change = row.latest_event_fetched_timestamp
        details: dict[str, Any] = {
            "upstream": row.label,
            "trigger_job_id": row.key.trigger_job_id,
            "expected_within": row.expected_within,
            "last_change_at": last_change.isoformat() if last_change else None,
            "unchanged_seconds": round(age.total_seconds()),
            "detected_at": at.isoformat(),
        }
        if last_change is not None:
            message = (
                f"{row.label}: no new data for {in_words(age.total_seconds())}, expected within "
                f"{row.expected_within} (new data last detected {last_change:%Y-%m-%d %H:%M:%S} UTC)"
            )
        else:
            assert row.watched_since is not None  # stale_rows keeps only rows with a time to count from
            details["watched_since"] = row.watched_since.isoformat()
            message = (
                f"{row.label}: no new data at all in {in_words(age.total_seconds())} of watching, expected "
                f"within {row.expected_within} (watched since {row.watched_since:%Y-%m-%d %H:%M:%S} UTC)"
            )
        notification = notify(
            {**details, "event_type": EventType.FRESHNESS_MISSED.value, "message": message}, settings, cwd
        )
        if notification:
            details["notification"] = notification
        events.append(
            Event(
                EventType.FRESHNESS_MISSED,
                row=row.key,
                watermark_before=row.watermark,
                message=message,
                details=details,
            )
        )
    return events


def notify(payload: dict[str, Any], settings: FreshnessSettings, cwd: Path) -> dict[str, str]:
    """Call the configured command and webhook once each; returns how each went, in words."""
    body = json.dumps(payload, default=str)
    outcome: dict[str, str] = {}
    if settings.notify_command:
        outcome["command"] = _run_command(settings.notify_command, body, settings.timeout_seconds, cwd)
    if settings.webhook_url:
        outcome["webhook"] = _post(settings.webhook_url, body, settings.timeout_seconds)
    for channel, result in outcome.items():
        if not result.startswith("delivered"):
            log.warning(
                "%s: freshness notification (%s) %s; it is not retried", payload.get("upstream"), channel, result
            )
    return outcome


def _run_command(command: str, body: str, timeout: float, cwd: Path) -> str:
    try:
        done = subprocess.run(
            ["/bin/bash", "-c", command],
            input=body,
            text=True,
            capture_output=True,
            timeout=timeout,
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"failed: timed out after {timeout:g}s (freshness.timeout_seconds)"
    except OSError as exc:
        return f"failed: {exc}"
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        return redact(f"failed: exit code {done.returncode}: {last[0][:300]}") or "failed"
    return "delivered: exit code 0"


def _post(url: str, body: str, timeout: float) -> str:
    request = urllib.request.Request(
        url, data=body.encode(), method="POST", headers={"Content-Type": "application/json", "User-Agent": "heartbeat"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http(s) only (config)
            return f"delivered: HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"failed: HTTP {exc.code} {exc.reason}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return redact(f"failed: {reason}") or "failed"
