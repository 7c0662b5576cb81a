"""Refresh benchmark on the embedded default (local Spark, parquet tables): a key refresh of one batch into a
dataset, next to recomputing the same dataset in full, and how both grow with the batch and the dataset.

    .venv/bin/python bench/refresh_bench.py                          # 10,000 rows into 1,000,000
    .venv/bin/python bench/refresh_bench.py --scale                  # plus the growth series
    .venv/bin/python bench/refresh_bench.py --dataset 200000 --batch 2000

For each dataset size the model `key_orders` of demo/refresh_examples (key: order_id, date column
updated_at) is loaded with one batch holding the whole dataset; then, timed:

  key refresh    one `dbt run` loading a batch: half its rows change existing orders (C), half are new (N)
  reset          `python -m harness refresh reset`: the dataset, the status codes and the metrics
                 recomputed from every kept batch
  full rebuild   what a non-incremental pipeline does: the latest record of each order over every row
                 ever received, written as a new table (one Spark SQL statement, no dbt)

Seconds are wall time of the whole step (dbt's own start included for the first two; about 2-3 s).
Numbers, not assertions: nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
for _name in [n for n in os.environ if n.startswith("HEARTBEAT_")]:
    del os.environ[_name]

from pyspark.sql import SparkSession  # noqa: E402

from harness.commands.refresh import run_action  # noqa: E402
from harness.core.config import PROJECT_DIR, Config  # noqa: E402
from harness.platform.spark import get_spark  # noqa: E402
from harness.refresh.runner import run  # noqa: E402

EXAMPLES = PROJECT_DIR / "demo" / "refresh_examples"
MODEL = "key_orders"


@dataclass
class Point:
    dataset: int
    batch: int
    refresh_s: float
    capture_s: float
    apply_s: float
    reset_s: float
    rebuild_s: float


def config_for(state: Path, schema: str) -> Config:
    return Config(
        config_path=None,
        project_dir=EXAMPLES,
        state_dir=state,
        schema=schema,
        controls_csv=EXAMPLES / "seeds" / "heartbeat_controls.csv",
        dbt_target_dir=state / "dbt_target",
    )


def write_source(
    spark: SparkSession,
    schema: str,
    first: int,
    count: int,
    day: int,
    changed_from: int = 0,
    changed: int = 0,
) -> None:
    """src_key_orders: `changed` orders from `changed_from` with a new status, then `count - changed` new
    orders from `first`; dated 2026-01-<day>."""
    parts = [
        f"select cast(id as int) as order_id, 'new' as status, cast(id % 1000 as double) as amount, "
        f"timestamp'2026-01-{day:02d} 00:00:00' as updated_at from range({first}, {first + count - changed})"
    ]
    if changed:
        parts.append(
            f"select cast(id as int), 'changed', cast(id % 1000 as double), timestamp'2026-01-{day:02d} 00:00:00' "
            f"from range({changed_from}, {changed_from + changed})"
        )
    spark.sql(f"drop table if exists {schema}.src_{MODEL}")  # parquet tables have no CREATE OR REPLACE
    spark.sql(f"create table {schema}.src_{MODEL} using parquet as " + " union all ".join(parts))


def load(config: Config, batch: str) -> float:
    os.environ["HEARTBEAT_RUN_CONTEXT_ID"] = batch
    started = time.monotonic()
    run(config, ["run", "--select", MODEL])
    return time.monotonic() - started


def measure(spark: SparkSession, state: Path, dataset: int, batch: int) -> Point:
    schema = f"bench_{dataset}_{batch}"
    spark.sql(f"drop database if exists {schema} cascade")
    spark.sql(f"create database {schema}")
    config = config_for(state, schema)

    write_source(spark, schema, 0, dataset, day=1)
    load(config, "initial")
    write_source(spark, schema, dataset, batch, day=2, changed_from=0, changed=batch // 2)
    refresh_s = load(config, "batch")
    metrics = spark.sql(
        f"select capture_seconds, apply_seconds, records_n, records_c from {schema}.{MODEL}__metrics "
        "where batch_id = 'batch'"
    ).first()
    assert metrics is not None and metrics["records_n"] + metrics["records_c"] == batch, metrics

    started = time.monotonic()
    run_action(config, MODEL, "reset")
    reset_s = time.monotonic() - started

    started = time.monotonic()
    spark.sql(f"""
        create table {schema}.{MODEL}_rebuilt using parquet as
        select order_id, status, amount, updated_at from (
          select *, row_number() over (partition by order_id order by updated_at desc) as latest
          from {schema}.{MODEL}__batches) ranked
        where latest = 1""")
    rebuild_s = time.monotonic() - started
    rows = spark.table(f"{schema}.{MODEL}").count()
    assert rows == dataset + batch - batch // 2, rows
    spark.sql(f"drop database {schema} cascade")
    return Point(dataset, batch, refresh_s, metrics["capture_seconds"], metrics["apply_seconds"], reset_s, rebuild_s)


def report(points: list[Point]) -> None:
    print(
        f"{'dataset':>10} {'batch':>8} {'key refresh s':>14} {'(capture':>9} {'apply)':>7} {'reset s':>8} "
        f"{'full rebuild s':>15} {'reset/refresh':>14} {'rebuild/refresh':>16}"
    )
    for p in points:
        print(
            f"{p.dataset:>10,} {p.batch:>8,} {p.refresh_s:>14.1f} {p.capture_s:>9.1f} {p.apply_s:>7.1f} "
            f"{p.reset_s:>8.1f} {p.rebuild_s:>15.1f} {p.reset_s / p.refresh_s:>14.2f} {p.rebuild_s / p.refresh_s:>16.2f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument(
        "--scale", action="store_true", help="also vary the batch (x0.1, x10) and the dataset (x0.1, x3)"
    )
    args = parser.parse_args()
    if not (EXAMPLES / "dbt_packages" / "heartbeat").exists():
        from dbt.cli.main import dbtRunner

        dbtRunner().invoke(["--quiet", "deps", "--project-dir", str(EXAMPLES), "--profiles-dir", str(EXAMPLES)])
    state = Path(tempfile.mkdtemp(prefix="refresh-bench-"))
    spark = get_spark(config_for(state, "bench"))
    try:
        # warm-up: the first Spark jobs and dbt's first parse of the project are not what is measured
        measure(spark, state, 1_000, 100)
        points = [measure(spark, state, args.dataset, args.batch)]
        print(f"\nkey refresh of a {args.batch:,}-row batch into a {args.dataset:,}-row dataset:")
        report(points)
        if args.scale:
            series = [
                (args.dataset, max(args.batch // 10, 1)),
                (args.dataset, args.batch * 10),
                (max(args.dataset // 10, args.batch), args.batch),
                (args.dataset * 3, args.batch),
            ]
            print("\nhow the cost grows (batch size, then dataset size):")
            points += [measure(spark, state, d, b) for d, b in series]
            report(sorted(points, key=lambda p: (p.dataset, p.batch)))
    finally:
        spark.stop()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
