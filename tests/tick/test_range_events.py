"""The change events of a run's range, from the detections in the event log: the pure chain walk, and a
Delta partition trigger through real ticks whose run receives the events of its range."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake

from harness.core.vocabulary import RowKey
from harness.tick.range_events import DetectionIndex
from tests.support import HeartbeatHarness, control_row

ROW = RowKey("delta_table", "/lake/orders", "daily")
T0 = datetime(2026, 1, 6, tzinfo=timezone.utc)


def detection(
    n: int, before: str | None, after: str, events: list[dict[str, Any]] | None = None, key: RowKey = ROW
) -> dict[str, Any]:
    details = {"events": events} if events is not None else {"message_count": 1}
    return {
        "event_id": f"e{n}",
        "event_time": T0 + timedelta(minutes=n),
        "sensor_source": key.sensor_source,
        "sensor_id": key.sensor_id,
        "trigger_job_id": key.trigger_job_id,
        "watermark_before": before,
        "watermark_after": after,
        "details": json.dumps(details),
    }


def event(version: int) -> dict[str, Any]:
    return {"snapshot_id": version, "previous_snapshot_id": version - 1, "operation": "APPEND"}


def test_range_lists_the_events_of_the_detections_between_its_watermarks_oldest_first() -> None:
    # GIVEN detections v0 -> v1 (consumed by the last successful run), v1 -> v3, v3 -> v4
    detections = [
        detection(1, None, "v1", [event(1)]),
        detection(2, "v1", "v3", [event(2), event(3)]),
        detection(3, "v3", "v4", [event(4)]),
    ]
    # WHEN the range from v1 to v4 is described, THEN it holds versions 2-4 only, complete
    described = DetectionIndex(detections).range_events([(ROW, "v1", "v4")])
    assert described[ROW] == {"events": [event(2), event(3), event(4)], "events_complete": True}
    # AND a range never consumed (from nothing) holds all of them
    assert [e["snapshot_id"] for e in DetectionIndex(detections).range_events([(ROW, None, "v4")])[ROW]["events"]] == [
        1,
        2,
        3,
        4,
    ]


def test_range_with_a_missing_detection_is_marked_incomplete() -> None:
    # GIVEN a log where the detection v1 -> v2 is missing (older than the log's retention)
    detections = [detection(2, "v2", "v3", [event(3)])]
    # WHEN the range from v1 to v3 is described, THEN it lists what it found and says it is incomplete
    assert DetectionIndex(detections).range_events([(ROW, "v1", "v3")])[ROW] == {
        "events": [event(3)],
        "events_complete": False,
    }


def test_range_over_a_detection_whose_source_lost_part_of_its_changes_is_marked_incomplete() -> None:
    # GIVEN a detection that lists what its source still knows (snapshots expired since the watermark's)
    found = detection(1, "v1", "v4", [event(4)])
    found["details"] = json.dumps({"events": [event(4)], "events_incomplete": True})
    # WHEN its range is described THEN it says it is incomplete
    assert DetectionIndex([found]).range_events([(ROW, "v1", "v4")])[ROW] == {
        "events": [event(4)],
        "events_complete": False,
    }


def test_range_of_a_source_without_change_events_has_no_events() -> None:
    # GIVEN a Kafka row's detections (no events in their details), WHEN described, THEN it is left out
    kafka = RowKey("kafka", "orders", "daily")
    assert DetectionIndex([detection(1, None, "o1", key=kafka)]).range_events([(kafka, None, "o1")]) == {}


def test_delta_partition_trigger_run_receives_the_change_events_of_its_range(
    heartbeat: HeartbeatHarness, tmp_path: Path
) -> None:
    # GIVEN a job triggered by today's partition of a Delta table (a CSV with the partition_filter column)
    path = str(tmp_path / "orders")
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")

    def write(ds: str, *ids: int) -> None:
        write_deltalake(
            path, pa.table({"id": pa.array(ids, pa.int64()), "ds": [ds] * len(ids)}), partition_by=["ds"], mode="append"
        )

    write("2000-01-01", 1)
    heartbeat.write_controls([control_row("delta_table", path, "daily") | {"partition_filter": "ds={{ today }}"}])
    heartbeat.define_jobs("daily")

    # WHEN today's partition lands in two commits, THEN one run starts, handed the two change events
    # (waiting for a partition that has not landed is shown on literal positions in test_partition_trigger)
    write(today, 2)
    write(today, 3)
    heartbeat.tick_until_settled()
    (run,) = heartbeat.job_runs("daily")
    (upstream,) = run["range"]["upstreams"]
    assert upstream["to"]["partitions"].keys() == {f"ds={today}"} and upstream["events_complete"] is True
    assert [
        (e["snapshot_id"], e["previous_snapshot_id"], e["operation"], e["partition_values"]) for e in upstream["events"]
    ] == [(1, 0, "APPEND", [{"ds": today}]), (2, 1, "APPEND", [{"ds": today}])]
    assert heartbeat.job_status("daily") == {"COMPLETED"}


def test_range_handed_in_parts_starts_and_ends_inside_a_detection_at_its_steps() -> None:
    # GIVEN a trigger folder's detection f0 -> f3 whose details list the watermark after each file
    key = RowKey("trigger_file", "in", "m")
    found = detection(1, "f0", "f3", key=key)
    found["details"] = json.dumps({"files": ["a", "b", "c"], "steps": ["f1", "f2", "f3"]})
    later = detection(2, "f3", "f4", key=key)
    # WHEN parts of the range start or end at a step inside it, THEN the chain reaches their start
    assert DetectionIndex([found, later]).reach_their_starts([(key, "f0", "f2"), (key, "f2", "f3"), (key, "f1", "f4")])
    # AND a start the chain does not pass through is still looked for further back
    assert not DetectionIndex([found, later]).reach_their_starts([(key, "f9", "f2")])


def test_a_part_of_a_range_inside_a_detection_lists_only_its_own_change_events() -> None:
    # GIVEN one detection v0 -> v3 of three versions, each a step (max_range) with its event
    found = detection(1, "v0", "v3", [event(1), event(2), event(3)])
    found["details"] = json.dumps({"events": [event(1), event(2), event(3)], "steps": ["v1", "v2", "v3"]})
    # WHEN its parts v0 -> v2 and v2 -> v3 are described, THEN each lists the events of its versions, complete
    assert DetectionIndex([found]).range_events([(ROW, "v0", "v2")])[ROW] == {
        "events": [event(1), event(2)],
        "events_complete": True,
    }
    assert DetectionIndex([found]).range_events([(ROW, "v2", "v3")])[ROW] == {
        "events": [event(3)],
        "events_complete": True,
    }


def test_run_started_by_a_later_detection_receives_the_events_an_earlier_tick_detected(
    heartbeat: HeartbeatHarness, tmp_path: Path
) -> None:
    # GIVEN a job with two hard Delta upstreams, each with one commit before the controls are loaded
    paths = {name: str(tmp_path / name) for name in ("orders", "customers")}

    def commit(name: str, *ids: int) -> None:
        write_deltalake(paths[name], pa.table({"id": pa.array(ids, pa.int64())}), mode="append")

    for name in paths:
        commit(name, 1)
    heartbeat.write_controls([control_row("delta_table", path, "joined") for path in paths.values()])
    heartbeat.define_jobs("joined")
    assert heartbeat.tick().started == ["joined"]  # the first run, of both tables' first commit
    heartbeat.wait_for_runs()
    heartbeat.tick()  # its end recorded

    # WHEN orders changes in one tick (the job waits for customers) and customers in the next
    commit("orders", 2)
    assert heartbeat.tick().started == []
    commit("customers", 2)
    assert heartbeat.tick().started == ["joined"]

    # THEN the run is handed the change events of both upstreams: the earlier tick's detection, read from
    # the log, as well as this tick's
    heartbeat.wait_for_runs()
    _, latest = heartbeat.job_runs("joined")
    assert {u["sensor_id"]: [e["snapshot_id"] for e in u["events"]] for u in latest["range"]["upstreams"]} == {
        paths["orders"]: [1],
        paths["customers"]: [1],
    }
    assert all(u["events_complete"] for u in latest["range"]["upstreams"])
