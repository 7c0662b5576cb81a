"""Appends to the embedded default's event log without Spark: each append one parquet file per day,
written by pyarrow and committed by one rename.

A Spark INSERT of a few events costs a query's fixed work on the driver (analysis, planning, generated
code, a job and its commit): 0.1-0.3 s in a warm process and several times that in a cold one, three
times in a tick that starts a job (its detections, intents and outcomes). The file this writes is what
Spark's own append leaves (the log's columns but the day, which is the folder's name), so Spark and the
readers without Spark (harness.state.event_files) read both alike:

  1. the day's events are written to a file in a scratch folder inside the table's folder (its name
     starts with `_`, which Spark and the readers skip);
  2. the file is moved into the day's folder by one rename: a kill leaves the whole file or none of it
     in the log, and at most a file in the scratch folder, removed when the next process opens the log;
  3. the caller registers a new day's folder with the metastore and refreshes Spark's listing of the
     table (EventLog.append).

Only a parquet log in a folder of this machine is written this way; a Delta log, or one only Spark
reaches (a remote Spark Connect server's, cloud storage), is appended to by Spark.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any, Sequence

from pyspark.sql.types import DateType, StringType, StructType, TimestampType

from harness.core.faults import crash_point
from harness.state.event_files import PARTITION_COLUMN, PARTITION_PREFIX

SCRATCH = "_heartbeat_append"  # inside the table's folder: the rename stays on its volume


def clear_scratch(folder: Path) -> None:
    """Remove the files an append left unfinished (a kill before its rename): none of them is in the log."""
    shutil.rmtree(folder / SCRATCH, ignore_errors=True)


def append_files(folder: Path, schema: StructType, rows: Sequence[Sequence[Any]]) -> list[date]:
    """Write `rows` (tuples in the order of `schema`'s fields, the day last) into the table's `folder`,
    one file per day; return the days whose folder this append created."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = schema.fieldNames()
    day_index = names.index(PARTITION_COLUMN)
    columns = [(i, f) for i, f in enumerate(schema.fields) if f.name != PARTITION_COLUMN]
    arrow_schema = pa.schema([pa.field(f.name, _arrow_type(f.dataType), f.nullable) for _, f in columns])
    by_day: dict[date, list[Sequence[Any]]] = defaultdict(list)
    for row in rows:
        by_day[row[day_index]].append(row)
    scratch = folder / SCRATCH
    scratch.mkdir(exist_ok=True)
    created = []
    for day, day_rows in sorted(by_day.items()):
        arrays = [pa.array([r[i] for r in day_rows], type=arrow_schema.field(f.name).type) for i, f in columns]
        name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        pq.write_table(pa.Table.from_arrays(arrays, schema=arrow_schema), scratch / name, compression="snappy")
        crash_point("events append:file written")
        day_folder = folder / f"{PARTITION_PREFIX}{day.isoformat()}"
        if not day_folder.is_dir():
            day_folder.mkdir()
            created.append(day)
        os.replace(scratch / name, day_folder / name)
    return created


def _arrow_type(data_type: Any) -> Any:
    """The parquet type Spark reads back as `data_type`: times as UTC instants in microseconds."""
    import pyarrow as pa

    if isinstance(data_type, StringType):
        return pa.string()
    if isinstance(data_type, TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(data_type, DateType):
        return pa.date32()
    raise TypeError(f"no parquet type for {data_type} in the event log")
