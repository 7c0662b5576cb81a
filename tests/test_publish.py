"""Producer-registered changes: `python -m harness publish`, `harness.publish.publish`, and the tables a
job's successful run publishes (`publish.on_success`), triggering rows of source kind `published`."""

from __future__ import annotations

import json

import pytest

from harness import cli, publish
from harness.consume import read_range
from harness.errors import HeartbeatError
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.published import Published, PublishedSensor
from harness.model import SensorSource
from harness.state_lock import StateLock
from tests.support import HeartbeatHarness, control_row


def _record(table: str, snapshot: str | None, minute: int) -> dict[str, object]:
    from datetime import datetime, timezone

    p = publish.Publication(table, snapshot, event_time=datetime(2026, 11, 22, 10, minute, tzinfo=timezone.utc))
    return p.record()


def test_the_same_table_and_snapshot_is_one_publication_and_other_snapshots_are_new() -> None:
    assert publish.Publication("sales.orders", "7").publication_id == publish.Publication("sales.orders", "7").publication_id
    assert publish.Publication("sales.orders", "7").publication_id != publish.Publication("sales.orders", "8").publication_id
    assert publish.Publication("sales.orders").publication_id != publish.Publication("sales.orders").publication_id


def test_publish_refuses_a_partition_without_a_value_naming_the_option() -> None:
    with pytest.raises(HeartbeatError, match=r"--partition 'ds': expected key=value"):
        publish.pairs(["ds"], "--partition")


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


def test_publishing_twice_while_the_state_is_held_triggers_the_job_once(
        heartbeat: HeartbeatHarness, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a job fed by the published table sales.orders
    heartbeat.write_controls([control_row("published", "sales.orders", "j")])
    heartbeat.define_jobs("j")
    config_file = str(heartbeat.write_config_file())

    # WHEN the producer publishes snapshot 7 twice while a heartbeat holds the state (once from Python)
    args = ["--config", config_file, "publish", "--table", "sales.orders", "--snapshot", "7",
            "--partition", "ds=2026-11-22", "--tag", "source=crm"]
    with StateLock(heartbeat.config.state_dir):
        assert cli.main(args) == 0
        publish.publish("sales.orders", snapshot=7, partition={"ds": "2026-11-22"}, config=heartbeat.config)
    assert "the publication is queued" in capsys.readouterr().out
    heartbeat.tick_until_settled()

    # THEN one event, one run, whose range names the publication
    (event,) = heartbeat.events("CHANGE_PUBLISHED")
    assert (event["sensor_source"], event["sensor_id"], event["trigger_job_id"]) == ("published", "sales.orders", None)
    assert json.loads(event["details"])["partition_values"] == {"ds": "2026-11-22"}
    (run,) = heartbeat.job_runs("j")
    assert run["range"]["upstreams"][0]["to"]["published_at"] == json.loads(event["details"])["event_time"]
    (detected,) = heartbeat.events("DATA_CHANGED")
    assert [p["snapshot_id"] for p in json.loads(detected["details"])["publications"]] == ["7"]
    # AND the job reads the publications of its range with harness.consume
    (frame,) = read_range(heartbeat.spark, json.dumps(run["range"]), config=heartbeat.config).values()
    assert [(r["snapshot_id"], r["partition_values"]) for r in frame.collect()] == [("7", {"ds": "2026-11-22"})]

    # AND publishing the same snapshot again with the state free adds nothing and starts nothing
    assert cli.main(args) == 0
    assert "already published (nothing added)" in capsys.readouterr().out
    heartbeat.tick()
    assert len(heartbeat.events("CHANGE_PUBLISHED")) == 1 and len(heartbeat.job_runs("j")) == 1


def test_a_successful_run_publishes_the_tables_its_job_writes_and_the_downstream_job_starts(
        heartbeat: HeartbeatHarness) -> None:
    # GIVEN job producer writes lake.orders (publish.on_success), job consumer reads it
    heartbeat.write_controls([control_row("trigger_file", "in", "producer"),
                              control_row("published", "lake.orders", "consumer")])
    heartbeat.define_jobs("producer", "consumer")
    heartbeat.with_sections(publish={"on_success": {"producer": "lake.orders"}})
    heartbeat.drop_trigger_file("in", "batch1")

    # WHEN the producer's run succeeds
    heartbeat.tick_until_settled()
    heartbeat.tick_until_settled()

    # THEN its success published lake.orders with the run id as snapshot, and the consumer ran on it
    (producer_run,) = heartbeat.job_runs("producer")
    (event,) = heartbeat.events("CHANGE_PUBLISHED")
    assert json.loads(event["details"])["snapshot_id"] == producer_run["run_id"]
    (consumer_run,) = heartbeat.job_runs("consumer")
    assert consumer_run["range"]["upstreams"][0]["sensor_id"] == "lake.orders"
