"""Heartbeat's own exceptions. Each message says what went wrong and what to change."""

from __future__ import annotations

import errno
import re
from typing import Iterator

ONE_LINE_CHARS = 500  # the root cause `status` shows; the full trace is in the tick's log
PY4J_CALL = re.compile(r"An error occurred while calling [\w$.]+\.?")  # py4j's line over a Java exception


class HeartbeatError(Exception):
    """Base class: an error the user can act on."""


class ConfigError(HeartbeatError):
    """The configuration file or an environment variable is wrong."""


class ControlsError(HeartbeatError):
    """The controls CSV is refused; the message names every bad row."""


class SensorError(HeartbeatError):
    """An upstream could not be checked; the message names the upstream and the cause."""


class PositionUnavailable(SensorError):
    """An upstream cannot say where it was at a time (`harness rewind`): the source no longer holds it
    (vacuumed Delta versions, expired Kafka offsets), or no time maps to its watermark; the message
    names the upstream and what to give instead."""


class ConsumeError(HeartbeatError):
    """An upstream's range cannot be read as data (`harness.consume`); the message names the upstream."""


class PreprocessQueryError(SensorError):
    """A preprocess_query is not a single SELECT."""


class BackendError(HeartbeatError):
    """A job backend could not start or poll a run."""


class DbtError(HeartbeatError):
    """dbt failed to build the heartbeat models."""


class StateBusyError(HeartbeatError):
    """Another heartbeat process holds the state folder."""


class StateFileError(HeartbeatError):
    """A file a tick leaves in the state folder (`status.json`, `health.json`) cannot be read."""


def root_cause(exc: BaseException) -> str:
    """An unexpected failure in one line an operator can act on: the exception's type and first line and,
    when it has one, its root cause (the innermost chained exception, or a Java exception's last `Caused
    by:`): `RuntimeError: cannot read the control table - cause: FileNotFoundError: ...`. A failure in
    Spark's JVM is its cause alone (`java.lang.RuntimeException: file:/x.parquet is not a Parquet file`):
    py4j's own line (`An error occurred while calling o70.collectToPython.`) names no more than a call."""
    head = _first_line(exc)
    *_, inner = _chain(exc)
    cause = _java_cause([line for text in (str(exc), str(inner)) for line in text.splitlines()])
    cause = cause or (_first_line(inner) if inner is not exc else None)
    if cause is None:
        java = [line.strip().lstrip(": ") for line in str(exc).splitlines()[1:3] if line.strip().startswith(": ")]
        cause = java[0] if java else None
    if cause and PY4J_CALL.fullmatch((str(exc).strip().splitlines() or [""])[0].strip()):
        return _fit(cause, ONE_LINE_CHARS)
    if not cause or cause in head:
        return _fit(head, ONE_LINE_CHARS)
    room = ONE_LINE_CHARS - len(" - cause: ") - len(cause)  # the cause whole, the head fitted beside it
    return f"{_fit(head, room)} - cause: {cause}" if room >= 60 else _fit(f"{head} - cause: {cause}", ONE_LINE_CHARS)


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` is, or was caused by, a write to a full disk: Python's OSError ENOSPC, or a Java
    IOException's text (a write in Spark's JVM)."""
    return any(
        (isinstance(link, OSError) and link.errno == errno.ENOSPC) or "No space left on device" in str(link)
        for link in _chain(exc)
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then each exception it was raised from or while handling, as Python's trace shows them."""
    link: BaseException | None = exc
    while link is not None:
        yield link
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)


def _java_cause(lines: list[str]) -> str | None:
    """A Java trace's root cause: its last `Caused by:` of the exception's own chain, not one of a
    `Suppressed:` exception's (indented under it), nor a `[CIRCULAR REFERENCE: ...]` back to an exception
    the trace already printed (the chain's own lines start the line, where the text is not indented)."""
    found = [
        (line, line.strip()[len("Caused by:") :].strip()) for line in lines if line.strip().startswith("Caused by:")
    ]
    found = [(line, cause) for line, cause in found if not cause.startswith("[CIRCULAR REFERENCE")]
    own = [cause for line, cause in found if not line.startswith(("\t", " "))]
    causes = own or [cause for _, cause in found]
    return causes[-1] if causes else None


def _fit(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def first_line(exc: BaseException) -> str:
    """The exception's first line (a library's message without its details), else its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _first_line(exc: BaseException) -> str:
    """The exception's type and first line (with its first problem where it heads a list)."""
    line, more = first_problem(str(exc))
    if not line:
        return type(exc).__name__
    return f"{type(exc).__name__}: {line}" + (f" (and {more} more)" if more else "")


def first_problem(message: str) -> tuple[str, int]:
    """A message's first line and, where that line only heads a list (`heartbeat.yml: refused:`, the
    problems on the lines below), its first problem with it; and how many lines of the list are left."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if len(lines) < 2 or not lines[0].endswith(":"):
        return (lines[0] if lines else ""), 0
    return f"{lines[0]} {lines[1]}", len(lines) - 2
