"""The fold marker: since when the control table lags the event log."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from harness.state import fold_marker

pytestmark = pytest.mark.unit

T = datetime(2026, 11, 26, 10, 0, 0, 123456, tzinfo=timezone.utc)


def test_no_marker_is_nothing_to_fold(tmp_path: Path) -> None:
    assert fold_marker.since(tmp_path / "events.unfolded") is None


def test_appends_keep_the_earliest_time_in_utc(tmp_path: Path) -> None:
    marker = tmp_path / "events.unfolded"
    # GIVEN an append, then a later one, then one whose events are earlier (another zone's clock)
    fold_marker.note(marker, T)
    fold_marker.note(marker, T + timedelta(seconds=5))
    assert fold_marker.since(marker) == T
    fold_marker.note(marker, (T - timedelta(hours=3)).astimezone(timezone(timedelta(hours=2))))
    # THEN the marker holds the earliest, in UTC
    assert fold_marker.since(marker) == T - timedelta(hours=3)
    assert marker.read_text().endswith("+00:00")


@pytest.mark.parametrize("left", ["", "not a time"])
def test_a_marker_without_a_time_stays_so_until_the_fold(tmp_path: Path, left: str) -> None:
    # GIVEN a marker an earlier version left (empty), or one no time can be read from
    marker = tmp_path / "events.unfolded"
    marker.write_text(left)
    # WHEN events are appended
    fold_marker.note(marker, T)
    # THEN the time stays unknown: the events before the append are not known to be newer than it
    assert marker.exists() and fold_marker.since(marker) is None


def test_events_moved_in_make_the_time_unknown(tmp_path: Path) -> None:
    marker = tmp_path / "events.unfolded"
    fold_marker.note(marker, T)
    fold_marker.note_unknown(marker)
    assert marker.exists() and fold_marker.since(marker) is None
