"""Benchmark: what a `python -m harness tick` process from cron costs, and the short commands other
programs run (`publish`, `complete`), each as its own cold process.

On a state folder of its own (two trigger-file upstreams feeding two local jobs, as the demo; with
--rows, the 10,000-row benchmark's control table instead: --rows rows over --upstreams trigger folders,
four rows a job; and a row of source `published`, lake.orders, feeding one more job), after a first tick
that builds everything: --ticks cold tick processes with nothing new, then ticks that find new files
(the demo's state: one file, which starts its job; with --rows: a file in a tenth of the upstreams,
which starts a job for each row they feed; the next tick records the runs' ends), then `publish`
processes of lake.orders, each followed by the tick that applies it (and starts the job it feeds) and
one that records that run's end, then `complete` processes. Prints the median, minimum and maximum
seconds of each, and for the ticks that find work the median of each step (from the tick's log lines).
Then the same work warm, on the same state in the same hour: one `run` process (one JVM for all its
ticks), --ticks + 1 files landed one after another; from the state's tick records, the seconds of each
tick that started the job and of each that recorded its run's end, the first of each left out (its
queries' first run in that JVM), and how much more the cold process took (the issue's target: a busy
cron tick costs the warm tick's work + at most 10 s).
`--source DIR` runs the harness of another checkout (for a before/after on the same machine).
With --preprocess the state has one more row: a Delta table by path (written with delta-rs) whose
preprocess_query keeps only rows marked `done`; after the first tick (which runs the query over the
table's rows: none kept), --ticks cold ticks with nothing new, then ticks after a commit of rows the
query drops (the first runs it over them, the next ones have nothing new).

    .venv/bin/python bench/cron_tick_bench.py --ticks 5
    .venv/bin/python bench/cron_tick_bench.py --ticks 5 --source ../older-checkout
    .venv/bin/python bench/cron_tick_bench.py --ticks 3 --rows 10000
    .venv/bin/python bench/cron_tick_bench.py --ticks 3 --preprocess
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from latency_bench import wait_for
from tick_bench import land, tenth, wait_for_runs, write_controls

from harness.state.status_files import read_ticks  # noqa: E402 - tick_bench puts the harness on the path

ROOT = Path(__file__).resolve().parents[1]
STEP_LINE = re.compile(r"^\S+ heartbeat INFO +(?P<step>\S+(?: \S+)?) {2,}.*\((?P<seconds>[0-9.]+)s\)$")
CONTROLS = """sensor_source,sensor_id,sensor_read_type,asset_description,upstream_key,preprocess_query,trigger_job_id,trigger_job_name,job_state,dependency_flag
trigger_file,orders_landed,batch,orders,,,orders_job,orders,UNPAUSED,TRUE
trigger_file,customers_landed,batch,customers,,,customers_job,customers,UNPAUSED,TRUE
"""
PUBLISHED = "lake.orders"  # a table producers publish, feeding a job of its own
PUBLISHED_ROW = f"published,{PUBLISHED},batch,published orders,,,lake_orders_job,lake orders,UNPAUSED,TRUE\n"
MARKED = "SELECT * FROM sensor_new_data WHERE state = 'done'"  # --preprocess: the row's query


class Heartbeat:
    """A state folder ticked by cron processes: the demo's two rows, or with `rows` the 10,000-row
    benchmark's control table (`rows` rows over `upstreams` trigger folders, four rows a job)."""

    def __init__(
        self, source: Path, base: Path, rows: int = 0, upstreams: int = 2000, preprocess: bool = False
    ) -> None:
        self.source, self.base = source, base
        self.upstreams = min(upstreams, rows) if rows else 0
        shutil.rmtree(base, ignore_errors=True)
        self.triggers = base / "triggers"
        self.seeds = source / "state" / "bench-seeds" / base.name  # dbt reads seeds inside the project
        self.seeds.mkdir(parents=True, exist_ok=True)
        controls = self.seeds / "heartbeat_controls.csv"
        if rows:
            names = [f"up{u:05d}" for u in range(self.upstreams)]
            job_ids = [f"job{j:05d}" for j in range(rows // 4)]
            write_controls(controls, rows, self.upstreams, len(job_ids))
        else:
            names, job_ids = ["orders_landed", "customers_landed"], ["orders_job", "customers_job"]
            controls.write_text(CONTROLS)
        self.marked = base / "marked_orders"  # --preprocess: the Delta table
        with controls.open("a") as csv:
            csv.write(PUBLISHED_ROW)
            if preprocess:
                self.commit("pending")
                csv.write(
                    f'delta_table,{self.marked},batch,marked orders,,"{MARKED}",marked_job,marked,UNPAUSED,TRUE\n'
                )
        for upstream in names:
            (self.triggers / upstream).mkdir(parents=True)
        self.job_id = job_ids[0]
        listed = [*job_ids, "lake_orders_job", *(["marked_job"] if preprocess else [])]
        jobs = {job: {"name": job.removesuffix("_job"), "command": "true"} for job in listed}
        self.config = base / "heartbeat.yml"
        self.config.write_text(
            yaml.safe_dump(
                {
                    "state_dir": str(base / "state"),
                    "backend": "local",
                    "dbt_target": "local",
                    "controls_csv": str(controls),
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

    def land(self, i: int) -> None:
        """New data: a file in the demo's orders folder, or in the `i`-th tenth of the upstreams."""
        if self.upstreams:
            land(self.triggers, self.upstreams, i % (self.upstreams // tenth(self.upstreams)), f"batch-{i}.done")
        else:
            (self.triggers / "orders_landed" / f"batch-{i}.done").write_text(str(i))

    def commit(self, state: str) -> None:
        """A commit of two rows in `state` to the --preprocess Delta table (its first: the table)."""
        import pyarrow as pa
        from deltalake import write_deltalake

        rows = pa.table({"order_id": [1, 2], "state": [state, state]})
        write_deltalake(str(self.marked), rows, mode="append")

    def wait_for_runs(self) -> None:
        wait_for_runs(self.base / "state" / "runs")

    def warm(self, landings: int) -> tuple[list[float], list[float]]:
        """`landings` + 1 files landed one after another under one `run --interval 1` process: the seconds
        of each tick that started the job, and of each tick after it that folded without starting (the one
        that records the run's end; nothing else happens on this state), the first of each left out."""
        since = datetime.now(timezone.utc)
        log = (self.base / "run.log").open("w")
        loop = subprocess.Popen(
            [sys.executable, "-m", "harness", "--config", str(self.config), "run", "--interval", "1"],
            cwd=self.source,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            first = f"the run loop's first tick ({self.base / 'run.log'})"
            wait_for(lambda: read_ticks(self.base / "state", since), 300, first)
            for i in range(landings + 1):
                self.land(1000 + i)
                wait_for(lambda: len(self._warm_starts(since)) > i, 120, f"the run loop to start landing {i}'s job")
                self.wait_for_runs()
                wait_for(lambda: len(self._warm_ends(since)) > i, 120, f"the run loop to record landing {i}'s run")
        finally:
            os.killpg(loop.pid, signal.SIGTERM)
            loop.wait(timeout=120)
            log.close()
        return self._warm_starts(since)[1:], self._warm_ends(since)[1:]

    def _ticks(self, since: datetime) -> list[dict[str, Any]]:
        """The loop's ticks after its first (a new JVM's), from the state's tick records."""
        return read_ticks(self.base / "state", since)[1:]

    def _warm_starts(self, since: datetime) -> list[float]:
        return [float(t["seconds"]) for t in self._ticks(since) if t["started"]]

    def _warm_ends(self, since: datetime) -> list[float]:
        ended, started = [], False
        for t in self._ticks(since):
            if t["started"]:
                started = True
            elif started and "fold" in t["steps"]:
                ended.append(float(t["seconds"]))
                started = False
        return ended

    def cleanup(self) -> None:
        shutil.rmtree(self.seeds, ignore_errors=True)


def line(what: str, values: list[float], of: str = "processes") -> str:
    return (
        f"{what:<44} median {statistics.median(values):6.2f} s   min {min(values):6.2f} s   "
        f"max {max(values):6.2f} s   ({len(values)} {of})"
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
    parser.add_argument("--rows", type=int, default=0, help="the 10,000-row benchmark's controls (0: the demo's)")
    parser.add_argument("--upstreams", type=int, default=2000, help="with --rows")
    parser.add_argument("--preprocess", action="store_true", help="only the preprocess_query row's ticks")
    args = parser.parse_args()
    hb = Heartbeat(Path(args.source).resolve(), Path(args.state), args.rows, args.upstreams, args.preprocess)
    if args.preprocess:
        try:
            preprocess_ticks(hb, args.ticks)
        finally:
            hb.cleanup()
        return
    try:
        first = hb.seconds("tick")
        idle = [hb.seconds("tick") for _ in range(args.ticks)]
        busy, ended = [], []
        for i in range(args.ticks):
            hb.land(i)
            busy.append(hb.timed("tick"))
            hb.wait_for_runs()  # the jobs (`true`) end
            ended.append(hb.timed("tick"))
        publish, applied = [], []
        for i in range(args.ticks):
            publish.append(hb.seconds("publish", "--table", PUBLISHED, "--snapshot", str(i)))
            applied.append(hb.timed("tick"))
            hb.wait_for_runs()
            hb.seconds("tick")  # records the run's end
        complete = [hb.seconds("complete", "--job-id", hb.job_id) for _ in range(args.ticks)]
        warm_started, warm_ended = hb.warm(args.ticks)
    finally:
        hb.cleanup()
    print(f"harness from {hb.source}, " + (f"{args.rows} rows" if args.rows else "the demo's two rows"))
    print(f"{'first tick (builds the models)':<44} {first:6.2f} s")
    print(line("tick, nothing new", idle))
    print(line("tick, new files (start their jobs)", [s for s, _ in busy]))
    print(step_medians(busy))
    print(line("tick, the runs ended (records them)", [s for s, _ in ended]))
    print(step_medians(ended))
    print(line("publish --table T --snapshot N", publish))
    print(line("tick, a publication applied (starts its job)", [s for s, _ in applied]))
    print(step_medians(applied))
    print(line("complete --job-id J", complete))
    print(line("warm, one `run` process: a file landed", warm_started, "ticks"))
    print(line("warm, one `run` process: the run ended", warm_ended, "ticks"))
    cold_over = [
        ("a file landed", statistics.median(s for s, _ in busy) - statistics.median(warm_started)),
        ("the run ended", statistics.median(s for s, _ in ended) - statistics.median(warm_ended)),
    ]
    print(
        f"{'cold process over the warm tick (medians)':<44} "
        + ", ".join(f"{what} +{over:.2f} s" for what, over in cold_over)
        + " (target: at most +10 s)"
    )


def preprocess_ticks(hb: Heartbeat, ticks: int) -> None:
    """A row whose preprocess_query keeps nothing: the cold ticks while the table stays as it is, and after
    a commit of rows the query drops."""
    first = hb.seconds("tick")
    idle = [hb.seconds("tick") for _ in range(ticks)]
    dropped, after = [], []
    for _ in range(ticks):
        hb.commit("pending")
        dropped.append(hb.timed("tick"))
        after.append(hb.seconds("tick"))
    print(f"harness from {hb.source}, the demo's rows and a Delta table whose preprocess_query keeps nothing")
    print(f"{'first tick (builds the models, runs the query)':<44} {first:6.2f} s")
    print(line("tick, nothing new (the query kept nothing)", idle))
    print(line("tick, a commit the query drops", [s for s, _ in dropped]))
    print(step_medians(dropped))
    print(line("tick, nothing new after it", after))


if __name__ == "__main__":
    main()
