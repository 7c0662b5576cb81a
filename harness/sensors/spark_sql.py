"""Helpers for sensors that read through Spark SQL (upstream sensor tables, named Delta tables) or
Spark's JDBC reader (JDBC, SAP). The session itself comes with each check's `CheckContext`."""

from __future__ import annotations

from harness.core.errors import SensorError
from harness.core.preprocess import quote_identifier


def spark_error_text(exc: BaseException) -> str:
    """The first useful line of a Spark/JDBC error: the Java exception when there is one."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    for line in text.strip().splitlines():
        line = line.strip()
        if line and not line.startswith("An error occurred while calling"):
            return line.lstrip(": ")
    return type(exc).__name__


def quoted_table_name(label: str, name: str) -> str:
    """`[catalog.]schema.table` with every part backtick-quoted for Spark SQL."""
    parts = [p.strip() for p in name.split(".")]
    if not 1 <= len(parts) <= 3 or not all(parts):
        raise SensorError(f"{label}: a table name is [catalog.]schema.table, got {name!r}")
    return ".".join(quote_identifier(p) for p in parts)
