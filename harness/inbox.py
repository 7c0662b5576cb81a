"""Requests made while another process holds the state folder (`complete`, `retry`, a new CSV):
written as files to `<state>/inbox/` and applied by the holder at the start of its next tick."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Request:
    path: Path
    request_id: str
    command: str
    args: dict[str, Any]
    requested_at: datetime


def inbox_dir(state_dir: Path) -> Path:
    return state_dir / "inbox"


def submit(state_dir: Path, command: str, **args: Any) -> Path:
    folder = inbox_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(timezone.utc)
    request_id = uuid.uuid4().hex
    body = {"request_id": request_id, "command": command, "args": args, "requested_at": now.isoformat()}
    path = folder / f"{now:%Y%m%dT%H%M%S%f}-{request_id}.json"
    tmp = folder / f".{path.name}"
    tmp.write_text(json.dumps(body))
    os.replace(tmp, path)
    return path


def pending(state_dir: Path) -> list[Request]:
    folder = inbox_dir(state_dir)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        body = json.loads(path.read_text())
        out.append(Request(path, body["request_id"], body["command"], body.get("args", {}),
                           datetime.fromisoformat(body["requested_at"])))
    return out


def done(request: Request) -> None:
    request.path.unlink(missing_ok=True)
