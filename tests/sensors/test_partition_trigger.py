"""Partition triggers: the partition_filter language, its validation with the controls CSV, and daily
triggers on real Delta tables (written with deltalake) with late, out-of-order and overwritten partitions."""

from __future__ import annotations

import csv
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from harness.core.controls import USER_COLUMNS, read_controls
from harness.core.errors import ControlsError
from harness.core.partition_filter import parse_filter, parse_tags
from harness.core.vocabulary import SensorSource
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.delta import DeltaSensor
from harness.sensors.partition_trigger import detect_partitions
from tests.fixtures_sources import check_context, sensed_row
from tests.support import control_row

TICK = datetime(2026, 1, 6, 3, 30, tzinfo=timezone.utc)


def at_day(day: int) -> datetime:
    return datetime(2026, 1, day, 3, 30, tzinfo=timezone.utc)


# --- the language ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("ds={{ yesterday }}", [(("ds", "2026-01-05"),)]),
        ("ds={{ today - 1d }}/hour={{ now - 1h | %H }}", [(("ds", "2026-01-05"), ("hour", "02"))]),
        ("ds={{today+1w|%Y%m%d}}", [(("ds", "20260113"),)]),
        ("day={{ now - 90m | %Y-%m-%dT%H:%M }}", [(("day", "2026-01-06T02:00"),)]),
        ("region=eu;region=us", [(("region", "eu"),), (("region", "us"),)]),
        ("ds=d{{ yesterday | %d }}x", [(("ds", "d05x"),)]),
    ],
)
def test_partition_filter_renders_relative_to_the_tick_time(
    text: str, expected: list[tuple[tuple[str, str], ...]]
) -> None:
    assert parse_filter(text).render(TICK) == expected


@pytest.mark.parametrize(
    "text, problem",
    [
        ("ds={{ tomorrow }}", "expected now, today or yesterday"),
        ("ds={{ today - 1y }}", "cannot read '- 1y'"),
        ("ds={{ today - 1d | %s }}", "format '%s' may use only"),
        ("ds={{ today | }}", "empty format"),
        ("ds={{ __import__('os') }}", "expected now, today or yesterday"),
        ("ds={{ today", "unbalanced"),
        ("{{ today }}", "expected column=value"),
        ("ds=a;;ds=b", "an empty partition"),
    ],
)
def test_partition_filter_refuses_what_is_not_the_language(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("(", r"\(").replace("|", r"\|")):
        parse_filter(text)


def test_tags_are_key_value_pairs() -> None:
    assert parse_tags("source=crm; quality = checked") == {"source": "crm", "quality": "checked"}
    with pytest.raises(ValueError, match="tag 'crm': expected key=value"):
        parse_tags("crm")


# --- the controls CSV ----------------------------------------------------------------------------------
def write_csv(path: Path, rows: list[dict[str, str]], extra: tuple[str, ...] = ()) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*USER_COLUMNS, *extra])
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_csv_with_partition_filter_and_tags_loads_them_and_one_without_the_columns_loads_unchanged(
    tmp_path: Path,
) -> None:
    row = control_row("delta_table", "/lake/orders", "daily") | {
        "partition_filter": "ds={{ yesterday }}",
        "tags": "quality=checked",
    }
    (spec,) = read_controls(write_csv(tmp_path / "with.csv", [row], ("partition_filter", "tags")))
    assert (spec.partition_filter, spec.tags) == ("ds={{ yesterday }}", "quality=checked")
    (plain,) = read_controls(write_csv(tmp_path / "without.csv", [control_row("delta_table", "/lake/orders", "daily")]))
    assert (plain.partition_filter, plain.tags) == ("", "")


def test_csv_with_a_bad_partition_filter_is_refused_naming_the_row_and_the_expression(tmp_path: Path) -> None:
    rows = [
        control_row("delta_table", "/lake/orders", "daily")
        | {"partition_filter": "ds={{ today - 1 day }}", "tags": ""},
        control_row("kafka", "orders", "daily") | {"partition_filter": "ds={{ today }}", "tags": ""},
        control_row("hive_table", "db.t", "daily") | {"partition_filter": "ds={{ today }}", "tags": "a=b"},
        control_row("delta_table", "sales.orders", "daily") | {"partition_filter": "ds={{ today }}", "tags": ""},
        control_row("lmu_delta_table", "s3://lake/orders", "daily")
        | {"partition_filter": "ds={{ today }}", "tags": ""},
        control_row("hive_table", "sales.orders", "daily") | {"partition_filter": "ds={{ today }}", "tags": ""},
    ]
    with pytest.raises(ControlsError) as refused:
        read_controls(write_csv(tmp_path / "bad.csv", rows, ("partition_filter", "tags")))
    message = str(refused.value)
    assert (
        "line 2 (delta_table '/lake/orders' -> job daily): partition_filter 'ds={{ today - 1 day }}' refused: "
        "{{ today - 1 day }}: cannot read '- 1 day'"
    ) in message
    assert "line 3 (kafka 'orders' -> job daily): partition_filter is for partitioned tables" in message
    assert "line 4 (hive_table 'db.t' -> job daily): tags need a table format whose changes carry them" in message
    # a Delta table's partitions are read from its log, by its path: a named one is refused, a Hive one is not
    assert (
        "line 5 (delta_table 'sales.orders' -> job daily): partition_filter on a delta_table named 'sales.orders': "
        "a partition trigger reads the table's files from its log, so sensor_id must be the table's path or URI"
    ) in message
    assert "line 6" not in message and "line 7" not in message


# --- daily triggers on Delta ----------------------------------------------------------------------------
class DailyTable:
    """A Delta table partitioned by ds, and a row's daily trigger on it."""

    def __init__(self, path: Path, partition_filter: str = "ds={{ yesterday }}", tags: str = "") -> None:
        self.path, self.sensor = str(path), DeltaSensor({}, delta_on_spark=False)
        self.upstream = Upstream(SensorSource.DELTA_TABLE, self.path)
        self.trigger, self.tags = parse_filter(partition_filter), parse_tags(tags)
        self.watermark: dict[str, object] | None = None

    def write(self, ds: str, *ids: int, overwrite: bool = False, tags: dict[str, str] | None = None) -> None:
        data = pa.table({"id": pa.array(ids, pa.int64()), "ds": [ds] * len(ids)})
        write_deltalake(
            self.path,
            data,
            partition_by=["ds"],
            mode="overwrite" if overwrite else "append",
            predicate=f"ds = '{ds}'" if overwrite else None,
            commit_properties=CommitProperties(custom_metadata=tags) if tags else None,
        )

    def tick(self, at: datetime) -> NewData | NothingNew:
        """One check of the row at `at`; its watermark moves on new data, as the event log would move it."""
        position = self.sensor.read_position(check_context(), self.upstream)
        detection = detect_partitions(self.upstream.label, position, self.trigger, self.tags, self.watermark, at)
        if isinstance(detection, NewData):
            self.watermark = dict(detection.watermark)
        return detection


def test_delta_daily_trigger_waits_for_a_late_partition_then_fires_once(tmp_path: Path) -> None:
    # GIVEN a daily trigger for yesterday and a table holding the day before
    table = DailyTable(tmp_path / "orders")
    table.write("2026-01-04", 1)

    # WHEN the ticks of 2026-01-06 run before yesterday's partition lands (late)
    waiting = table.tick(at_day(6))
    # THEN the row waits, saying for what
    assert isinstance(waiting, NothingNew) and waiting.reason == "waiting for partition ds=2026-01-05 (no data yet)"

    # WHEN it lands in two commits, THEN the row fires at the next tick, with the events of that partition
    table.write("2026-01-05", 1)
    table.write("2026-01-05", 2)
    fired = table.tick(at_day(6))
    assert isinstance(fired, NewData)
    assert [(e["snapshot_id"], e["previous_snapshot_id"], e["partition_values"]) for e in fired.changes["events"]] == [
        (1, 0, [{"ds": "2026-01-05"}]),
        (2, 1, [{"ds": "2026-01-05"}]),
    ]
    assert fired.watermark["version"] == 2 and list(fired.watermark["partitions"]) == ["ds=2026-01-05"]

    # AND not again while the partition is unchanged, even when other partitions are written
    table.write("2026-01-06", 3)
    again = table.tick(at_day(6))
    assert isinstance(again, NothingNew) and again.reason == "partition ds=2026-01-05 already acted on, unchanged since"


def test_delta_daily_trigger_with_out_of_order_partitions_fires_for_each_day_named(tmp_path: Path) -> None:
    # GIVEN 2026-01-06 landing before 2026-01-05 (out of order), checked on 2026-01-06
    table = DailyTable(tmp_path / "orders")
    table.write("2026-01-06", 6)
    assert isinstance(table.tick(at_day(6)), NothingNew)

    # WHEN 2026-01-05 lands, THEN the row fires for it
    table.write("2026-01-05", 5)
    first = table.tick(at_day(6))
    assert isinstance(first, NewData) and first.changes["partitions_ready"] == ["ds=2026-01-05"]

    # WHEN the day turns, THEN the row fires for 2026-01-06, which landed before the watermark moved
    second = table.tick(at_day(7))
    assert isinstance(second, NewData) and second.changes["partitions_ready"] == ["ds=2026-01-06"]
    assert [e["partition_values"] for e in second.changes["events"]] == [[{"ds": "2026-01-06"}]]
    assert list(table.watermark["partitions"]) == ["ds=2026-01-06"]  # type: ignore[index,call-overload]


def test_delta_overwritten_partition_fires_again_and_tags_must_match(tmp_path: Path) -> None:
    # GIVEN a trigger for yesterday's partition written by a change tagged quality=checked
    table = DailyTable(tmp_path / "orders", tags="quality=checked")
    table.write("2026-01-05", 1, tags={"quality": "checked"})
    fired = table.tick(at_day(6))
    assert isinstance(fired, NewData) and fired.changes["events"][0]["tags"] == {"quality": "checked"}

    # WHEN the partition is overwritten by an untagged change, THEN the row waits for a tagged one
    table.write("2026-01-05", 2, overwrite=True)
    untagged = table.tick(at_day(6))
    assert isinstance(untagged, NothingNew)
    assert untagged.reason == "partition ds=2026-01-05 changed, but no change of it carries the tags quality=checked"

    # WHEN a tagged overwrite follows, THEN the row fires again, naming the partition overwritten
    table.write("2026-01-05", 3, overwrite=True, tags={"quality": "checked"})
    again = table.tick(at_day(6))
    assert isinstance(again, NewData) and again.changes["partitions_overwritten"] == ["ds=2026-01-05"]
    assert [e["operation"] for e in again.changes["events"]] == ["UPDATE", "UPDATE"]


def test_delta_partition_compacted_after_it_was_acted_on_is_not_new_data(tmp_path: Path) -> None:
    # GIVEN a trigger that fired for yesterday's partition, written in two files
    table = DailyTable(tmp_path / "orders")
    table.write("2026-01-05", 1)
    table.write("2026-01-05", 2)
    assert isinstance(table.tick(at_day(6)), NewData)

    # WHEN the partition is compacted (OPTIMIZE: its files rewritten, no change of data)
    assert DeltaTable(table.path).optimize.compact()["numFilesRemoved"] == 2
    compacted = table.tick(at_day(6))

    # THEN the row does not fire again
    assert isinstance(compacted, NothingNew)
    assert compacted.reason == (
        "partition ds=2026-01-05 acted on, its files since rewritten without a change of data (a compaction)"
    )

    # AND a later write to the partition fires it, with that write's event only
    table.write("2026-01-05", 3)
    fired = table.tick(at_day(6))
    assert isinstance(fired, NewData) and fired.changes["partitions_overwritten"] == ["ds=2026-01-05"]
    assert [e["snapshot_id"] for e in fired.changes["events"]] == [3]  # versions 0, 1; the compaction 2


def test_delta_trigger_naming_several_partitions_needs_all_of_them(tmp_path: Path) -> None:
    # GIVEN a trigger for both regions of yesterday on a table partitioned by ds and region
    path = str(tmp_path / "sales")
    table = DailyTable(tmp_path / "sales", "ds={{ yesterday }}/region=eu;ds={{ yesterday }}/region=us")

    def write(region: str) -> None:
        write_deltalake(
            path,
            pa.table({"id": [1], "ds": ["2026-01-05"], "region": [region]}),
            partition_by=["ds", "region"],
            mode="append",
        )

    # WHEN only eu has landed, THEN the row waits for us; WHEN us lands, THEN it fires
    write("eu")
    waiting = table.tick(at_day(6))
    assert (
        isinstance(waiting, NothingNew)
        and waiting.reason == "waiting for partition ds=2026-01-05/region=us (no data yet)"
    )
    write("us")
    fired = table.tick(at_day(6))
    assert isinstance(fired, NewData)
    assert sorted(fired.watermark["partitions"]) == ["ds=2026-01-05/region=eu", "ds=2026-01-05/region=us"]


def test_two_partition_rows_of_one_table_each_keep_their_own_waiting_reason(tmp_path: Path) -> None:
    from dataclasses import replace

    from harness.core.vocabulary import RowKey
    from harness.tick.sensing import sense
    from tests.fixtures_sources import sensor_config

    # GIVEN a table holding 2026-01-04 and two jobs' rows on it: one waits for the 5th, one for the 6th
    table = DailyTable(tmp_path / "orders")
    table.write("2026-01-04", 1)
    base = sensed_row("delta_table", table.path, "a", partition_filter="ds={{ yesterday }}")
    rows = [base, replace(base, key=RowKey("delta_table", table.path, "b"), partition_filter="ds={{ today }}")]
    config = sensor_config(tmp_path)
    # WHEN they are sensed in one check of the table (Delta read without Spark)
    outcome = sense(rows, {SensorSource.DELTA_TABLE: table.sensor}, None, config, at=at_day(6))
    # THEN each row has its own reason, by row (not one per table)
    assert outcome.nothing_new == {
        rows[0].key.ref: "waiting for partition ds=2026-01-05 (no data yet)",
        rows[1].key.ref: "waiting for partition ds=2026-01-06 (no data yet)",
    }


def test_a_rows_wrong_partition_column_is_its_own_failure_named_by_its_job(tmp_path: Path) -> None:
    from harness.tick.sensing import sense
    from tests.fixtures_sources import sensor_config

    # GIVEN a table partitioned by ds, read by a row without a filter and one whose filter names dt
    table = DailyTable(tmp_path / "orders")
    table.write("2026-01-05", 1)
    rows = [
        sensed_row("delta_table", table.path, "plain"),
        sensed_row("delta_table", table.path, "typo", partition_filter="dt={{ yesterday }}"),
    ]
    config = sensor_config(tmp_path)

    # WHEN they are sensed in one check of the table
    outcome = sense(rows, {SensorSource.DELTA_TABLE: table.sensor}, None, config, at=at_day(6))

    # THEN the plain row has new data; the other's failure names its job, as the row's and not the table's
    events = {e.row.trigger_job_id: e for e in outcome.events if e.row is not None}
    assert events["plain"].event_type.value == "DATA_CHANGED"
    assert events["typo"].event_type.value == "CHECK_FAILED"
    assert (events["typo"].message or "").startswith(
        f"{rows[1].label} -> job typo: partition_filter 'dt={{{{ yesterday }}}}' names dt, but the table is partitioned by ds"
    )
