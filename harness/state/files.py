"""Files the heartbeat writes in its state folder, each written whole or not at all.

On Databricks the state folder is a Unity Catalog volume (`/Volumes/<catalog>/<schema>/<volume>/...`):
FUSE over object storage, which refuses appends and in-place rewrites and has no file locks. There the
heartbeat writes only whole files by rename; what must be appended to or locked (the state lock, dbt's
logs and target folder) lives in a folder on the node's local disk instead (`local_folder`).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Callable, Iterable

from harness.core.state_layout import on_volume


def append_line(path: Path, line: str, keep_lines: int) -> None:
    """Add a line to a log file, keeping its newest `keep_lines` lines once it grows past twice that. On a
    volume the whole file is written anew and renamed into place (a volume refuses appends)."""
    if on_volume(path):
        old = path.read_text().splitlines(keepends=True) if path.exists() else []
        write_atomic(path, "".join((old + [line + "\n"])[-keep_lines:]))
        return
    with path.open("a") as handle:
        handle.write(line + "\n")
    if path.stat().st_size > keep_lines * 400:  # keep the file bounded: the newest lines only
        write_atomic(path, "".join(path.read_text().splitlines(keepends=True)[-keep_lines // 2 :]))


def write_atomic(path: Path, text: str | Iterable[str], before_replace: Callable[[], None] | None = None) -> None:
    """Readers see the old file or the whole new one, never a part: the text goes to a temporary file
    beside it, which then replaces it in one rename. A kill in between leaves only a hidden temporary
    file, which no reader looks at. `text` may come in pieces, written one after the other (a large
    file is then never held whole in memory, nor encoded whole)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    if isinstance(text, str):
        tmp.write_text(text)
    else:
        with tmp.open("w") as handle:
            handle.writelines(text)
    if before_replace is not None:
        before_replace()
    os.replace(tmp, path)
