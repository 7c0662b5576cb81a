"""Producer-registered changes: `python -m harness publish`, `harness.publish.publish`, and the tables a
job's successful run publishes (`publications.on_success`), triggering rows of source kind `published`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.commands import cli
from harness.consume import read_range
from harness.core.errors import HeartbeatError
from harness.core.state_layout import StateLayout
from harness.core.vocabulary import SensorSource
from harness.jobs import publish
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.published import Published, PublishedSensor
from harness.state.lock import StateLock
from tests.support import HeartbeatHarness, control_row


def _record(table: str, snapshot: str | None, minute: int) -> dict[str, object]:
    from datetime import datetime, timezone

    p = publish.Publication(table, snapshot, event_time=datetime(2026, 11, 22, 10, minute, tzinfo=timezone.utc))
    return p.record()


def test_the_same_table_and_snapshot_is_one_publication_and_other_snapshots_are_new() -> None:
    assert (
        publish.Publication("sales.orders", "7").publication_id
        == publish.Publication("sales.orders", "7").publication_id
    )
    assert (
        publish.Publication("sales.orders", "7").publication_id
        != publish.Publication("sales.orders", "8").publication_id
    )
    assert publish.Publication("sales.orders").publication_id != publish.Publication("sales.orders").publication_id


def test_publish_refuses_a_partition_without_a_value_naming_the_option() -> None:
    with pytest.raises(HeartbeatError, match=r"--partition 'ds': expected key=value"):
        publish.pairs(["ds"], "--partition")


def test_the_recorded_ids_are_left_to_spark_where_the_log_is_not_a_folder_of_this_machine(tmp_path: Path) -> None:
    # GIVEN an event log the last heartbeat recorded in object storage
    StateLayout(tmp_path).events_location.write_text("s3://lake/heartbeat/heartbeat_events\n")
    orders = [publish.Publication("sales.orders", "7"), publish.Publication("sales.orders")]
    # THEN which publications it holds is not known from here (the tick asks Spark), whether it was
    # published is taken as not (the tick records each id once), and a publication without a snapshot
    # id is new without a read
    assert publish.recorded_ids(tmp_path, orders) is None
    assert not publish.recorded(tmp_path, orders[0])
    assert publish.recorded_ids(tmp_path, orders[1:]) == set()


def test_published_sensor_finds_publications_beyond_the_watermark_once() -> None:
    sensor, upstream = PublishedSensor.__new__(PublishedSensor), Upstream(SensorSource.PUBLISHED, "sales.orders")
    first = Published((_record("sales.orders", "1", 0),))
    detection = sensor.detect(upstream, first, None)
    assert isinstance(detection, NewData) and detection.changes["publication_count"] == 1
    # the same position again: nothing new; a later one: only it
    assert isinstance(sensor.detect(upstream, first, detection.watermark), NothingNew)
    later = Published(first.records + (_record("sales.orders", "2", 5),))
    again = sensor.detect(upstream, later, detection.watermark)
    assert isinstance(again, NewData)
    assert [p["snapshot_id"] for p in again.changes["publications"]] == ["2"]


def test_the_tick_that_applies_a_publication_starts_its_consumer_with_one_fold(heartbeat: HeartbeatHarness) -> None:
    # GIVEN job consumer fed by lake.orders, ticked once with nothing published
    heartbeat.write_controls([control_row("published", "lake.orders", "consumer")])
    heartbeat.define_jobs("consumer")
    assert heartbeat.tick().error is None

    # WHEN a producer publishes snapshot 8 (queued for the next tick) and the next tick applies it
    publish.publish("lake.orders", snapshot=8, config=heartbeat.config)
    report = heartbeat.tick()

    # THEN the consumer starts, and the tick folds once, at its end: a publication is no control row's
    # event, so nothing is folded before it is sensed (it was folded twice)
    assert report.error is None and report.started == ["consumer"] and report.dbt_builds == 1


def test_publications_trigger_once_per_snapshot_and_a_successful_run_publishes_what_its_job_writes(
    heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN job producer writes lake.orders (publish.on_success in heartbeat.yml) and job consumer is fed by lake.orders
    heartbeat.write_controls(
        [control_row("trigger_file", "in", "producer"), control_row("published", "lake.orders", "consumer")]
    )
    heartbeat.define_jobs("producer", "consumer")
    heartbeat.with_sections(publish={"on_success": {"producer": "lake.orders"}})
    config_file = str(heartbeat.write_config_file())

    # WHEN an outside producer publishes snapshot 7 twice while a heartbeat holds the state (once from
    # Python), and the producer job's input lands
    args = [
        "--config",
        config_file,
        "publish",
        "--table",
        "lake.orders",
        "--snapshot",
        "7",
        "--partition",
        "ds=2026-11-22",
        "--tag",
        "source=crm",
    ]
    with StateLock(heartbeat.config.state_dir):
        assert cli.main(args) == 0
        publish.publish("lake.orders", snapshot=7, partition={"ds": "2026-11-22"}, config=heartbeat.config)
    assert "the publication is queued" in capsys.readouterr().out
    heartbeat.drop_trigger_file("in", "batch1")
    heartbeat.tick_until_settled()

    # THEN snapshot 7 is one event, and the consumer's first run covers it
    (seven,) = [e for e in heartbeat.events("CHANGE_PUBLISHED") if json.loads(e["details"])["snapshot_id"] == "7"]
    assert (seven["sensor_source"], seven["sensor_id"], seven["trigger_job_id"]) == ("published", "lake.orders", None)
    assert json.loads(seven["details"])["partition_values"] == {"ds": "2026-11-22"}
    first = heartbeat.job_runs("consumer")[0]
    (frame,) = read_range(heartbeat.spark, json.dumps(first["range"]), config=heartbeat.config).values()
    assert [(r["snapshot_id"], r["partition_values"]) for r in frame.collect()] == [("7", {"ds": "2026-11-22"})]

    # AND the producer's success published lake.orders with its run id, and the consumer ran on that
    heartbeat.tick_until_settled()
    (producer_run,) = heartbeat.job_runs("producer")
    snapshots = sorted(json.loads(e["details"])["snapshot_id"] for e in heartbeat.events("CHANGE_PUBLISHED"))
    assert snapshots == sorted(["7", producer_run["run_id"]])
    second = heartbeat.job_runs("consumer")[1]
    (frame,) = read_range(heartbeat.spark, json.dumps(second["range"]), config=heartbeat.config).values()
    assert [r["snapshot_id"] for r in frame.collect()] == [producer_run["run_id"]]
    assert len(heartbeat.job_runs("consumer")) == 2

    # AND publishing snapshot 7 again with the state free records nothing
    assert cli.main(args) == 0
    assert "lake.orders snapshot 7: already published (nothing added)" in capsys.readouterr().out
    assert len(heartbeat.events("CHANGE_PUBLISHED")) == 2

    # AND snapshot 7 queued again all the same (as a producer's publish does while a tick records it) is
    # dropped by the tick, which reads the log's files for it
    publish.enqueue(heartbeat.config.state_dir, publish.Publication("lake.orders", "7"))
    assert heartbeat.tick().error is None
    assert len(heartbeat.events("CHANGE_PUBLISHED")) == 2
    assert not list(heartbeat.config.layout.published_inbox.glob("*.json"))
