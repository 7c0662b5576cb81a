"""How long the operator's commands take on a big state, without Spark: `status`, `status --state
failed`, `why`, `events`, `report`, each as its own `python -m harness` process (what an operator
types), on a synthetic state folder with --rows control rows (3 rows per job, a few failed jobs) and
an event log of --ticks appends (one parquet file per append in its day's folder, as Spark writes them).

The commands that read the event log run twice: over the log's files alone (a log no tick has indexed
yet), then with the event index a tick leaves (harness.state.event_index), whose refresh is timed too:
the first one over the whole log, and a tick's, after one more append.

`--source DIR` runs the commands of another checkout (its `harness` package) on the same kind of state,
for a before/after.

    .venv/bin/python bench/status_bench.py --rows 2000
    .venv/bin/python bench/status_bench.py --rows 2000 --source ../older-checkout
    .venv/bin/python bench/status_bench.py --rows 100000 --rows-per-job 4 --ticks 1440 --repeat 3   # an estate
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.state import status_files
from harness.state.event_reader import refresh_index

PROJECT = Path(__file__).resolve().parents[1]


def synthetic_state(state: Path, rows: int, ticks: int, per_job: int = 3) -> None:
    state.mkdir(parents=True)
    now = datetime.now(timezone.utc)
    jobs, table_rows = [], []
    for i in range(rows):
        job = f"job_{i // per_job:05d}"
        failed = (i // per_job) % 97 == 0
        status = "FAILED" if failed else ["COMPLETED", "NEW_EVENT_AVAILABLE", "IN_PROGRESS", None][i % 4]
        source, sensor_id, watermark = [
            (
                "kafka",
                f"product_{i}: a.rather.long.topic.name.for.some.product.{i}",
                {"offsets": {str(p): 1000 + p for p in range(12)}},
            ),
            ("trigger_file", f"landing/area_{i}", {"changed_ns": time.time_ns(), "recent": [f"f{i}.done"]}),
            ("delta_table", f"/lake/tables/table_{i}", {"version": i}),
        ][i % 3]
        table_rows.append(
            {
                "sensor_source": source,
                "sensor_id": sensor_id,
                "trigger_job_id": job,
                "upstream_label": f"{source}:{sensor_id}",
                "status": status,
                "is_hard_dependency": i % 3 != 2,
                "job_state": "UNPAUSED",
                "watermark": json.dumps(watermark),
                "last_success_watermark": None,
                "status_change_timestamp": now.isoformat(),
                "latest_event_fetched_timestamp": now.isoformat(),
                "latest_run_id": f"local-{i}" if status else None,
                "job_start_timestamp": now.isoformat(),
                "job_end_timestamp": None,
                "last_error": "exit code 1" if failed else None,
                "last_error_timestamp": now.isoformat() if failed else None,
            }
        )
        if i % per_job == 0:
            jobs.append(
                {
                    "job_id": job,
                    "job_name": f"{job}-name",
                    "should_start": i % 4 == 1,
                    "reason": "all hard rows have new data" if i % 4 == 1 else "waiting for hard dependency kafka:x",
                }
            )
    # as a tick writes it (its index too, where the tick has one)
    body = {"written_at": now.isoformat(), "decided_at": now.isoformat(), "tick_id": "bench", "jobs": jobs}
    status_files.write_snapshot_body(state, body | {"rows": table_rows})
    (state / "health.json").write_text(
        json.dumps(
            {
                "last_tick": {"ended_at": now.isoformat(), "seconds": 3.2},
                "failures_in_a_row": 0,
                "last_success_at": now.isoformat(),
            }
        )
    )
    folder = events_folder(state)
    folder.mkdir(parents=True)
    (state / "events.location").write_text(folder.as_uri() + "\n")
    for t in range(ticks):
        append(folder, [table_rows[(t * 7 + k) % rows] for k in range(20)], now - timedelta(minutes=ticks - t), t)


def events_folder(state: Path) -> Path:
    return state / "warehouse" / "heartbeat.db" / "heartbeat_events"


def append(folder: Path, batch: list[dict[str, Any]], at: datetime, t: int) -> None:
    """One append of a tick: a file in the folder of its day, written when its events happened."""
    day = folder / f"event_date={at.date().isoformat()}"
    day.mkdir(exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "event_id": [uuid.uuid4().hex for _ in batch],
                "event_time": pa.array([at.replace(tzinfo=None)] * len(batch), pa.timestamp("us")),
                "event_type": ["DATA_CHANGED"] * len(batch),
                "tick_id": [f"t{t}"] * len(batch),
                "sensor_source": [r["sensor_source"] for r in batch],
                "sensor_id": [r["sensor_id"] for r in batch],
                "trigger_job_id": [r["trigger_job_id"] for r in batch],
                "status": ["NEW_EVENT_AVAILABLE"] * len(batch),
                "watermark_before": [None] * len(batch),
                "watermark_after": [r["watermark"] for r in batch],
                "run_id": [None] * len(batch),
                "idempotency_token": [None] * len(batch),
                "message": ["new data"] * len(batch),
                "details": [None] * len(batch),
            }
        ),
        file := day / f"part-{t:05d}-{uuid.uuid4()}.c000.snappy.parquet",
    )
    os.utime(file, (at.timestamp(), at.timestamp()))


def timed(config: Path, *args: str, repeat: int, source: Path = PROJECT) -> tuple[float, float, int, float]:
    """Median and max wall seconds, the output's lines, and the median CPU seconds of the process (user +
    system: what the command costs, much less moved than its wall time by other work on the machine)."""
    seconds, cpu, lines = [], [], 0
    for _ in range(repeat):
        start, used = time.perf_counter(), _children_cpu()
        out = subprocess.run(
            [sys.executable, "-m", "harness", "--config", str(config), *args],
            cwd=source,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        seconds.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - used)
        lines = len(out.splitlines())
    return statistics.median(seconds), max(seconds), lines, statistics.median(cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--rows-per-job", type=int, default=3, help="4: the estate's shape (100,000 rows, 25,000 jobs)")
    p.add_argument("--ticks", type=int, default=1440, help="event-log appends (one a minute: a day)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--keep", action="store_true", help="keep the synthetic state folder")
    p.add_argument("--no-report", dest="report", action="store_false", help="leave `report` out")
    p.add_argument("--source", type=Path, default=PROJECT, help="the checkout whose commands run")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="status-bench-"))
    try:
        run(root, args)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def run(root: Path, args: argparse.Namespace) -> None:
    state = root / "state"
    synthetic_state(state, args.rows, args.ticks, args.rows_per_job)
    config = root / "heartbeat.yml"
    config.write_text(f"state_dir: {state}\n")
    per_job = args.rows_per_job
    print(
        f"state: {args.rows} rows, {args.rows // per_job + (args.rows % per_job > 0)} jobs, {args.ticks} event files "
        f"({args.ticks * 20} events); median / max of {args.repeat} runs, each a new process; "
        f"harness from {args.source}"
    )
    reading = [
        ("why --job job_00001", ["why", "--job", "job_00001"], args.repeat),
        ("events --since 2h", ["events", "--since", "2h"], args.repeat),
        ("events --since 2d --job job_00001", ["events", "--since", "2d", "--job", "job_00001"], args.repeat),
        ("events --type RUN_FAILED", ["events", "--type", "RUN_FAILED"], args.repeat),
        *([("report --since 1d", ["report", "--since", "1d"], 1)] if args.report else []),
    ]
    for name, cmd, repeat in [
        ("status", ["status"], args.repeat),
        ("status --all", ["status", "--all"], args.repeat),
        ("status --state failed", ["status", "--state", "failed"], args.repeat),
        ("status --json", ["status", "--json"], args.repeat),
    ]:
        show(name, timed(config, *cmd, repeat=repeat, source=args.source))
    print(" the event log's files alone (no event index):")
    for name, cmd, repeat in reading:
        show(name, timed(config, *cmd, repeat=repeat, source=args.source))
    today = datetime.now(timezone.utc).date()
    started = time.perf_counter()
    first = refresh_index(state, today)
    print(f" the event index: first refresh {time.perf_counter() - started:.2f} s ({first})")
    rows = json.loads((state / "status.json").read_text())["rows"]
    append(events_folder(state), rows[:20], datetime.now(timezone.utc), args.ticks)
    started = time.perf_counter()
    refresh_index(state, today)
    print(f"  a tick's refresh after one more append: {time.perf_counter() - started:.3f} s")
    for name, cmd, repeat in reading:
        show(name, timed(config, *cmd, repeat=repeat, source=args.source))
    baseline = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; t=time.perf_counter(); import harness.commands.cli; print(time.perf_counter()-t)",
        ],
        cwd=args.source,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"  (importing harness.commands.cli alone: {float(baseline):.2f} s)")
    empty, empty_cpu = [], []
    for _ in range(args.repeat):
        start, used = time.perf_counter(), _children_cpu()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        empty.append(time.perf_counter() - start)
        empty_cpu.append(_children_cpu() - used)
    print(
        f"  (`python -c pass`, the floor of any command: {statistics.median(empty):.2f} s median, "
        f"{statistics.median(empty_cpu):.2f} s CPU)"
    )


def show(name: str, figures: tuple[float, float, int, float]) -> None:
    median, worst, lines, cpu = figures
    print(f"  {name:<38} {median:6.2f} s median  {worst:6.2f} s max  {cpu:6.2f} s CPU  {lines:5d} lines")


if __name__ == "__main__":
    main()
