"""Benchmark: what a day of small event files costs a fold and the open runs, and what compacting it does.

Each append to the event log is one file, so a day of busy ticks leaves thousands of small files in the
day's folder, which every fold and every read of the open runs open. On a state folder of its own (--rows
control rows over trigger-file upstreams, a first tick that builds everything), one-event files are
written into today's folder as appends leave them (by pyarrow, to build the day in seconds instead of an
hour of Spark appends; the events belong to no control row, so the state does not change), and after
each batch the control table's fold (dbt) and the open runs' read are timed. Then the day is compacted
(harness.state.event_compaction) and both are timed again.

    .venv/bin/python bench/small_files_bench.py --rows 2000 --files 700 2800
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tick_bench import bench_config  # noqa: E402

from harness.core.config import PROJECT_DIR  # noqa: E402
from harness.state.event_files import PARTITION_PREFIX  # noqa: E402


def ghost_files(day_folder: Path, count: int) -> None:
    """`count` files of one event each, with the schema and timestamp encoding of Spark's appends."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sample = next(p for p in sorted(day_folder.iterdir()) if p.name.startswith("part-"))
    schema = pq.read_schema(sample)
    for i in range(count):
        row: dict[str, Any] = {name: None for name in schema.names}
        row |= {
            "event_id": uuid.uuid4().hex,
            "event_time": datetime.now(timezone.utc).replace(tzinfo=None),
            "event_type": "DATA_CHANGED",
            "tick_id": "bench",
            "sensor_source": "trigger_file",
            "sensor_id": f"ghost{i}",
            "trigger_job_id": "ghost_job",
        }
        table = pa.Table.from_pylist([row], schema=schema)
        pq.write_table(
            table,
            day_folder / f"part-bench-{uuid.uuid4().hex}.c000.snappy.parquet",
            use_deprecated_int96_timestamps=True,
        )


def timings(runtime: object, repeat: int) -> tuple[float, float]:
    """Median seconds of a fold (dbt, the control table) and of a read of the open runs."""
    from harness.state.tables import OPEN_RUNS
    from harness.tick import fold

    folds, reads = [], []
    for _ in range(repeat):
        runtime.events.marker.touch()  # type: ignore[attr-defined]
        folds.append(fold.fold(runtime))  # type: ignore[arg-type]
        started = time.monotonic()
        runtime.spark.table(runtime.config.table(OPEN_RUNS)).toArrow()  # type: ignore[attr-defined]
        reads.append(time.monotonic() - started)
    return statistics.median(folds), statistics.median(reads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--files", type=int, nargs="*", default=[700, 2800], help="files in the day, in turn")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--state", default="/tmp/heartbeat-small-files-bench")
    args = parser.parse_args()

    from harness.commands.cli import setup_logging
    from harness.state import event_compaction
    from harness.state.event_reader import events_folder
    from harness.tick.run import run_tick
    from harness.tick.runtime import Runtime

    state = Path(args.state)
    shutil.rmtree(state, ignore_errors=True)
    seeds = PROJECT_DIR / "state" / "bench-seeds" / "small-files"
    seeds.mkdir(parents=True, exist_ok=True)
    setup_logging("text", False)
    config = bench_config(state, seeds, args.rows, max(1, args.rows // 5), args.rows // 4)
    try:
        (state / "triggers" / "up00000" / "batch1").write_text("x")  # a day with appends in it
        runtime = Runtime.open(config)
        run_tick(runtime)
        day = datetime.now(timezone.utc).date()
        day_folder = events_folder(state, config.schema_folder) / f"{PARTITION_PREFIX}{day}"
        timings(runtime, 1)  # the JVM's first run of each query
        print(f"{args.rows} control rows; medians of {args.repeat}")
        written = len(list(day_folder.glob("part-*")))
        for total in [written, *args.files]:
            ghost_files(day_folder, max(0, total - written))
            written = max(written, total)
            runtime.spark.sql(f"REFRESH TABLE {runtime.events.table}")
            folded, read = timings(runtime, args.repeat)
            print(f"{written:>6} files in the day: fold {folded:6.2f} s   open runs {read:6.2f} s")
        started = time.monotonic()
        crowded = event_compaction.crowded_days(day_folder.parent, day)
        event_compaction.compact_days(runtime.spark, runtime.events.table, crowded, state)
        compacted = time.monotonic() - started
        folded, read = timings(runtime, args.repeat)
        print(f"compacted in {compacted:.2f} s: fold {folded:6.2f} s   open runs {read:6.2f} s")
    finally:
        shutil.rmtree(seeds, ignore_errors=True)


if __name__ == "__main__":
    main()
