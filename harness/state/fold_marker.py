"""The marker that the control table lags the event log (`<state>/events.unfolded`), and since when.

It is written before each append and removed by a successful fold (or, after an append of no control
row's event onto a folded log, once that append is whole: harness.state.event_log), so a tick knows it
must fold even after a kill in between. It holds the earliest time of the control rows' events appended
since the last fold (only those are folded; a publication's time is its producer's clock): a fold reads
the log from that time on (only the new events, whatever the log's history), not from a look-back behind
the newest folded event. Every append lowers it, never raises it.

A marker without a time (one an earlier version left, or events moved in from elsewhere) says only
that something is to fold: the fold then reads from the look-back (var heartbeat_event_lookback_hours),
and appends leave it so until the fold.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from harness.state.files import write_atomic


def since(marker: Path) -> datetime | None:
    """The earliest time of the events not folded yet; None when nothing is to fold or the time is unknown."""
    return _time(_text(marker) or "")


def note(marker: Path, earliest: datetime) -> None:
    """Before appending events whose earliest time is `earliest`: the marker says so, unless it already
    holds an earlier time or no time at all (one read of the marker, at every append)."""
    earliest = earliest.astimezone(timezone.utc)
    text = _text(marker)
    if text is not None:
        held = _time(text)
        if held is None or held <= earliest:
            return
    write_atomic(marker, earliest.isoformat())


def note_unknown(marker: Path) -> None:
    """Events appended whose times may be older than any fold's start (events moved in from elsewhere)."""
    write_atomic(marker, "")


def _text(marker: Path) -> str | None:
    """The marker's text; None when there is no marker."""
    try:
        return marker.read_text().strip()
    except FileNotFoundError:
        return None


def _time(text: str) -> datetime | None:
    """The time a marker's text holds; None when it holds none."""
    try:
        return datetime.fromisoformat(text).astimezone(timezone.utc) if text else None
    except ValueError:
        return None
