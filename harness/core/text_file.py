"""The files a user writes (heartbeat.yml, the controls CSV), read as UTF-8 text: where one cannot be
read, the error says what is wrong with it and what to do, instead of a trace."""

from __future__ import annotations

import os
from pathlib import Path

from harness.core.errors import HeartbeatError


def read_text(path: Path, refuse: type[HeartbeatError], named_by: str) -> str:
    """The file's text, a byte-order mark dropped; `refuse` raised naming the file where it is not there
    or cannot be read. `named_by`: the setting that names the file (said when a folder is in its place)."""
    if path.is_symlink() and not path.exists():
        raise refuse(f"{path}: a link to {os.readlink(path)}, which does not exist; link it to the file")
    if not path.exists():
        raise refuse(f"{path}: file not found")
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise refuse(f"{path}: is a folder, not a file; {named_by} names the file itself") from None
    except OSError as exc:
        raise refuse(f"{path}: cannot be read ({exc.strerror}); let the user the heartbeat runs as read it") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise refuse(
            f"{path}: line {line} is not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        ) from None
