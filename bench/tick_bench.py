"""Benchmark: what a tick costs from a thousand control rows to an estate's 100,000, before and after a
year of events, and what the same sensing costs done the way a per-row heartbeat does it.

Each size runs in a process of its own (a state folder, a Derby metastore and a warm SparkSession):
  1. a controls CSV of --rows rows over --upstreams trigger-file upstreams (default: the estate's shape,
     five rows an upstream: 100,000 rows over 20,000 upstreams) and --jobs jobs (four rows a job, a
     quarter of them soft: 25,000 jobs at 100,000 rows), and a first tick that loads it;
  2. --warmup-rounds rounds of new data on 10 % of the upstreams (their jobs start, the next tick
     records the runs' ends), on upstreams the measured ticks do not use: the process's JVM is the one
     a `run` loop starts (both of its compilers, `--jvm loop`), whose code is compiled for the long run
     only after its first busy ticks, as in a loop that has been running (`--jvm short`: the quick
     compiler only, as a `tick` or `run --max-ticks` process);
  3. --ticks ticks with nothing new, then a tick with new data on 10 % of the upstreams (whose jobs
     start on the local runner), and the tick after it, which records the runs' ends; then a tick that
     does both (the runs of the next 10 % ended, and the 10 % after them landed);
  4. with --today-events: that many events earlier today (a busy day so far, ending two hours before
     the bench), then the same ticks again;
  5. a year of history: --history-days days of --events-per-day events on the same rows, written into
     the event log's past days; then the same ticks again;
  6. the baseline: for each of --baseline-sample rows in turn, one Spark query listing that row's
     upstream and one write of that row's status to a control table; its per-row cost times the rows
     is what one pass over every row costs done that way.

Every tick that starts jobs is checked against the start rules, worked out here from the controls CSV
and the folders landed (a job starts when each of its hard rows has news, or with no hard row, one
soft row): a start missing or one too many ends the benchmark with the difference. After the ticks,
--cron-ticks `python -m harness tick` processes with nothing new (a cron tick, cold). Each size prints
its peak memory: the largest resident set of the Python process and of Spark's JVM.

    .venv/bin/python bench/tick_bench.py                      # 2,000 and 10,000 rows, a year of history
    .venv/bin/python bench/tick_bench.py --sizes 2000 --history-days 0
    .venv/bin/python bench/tick_bench.py --sizes 1000,10000,100000 --history-days 0 --ticks 3 \
        --warmup-rounds 1 --baseline-sample 0                  # how it grows, to an estate
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from harness.core.config import PROJECT_DIR, Config, load_config  # noqa: E402
from harness.core.controls import USER_COLUMNS  # noqa: E402
from harness.tick.steps import TickReport  # noqa: E402


def write_controls(path: Path, rows: int, upstreams: int, jobs: int) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(USER_COLUMNS))
        writer.writeheader()
        for i in range(rows):
            writer.writerow(
                {
                    "sensor_source": "trigger_file",
                    "sensor_id": f"up{i % upstreams:05d}",
                    "sensor_read_type": "batch",
                    "asset_description": f"bench upstream {i % upstreams}",
                    "upstream_key": "",
                    "preprocess_query": "",
                    "trigger_job_id": f"job{i // 4 % jobs:05d}",
                    "trigger_job_name": f"bench job {i // 4 % jobs}",
                    "job_state": "UNPAUSED",
                    "dependency_flag": "FALSE" if i % 4 == 3 else "TRUE",
                }
            )


def bench_config(state: Path, seeds: Path, rows: int, upstreams: int, jobs: int, **settings: Any) -> Config:
    """The configuration of a benchmark's state folder: `upstreams` trigger folders, and a controls CSV of
    `rows` rows over them in `seeds` (a folder inside the dbt project, where dbt reads seeds)."""
    triggers = state / "triggers"
    for u in range(upstreams):
        (triggers / f"up{u:05d}").mkdir(parents=True)
    write_controls(seeds / "heartbeat_controls.csv", rows, upstreams, jobs)
    return Config(
        config_path=None,
        project_dir=PROJECT_DIR,
        state_dir=state,
        controls_csv=seeds / "heartbeat_controls.csv",
        trigger_root=triggers,
        **settings,
    )


def estate_config(base: Path, seeds: Path, rows: int, upstreams: int, jobs: int) -> Config:
    """A heartbeat.yml in `base` (the state folder `base/state`, the trigger folders `base/triggers`, the
    local runner's `jobs`, each a command `true`) over a controls CSV of `rows` rows in `seeds`: the
    configuration both the benchmark's warm process and its `python -m harness tick` processes load."""
    triggers = base / "triggers"
    for u in range(upstreams):
        (triggers / f"up{u:05d}").mkdir(parents=True)
    write_controls(seeds / "heartbeat_controls.csv", rows, upstreams, jobs)
    path = base / "heartbeat.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "state_dir": str(base / "state"),
                "backend": "local",
                "dbt_target": "local",
                "controls_csv": str(seeds / "heartbeat_controls.csv"),
                "trigger_file": {"root": str(triggers)},
                "sensing": {"check_timeout_seconds": 120, "max_parallel_checks": 8},
                "local_runner": {"jobs": {f"job{j:05d}": {"name": "bench", "command": "true"} for j in range(jobs)}},
            }
        )
    )
    return load_config(path)


class StartRules:
    """The start rules of the benchmark's control table, worked out apart from the heartbeat (every row
    UNPAUSED, none failed): a job starts when each of its hard rows has news, or, with no hard row, one of
    its soft rows. News waits on a row until its job starts; a job started waits for its run's end,
    which the benchmark always lets come before the next landing."""

    def __init__(self, rows: int, upstreams: int, jobs: int) -> None:
        self.hard: dict[str, set[str]] = {}
        self.soft: dict[str, set[str]] = {}
        for i in range(rows):
            job, upstream = f"job{i // 4 % jobs:05d}", f"up{i % upstreams:05d}"
            self.hard.setdefault(job, set())
            self.soft.setdefault(job, set())
            (self.soft if i % 4 == 3 else self.hard)[job].add(upstream)
        self.news: set[tuple[str, str]] = set()  # (job, upstream) with news not yet handed to a run

    def landed(self, upstreams: set[str]) -> set[str]:
        """The jobs the rules start once `upstreams` got new data."""
        for job in self.hard:
            self.news |= {(job, u) for u in (self.hard[job] | self.soft[job]) & upstreams}
        ready = {
            job
            for job, hard in self.hard.items()
            if (
                all((job, u) in self.news for u in hard) if hard else any((job, u) in self.news for u in self.soft[job])
            )
        }
        self.news = {(job, u) for job, u in self.news if job not in ready}
        return ready


def check_starts(rules: StartRules, upstreams: set[str], report: TickReport, what: str) -> int:
    """The tick's starts against the rules' (a start missing or one too many ends the benchmark)."""
    expected = rules.landed(upstreams)
    started = set(report.started)
    if started != expected:
        missing, extra = sorted(expected - started), sorted(started - expected)
        raise SystemExit(
            f"bench: {what}: the heartbeat started {len(started)} jobs, the rules say {len(expected)}: "
            f"missing {missing[:10]}, not due {extra[:10]}"
        )
    return len(started)


def landed_names(upstreams: int, part: int) -> set[str]:
    """The upstreams `land` gives new data in its `part`-th tenth."""
    changed = tenth(upstreams)
    return {f"up{u:05d}" for u in range(part * changed, min(upstreams, (part + 1) * changed))}


def peak_memory() -> dict[str, float]:
    """The largest resident set so far, in MB: of this process (Python), and of Spark's JVM (a process
    below this one, from its VmHWM)."""
    python = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    jvm, todo = 0.0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                status = Path(f"/proc/{pid}/status").read_text()
                jvm += next(int(x.split()[1]) for x in status.splitlines() if x.startswith("VmHWM:")) / 1024
        except (OSError, StopIteration):
            continue
    return {"python_mb": round(python), "jvm_mb": round(jvm), "total_mb": round(python + jvm)}


def timed(runtime: Any, run_tick: Any) -> tuple[float, TickReport]:
    started = time.monotonic()
    report = run_tick(runtime)
    return time.monotonic() - started, report


def steps(reports: list[TickReport]) -> dict[str, float]:
    names = sorted({k for r in reports for k in r.seconds})
    return {k: round(statistics.median(r.seconds.get(k, 0.0) for r in reports), 2) for k in names}


def tenth(upstreams: int) -> int:
    """How many upstreams get new data at once: a tenth of them (at least one)."""
    return max(1, upstreams // 10)


def land(triggers: Path, upstreams: int, part: int, batch: str) -> None:
    """New data on the `part`-th tenth of the upstreams: a file named `batch` in each one's folder."""
    changed = tenth(upstreams)
    for u in range(part * changed, min(upstreams, (part + 1) * changed)):
        (triggers / f"up{u:05d}" / batch).write_text("x")


def warm_up(runtime: Any, rules: StartRules, triggers: Path, upstreams: int, rounds: int) -> float:
    """`rounds` rounds of new data on a tenth of the upstreams (the fourth tenth on: the measured ticks
    use the first three), the tick that starts their jobs and the one that records the runs' ends."""
    from harness.tick.run import run_tick

    started = time.monotonic()
    for k in range(rounds):
        land(triggers, upstreams, 3 + k % 7, f"warmup{k}")
        check_starts(rules, landed_names(upstreams, 3 + k % 7), run_tick(runtime), f"warm-up round {k}")
        wait_for_runs(runtime.config.state_dir / "local_runs")
        run_tick(runtime)
    return time.monotonic() - started


def tick_series(
    runtime: Any, rules: StartRules, triggers: Path, upstreams: int, ticks: int, batch: str
) -> dict[str, Any]:
    """Idle ticks, then a tick with new data on 10 % of the upstreams, then the tick that records the ends;
    then the next 10 % land (their jobs start), and once those runs ended, the next 10 % land: a tick
    that records run ends, finds new data and starts jobs (`mixed`). Each tick's starts are checked
    against the rules."""
    from harness.tick.run import run_tick

    idle = [timed(runtime, run_tick) for _ in range(ticks)]
    for _, report in idle:
        check_starts(rules, set(), report, "a tick with nothing new")
    changed = tenth(upstreams)
    land(triggers, upstreams, 0, batch)
    new_seconds, new = timed(runtime, run_tick)
    checked = check_starts(rules, landed_names(upstreams, 0), new, "the tick with new data")
    wait_for_runs(runtime.config.state_dir / "local_runs")
    ends_seconds, ends = timed(runtime, run_tick)
    check_starts(rules, set(), ends, "the tick recording run ends")
    land(triggers, upstreams, 1, batch)
    check_starts(rules, landed_names(upstreams, 1), run_tick(runtime), "the tick before the mixed one")
    wait_for_runs(runtime.config.state_dir / "local_runs")
    land(triggers, upstreams, 2, batch)
    mixed_seconds, mixed = timed(runtime, run_tick)
    checked += check_starts(rules, landed_names(upstreams, 2), mixed, "the tick with both")
    wait_for_runs(runtime.config.state_dir / "local_runs")
    run_tick(runtime)  # the mixed tick's run ends: the state idle again
    return {
        "idle_median": round(statistics.median(s for s, _ in idle), 2),
        "idle_min": round(min(s for s, _ in idle), 2),
        "idle_steps": steps([r for _, r in idle]),
        "new_data_upstreams": changed,
        "new_data_rows": new.new_data,
        "started": len(new.started),
        "new_data_seconds": round(new_seconds, 2),
        "new_data_steps": steps([new]),
        "ends_seconds": round(ends_seconds, 2),
        "ends_steps": steps([ends]),
        "runs_ended": ends.runs_succeeded,
        "mixed_seconds": round(mixed_seconds, 2),
        "mixed_steps": steps([mixed]),
        "mixed_ended": mixed.runs_succeeded,
        "mixed_started": len(mixed.started),
        "starts_checked": checked,
    }


def cron_ticks(config: Config, ticks: int) -> dict[str, Any]:
    """`ticks` `python -m harness tick` processes with nothing new, one after another: their seconds."""
    seconds = []
    for _ in range(ticks):
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "harness", "--config", str(config.config_path), "tick"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        seconds.append(time.monotonic() - started)
        if done.returncode != 0:
            raise SystemExit(f"bench: a cron tick failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        if "open spark" in done.stdout + done.stderr:
            raise SystemExit(f"bench: a cron tick with nothing new opened Spark:\n{done.stderr[-3000:]}")
    return {"median": round(statistics.median(seconds), 2), "min": round(min(seconds), 2), "ticks": ticks}


def wait_for_runs(runs: Path, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all((p / "result.json").exists() for p in runs.glob("local-*")):
            return
        time.sleep(0.2)


MIDNIGHT = "unix_seconds(date_trunc('DAY', current_timestamp()))"  # today's start, in Unix seconds (SQL)


def fill_history(runtime: Any, days: int, per_day: int) -> float:
    """`days` days before today of `per_day` events each on the control table's rows: detections, run
    requests, starts and ends, as a year of ticks would have left them."""
    return fill_events(runtime, f"{MIDNIGHT} - {days} * 86400", f"{days} * 86400.0", days * per_day)


def fill_today(runtime: Any, events: int) -> float:
    """`events` events of today so far, as a busy day leaves them: from midnight to two hours before now
    (all at midnight before 02:00), older than what the tick folds and than the open runs' look-back."""
    return fill_events(runtime, MIDNIGHT, f"greatest(0, unix_seconds(current_timestamp()) - 7200 - {MIDNIGHT})", events)


def fill_events(runtime: Any, first_second: str, span_seconds: str, total: int) -> float:
    """`total` events on the control table's rows, spread evenly over `span_seconds` from `first_second`
    (SQL expressions, in Unix seconds)."""
    from harness.state.event_reader import EVENTS_TABLE

    started = time.monotonic()
    table = runtime.config.table(EVENTS_TABLE)
    keys = runtime.config.table("heartbeat_control_table")
    runtime.spark.sql(f"""
        INSERT INTO {table}
        SELECT uuid(), t, element_at(array('DATA_CHANGED', 'TRIGGER_REQUESTED', 'RUN_STARTED', 'RUN_SUCCEEDED'),
                                     cast(k % 4 AS int) + 1),
               'history', sensor_source, sensor_id, trigger_job_id,
               element_at(array('NEW_EVENT_AVAILABLE', 'IN_PROGRESS', NULL, 'COMPLETED'), cast(k % 4 AS int) + 1),
               NULL, '{{"recent": ["old"]}}', IF(k % 4 = 2, concat('run-', k div 4), NULL),
               IF(k % 4 > 0, concat('history-', k div 4), NULL), NULL, NULL, to_date(t)
        FROM (
            SELECT id AS k,
                   timestamp_seconds({first_second} + cast(id * ({span_seconds} / {total}) AS bigint)) AS t,
                   id % (SELECT count(*) FROM {keys}) AS n
            FROM range({total})
        ) AS e
        JOIN (SELECT *, row_number() OVER (ORDER BY sensor_id, trigger_job_id) - 1 AS n FROM {keys}) AS c USING (n)
        DISTRIBUTE BY to_date(t)
    """)
    return time.monotonic() - started


def baseline(runtime: Any, triggers: Path, sample: int, rows: int) -> dict[str, Any]:
    """The per-row way: for each row in turn, one Spark query on its upstream and one write of its status."""
    spark = runtime.spark
    table = runtime.config.table("bench_baseline_control")
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {table} (sensor_id string, trigger_job_id string, status string, "
        "checked_at timestamp) USING parquet"
    )
    control = spark.table(runtime.config.table("heartbeat_control_table")).select("sensor_id", "trigger_job_id")
    chosen = control.orderBy("trigger_job_id", "sensor_id").limit(sample).collect()
    started = time.monotonic()
    for row in chosen:
        found = (
            spark.read.format("binaryFile")
            .load(str(triggers / row["sensor_id"]))
            .where("modificationTime > timestamp'2000-01-01'")
            .select("path")
            .count()
        )
        status = "NEW_EVENT_AVAILABLE" if found else "COMPLETED"
        spark.sql(
            f"INSERT INTO {table} VALUES ('{row['sensor_id']}', '{row['trigger_job_id']}', '{status}', "
            "current_timestamp())"
        )
    per_row = (time.monotonic() - started) / max(1, len(chosen))
    return {
        "sample_rows": len(chosen),
        "seconds_per_row": round(per_row, 3),
        "seconds_for_all_rows": round(per_row * rows, 1),
    }


def run_size(args: argparse.Namespace) -> dict[str, Any]:
    from harness.commands.cli import setup_logging
    from harness.platform.jvm_options import expect_long_life
    from harness.tick.run import run_tick
    from harness.tick.runtime import Runtime

    rows = args.rows
    upstreams = min(args.upstreams or max(1, rows // 5), rows)
    jobs = args.jobs or rows // 4
    base = Path(args.state)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    seeds = PROJECT_DIR / "state" / "bench-seeds" / "tick-bench"  # beside the other benchmarks' seeds
    shutil.rmtree(seeds, ignore_errors=True)
    seeds.mkdir(parents=True)
    setup_logging("text", False)
    config = estate_config(base, seeds, rows, upstreams, jobs)
    rules = StartRules(rows, upstreams, jobs)
    triggers = config.trigger_root
    assert triggers is not None
    result: dict[str, Any] = {"rows": rows, "upstreams": upstreams, "jobs": jobs, "jvm": args.jvm}
    if args.jvm == "loop":
        expect_long_life()
    started = time.monotonic()
    # as `run` and `tick` open it: dbt's parse beside the JVM's start, the process's one runtime
    runtime = Runtime.open(config, parse_ahead=True, for_life=True)
    result["session_seconds"] = round(time.monotonic() - started, 1)
    first_seconds, first = timed(runtime, run_tick)
    check_starts(rules, set(), first, "the first tick")
    result["first_tick"] = {"seconds": round(first_seconds, 1), "steps": steps([first]), "memory": peak_memory()}
    result["warmup"] = {
        "rounds": args.warmup_rounds,
        "seconds": round(warm_up(runtime, rules, triggers, upstreams, args.warmup_rounds), 1),
    }
    result["fresh"] = tick_series(runtime, rules, triggers, upstreams, args.ticks, "batch1")
    if args.cron_ticks:
        result["cron"] = cron_ticks(config, args.cron_ticks)
    if args.today_events:
        fill_seconds = fill_today(runtime, args.today_events)
        result["today"] = {"events": args.today_events, "fill_seconds": round(fill_seconds, 1)}
        result["after_today"] = tick_series(runtime, rules, triggers, upstreams, args.ticks, "batch3")
    if args.history_days:
        fill_seconds = fill_history(runtime, args.history_days, args.events_per_day)
        count = runtime.spark.table(runtime.events.table).count()
        result["history"] = {"days": args.history_days, "events": count, "fill_seconds": round(fill_seconds, 1)}
        result["after_history"] = tick_series(runtime, rules, triggers, upstreams, args.ticks, "batch2")
    if args.baseline_sample:
        result["baseline"] = baseline(runtime, triggers, args.baseline_sample, rows)
    result["memory"] = peak_memory()
    shutil.rmtree(seeds, ignore_errors=True)
    return result


def show(r: dict[str, Any]) -> None:
    print(
        f"\n== {r['rows']} rows, {r['upstreams']} upstreams, {r['jobs']} jobs "
        f"(session {r['session_seconds']}s, first tick {r['first_tick']['seconds']}s; the JVM of a "
        f"{'`run` loop' if r['jvm'] == 'loop' else 'short process'}, {r['warmup']['rounds']} busy rounds before "
        f"the measured ticks, {r['warmup']['seconds']}s)"
    )
    m, f = r["memory"], r["first_tick"]["memory"]
    print(
        f"  peak memory: Python {m['python_mb']:,} MB + JVM {m['jvm_mb']:,} MB = {m['total_mb']:,} MB "
        f"(after the first tick {f['total_mb']:,} MB)"
    )
    cron = r.get("cron")
    if cron:
        print(
            f"  `tick` from cron, nothing new: median {cron['median']}s (min {cron['min']}s, {cron['ticks']} processes)"
        )
    for name in ("fresh", "after_today", "after_history"):
        s = r.get(name)
        if not s:
            continue
        if name == "fresh":
            label = "no history"
        elif name == "after_today":
            label = f"after {r['today']['events']:,} events earlier today (written in {r['today']['fill_seconds']}s)"
        else:
            label = (
                f"after {r['history']['days']} days, {r['history']['events']:,} "
                f"events (written in {r['history']['fill_seconds']}s)"
            )
        print(f"  {label}:")
        print(f"    tick with nothing new: median {s['idle_median']}s (min {s['idle_min']}s) | {s['idle_steps']}")
        print(
            f"    tick with new data on {s['new_data_upstreams']} upstreams ({s['new_data_rows']} rows, "
            f"{s['started']} jobs started): {s['new_data_seconds']}s | {s['new_data_steps']}"
        )
        print(f"    next tick ({s['runs_ended']} run ends recorded): {s['ends_seconds']}s | {s['ends_steps']}")
        print(f"    starts checked against the rules: {s['starts_checked']}, none missing, none not due")
        print(
            f"    a tick with both ({s['mixed_ended']} run ends recorded, new data on {s['new_data_upstreams']} "
            f"upstreams, {s['mixed_started']} jobs started): {s['mixed_seconds']}s | {s['mixed_steps']}"
        )
    b = r.get("baseline")
    if b:
        idle = (r.get("after_history") or r["fresh"])["idle_median"]
        print(
            f"  baseline (per row: one Spark query + one status write): {b['seconds_per_row']}s a row over "
            f"{b['sample_rows']} rows -> {b['seconds_for_all_rows']}s for all {r['rows']} rows; "
            f"{b['seconds_for_all_rows'] / idle:.0f}x a heartbeat tick with nothing new ({idle}s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000,10000", help="control-table sizes, one process each")
    parser.add_argument("--rows", type=int, help=argparse.SUPPRESS)  # one size, in this process
    parser.add_argument(
        "--upstreams", type=int, default=0, help="trigger-folder upstreams (default rows/5, the estate's shape)"
    )
    parser.add_argument("--jobs", type=int, default=0, help="distinct jobs (default rows/4)")
    parser.add_argument("--ticks", type=int, default=5)
    parser.add_argument("--cron-ticks", type=int, default=3, help="`tick` processes with nothing new (0: none)")
    parser.add_argument("--warmup-rounds", type=int, default=3, help="busy rounds before the measured ticks")
    parser.add_argument(
        "--jvm",
        choices=("loop", "short"),
        default="loop",
        help="the JVM of a `run` loop (both compilers) or of a short process (the quick compiler only)",
    )
    parser.add_argument("--history-days", type=int, default=365)
    parser.add_argument("--events-per-day", type=int, default=20000)
    parser.add_argument(
        "--today-events",
        type=int,
        default=0,
        help="events earlier today (up to two hours ago), as a busy day leaves them; measured before the history",
    )
    parser.add_argument("--baseline-sample", type=int, default=200, help="rows the baseline runs (0: none)")
    parser.add_argument("--state", default="/tmp/heartbeat-bench")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    if args.rows:
        print("RESULT " + json.dumps(run_size(args)), flush=True)
        return
    results = []
    for size in [int(s) for s in args.sizes.split(",")]:
        command = [
            sys.executable,
            __file__,
            "--rows",
            str(size),
            "--upstreams",
            str(args.upstreams),
            "--jobs",
            str(args.jobs),
            "--ticks",
            str(args.ticks),
            "--cron-ticks",
            str(args.cron_ticks),
            "--warmup-rounds",
            str(args.warmup_rounds),
            "--jvm",
            args.jvm,
            "--history-days",
            str(args.history_days),
            "--events-per-day",
            str(args.events_per_day),
            "--today-events",
            str(args.today_events),
            "--state",
            f"{args.state}-{size}",
            "--baseline-sample",
            str(args.baseline_sample if size == max(map(int, args.sizes.split(","))) else 0),
        ]
        print(f"bench: {size} rows ...", flush=True)
        done = subprocess.run(command, capture_output=True, text=True)
        line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
            raise SystemExit(f"bench: the {size}-row run failed (exit {done.returncode})")
        results.append(json.loads(line.removeprefix("RESULT ")))
        show(results[-1])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
