"""The Delta commit log without any table: commit files and history rows parsed into what changed, and
the delta sensor's comparison run on a literal position."""

from __future__ import annotations

import json

import pytest

from harness.core.vocabulary import SensorSource
from harness.sensors.base import NewData, NothingNew, Upstream
from harness.sensors.delta import DeltaSensor, TableState
from harness.sensors.delta_log import (
    MAX_DETAILED_COMMITS,
    Commit,
    KnownCommits,
    change_kind,
    commits_between,
    parse_commit,
)


def commit_file(*actions: dict) -> list[str]:
    """The lines of a `_delta_log/<version>.json`: one JSON action per line."""
    return [json.dumps(a) for a in actions]


def test_append_commit_file_is_an_append_with_its_partitions_files_and_time() -> None:
    # GIVEN a commit file that adds two files to partitions region=eu and region=us
    lines = commit_file(
        {"commitInfo": {"timestamp": 1767225600000, "operation": "WRITE", "operationParameters": {"mode": "Append"}}},
        {"add": {"path": "region=eu/a.parquet", "partitionValues": {"region": "eu"}, "dataChange": True}},
        {"add": {"path": "region=us/b.parquet", "partitionValues": {"region": "us"}, "dataChange": True}},
    )

    # WHEN it is parsed
    commit = parse_commit(4, lines)

    # THEN it is an append of those files, touching both partitions, at the commit's time (UTC)
    assert (commit.version, commit.operation, commit.change) == (4, "WRITE", "APPEND")
    assert commit.partitions == ((("region", "eu"),), (("region", "us"),))
    assert commit.added_files == ("region=eu/a.parquet", "region=us/b.parquet")
    assert commit.timestamp == "2026-01-01T00:00:00+00:00"


def test_compaction_commit_file_changes_no_data() -> None:
    # GIVEN an OPTIMIZE commit: files rewritten, every action without dataChange
    lines = commit_file(
        {"commitInfo": {"operation": "OPTIMIZE"}},
        {"add": {"path": "c.parquet", "partitionValues": {}, "dataChange": False}},
        {"remove": {"path": "a.parquet", "dataChange": False}},
        {"remove": {"path": "b.parquet", "dataChange": False}},
    )

    # WHEN it is parsed, THEN it changes no data and touches no partition
    commit = parse_commit(7, lines)
    assert commit.change is None and commit.partitions == () and commit.added_files == ()


@pytest.mark.parametrize(
    "operation, parameters, adds, removes, change",
    [
        ("WRITE", {"mode": "Overwrite"}, 1, 1, "UPDATE"),  # an overwrite replaces data
        ("MERGE", {}, 1, 0, "UPDATE"),
        ("DELETE", {}, 0, 1, "DELETE"),
        ("STREAMING UPDATE", {}, 1, 0, "APPEND"),  # unknown operation: from the actions
        ("STREAMING UPDATE", {}, 2, 1, "UPDATE"),
        ("SET TBLPROPERTIES", {}, 0, 0, None),
    ],
)
def test_change_kind_comes_from_the_operation_else_from_the_actions(
    operation: str, parameters: dict, adds: int, removes: int, change: str | None
) -> None:
    # GIVEN a commit's operation and its data-changing actions, WHEN classified, THEN as documented
    assert change_kind(operation, parameters, adds, removes) == change


def test_commits_beyond_the_described_limit_are_counted_not_described() -> None:
    # GIVEN versions 0-149 all readable, WHEN the range 0-149 is read
    source = KnownCommits({v: Commit(v, None, "WRITE", "APPEND") for v in range(150)})
    commits, undescribed = commits_between(source, 0, 149)

    # THEN the newest MAX_DETAILED_COMMITS are described and the older ones counted
    assert [c.version for c in commits] == list(range(150 - MAX_DETAILED_COMMITS, 150))
    assert undescribed == 150 - MAX_DETAILED_COMMITS


def test_delta_detection_on_a_literal_position_counts_cleaned_up_commits() -> None:
    # GIVEN a partitioned table at version 5 whose commit 3 was cleaned from the log, and a row at version 2
    commits = KnownCommits(
        {
            4: Commit(4, "t4", "WRITE", "APPEND", partitions=((("region", "eu"),),)),
            5: Commit(5, "t5", "DELETE", "DELETE", partitions=((("region", "us"),),)),
        }
    )
    position = TableState("/lake/t", 5, commits, partition_columns=("region",))
    sensor, upstream = DeltaSensor({}, delta_on_spark=False), Upstream(SensorSource.DELTA_TABLE, "/lake/sales")

    # WHEN it is compared with the row's watermark (no table, no I/O)
    detection = sensor.detect(upstream, position, {"version": 2})

    # THEN versions 3-5 are new: two described, one counted, partitions unknown since one commit is missing
    assert isinstance(detection, NewData) and detection.watermark == {"version": 5}
    changes = detection.changes
    assert [c["version"] for c in changes["commits"]] == [4, 5] and changes["commits_not_described"] == 1
    assert changes["operations"] == ["APPEND", "DELETE"] and changes["partitions"] is None
    assert (changes["commit_timestamp_from"], changes["commit_timestamp_to"]) == ("t4", "t5")
    # AND each described version is a data change event, the missing one counted as not listed
    assert [
        (e["snapshot_id"], e["previous_snapshot_id"], e["operation"], e["partition_values"], e["table_format"])
        for e in changes["events"]
    ] == [(4, 3, "APPEND", [{"region": "eu"}], "delta"), (5, 4, "DELETE", [{"region": "us"}], "delta")]
    assert changes["events_not_listed"] == 1


def test_delta_detection_on_a_recreated_table_reports_the_version_going_back() -> None:
    # GIVEN a row at version 9 of a table recreated since, now at version 0 with one append
    position = TableState("/lake/t", 0, KnownCommits({0: Commit(0, None, "CREATE TABLE AS SELECT", "APPEND")}))
    sensor, upstream = DeltaSensor({}, delta_on_spark=False), Upstream(SensorSource.DELTA_TABLE, "/lake/sales")

    # WHEN compared, THEN the new table's data is new, with a note saying why the version went back
    detection = sensor.detect(upstream, position, {"version": 9})
    assert isinstance(detection, NewData)
    assert detection.changes["note"] == "version went back from 9 to 0: the table was recreated"
    assert isinstance(sensor.detect(upstream, position, detection.watermark), NothingNew)


def test_commit_info_fields_set_by_the_writer_are_the_commit_tags() -> None:
    # GIVEN a commit whose writer attached its own fields (delta-rs custom_metadata, Spark's userMetadata)
    lines = commit_file(
        {
            "commitInfo": {
                "timestamp": 1767571200000,
                "operation": "WRITE",
                "engineInfo": "delta-rs",
                "operationParameters": {"mode": "Append"},
                "source": "crm",
                "userMetadata": "nightly",
            }
        },
        {"add": {"path": "a.parquet", "partitionValues": {"ds": "2026-01-05"}, "dataChange": True}},
    )
    # WHEN parsed, THEN those fields (and only those) are the tags of its change event
    event = parse_commit(7, lines).change_event("/lake/orders")
    assert event.tags == {"source": "crm", "userMetadata": "nightly"}
    assert (event.snapshot_id, event.previous_snapshot_id, event.operation) == (7, 6, "APPEND")
