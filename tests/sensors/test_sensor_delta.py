"""delta_table / lmu_delta_table sensor against real Delta tables written by deltalake."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import Row, SparkSession

from harness.core.errors import SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.delta import DeltaSensor, TableState
from harness.sensors.delta_log import commit_from_history
from tests.fixtures_sources import check_context, sensor_config


def sales(ids: list[int], region: str) -> pa.Table:
    return pa.table({"id": ids, "region": [region] * len(ids), "day": [date(2026, 1, i) for i in ids]})


@pytest.fixture
def sensor(tmp_path: Path) -> DeltaSensor:
    """Built as on this machine, whose Spark has no Delta jars: named tables cannot be read."""
    return DeltaSensor.from_settings(sensor_config(tmp_path).sources.delta, delta_on_spark=False)


def read(sensor: DeltaSensor, upstream: Upstream, spark: SparkSession | None = None) -> TableState:
    return sensor.read_position(check_context(spark), upstream)


def test_delta_table_without_new_version_is_nothing_new(sensor: DeltaSensor, tmp_path: Path) -> None:
    # GIVEN a row that has seen the table's latest version
    path = str(tmp_path / "sales")
    write_deltalake(path, sales([1, 2], "eu"))
    upstream = Upstream(SensorSource.DELTA_TABLE, path)
    seen = read(sensor, upstream).watermark

    # WHEN it is checked again
    detection = sensor.detect(upstream, read(sensor, upstream), seen)

    # THEN nothing is new
    assert isinstance(detection, NothingNew) and detection.reason == "still at version 0"


def test_delta_new_versions_carry_operations_timestamps_and_partitions(sensor: DeltaSensor, tmp_path: Path) -> None:
    # GIVEN a partitioned table seen at version 0
    path = str(tmp_path / "sales_by_region")
    write_deltalake(path, sales([1, 2], "eu"), partition_by=["region"])
    upstream = Upstream(SensorSource.DELTA_TABLE, path)
    seen = read(sensor, upstream).watermark

    # WHEN an append to region us and a delete in region eu are committed
    write_deltalake(path, sales([3], "us"), mode="append")
    DeltaTable(path).delete("id = 1")
    detection = sensor.detect(upstream, read(sensor, upstream), seen)

    # THEN one detection covers versions 1-2: both operations, their commit times, both partitions
    assert isinstance(detection, NewData)
    assert detection.watermark == {"version": 2, "table_id": DeltaTable(path).metadata().id}
    changes = detection.changes
    assert (changes["version_from"], changes["version_to"]) == (0, 2)
    assert [(c["version"], c["change"]) for c in changes["commits"]] == [(1, "APPEND"), (2, "DELETE")]
    assert changes["operations"] == ["APPEND", "DELETE"] and changes["operation"] == "UPDATE"
    assert changes["commit_timestamp_from"] <= changes["commit_timestamp_to"]
    assert changes["partitions"] == [{"region": "eu"}, {"region": "us"}]


def test_delta_steps_are_the_versions_that_change_data_each_with_its_change_event(
    sensor: DeltaSensor, tmp_path: Path
) -> None:
    # GIVEN a table seen at version 0, then two appends and a compaction
    path = str(tmp_path / "steps")
    write_deltalake(path, sales([1], "eu"))
    upstream = Upstream(SensorSource.DELTA_TABLE, path)
    seen = read(sensor, upstream).watermark
    write_deltalake(path, sales([2], "eu"), mode="append")
    write_deltalake(path, sales([3], "eu"), mode="append")
    DeltaTable(path).optimize.compact()

    # WHEN it is checked
    detection = sensor.detect(upstream, read(sensor, upstream), seen)

    # THEN its steps (max_range) are version 1, then the watermark (version 3: version 2 and the compaction),
    # one change event each
    assert isinstance(detection, NewData)
    table = {"table_id": DeltaTable(path).metadata().id}
    assert list(detection.steps()) == [{"version": 1, **table}, {"version": 3, **table}]
    assert detection.watermark == {"version": 3, **table}
    assert [e["snapshot_id"] for e in detection.changes["events"]] == [1, 2]


def test_delta_versions_that_change_no_data_are_nothing_new(sensor: DeltaSensor, tmp_path: Path) -> None:
    # GIVEN a row at version 1 of a table
    path = str(tmp_path / "compacted")
    write_deltalake(path, sales([1], "eu"))
    write_deltalake(path, sales([2], "eu"), mode="append")
    upstream = Upstream(SensorSource.LMU_DELTA_TABLE, path)
    seen = read(sensor, upstream).watermark

    # WHEN the table is compacted (OPTIMIZE: files rewritten, no data change)
    DeltaTable(path).optimize.compact()
    detection = sensor.detect(upstream, read(sensor, upstream), seen)

    # THEN it is not new data
    assert isinstance(detection, NothingNew) and "OPTIMIZE" in detection.reason


def test_delta_upstream_key_watermark_is_the_column_max(sensor: DeltaSensor, tmp_path: Path) -> None:
    # GIVEN a manual-upload table keyed by `day`, seen up to 2026-01-02
    path = str(tmp_path / "uploads")
    write_deltalake(path, sales([1, 2], "eu"))
    upstream = Upstream(SensorSource.LMU_DELTA_TABLE, path, "day")
    seen = read(sensor, upstream).watermark

    # WHEN a re-upload of old days creates a new version, then a later day lands
    write_deltalake(path, sales([1], "eu"), mode="append")
    after_reupload = sensor.detect(upstream, read(sensor, upstream), seen)
    write_deltalake(path, sales([5], "eu"), mode="append")
    after_new_day = sensor.detect(upstream, read(sensor, upstream), seen)

    # THEN only the later day is new data; the watermark is the typed max
    assert isinstance(after_reupload, NothingNew)
    assert isinstance(after_new_day, NewData)
    assert after_new_day.watermark["max"] == {"type": "date", "value": "2026-01-05"}
    assert (after_new_day.changes["key_from"], after_new_day.changes["key_to"]) == ("2026-01-02", "2026-01-05")


def test_delta_new_data_frame_holds_rows_of_the_new_commits(
    spark: SparkSession, sensor: DeltaSensor, tmp_path: Path
) -> None:
    # GIVEN a partitioned table seen at version 0, then two appends
    path = str(tmp_path / "frame")
    write_deltalake(path, sales([1, 2], "eu"), partition_by=["region"])
    upstream = Upstream(SensorSource.DELTA_TABLE, path)
    seen = read(sensor, upstream).watermark
    write_deltalake(path, sales([3], "us"), mode="append")
    write_deltalake(path, sales([4], "eu"), mode="append")

    # WHEN the new data frame is read
    frame = sensor.new_data_frame(check_context(spark), upstream, read(sensor, upstream), seen)

    # THEN it holds exactly the appended rows, partition column included
    assert sorted((r["id"], r["region"]) for r in frame.collect()) == [(3, "us"), (4, "eu")]


@pytest.mark.parametrize("versions_after", [1, 3])
def test_a_delta_table_made_again_at_its_path_is_new_whatever_its_version(
    spark: SparkSession, sensor: DeltaSensor, tmp_path: Path, versions_after: int
) -> None:
    # GIVEN a row at version 1 of a table
    path = str(tmp_path / "made_again")
    write_deltalake(path, sales([1], "eu"))
    write_deltalake(path, sales([2], "eu"), mode="append")
    upstream = Upstream(SensorSource.DELTA_TABLE, path)
    seen = read(sensor, upstream).watermark
    # WHEN it is deleted and made again at the same path, reaching the same version, or one past it
    shutil.rmtree(path)
    for ids in ([7], [8], [9], [10])[: versions_after + 1]:
        write_deltalake(path, sales(ids, "us"), mode="append")
    position = read(sensor, upstream)
    detection = sensor.detect(upstream, position, seen)
    # THEN all of the new table is new data, said so, and its rows are what the new data frame holds
    assert isinstance(detection, NewData) and detection.watermark["table_id"] != seen["table_id"]
    assert detection.changes["version_from"] is None and detection.changes["version_to"] == versions_after
    assert detection.changes["note"] == "the table at this path was made again (its table id changed): all of it is new"
    frame = sensor.new_data_frame(check_context(spark), upstream, position, seen)
    assert sorted(r["id"] for r in frame.collect()) == [7, 8, 9, 10][: versions_after + 1]
    assert isinstance(sensor.detect(upstream, position, detection.watermark), NothingNew)


def test_delta_missing_table_is_a_sensor_error_naming_the_path(sensor: DeltaSensor, tmp_path: Path) -> None:
    # GIVEN a path without a Delta table
    upstream = Upstream(SensorSource.DELTA_TABLE, str(tmp_path / "nothing_here"))

    # WHEN it is checked, THEN the error names the upstream and what to check
    with pytest.raises(
        SensorError, match=r"^delta_table:.*nothing_here: cannot read the Delta table: .* check the path"
    ):
        read(sensor, upstream)


def test_delta_log_with_a_gap_is_a_sensor_error_saying_which_commits_are_missing(
    sensor: DeltaSensor, tmp_path: Path
) -> None:
    # GIVEN a table whose log lost a commit file (versions 0 and 3 left of 0..3)
    path = tmp_path / "orders"
    for n in range(4):
        write_deltalake(path, sales([n + 1], "eu"), mode="append")
    for version in (1, 2):
        (path / "_delta_log" / f"{version:020d}.json").unlink()
    upstream = Upstream(SensorSource.DELTA_TABLE, str(path))

    # WHEN it is checked, THEN the error says the gap in a line, without delta-rs's debug form
    with pytest.raises(SensorError) as error:
        read(sensor, upstream)
    assert str(error.value) == (
        f"delta_table:{path}: cannot read the Delta table: its log has a gap, no commit file between versions 0 "
        "and 3 in _delta_log (deleted, or not copied yet); no reader can read it until its writer restores them "
        "or writes a checkpoint past them"
    )


def test_delta_named_table_without_delta_on_spark_says_to_use_the_path(
    spark: SparkSession, sensor: DeltaSensor
) -> None:
    # GIVEN a session without Delta's jars (this machine), WHEN a named table is checked
    with pytest.raises(SensorError, match=r"needs Delta on Spark's classpath .* give the table's path"):
        read(sensor, Upstream(SensorSource.DELTA_TABLE, "sales.orders"), spark)


class NamedTableCatalog:
    """What Spark answers for one named Delta table (Delta's Spark jars cannot be loaded here): its
    `DESCRIBE HISTORY` and `DESCRIBE DETAIL` rows, as a check's context hands them out."""

    def __init__(self) -> None:
        self.table_id, self.operations, self.query = "", [""], ""
        self.expired = False  # a check's context: its deadline has not passed

    def made(self, table_id: str, *operations: str) -> None:
        """The table now has this id and these commits (version 0 first)."""
        self.table_id, self.operations = table_id, list(operations)

    def sql(self, query: str) -> NamedTableCatalog:
        self.query = query
        return self

    def collect(self) -> list[Row]:
        if self.query.startswith("DESCRIBE DETAIL"):
            return [Row(id=self.table_id, name="sales.orders")]
        assert self.query.startswith("DESCRIBE HISTORY"), self.query
        return [
            Row(version=v, timestamp=None, operation=op, operationParameters={}, operationMetrics={"numFiles": "1"})
            for v, op in reversed(list(enumerate(self.operations)))
        ]

    @contextmanager
    def spark_until_deadline(self, label: str) -> Iterator[Any]:
        yield self


def test_a_named_delta_table_made_again_is_new_whatever_its_version() -> None:
    # GIVEN a row that has seen a named table at version 0, made by CREATE TABLE ... AS
    catalog, named = NamedTableCatalog(), DeltaSensor({}, delta_on_spark=True)
    upstream = Upstream(SensorSource.DELTA_TABLE, "sales.orders")
    catalog.made("a1", "CREATE TABLE AS SELECT")
    seen = named.read_position(catalog, upstream).watermark  # type: ignore[arg-type]
    assert seen == {"version": 0, "table_id": "a1"}
    # WHEN the table is dropped and made again the same way (version 0 again), or written to twice since
    for operations in (["CREATE TABLE AS SELECT"], ["CREATE TABLE AS SELECT", "WRITE", "WRITE"]):
        catalog.made(f"b{len(operations)}", *operations)
        position = named.read_position(catalog, upstream)  # type: ignore[arg-type]
        detection = named.detect(upstream, position, seen)
        # THEN all of the new table is new data, and said so
        assert isinstance(detection, NewData) and detection.watermark["table_id"] == f"b{len(operations)}"
        assert detection.changes["version_from"] is None
        assert detection.changes["version_to"] == len(operations) - 1
        assert (
            detection.changes["note"]
            == "the table of this name was made again (its table id changed): all of it is new"
        )
        assert isinstance(named.detect(upstream, position, detection.watermark), NothingNew)
    # AND a watermark kept before the id was (no table_id) goes on from its version
    assert isinstance(named.detect(upstream, position, {"version": 2}), NothingNew)


def test_delta_history_rows_map_to_data_changes() -> None:
    # GIVEN rows shaped like Spark's DESCRIBE HISTORY (Delta's Spark jars cannot be loaded here, so
    # the named-table path is checked at its parsing step with literal rows)
    rows = [
        {
            "version": 7,
            "timestamp": None,
            "operation": "WRITE",
            "operationParameters": {"mode": "Append"},
            "operationMetrics": {"numFiles": "1"},
        },
        {
            "version": 8,
            "timestamp": None,
            "operation": "MERGE",
            "operationParameters": {},
            "operationMetrics": {"numTargetRowsUpdated": "3"},
        },
        {
            "version": 9,
            "timestamp": None,
            "operation": "OPTIMIZE",
            "operationParameters": {},
            "operationMetrics": {"numAddedFiles": "1", "numRemovedFiles": "4"},
        },
    ]

    # WHEN they are mapped, THEN append, update and no data change
    assert [commit_from_history(r).change for r in rows] == ["APPEND", "UPDATE", None]
