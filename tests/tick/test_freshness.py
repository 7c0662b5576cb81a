"""Freshness: a row's expected_within, one FRESHNESS_MISSED per lapse, the notification (command and
webhook, against a receiver on 127.0.0.1), and what `status` shows."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from harness.core.config import FreshnessSettings
from harness.core.controls import read_controls
from harness.core.errors import ControlsError
from harness.core.vocabulary import ControlRow, EventType, RowKey
from harness.state.event_log import Event
from harness.tick.freshness import freshness_events, watch_events
from tests.support import HeartbeatHarness, control_row, status_output, write_controls_csv

T0 = datetime(2026, 11, 22, 6, 0, tzinfo=timezone.utc)


class Receiver:
    """A webhook receiver on 127.0.0.1 answering every POST with `status`, keeping the bodies."""

    def __init__(self, status: int = 200) -> None:
        received: list[dict[str, object]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.received = received
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


def _row(
    expected: str | None,
    last_change: datetime | None,
    missed_at: datetime | None = None,
    watched_since: datetime | None = None,
) -> ControlRow:
    return ControlRow(
        RowKey("trigger_file", "orders", "j"),
        None,
        None,
        None,
        True,
        "UNPAUSED",
        "COMPLETED",
        '{"changed_ns": 1}',
        None,
        None,
        None,
        None,
        None,
        latest_event_fetched_timestamp=last_change,
        expected_within=expected,
        freshness_missed_at=missed_at,
        watched_since=watched_since,
    )


def test_expected_within_must_be_a_positive_duration_and_the_column_is_optional(tmp_path: Path) -> None:
    path = tmp_path / "heartbeat_controls.csv"
    row = control_row("trigger_file", "orders", "j")
    write_controls_csv(
        path,
        [
            row | {"expected_within": "26x"},
            {**row, "sensor_id": "b", "expected_within": "0h"},
            {**row, "sensor_id": "c", "expected_within": "90m"},
        ],
    )
    with pytest.raises(ControlsError) as refused:
        read_controls(path)
    assert "line 2 (trigger_file 'orders' -> job j): expected_within '26x' is not a positive duration" in str(
        refused.value
    )
    assert "line 3" in str(refused.value) and "line 4" not in str(refused.value)


def test_a_stale_upstream_is_reported_once_per_lapse_and_a_change_ends_the_lapse(
    tmp_path: Path, receiver: Receiver
) -> None:
    settings = FreshnessSettings(webhook_url=receiver.url)
    # GIVEN a row expected within 26h whose last new data is 27h old
    (event,) = freshness_events([_row("26h", T0)], [], settings, tmp_path, at=T0 + timedelta(hours=27))
    assert event.event_type is EventType.FRESHNESS_MISSED
    assert event.message == (
        "trigger_file:orders: no new data for 27.0 h, expected within 26h (new data last detected 2026-11-22 06:00:00 UTC)"
    )
    assert event.details["notification"] == {"webhook": "delivered: HTTP 200"}
    assert (
        receiver.received[0]["upstream"] == "trigger_file:orders" and receiver.received[0]["expected_within"] == "26h"
    )
    # WHEN the lapse is recorded: no second event; a fresh row, a failed check or no expectation: none
    recorded = T0 + timedelta(hours=27)
    assert freshness_events([_row("26h", T0, recorded)], [], settings, tmp_path, at=T0 + timedelta(hours=40)) == []
    assert freshness_events([_row("26h", T0 + timedelta(hours=2))], [], settings, tmp_path, at=recorded) == []
    failed = Event(EventType.CHECK_FAILED, row=_row("26h", T0).key)
    assert freshness_events([_row("26h", T0)], [failed], settings, tmp_path, at=recorded) == []
    assert freshness_events([_row(None, T0)], [], settings, tmp_path, at=recorded) == []
    # THEN a change after the recorded lapse starts a new one
    changed = T0 + timedelta(hours=30)
    assert (
        len(
            freshness_events([_row("26h", changed, recorded)], [], settings, tmp_path, at=changed + timedelta(hours=27))
        )
        == 1
    )
    assert len(receiver.received) == 2


def test_an_upstream_that_never_delivers_is_watched_from_its_first_check_and_reported_once_when_overdue(
    tmp_path: Path, receiver: Receiver
) -> None:
    settings = FreshnessSettings(webhook_url=receiver.url)
    never = _row("26h", None)
    # GIVEN a row expected within 26h that never had new data: its first check starts the watch
    (watch,) = watch_events([never], [])
    assert watch.event_type is EventType.WATCH_STARTED and watch.row == never.key
    assert freshness_events([never], [], settings, tmp_path, at=T0 + timedelta(days=30)) == []  # nothing to count from
    # a row watched already, one with data, one without an expectation, a failed check: no watch
    assert watch_events([_row("26h", None, watched_since=T0)], []) == []
    assert watch_events([_row("26h", T0)], []) == [] and watch_events([_row(None, None)], []) == []
    assert watch_events([never], [Event(EventType.CHECK_FAILED, row=never.key)]) == []

    # WHEN 27h pass after the watch began with no data
    watched = _row("26h", None, watched_since=T0)
    assert freshness_events([watched], [], settings, tmp_path, at=T0 + timedelta(hours=25)) == []
    (event,) = freshness_events([watched], [], settings, tmp_path, at=T0 + timedelta(hours=27))

    # THEN one FRESHNESS_MISSED saying it never delivered, notified; the lapse is reported once
    assert event.event_type is EventType.FRESHNESS_MISSED
    assert event.message == (
        "trigger_file:orders: no new data at all in 27.0 h of watching, expected within 26h "
        "(watched since 2026-11-22 06:00:00 UTC)"
    )
    assert event.details["last_change_at"] is None and event.details["watched_since"] == T0.isoformat()
    assert [r["upstream"] for r in receiver.received] == ["trigger_file:orders"]
    reported = _row("26h", None, missed_at=T0 + timedelta(hours=27), watched_since=T0)
    assert freshness_events([reported], [], settings, tmp_path, at=T0 + timedelta(days=9)) == []


@pytest.mark.scenario
def test_a_failing_notification_is_recorded_in_the_event_and_not_retried(tmp_path: Path) -> None:
    broken = Receiver(status=500)
    try:
        settings = FreshnessSettings(webhook_url=broken.url, notify_command="cat > notified.json; exit 3")
        (event,) = freshness_events([_row("1h", T0)], [], settings, tmp_path, at=T0 + timedelta(hours=2))
    finally:
        broken.server.shutdown()
    assert event.details["notification"] == {
        "command": "failed: exit code 3: (no output)",
        "webhook": "failed: HTTP 500 Internal Server Error",
    }
    assert json.loads((tmp_path / "notified.json").read_text())["event_type"] == "FRESHNESS_MISSED"
    assert len(broken.received) == 1


def test_a_tick_records_freshness_missed_once_notifies_and_status_shows_the_row_stale(
    heartbeat: HeartbeatHarness, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a row expecting new data every second, whose data came once
    heartbeat.write_controls([control_row("trigger_file", "orders", "j") | {"expected_within": "1s"}])
    heartbeat.define_jobs("j")
    heartbeat.with_sections(freshness={"webhook_url": receiver.url})
    heartbeat.drop_trigger_file("orders", "batch1")
    heartbeat.tick_until_settled()
    time.sleep(1.1)

    # WHEN ticks pass without new data (the tick that recorded the run's end already may find it stale)
    heartbeat.tick()

    # THEN one FRESHNESS_MISSED, one notification, and status shows the row stale
    assert sum(r.freshness_missed for r in heartbeat.reports) == 1 and not any(r.error for r in heartbeat.reports)
    (event,) = heartbeat.events("FRESHNESS_MISSED")
    assert event["trigger_job_id"] == "j" and "expected within 1s" in event["message"]
    assert [r["upstream"] for r in receiver.received] == ["trigger_file:orders"]
    assert "STALE (freshness missed " in status_output(heartbeat, capsys)


def test_a_tick_watches_an_upstream_that_never_delivered_and_records_it_stale_once_overdue(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a row expecting new data every 3 seconds whose trigger folder stays empty
    heartbeat.write_controls([control_row("trigger_file", "orders", "j") | {"expected_within": "3s"}])
    heartbeat.define_jobs("j")
    (heartbeat.config.trigger_root / "orders").mkdir()  # type: ignore[operator]

    # WHEN the first tick checks it and finds nothing
    assert heartbeat.tick().error is None

    # THEN its check started the watch, which the control table and status show
    (watch,) = heartbeat.events("WATCH_STARTED")
    (row,) = heartbeat.tables.control_rows()
    assert row.watched_since is not None and row.latest_event_fetched_timestamp is None
    assert "no new data yet: expected within 3s, watched since" in status_output(heartbeat, capsys)

    # WHEN ticks go on without data until the expectation has passed since the watch began
    heartbeat.tick()
    time.sleep(max(0.0, (row.watched_since + timedelta(seconds=3.2) - datetime.now(timezone.utc)).total_seconds()))
    heartbeat.tick()
    heartbeat.tick()

    # THEN one FRESHNESS_MISSED saying it never delivered, and status shows the row stale
    (event,) = heartbeat.events("FRESHNESS_MISSED")
    assert "no new data at all in" in event["message"] and "expected within 3s" in event["message"]
    assert not any(r.error for r in heartbeat.reports) and len(heartbeat.events("WATCH_STARTED")) == 1
    assert "STALE (freshness missed " in status_output(heartbeat, capsys)
