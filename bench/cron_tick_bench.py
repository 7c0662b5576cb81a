"""Benchmark: what a `python -m harness tick` process from cron costs, and the short commands other
programs run (`publish`, `complete`), each as its own cold process.

On a state folder of its own (two trigger-file upstreams feeding two local jobs, as the demo), after a
first tick that builds everything: --ticks cold tick processes with nothing new, then ticks that find a
new file (each starts its job; the next records the run's end), then `publish` and `complete`
processes. Prints the median, minimum and maximum seconds of each, and for the ticks that find work the
median of each step (from the tick's log lines). `--source DIR` runs the harness of another checkout
(for a before/after on the same machine).

    .venv/bin/python bench/cron_tick_bench.py --ticks 5
    .venv/bin/python bench/cron_tick_bench.py --ticks 5 --source ../older-checkout
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
STEP_LINE = re.compile(r"^\S+ heartbeat INFO +(?P<step>\S+(?: \S+)?) {2,}.*\((?P<seconds>[0-9.]+)s\)$")
CONTROLS = """sensor_source,sensor_id,sensor_read_type,asset_description,upstream_key,preprocess_query,trigger_job_id,trigger_job_name,job_state,dependency_flag
trigger_file,orders_landed,batch,orders,,,orders_job,orders,UNPAUSED,TRUE
trigger_file,customers_landed,batch,customers,,,customers_job,customers,UNPAUSED,TRUE
"""


class Heartbeat:
    def __init__(self, source: Path, base: Path) -> None:
        self.source, self.base = source, base
        shutil.rmtree(base, ignore_errors=True)
        self.triggers = base / "triggers"
        for upstream in ("orders_landed", "customers_landed"):
            (self.triggers / upstream).mkdir(parents=True)
        self.seeds = source / "state" / "bench-seeds" / base.name  # dbt reads seeds inside the project
        self.seeds.mkdir(parents=True, exist_ok=True)
        (self.seeds / "heartbeat_controls.csv").write_text(CONTROLS)
        jobs = {job: {"name": job.removesuffix("_job"), "command": "true"} for job in ("orders_job", "customers_job")}
        self.config = base / "heartbeat.yml"
        self.config.write_text(
            yaml.safe_dump(
                {
                    "state_dir": str(base / "state"),
                    "backend": "local",
                    "dbt_target": "local",
                    "controls_csv": str(self.seeds / "heartbeat_controls.csv"),
                    "trigger_file": {"root": str(self.triggers)},
                    "local_runner": {"jobs": jobs},
                }
            )
        )

    def seconds(self, *args: str) -> float:
        """Run `python -m harness --config ... ARGS` as a new process; its wall time."""
        return self.timed(*args)[0]

    def timed(self, *args: str) -> tuple[float, dict[str, float]]:
        """As `seconds`, with the seconds of each step the process logged."""
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "harness", "--config", str(self.config), *args],
            cwd=self.source,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0:
            raise SystemExit(f"cron tick bench: `{' '.join(args)}` failed:\n{done.stdout}\n{done.stderr}")
        seconds = time.monotonic() - started
        found = (STEP_LINE.match(line) for line in (done.stdout + done.stderr).splitlines())
        return seconds, {m["step"]: float(m["seconds"]) for m in found if m}

    def cleanup(self) -> None:
        shutil.rmtree(self.seeds, ignore_errors=True)


def line(what: str, values: list[float]) -> str:
    return (
        f"{what:<44} median {statistics.median(values):6.2f} s   min {min(values):6.2f} s   "
        f"max {max(values):6.2f} s   ({len(values)} processes)"
    )


def step_medians(runs: list[tuple[float, dict[str, float]]]) -> str:
    names = list(dict.fromkeys(name for _, steps in runs for name in steps))
    medians = {name: statistics.median(steps.get(name, 0.0) for _, steps in runs) for name in names}
    return f"{'  its steps (medians)':<44} " + ", ".join(f"{name} {s:.2f}" for name, s in medians.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=5, help="processes of each kind")
    parser.add_argument("--source", default=str(ROOT), help="the checkout whose harness runs")
    parser.add_argument("--state", default="/tmp/heartbeat-cron-bench")
    args = parser.parse_args()
    hb = Heartbeat(Path(args.source).resolve(), Path(args.state))
    try:
        first = hb.seconds("tick")
        idle = [hb.seconds("tick") for _ in range(args.ticks)]
        busy, ended = [], []
        for i in range(args.ticks):
            (hb.triggers / "orders_landed" / f"batch-{i}.done").write_text(str(i))
            busy.append(hb.timed("tick"))
            time.sleep(0.5)  # the job (`true`) ends
            ended.append(hb.timed("tick"))
        publish = [hb.seconds("publish", "--table", "lake.orders", "--snapshot", str(i)) for i in range(args.ticks)]
        complete = [hb.seconds("complete", "--job-id", "orders_job") for _ in range(args.ticks)]
    finally:
        hb.cleanup()
    print(f"harness from {hb.source}")
    print(f"{'first tick (builds the models)':<44} {first:6.2f} s")
    print(line("tick, nothing new", idle))
    print(line("tick, a file landed (starts its job)", [s for s, _ in busy]))
    print(step_medians(busy))
    print(line("tick, the run ended (records it)", [s for s, _ in ended]))
    print(step_medians(ended))
    print(line("publish --table T --snapshot N", publish))
    print(line("complete --job-id J", complete))


if __name__ == "__main__":
    main()
