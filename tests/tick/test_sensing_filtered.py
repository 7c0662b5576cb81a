"""A preprocess_query of the new data alone that returned no row is not run again over the same data
(harness.tick.sensing.filtered_key) where the position names that data (a version, offsets): so a cron
tick whose rows' queries kept nothing needs no Spark.
Driven by `sense()` without Spark on a sensor whose position the test sets."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.core.config import Config
from harness.core.preprocess import render
from harness.core.vocabulary import ControlRow, EventType, SensorSource
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.context import CheckContext
from harness.tick.sensing import SensingOutcome, filtered_key, sense
from tests.fixtures_sources import sensed_row, sensor_config

OF_THE_DATA = "SELECT * FROM sensor_new_data WHERE cast(value AS string) = 'done'"
OF_THE_TIME = "SELECT * FROM sensor_new_data WHERE timestamp > current_timestamp() - INTERVAL 1 HOUR"


@dataclass(frozen=True)
class Offset:
    end: int


@dataclass
class TopicAt(Sensor[Offset]):
    """A topic whose end offset the test moves."""

    end: int = 10
    position_names_data = True  # as KafkaSensor's: the same offsets, the same messages

    def read_position(self, context: CheckContext, upstream: Upstream) -> Offset:
        return Offset(self.end)

    def detect(self, upstream: Upstream, position: Offset, since: Watermark | None) -> Detection:
        if since is not None and since["end"] >= position.end:
            return NothingNew("no new offset")
        return NewData(watermark={"end": position.end}, changes={})


@dataclass
class KeyMaxAt(TopicAt):
    """A table read by its key's max (as JdbcSensor's): its rows up to the max can change in place."""

    position_names_data = False


def row(query: str, job: str = "j", watermark: int | None = None) -> ControlRow:
    wm = json.dumps({"end": watermark}) if watermark is not None else None
    return sensed_row("kafka", "orders", job, preprocess_query=query, watermark=wm)


def ran_over(rows: list[ControlRow], position: int) -> dict[str, str]:
    """What a tick with Spark leaves when each row's query returned no row over the data up to `position`."""
    return {
        r.key.ref: filtered_key(r, render(r.preprocess_query or "", None), NewData({"end": position}, {})) for r in rows
    }


def sensed(config: Config, rows: list[ControlRow], topic: TopicAt, before: dict[str, str]) -> SensingOutcome:
    return sense(rows, {SensorSource.KAFKA: topic}, None, config, filtered_before=before)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return sensor_config(tmp_path)


@pytest.mark.unit
def test_the_same_new_data_is_not_queried_again_and_kept_for_the_next_tick(config: Config) -> None:
    rows = [row(OF_THE_DATA)]
    outcome = sensed(config, rows, TopicAt(10), ran_over(rows, 10))
    assert outcome.events == [] and "the same data as the last tick's" in outcome.nothing_new[rows[0].key.ref]
    assert outcome.filtered == ran_over(rows, 10)


@pytest.mark.unit
@pytest.mark.parametrize(
    "change",
    [
        "a message landed",
        "the row's watermark moved",
        "the query was edited",
        "the query reads the time",
        "a table read by its key's max",
    ],
)
def test_other_data_another_query_or_one_of_the_time_is_run_again(config: Config, change: str) -> None:
    # GIVEN a row whose query returned no row over the topic up to offset 10 in the last tick
    before = [row(OF_THE_DATA)]
    topic, now = TopicAt(10), before
    if change == "a message landed":
        topic = TopicAt(11)
    elif change == "the row's watermark moved":
        now = [row(OF_THE_DATA, watermark=5)]
    elif change == "the query was edited":
        now = [row(OF_THE_DATA.replace("done", "finished"))]
    elif change == "a table read by its key's max":  # a row updated in place may now be kept by the query
        topic = KeyMaxAt(10)
    else:
        before = now = [row(OF_THE_TIME)]
    # WHEN it is sensed without Spark, THEN the query must run again: this tick needs Spark
    outcome = sensed(config, now, topic, ran_over(before, 10))
    (event,) = outcome.events
    assert event.event_type is EventType.CHECK_FAILED and "needs Spark" in (event.message or "")
    assert outcome.filtered == {}


@pytest.mark.unit
def test_each_row_of_one_upstream_keeps_its_own(config: Config) -> None:
    # two rows of one topic: one whose query kept nothing over this data, one never run over it
    rows = [row(OF_THE_DATA, "a"), row(OF_THE_DATA, "b")]
    outcome = sensed(config, rows, TopicAt(10), ran_over(rows[:1], 10))
    assert list(outcome.filtered) == [rows[0].key.ref]
    assert [e.row for e in outcome.events if e.event_type is EventType.CHECK_FAILED] == [rows[1].key]
