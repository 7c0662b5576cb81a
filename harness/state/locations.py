"""Where a table's or a schema's files are on this machine, from the location Spark shows for it.

Spark shows the two differently. DESCRIBE TABLE gives a table's path as it is (`file:/srv/heart
beat/t`: a `%` in it is a `%`); DESCRIBE SCHEMA gives a schema's as an escaped URI
(`file:/srv/heart%20beat/s.db`). Read as a path, the schema's would name another folder.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote


def table_folder(location: str) -> Path | None:
    """A table's location, as DESCRIBE TABLE shows it, as a folder of this machine; None for any other
    storage."""
    scheme, colon, path = location.partition(":")
    if not colon or "/" in scheme:  # a path without a scheme
        return Path(location)
    return Path("/" + path.lstrip("/")) if scheme == "file" else None


def folder_location(folder: Path) -> str:
    """A folder of this machine as a location for a statement (CREATE TABLE ... LOCATION): written as
    Spark writes a table's. An escaped URI (`Path.as_uri`) would make Spark create a folder named
    `heart%20beat` beside `heart beat`."""
    return f"file:{folder}"


def schema_location(shown: str) -> str:
    """A schema's location, as DESCRIBE SCHEMA shows it, written as Spark shows a table's (unescaped):
    a table's location made from it names a folder inside the schema's."""
    return unquote(shown)
