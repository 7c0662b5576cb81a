"""Partition trigger benchmark: one check of a daily partition trigger on a Delta table (delta-rs) and on an
Iceberg table (pyiceberg, local SQL catalog), as the table holds more partitions.

    .venv/bin/python bench/partition_bench.py                     # 30, 365 and 1,000 daily partitions
    .venv/bin/python bench/partition_bench.py --partitions 3000 --commits 50

Each table is written with all its partitions in one commit, then `--commits` appends to the newest
partition. Timed, wall seconds (median of 3):

  read      the sensor's one metadata read (read_position)
  snapshot  a snapshot trigger's comparison with a watermark before the appends (events of every commit)
  partition a partition trigger `ds={{ yesterday }}`: the partitions of the current snapshot (Delta: the
            add actions of the log; Iceberg: the current manifests) and the events of the named one

Numbers, not assertions: nothing here is a test.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
from deltalake import write_deltalake
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from harness.core.partition_filter import parse_filter
from harness.core.vocabulary import SensorSource
from harness.sensors.base import Upstream
from harness.sensors.context import CheckContext
from harness.sensors.delta import DeltaSensor
from harness.sensors.iceberg import IcebergSensor
from harness.sensors.partition_trigger import detect_partitions

FIRST_DAY = date(2024, 1, 1)


def days(count: int) -> list[str]:
    return [(FIRST_DAY + timedelta(days=i)).isoformat() for i in range(count)]


def rows(ds: list[str]) -> pa.Table:
    return pa.table({"id": pa.array(range(len(ds)), pa.int64()), "ds": pa.array(ds, pa.string())})


def median_seconds(step: Callable[[], Any]) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench(sensor: Any, upstream: Upstream, seen: dict[str, Any], tick: datetime) -> tuple[float, float, float]:
    trigger = parse_filter("ds={{ yesterday }}")

    def context() -> CheckContext:
        return CheckContext.starting_now(None, 600)

    read = median_seconds(lambda: sensor.read_position(context(), upstream))
    snapshot = median_seconds(lambda: sensor.detect(upstream, sensor.read_position(context(), upstream), seen))
    partition = median_seconds(
        lambda: detect_partitions(upstream.label, sensor.read_position(context(), upstream), trigger, {}, None, tick)
    )
    return read, snapshot, partition


def delta_case(folder: Path, partitions: int, commits: int) -> tuple[float, float, float]:
    path = str(folder / f"delta_{partitions}")
    names = days(partitions)
    write_deltalake(path, rows(names), partition_by=["ds"])
    for _ in range(commits):
        write_deltalake(path, rows([names[-1]]), partition_by=["ds"], mode="append")
    tick = datetime.fromisoformat(names[-1]).replace(tzinfo=timezone.utc) + timedelta(days=1, hours=3)
    return bench(DeltaSensor({}, delta_on_spark=False), Upstream(SensorSource.DELTA_TABLE, path), {"version": 0}, tick)


def iceberg_case(folder: Path, partitions: int, commits: int) -> tuple[float, float, float]:
    properties = {"uri": f"sqlite:///{folder}/catalog_{partitions}.db", "warehouse": (folder / "wh").as_uri()}
    catalog = SqlCatalog("bench", **properties)
    catalog.create_namespace(f"n{partitions}")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "ds", StringType(), required=False)
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="ds"))
    table = catalog.create_table(f"n{partitions}.t", schema=schema, partition_spec=spec)
    names = days(partitions)
    table.append(rows(names))
    first = table.current_snapshot()
    for _ in range(commits):
        table.append(rows([names[-1]]))
    sensor = IcebergSensor({"bench": {"type": "sql", **properties}})
    tick = datetime.fromisoformat(names[-1]).replace(tzinfo=timezone.utc) + timedelta(days=1, hours=3)
    seen = {"snapshot_id": first.snapshot_id if first else None}
    return bench(sensor, Upstream(SensorSource.ICEBERG_TABLE, f"bench: n{partitions}.t"), seen, tick)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, nargs="*", default=[30, 365, 1000])
    parser.add_argument("--commits", type=int, default=20)
    args = parser.parse_args()
    print(f"{'format':8} {'partitions':>10} {'commits':>8} {'read s':>8} {'snapshot s':>10} {'partition s':>11}")
    with tempfile.TemporaryDirectory(prefix="partition-bench-") as folder:
        for count in args.partitions:
            for name, case in (("delta", delta_case), ("iceberg", iceberg_case)):
                read, snapshot, partition = case(Path(folder), count, args.commits)
                print(f"{name:8} {count:>10} {args.commits:>8} {read:>8.3f} {snapshot:>10.3f} {partition:>11.3f}")


if __name__ == "__main__":
    main()
