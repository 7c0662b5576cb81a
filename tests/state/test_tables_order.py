"""The order the harness reads the tables in (harness.state.tables.records): Arrow sorts the collected
rows as Spark's ORDER BY would have (nulls first; text by its UTF-8 bytes, so upper case before lower
case and accents after both)."""

from __future__ import annotations

from datetime import datetime, timezone

from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from harness.state.tables import records

SCHEMA = StructType(
    [StructField("job", StringType()), StructField("upstream", StringType()), StructField("at", TimestampType())]
)


def test_rows_come_in_the_order_spark_would_sort_them(spark: SparkSession) -> None:
    # GIVEN rows with nulls, upper and lower case, accents, non-Latin text and equal first columns
    at = [datetime(2026, 11, 25, h, tzinfo=timezone.utc) for h in range(4)]
    rows = [
        ("job_b", "zeta", at[2]),
        ("Job_a", "émile", None),
        (None, "alpha", at[1]),
        ("job_b", "Zeta", at[0]),
        ("job_ä", "ключ", at[3]),
        ("job_a", "émile", at[1]),
        ("job_b", None, at[3]),
        ("job_a", "emile", at[0]),
        ("job_b", "数据", at[2]),
    ]
    frame = spark.createDataFrame(rows, SCHEMA)

    for order in (["job", "upstream"], ["at", "job"], ["upstream", "at", "job"]):
        # WHEN they are read in that order
        read = records(frame, order)

        # THEN the rows are those Spark's ORDER BY gives, in the same order
        expected = frame.orderBy(*order).toArrow().to_pylist()
        assert [tuple(r[c] for c in order) for r in read] == [tuple(r[c] for c in order) for r in expected]
        assert sorted(map(repr, read)) == sorted(map(repr, expected))
