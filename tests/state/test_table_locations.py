"""A table's or schema's location, as Spark shows it, as a folder of this machine (harness.state.locations).

Spark 4 shows a table's path as it is and a schema's as an escaped URI: in a state folder whose path
holds a space or a `%`, reading either the other way names another folder (the test session's own
state folder holds a space, so every scenario test also runs through these)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.state.locations import schema_location, table_folder


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
