"""A table's or schema's location, as Spark shows it, as a folder of this machine (harness.state.locations).

Spark 4 shows a table's path as it is and a schema's as an escaped URI: in a state folder whose path
holds a space or a `%`, reading either the other way names another folder (the test session's own
state folder holds a space, so every scenario test also runs through these)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from harness.state.locations import folder_location, schema_location, table_folder
from tests.support import HeartbeatHarness, control_row


@pytest.mark.parametrize(
    ("shown", "folder"),
    [
        ("file:/srv/heart beat/heartbeat.db/t", Path("/srv/heart beat/heartbeat.db/t")),
        ("file:/srv/rate%41/t", Path("/srv/rate%41/t")),  # a % in a table's path is a %
        ("file:///srv/x/t", Path("/srv/x/t")),
        ("/srv/x/t", Path("/srv/x/t")),
        ("/srv/a:b/t", Path("/srv/a:b/t")),
        ("file:/srv/hash#1/t", Path("/srv/hash#1/t")),
    ],
)
def test_a_local_tables_location_is_its_folder_as_written(shown: str, folder: Path) -> None:
    assert table_folder(shown) == folder


@pytest.mark.parametrize("shown", ["dbfs:/x/t", "s3://bucket/x/t", "abfss://c@a.dfs.core.windows.net/t"])
def test_a_table_in_other_storage_has_no_local_folder(shown: str) -> None:
    assert table_folder(shown) is None


def test_a_schemas_escaped_location_names_the_folder_its_tables_are_in() -> None:
    shown = "file:/srv/heart%20beat%2541/heartbeat.db"
    assert schema_location(shown) == "file:/srv/heart beat%41/heartbeat.db"
    assert table_folder(schema_location(shown)) == Path("/srv/heart beat%41/heartbeat.db")


def test_every_table_a_tick_writes_lives_in_its_schemas_folder(
    heartbeat: HeartbeatHarness, spark: SparkSession, session_state: Path
) -> None:
    # GIVEN a heartbeat in the test session's warehouse, whose path holds a space
    assert " " in str(session_state)
    heartbeat.write_controls([control_row("trigger_file", "in", "j")])
    heartbeat.define_jobs("j")
    # WHEN a file lands and two ticks start its job and record its end (each writes a new version of the
    # control table, in a folder named from the schema's location)
    heartbeat.drop_trigger_file("in", "a.done")
    heartbeat.tick()
    heartbeat.wait_for_runs()
    heartbeat.tick()
    # THEN every table's files are in a folder inside the schema's folder, not in one named by its escaped path
    schema_folder = session_state / "warehouse" / f"{heartbeat.config.schema}.db"
    tables = [
        t.name for t in spark.catalog.listTables(heartbeat.config.schema) if t.tableType in ("MANAGED", "EXTERNAL")
    ]
    assert "heartbeat_control_table" in tables and "heartbeat_events" in tables
    for name in tables:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {heartbeat.config.schema}.{name}").collect()
        folder = table_folder(next(str(r[1]) for r in rows if str(r[0]).strip() == "Location"))
        assert folder is not None and folder.is_relative_to(schema_folder) and folder.is_dir(), (name, folder)


def test_a_folder_given_as_a_location_is_written_as_spark_writes_a_tables() -> None:
    assert folder_location(Path("/srv/heart beat%41/t")) == "file:/srv/heart beat%41/t"
    assert table_folder(folder_location(Path("/srv/heart beat%41/t"))) == Path("/srv/heart beat%41/t")
