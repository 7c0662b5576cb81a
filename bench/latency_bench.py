"""Benchmark: from a trigger file landing to its job's process starting, with `run --interval N`.

Runs `python -m harness run --interval N` on a state folder of its own (one trigger-file upstream
feeding one local job whose command writes the time it starts), then --landings times: waits a random
part of an interval, lands a trigger file, waits for the job to start, and for a tick to record the
run's end (the row is sensed again only then). Prints the median and maximum detection-to-start time
and what the ticks spent per step.

    .venv/bin/python bench/latency_bench.py --landings 20 --interval 10
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONTROLS = """sensor_source,sensor_id,sensor_read_type,asset_description,upstream_key,preprocess_query,trigger_job_id,trigger_job_name,job_state,dependency_flag
trigger_file,landing,batch,latency bench upstream,,,latency_job,latency bench job,UNPAUSED,TRUE
"""


def wait_for(condition: object, timeout: float, what: str) -> None:
    """Until `condition()` is true; SystemExit naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


def recorded_ended(state: Path, run_id: str) -> bool:
    """Whether the status snapshot shows the run `run_id` as the job's latest, ended successfully. The run's
    own id, not the status alone: the snapshot on disk while the tick that started the run still folds is
    the one before, where the previous run shows COMPLETED (a file landed then finds its row in progress,
    not sensed, and waits for the run's end: the landing to start would measure the run, not the tick)."""
    try:
        snapshot = json.loads((state / "status.json").read_text())
    except (OSError, ValueError):
        return False
    return any(
        r["trigger_job_id"] == "latency_job" and r["latest_run_id"] == run_id and r["status"] == "COMPLETED"
        for r in snapshot["rows"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--landings", type=int, default=20)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--state", default="/tmp/heartbeat-latency")
    args = parser.parse_args()
    base = Path(args.state)
    shutil.rmtree(base, ignore_errors=True)
    state, triggers, starts = base / "state", base / "triggers", base / "starts"
    for folder in (triggers / "landing", starts):
        folder.mkdir(parents=True)
    seeds = ROOT / "state" / "latency-seeds"
    shutil.rmtree(seeds, ignore_errors=True)
    seeds.mkdir(parents=True)
    (seeds / "heartbeat_controls.csv").write_text(CONTROLS)
    config = base / "heartbeat.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "state_dir": str(state),
                "controls_csv": str(seeds / "heartbeat_controls.csv"),
                "trigger_file": {"root": str(triggers)},
                "local_runner": {
                    "jobs": {
                        "latency_job": {
                            "name": "latency bench job",
                            "command": f'date +%s.%N > "{starts}/$HEARTBEAT_RUN_ID"',
                        }
                    }
                },
            }
        )
    )
    log = (base / "heartbeat.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "--config",
            str(config),
            "--log-format",
            "json",
            "run",
            "--interval",
            str(args.interval),
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    latencies: list[float] = []
    try:
        wait_for(lambda: (state / "status.json").exists(), 300, "the first tick")
        for i in range(args.landings):
            time.sleep(random.uniform(0, args.interval))
            seen = set(os.listdir(starts))
            landed = time.time()
            (triggers / "landing" / f"batch{i:03d}").write_text("x")
            wait_for(lambda: set(os.listdir(starts)) - seen, 120, f"landing {i}'s job to start")
            (new,) = set(os.listdir(starts)) - seen
            wait_for(lambda: (starts / new).read_text().strip(), 10, "the job's start time")
            latencies.append(float((starts / new).read_text()) - landed)
            print(f"landing {i + 1:2d}: job started {latencies[-1]:.2f}s after the file landed", flush=True)
            wait_for(lambda: recorded_ended(state, new), 120, f"landing {i}'s run to be recorded")
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=120)
        shutil.rmtree(seeds, ignore_errors=True)
    ticks = [
        json.loads(line)
        for line in (base / "heartbeat.log").read_text().splitlines()
        if line.startswith("{") and '"step"' in line
    ]
    per_step: dict[str, list[float]] = {}
    for t in ticks:
        per_step.setdefault(t["step"], []).append(t["seconds"])
    print(
        f"\nrun --interval {args.interval:g}, {len(latencies)} landings: landing to job start median "
        f"{statistics.median(latencies):.2f}s, max {max(latencies):.2f}s, min {min(latencies):.2f}s "
        f"(target: median <= interval/2 + 2 s = {args.interval / 2 + 2:g}s, "
        f"max <= interval + 4 s = {args.interval + 4:g}s)"
    )
    print(
        "per step over every tick (median / max seconds): "
        + ", ".join(f"{name} {statistics.median(v):.2f}/{max(v):.2f}" for name, v in sorted(per_step.items()))
    )


if __name__ == "__main__":
    main()
