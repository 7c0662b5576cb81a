"""Spark for sensors that read through it (JDBC, SAP, upstream sensor tables, named Delta tables).

Checks run on their own threads, where Spark's "active session" is not set; they use the harness's
one session (created by `Runtime.open`), never a new one.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from harness.errors import SensorError
from harness.preprocess import quote_identifier


def harness_spark(label: str) -> SparkSession:
    """The process's SparkSession; a SensorError naming the upstream when there is none."""
    session = SparkSession.getActiveSession() or SparkSession._instantiatedSession  # noqa: SLF001
    if session is None:
        raise SensorError(f"{label}: this source is read through Spark, but no SparkSession is running")
    return session


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
