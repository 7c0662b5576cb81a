"""An import of the lakehouse engine's state (`python -m harness import-lakehouse-engine`), applied by a tick.

The command translates the engine's tables into one queued request (harness.tick.inbox) holding, per row of
the controls CSV, what to set: a status and watermark carried from the engine, or start_from now where they
cannot be. The tick turns it into one STATE_IMPORTED event per row, only for a row the control table holds
that has no state in Heartbeat yet (no status, watermark, watch, run or earlier import): a row with state is
left as it is and named in the log, so importing twice changes nothing.

Each event's id is derived from the request and the row, and its time is the request's: a request applied
again after a kill between its append and the removal of its file appends the same events, which the log
keeps once (stg_heartbeat__events).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any, Collection, Mapping, Sequence

from harness.core.vocabulary import ControlRow, EventType, RowKey, StartFrom
from harness.state.event_log import Event

log = logging.getLogger(__name__)

COMMAND = "import-lakehouse-engine"


@dataclass(frozen=True)
class Carried:
    """What an import sets on one row: a status and watermark (JSON), or start_from now (both None), with
    where each came from in words (`source`) and anything the operator should know (`note`)."""

    key: RowKey
    status: str | None
    watermark: str | None
    source: str
    note: str = ""
    engine: Mapping[str, Any] | None = None  # the engine's values read, as they were (for the event's details)

    @property
    def watches_from_now(self) -> bool:
        return self.watermark is None

    def as_json(self) -> dict[str, Any]:
        return {
            "sensor_source": self.key.sensor_source,
            "sensor_id": self.key.sensor_id,
            "trigger_job_id": self.key.trigger_job_id,
            "status": self.status,
            "watermark": self.watermark,
            "source": self.source,
            "note": self.note,
            "engine": dict(self.engine or {}),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Carried:
        return cls(
            RowKey(str(body["sensor_source"]), str(body["sensor_id"]), str(body["trigger_job_id"])),
            body.get("status"),
            body.get("watermark"),
            str(body.get("source") or ""),
            str(body.get("note") or ""),
            body.get("engine") or {},
        )


def has_state(row: ControlRow) -> str | None:
    """What state a row holds in Heartbeat already, in words (None: none, an import may set it)."""
    if row.imported_at is not None:
        return "been imported from the lakehouse engine already"
    if row.status is not None:
        return f"status {row.status}"
    if row.watermark is not None:
        return "a watermark"
    if row.watched_since is not None:
        return "watched since its first check"
    if row.latest_run_id is not None or row.latest_trigger_token is not None:
        return "a run"
    return None


def event(carried: Carried, request_id: str, requested_at: Any) -> Event:
    """The STATE_IMPORTED event of one row: its id from the request and the row, its time the request's."""
    if carried.watches_from_now:
        message = f"{carried.key.ref}: imported from the lakehouse engine: start_from now ({carried.source})"
        details: dict[str, Any] = {"start_from": StartFrom.NOW.value}
    else:
        message = f"{carried.key.ref}: imported from the lakehouse engine: {carried.status} ({carried.source})"
        details = {}
    details |= {"source": carried.source, "engine": dict(carried.engine or {})}
    if carried.note:
        details["note"] = carried.note
    row = carried.key
    name = "|".join((row.sensor_source, row.sensor_id, row.trigger_job_id))
    return Event(
        EventType.STATE_IMPORTED,
        row=row,
        status=carried.status,
        watermark_after=carried.watermark,
        message=message,
        details=details,
        event_id=uuid.uuid5(uuid.UUID(hex=request_id), f"imported|{name}").hex,
        event_time=requested_at,
    )


def events(
    rows: Sequence[ControlRow],
    carried: Sequence[Carried],
    request_id: str,
    requested_at: Any,
    done: Collection[RowKey],
    new_rows: Collection[RowKey] = (),
) -> tuple[list[Event], list[str]]:
    """The request's events for the rows without state: those the control table holds without it, and
    `new_rows`, the controls CSV's rows it does not hold yet (an import before the first tick: this tick's
    fold loads them with their events). `done`: rows imported by an earlier request of this tick. Also why
    each other row is left as it is."""
    by_key = {r.key: r for r in rows}
    out, left = [], []
    for c in carried:
        row = by_key.get(c.key)
        if row is None and c.key not in new_rows:
            left.append(f"{c.key.ref}: not in the controls CSV any more: nothing to carry it to")
            continue
        if c.key in done:
            state: str | None = "been imported by an earlier request of this tick"
        else:
            state = has_state(row) if row is not None else None
        if state is not None:
            left.append(f"{c.key.ref}: left as it is: it has {state}")
            continue
        out.append(event(c, request_id, requested_at))
    return out, left
