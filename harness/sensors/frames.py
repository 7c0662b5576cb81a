"""Arrow data and data files as Spark DataFrames, for the table formats' range readers (`read_range` of
harness/sensors/delta.py and iceberg.py, read by `harness.consume`)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

# delta-rs's and pyiceberg's view and unsigned types (string_view, the feed's uint64 versions): what Spark takes.
_PLAIN = {
    pa.string_view(): pa.string(),
    pa.large_string(): pa.string(),
    pa.binary_view(): pa.binary(),
    pa.large_binary(): pa.binary(),
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.int64(),
}


def spark_compatible(schema: Any) -> Any:
    """The Arrow schema with the types Spark cannot take replaced by ones it can."""
    return pa.schema([field.with_type(_PLAIN.get(field.type, field.type)) for field in schema])


def arrow_frame(spark: SparkSession, rows: Any) -> DataFrame:
    """An Arrow table as a DataFrame, its types made Spark's."""
    return spark.createDataFrame(rows.cast(spark_compatible(rows.schema)))


def parquet_files(spark: SparkSession, files: list[str], schema: StructType, root: str | None = None) -> DataFrame:
    """The rows of these data files; with `root`, partition columns taken from their folders (`col=value/`)."""
    if not files:
        return spark.createDataFrame([], schema)
    reader = spark.read.schema(schema)
    if root is None:
        return reader.parquet(*files)
    return reader.option("basePath", root).parquet(*files).select(*schema.fieldNames())
