"""The change events of a run's range, from the detections in the event log.

A row's watermark moves only by detections (DATA_CHANGED events), each from the watermark the row had
(`watermark_before`) to the one it found (`watermark_after`). The detections of a range
(from the watermark of the job's last successful run to the row's watermark now) are therefore the chain
that leads back from the row's watermark to the range's start; each carries the `events` its sensor
described (table sources: one per snapshot). Walking that chain needs no read of the upstream, so the
range handed to a run is the same when the start is re-sent. A range handed in parts (max_range) may
start or end inside a detection, at one of the `steps` its details list (the watermark after each file or
version); the chain goes through those too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from harness.core.vocabulary import RowKey
from harness.sensors.change_events import MAX_EVENTS

RangeEvents = dict[str, Any]  # {"events": [...], "events_complete": bool, "events_not_listed": n}
RowRange = tuple[RowKey, str | None, str | None]  # a row, the watermark its range starts after, ends at


@dataclass(frozen=True)
class _Detection:
    """A detection event with its details read once."""

    event_id: str
    watermark_before: str | None
    details: Mapping[str, Any]
    steps: list[str]  # the watermarks it passed through, oldest first, ending at the one it found


def _read(detection: Mapping[str, Any]) -> _Detection:
    details = json.loads(detection["details"] or "{}") if detection.get("details") else {}
    steps = details.get("steps")
    return _Detection(
        detection["event_id"],
        detection["watermark_before"],
        details,
        [str(s) for s in steps] if steps else [detection["watermark_after"]],
    )


def _by_watermark(detections: Sequence[Mapping[str, Any]]) -> dict[tuple[RowKey, str], _Detection]:
    """Each row's detections by the watermark they found, and by each step inside them (the newest, should
    two have found the same)."""
    newest: dict[tuple[RowKey, str], _Detection] = {}
    for detection in sorted(detections, key=lambda d: d["event_time"]):
        key = RowKey(detection["sensor_source"], detection["sensor_id"], detection["trigger_job_id"])
        if detection["watermark_after"]:
            read = _read(detection)
            for step in read.steps:
                newest[(key, step)] = read
    return newest


class DetectionIndex:
    """A log's detections, each read once, by the row and the watermark (or step) it found: what the
    ranges of every run a tick starts are looked up in."""

    def __init__(self, detections: Sequence[Mapping[str, Any]]) -> None:
        self._newest = _by_watermark(detections)

    def reach_their_starts(self, rows: Sequence[RowRange]) -> bool:
        """Whether these detections hold every row's chain back to its range's start (else older ones are
        needed)."""
        return all(_chain(self._newest, key, start, end)[1] for key, start, end in rows)

    def range_events(self, rows: Sequence[RowRange]) -> dict[RowKey, RangeEvents]:
        """Per row whose detections describe change events (table sources), the events of its range, oldest
        first (at most MAX_EVENTS, the newest); rows of other sources are left out."""
        out: dict[RowKey, RangeEvents] = {}
        for key, start, end in rows:
            chain, complete = _chain(self._newest, key, start, end)
            described = [(d.details, covered) for d, covered in chain]
            if not any("events" in d for d, _ in described):
                continue
            events = [e for d, covered in reversed(described) for e in _events_in(d, covered)]
            not_listed = sum(int(d.get("events_not_listed", 0)) for d, _ in described) + max(
                0, len(events) - MAX_EVENTS
            )
            known = complete and not_listed == 0 and not any(d.get("events_incomplete") for d, _ in described)
            out[key] = {"events": events[-MAX_EVENTS:], "events_complete": known}
            if not_listed:
                out[key]["events_not_listed"] = not_listed
        return out


def _events_in(details: Mapping[str, Any], covered: slice) -> list[Any]:
    """A detection's events within the steps of it a range covers (one event per step when it lists its
    steps: a Delta version each), else all of them."""
    events = list(details.get("events", []))
    steps = details.get("steps")
    return events[covered] if steps and len(steps) == len(events) else events


def _chain(
    newest: Mapping[tuple[RowKey, str], _Detection], key: RowKey, start: str | None, end: str | None
) -> tuple[list[tuple[_Detection, slice]], bool]:
    """The detections from `end` back to `start`, newest first, each with the slice of its steps the range
    covers, and whether the chain reached `start`."""
    chain: list[tuple[_Detection, slice]] = []
    seen: set[str] = set()
    current = end
    while current is not None and current != start:
        detection = newest.get((key, current))
        if detection is None or detection.event_id in seen:
            return chain, False
        seen.add(detection.event_id)
        steps = detection.steps
        last = steps.index(current) + 1
        if start is not None and start in steps[: last - 1]:
            # the range starts inside this detection (a part of a range, max_range)
            chain.append((detection, slice(steps.index(start) + 1, last)))
            return chain, True
        chain.append((detection, slice(0, last)))
        current = detection.watermark_before
    return chain, current == start
