"""The tick's side of publications (harness.jobs.publish has the producer's): the queue producers write
to `<state>/inbox/published/`, appended before sensing (each publication id once), and the publications
of the tables a job writes when a run of it succeeds (`publish.on_success` in heartbeat.yml)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from harness.core.config import PublishSettings
from harness.core.state_layout import StateLayout
from harness.core.vocabulary import EventType
from harness.jobs.publish import Publication, recorded_ids
from harness.sensors.published import PUBLICATION_WINDOW
from harness.state.event_log import Event, EventLog
from harness.state.queue_files import read_queue


def queued(state_dir: Path) -> list[tuple[Path, Publication]]:
    """The publications queued, oldest first (a file that cannot be read is set aside and said)."""
    again = "publish it again (`python -m harness publish --table T ...`)"
    out = read_queue(StateLayout(state_dir).published_inbox, Publication.from_record, "the queued publication", again)
    return sorted(out, key=lambda item: item[1].event_time)


def new_events(events: EventLog, state_dir: Path, publications: Sequence[Publication]) -> list[Event]:
    """The events of the publications whose id the log does not hold yet (each id once), to append. The
    log is read from its files, as `publish` reads it, where they are on this machine, else by Spark."""
    unique = list({p.publication_id: p for p in publications}.values())
    known = recorded_ids(state_dir, unique)
    if known is None:
        known = events.existing_ids(
            [p.publication_id for p in unique], EventType.CHANGE_PUBLISHED, PUBLICATION_WINDOW.days + 1
        )
    return [p.event() for p in unique if p.publication_id not in known]


def apply_queued(events: EventLog, state_dir: Path) -> int:
    """Append the queued publications (each once), then remove their files; returns how many were new."""
    items = queued(state_dir)
    appended = events.append(new_events(events, state_dir, [p for _, p in items]))
    for path, _ in items:
        path.unlink(missing_ok=True)
    return appended


def on_success(settings: PublishSettings, events: Sequence[Event]) -> list[Publication]:
    """For each successful run (RUN_SUCCEEDED, MANUAL_COMPLETE) of a job with `publish.on_success`,
    a publication of each table it writes; the run id is the snapshot id, so a run publishes once."""
    runs = {
        (e.row.trigger_job_id, e.run_id)
        for e in events
        if e.row is not None and e.run_id and e.event_type in (EventType.RUN_SUCCEEDED, EventType.MANUAL_COMPLETE)
    }
    return [
        Publication(table, snapshot_id=run_id, tags={"job_id": job_id, "run_id": run_id})
        for job_id, run_id in sorted(runs)
        for table in settings.on_success.get(job_id, [])
    ]
