"""Benchmark: how long a tick takes at thousands of control rows, with nothing new and with new data.

Builds its own state folder, a controls CSV of --rows rows (trigger_file upstreams, several rows per
upstream and per job, a quarter of them soft), then runs ticks in one warm process and prints the
time of each step. Usage: .venv/bin/python bench/tick_bench.py --rows 2000 [--state /tmp/hb-bench]
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import time
from pathlib import Path

from harness.cli import setup_logging
from harness.config import PROJECT_DIR, Config, LocalJob, SensingSettings
from harness.controls import USER_COLUMNS
from harness.runtime import Runtime
from harness.tick import TickReport, run_tick


def write_controls(path: Path, rows: int, upstreams: int, jobs: int) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(USER_COLUMNS))
        writer.writeheader()
        for i in range(rows):
            writer.writerow({
                "sensor_source": "trigger_file", "sensor_id": f"up{i % upstreams:05d}", "sensor_read_type": "batch",
                "asset_description": f"bench upstream {i % upstreams}", "upstream_key": "", "preprocess_query": "",
                "trigger_job_id": f"job{i // 4 % jobs:05d}", "trigger_job_name": f"bench job {i // 4 % jobs}",
                "job_state": "UNPAUSED", "dependency_flag": "FALSE" if i % 4 == 3 else "TRUE",
            })


def line(name: str, reports: list[TickReport], total: list[float]) -> str:
    steps = sorted({k for r in reports for k in r.seconds})
    parts = [f"{k} {statistics.median(r.seconds.get(k, 0.0) for r in reports):.2f}s" for k in steps]
    return f"{name}: median {statistics.median(total):.2f}s (min {min(total):.2f}s) over {len(total)} ticks | " + ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--upstreams", type=int, default=0, help="distinct upstreams (default rows/2)")
    parser.add_argument("--jobs", type=int, default=0, help="distinct jobs (default rows/4: four rows a job)")
    parser.add_argument("--ticks", type=int, default=5)
    parser.add_argument("--state", default="/tmp/heartbeat-bench")
    args = parser.parse_args()
    upstreams, jobs = args.upstreams or args.rows // 2, args.jobs or args.rows // 4
    state = Path(args.state)
    shutil.rmtree(state, ignore_errors=True)
    seeds = PROJECT_DIR / "state" / "bench-seeds"
    shutil.rmtree(seeds, ignore_errors=True)
    seeds.mkdir(parents=True)
    triggers = state / "triggers"
    for u in range(upstreams):
        (triggers / f"up{u:05d}").mkdir(parents=True)
    write_controls(seeds / "heartbeat_controls.csv", args.rows, upstreams, jobs)
    setup_logging("text", False)
    config = Config(config_path=None, project_dir=PROJECT_DIR, state_dir=state,
                    controls_csv=seeds / "heartbeat_controls.csv", trigger_root=triggers,
                    sensing=SensingSettings(check_timeout_seconds=120, max_parallel_checks=8),
                    local_jobs={f"job{j:05d}": LocalJob(name="bench", command="true") for j in range(jobs)})
    print(f"bench: {args.rows} rows, {upstreams} upstreams, {jobs} jobs, state {state}")

    started = time.monotonic()
    runtime = Runtime.open(config)
    print(f"spark session: {time.monotonic() - started:.1f}s")
    started = time.monotonic()
    first = run_tick(runtime)
    print(line("first tick (loads the CSV, creates the models)", [first], [time.monotonic() - started]))

    reports, totals = [], []
    for _ in range(args.ticks):
        started = time.monotonic()
        reports.append(run_tick(runtime))
        totals.append(time.monotonic() - started)
    print(line("tick with nothing new", reports, totals))

    changed = max(1, upstreams // 10)
    for u in range(changed):
        (triggers / f"up{u:05d}" / "batch.done").write_text("x")
    started = time.monotonic()
    new = run_tick(runtime)
    print(line(f"tick with new data on {changed} upstreams", [new], [time.monotonic() - started]))
    print(f"  -> {new.new_data} rows with new data, {len(new.started)} jobs started")
    shutil.rmtree(seeds, ignore_errors=True)


if __name__ == "__main__":
    main()
