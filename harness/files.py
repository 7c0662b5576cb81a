"""Files the heartbeat writes in its state folder, each written whole or not at all."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Callable


def write_atomic(path: Path, text: str, before_replace: Callable[[], None] | None = None) -> None:
    """Readers see the old file or the whole new one, never a part: the text goes to a temporary file
    beside it, which then replaces it in one rename. A kill in between leaves only a hidden temporary
    file, which no reader looks at."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    tmp.write_text(text)
    if before_replace is not None:
        before_replace()
    os.replace(tmp, path)
