"""The queues other processes leave for the next tick in `<state>/inbox/`: `complete` / `retry` requests
and producers' publications, one JSON file each. A file is written whole by a rename
(harness.state.files.write_atomic), so a writer killed midway leaves only a hidden temporary file, which
no reader lists. A queued file that cannot be read anyway (written by hand, damaged on disk) is set aside
as `<name>.refused` and said, so it neither fails every tick nor is lost."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from harness.state.files import write_atomic

log = logging.getLogger(__name__)
T = TypeVar("T")
REFUSED = ".refused"  # the suffix of a queued file that could not be read


def enqueue(path: Path, body: Mapping[str, Any]) -> Path:
    """Queue `body` as the JSON file `path` for the next tick."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(body))
    return path


def read_queue(folder: Path, parse: Callable[[dict[str, Any]], T], what: str, again: str) -> list[tuple[Path, T]]:
    """Each file queued in `folder`, by name, with its body as `parse` reads it. One that cannot be read
    is renamed `<name>.refused` and said: `what` it is, and how to queue it `again`."""
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith("."):
            continue  # a writer's temporary file (an older version's naming matched *.json)
        try:
            out.append((path, parse(json.loads(path.read_text()))))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            refused = path.with_name(path.name + REFUSED)
            os.replace(path, refused)
            log.error(
                "%s %s cannot be read (%s: %s), so it is not applied: set aside as %s; %s",
                what,
                path,
                type(exc).__name__,
                exc,
                refused.name,
                again,
            )
    return out


def peek(folder: Path) -> list[dict[str, Any]]:
    """The bodies queued in `folder`, by name, read without setting any aside (for readers that change
    nothing: the tick sets an unreadable one aside and says why)."""
    bodies = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            body = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(body, dict):
            bodies.append(body)
    return bodies


def set_aside(inbox: Path) -> list[Path]:
    """The queued files set aside as unreadable under `inbox` (requests, and publications in its folder)."""
    return sorted(inbox.rglob(f"*{REFUSED}")) if inbox.is_dir() else []
