"""A few rows from Python as a table Spark plans as a local relation: one JSON literal, read with
`from_json`. A DataFrame made from Python rows is a distributed dataset: every query over it, and every
write of it, runs a job of its own first (about 0.2 s on a small machine, whatever the row count).
Used for the event log's appends and the trigger set's as-if decisions, both in every busy tick."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from typing import Any, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType


def _json_value(value: Any) -> Any:
    """A value as from_json reads it back: timestamps as ISO text in UTC (the session's time zone)."""
    if isinstance(value, datetime):
        return (value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def literal_select(rows: Sequence[Sequence[Any]], schema: StructType) -> tuple[str, dict[str, Any]]:
    """A SELECT of `rows` (tuples in the order of `schema`'s fields) as columns of `schema`, and its args."""
    names = [f.name for f in schema.fields]
    payload = json.dumps([{n: _json_value(v) for n, v in zip(names, row)} for row in rows])
    ddl = ", ".join(f"`{f.name}`: {f.dataType.simpleString()}" for f in schema.fields)
    return "SELECT inline(from_json(:rows, :schema))", {"rows": payload, "schema": f"array<struct<{ddl}>>"}


def literal_rows(spark: SparkSession, rows: Sequence[Sequence[Any]], schema: StructType) -> DataFrame:
    """`rows` (tuples in the order of `schema`'s fields) as a DataFrame of `schema`."""
    select, args = literal_select(rows, schema)
    return spark.sql(select, args=args)
