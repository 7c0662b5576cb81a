"""Manual requests (`complete`, `retry`, `import-lakehouse-engine`, and `rewind` and `backfill`, which
harness.tick.rewind and harness.tick.backfill apply): written as files to `<state>/inbox/` (no Spark: a job's last task
runs them) and turned into events at the start of the next tick.

The events of a request carry ids derived from the request, so a request applied twice (a kill between
appending its events and deleting its file) is recorded once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.core.state_layout import StateLayout
from harness.core.vocabulary import ControlRow, EventType
from harness.state.event_log import Event
from harness.state.queue_files import enqueue, read_queue
from harness.tick import imports
from harness.tick.triggering import manual_events

# Each command's event, and what it says (`where` tells when it was requested).
COMMANDS = {
    "complete": (EventType.MANUAL_COMPLETE, "completed by hand ({where})"),
    "retry": (EventType.RETRY_REQUESTED, "retry requested ({where}); the next run covers the failed range"),
}
# Requests that steer a job's range, with arguments of their own (harness.tick.rewind applies them).
RANGE_COMMANDS = ("rewind", "backfill")  # backfill: harness.tick.backfill, in the tick's start step


@dataclass(frozen=True)
class Request:
    path: Path | None  # None until submitted
    request_id: str
    command: str  # one of COMMANDS
    job_id: str
    requested_at: datetime
    args: Mapping[str, Any] = field(
        default_factory=dict
    )  # the command's own arguments beside job_id (an import's rows)

    def events(self, rows: Sequence[ControlRow], where: str) -> list[Event]:
        """The request's events: it closes the job's latest run (only rows IN_PROGRESS or FAILED move).
        `complete` counts the run's range as consumed; `retry` hands it to the next run."""
        event_type, says = COMMANDS[self.command]
        job_rows = [r for r in rows if r.key.trigger_job_id == self.job_id]
        events = manual_events(job_rows, event_type, f"job {self.job_id}: {says.format(where=where)}")
        namespace = uuid.UUID(hex=self.request_id)
        return [replace(e, event_id=uuid.uuid5(namespace, _row_name(e)).hex) for e in events]

    def dropped(self, rows: Sequence[ControlRow], message: str) -> list[Event]:
        """REQUEST_DROPPED on each row of the job, saying why the request was not applied (`status` and
        `why` show it); the ids are derived from the request, as its events' are."""
        namespace = uuid.UUID(hex=self.request_id)
        events = [
            Event(
                EventType.REQUEST_DROPPED,
                row=r.key,
                message=message,
                details={"command": self.command, "requested_at": self.requested_at.isoformat()},
            )
            for r in rows
            if r.key.trigger_job_id == self.job_id
        ]
        return [replace(e, event_id=uuid.uuid5(namespace, f"dropped|{_row_name(e)}").hex) for e in events]


def _row_name(event: Event) -> str:
    row = event.row
    return "|".join((row.sensor_source, row.sensor_id, row.trigger_job_id)) if row else ""


def new_request(command: str, job_id: str, args: Mapping[str, Any] | None = None) -> Request:
    return Request(None, uuid.uuid4().hex, command, job_id, datetime.now(timezone.utc), dict(args or {}))


def submit(state_dir: Path, request: Request) -> Path:
    body = {
        "request_id": request.request_id,
        "command": request.command,
        "args": {"job_id": request.job_id, **request.args},
        "requested_at": request.requested_at.isoformat(),
    }
    name = f"{request.requested_at:%Y%m%dT%H%M%S%f}-{request.request_id}.json"
    return enqueue(StateLayout(state_dir).inbox / name, body)


def pending(state_dir: Path) -> list[Request]:
    """The requests queued, oldest first (a file that cannot be read is set aside and said)."""
    again = "queue it again with `python -m harness complete --job-id J` (or `retry`)"
    queued = read_queue(StateLayout(state_dir).inbox, _request, "the queued request", again)
    return [replace(request, path=path) for path, request in queued]


def _request(body: dict[str, Any]) -> Request:
    if body["command"] == imports.COMMAND:
        rows = [imports.Carried.from_json(row) for row in body["args"]["rows"]]  # refused here if damaged
        return Request(
            None,
            body["request_id"],
            body["command"],
            "",
            datetime.fromisoformat(body["requested_at"]),
            {"rows": [row.as_json() for row in rows]},
        )
    if body["command"] not in COMMANDS and body["command"] not in RANGE_COMMANDS:
        known = ", ".join([*COMMANDS, *RANGE_COMMANDS, imports.COMMAND])
        raise ValueError(f"unknown request {body['command']!r}; expected one of {known}")
    args = dict(body["args"])
    return Request(
        None,
        body["request_id"],
        body["command"],
        str(args.pop("job_id")),
        datetime.fromisoformat(body["requested_at"]),
        args,
    )


def done(request: Request) -> None:
    if request.path is not None:
        request.path.unlink(missing_ok=True)
