"""Command line: `python -m harness COMMAND`.

tick       one heartbeat: track runs, refresh the models, sense, start ready jobs
run        tick every --interval seconds until Ctrl-C
status     a count of jobs by state, then every job: whether it starts and why, and its rows
why        one job: its decision and reason, its rows, their latest events
events     browse the event log (--job, --upstream, --type, --since)
report     write the timeline page (HTML) into the state folder
serve      serve the report as a live page on localhost (read-only; --port, --host)
complete   mark a job's latest run successful (the "update status" step a job can run last)
retry      hand a FAILED job's range to its next run (no manual backfill)
import-lakehouse-engine  carry the lakehouse engine's heartbeat state into Heartbeat (--dry-run to see it)
rewind     hand a job's next run the range from a past time on every upstream (docs/ranges.md)
backfill   run a job over a past range in one-off runs (in parts), moving no watermark (docs/ranges.md)
publish    register a change of a table (rows with sensor_source `published` trigger on it)
validate   check heartbeat.yml, the controls CSV and its rows against heartbeat.yml, touching no table
seed       load the controls CSV now (a running heartbeat applies it at its next tick)
docs       generate the dbt docs site (the rules, in words) into the state folder
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

# Only what every command needs: `status`, `why` and `events` answer in a blink because nothing here
# imports Spark, dbt, the sensors or the event writer (tests/commands/test_operator_imports.py holds it); the
# commands that need those import them in their own functions.
from harness.commands import lakehouse_engine, operator, ranges, refresh, serve
from harness.core.config_source import StateFolder, locate_state
from harness.core.errors import HeartbeatError, StateBusyError, StateFileError, root_cause
from harness.core.vocabulary import PUBLISH_OPERATIONS, EventType, Status
from harness.state.lock import StateLock
from harness.state.status_files import read_snapshot, record_tick, snapshot_rows

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harness.core.config import Config
    from harness.core.controls import ControlSpec

log = logging.getLogger("harness")

TICKING = ("tick", "run")  # the commands whose refused configuration is a failed tick in the health record


_RECORD_FIELDS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (ISO 8601, UTC), level, logger, message, and the record's fields
    (a tick step's tick_id, step, seconds, counts, job ids started or refused)."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line |= {k: v for k, v in vars(record).items() if k not in _RECORD_FIELDS}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def setup_logging(fmt: str, verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    text = logging.Formatter("%(asctime)s heartbeat %(levelname)-7s %(message)s", "%H:%M:%S")
    text.converter = time.gmtime  # UTC, as status says times: a process's own TZ is set to UTC when Spark opens
    handler.setFormatter(JsonFormatter() if fmt == "json" else text)
    root = logging.getLogger("harness")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
    for noisy in ("py4j", "pyspark", "SQLQueryContextLogger"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    if not any(isinstance(f, Py4jRootRecords) for f in logging.getLogger().filters):
        logging.getLogger().addFilter(Py4jRootRecords())


class Py4jRootRecords(logging.Filter):
    """py4j logs a call the JVM did not answer (a JVM that died) on the root logger, with its trace, besides
    raising it: the tick reports the error raised, in one line (a JSON line with `--log-format json`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and f"{os.sep}py4j{os.sep}" in record.pathname)


def _locked(config: Config, action: Callable[[], int], when_busy: Callable[[StateBusyError], int]) -> int:
    try:
        lock = StateLock(config.state_dir).acquire()
    except StateBusyError as exc:
        return when_busy(exc)
    try:
        return action()
    finally:
        lock.release()


def _runtime(config: Config, *, parse_ahead: bool = False):  # type: ignore[no-untyped-def]
    from harness.tick.runtime import Runtime  # Spark and dbt load only for commands that need them

    return Runtime.open(config, parse_ahead=parse_ahead, for_life=True)  # one runtime a process


def cmd_tick(config: Config, args: argparse.Namespace) -> int:
    if args.dry_run:
        return _locked(config, lambda: operator.print_dry_run(_runtime(config)), _refuse_busy("tick --dry-run"))

    def action() -> int:
        from harness.tick.run import run_cold_tick

        report = run_cold_tick(config, lambda: _runtime(config, parse_ahead=True))
        return 1 if report.error or report.controls_error else 0  # a refused CSV: the file needs fixing

    def busy(exc: StateBusyError) -> int:
        log.warning("tick skipped: %s; it will carry on at the next tick", exc)
        return 0

    return _locked(config, action, busy)


def cmd_run(config: Config, args: argparse.Namespace) -> int:
    from harness.commands import config_watch

    stop = threading.Event()
    watched = config_watch.watch(config.config_path, args.config, dict(args.set))
    again = False
    ticks_left: int | None = None  # a `--max-ticks` loop started again goes on with the ticks it has left
    wait_to_start_again = 0.0  # a JVM that keeps ending: seconds the loop waits before it starts again

    def on_signal(signum: int, frame: object) -> None:
        log.info("stopping after the current tick (signal %d)", signum)
        stop.set()

    # while it waits for the state folder and opens Spark; the process's own handlers again when it ends
    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}

    def action() -> int:
        nonlocal again, ticks_left, wait_to_start_again
        from harness.platform import jvm_options
        from harness.platform.spark import end_jvm, jvm_ended
        from harness.tick.run import open_recorded, run_tick

        if not args.max_ticks and not args.until_idle:
            jvm_options.expect_long_life()  # a loop until stopped: its JVM compiles for the long run
        runtime = open_recorded(config, lambda: _runtime(config, parse_ahead=True))
        # After Spark started: PySpark installs its own SIGINT handler (cancel jobs, raise
        # KeyboardInterrupt); this one lets the current step finish instead.
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        ticks = 0
        while not stop.is_set():
            started = time.monotonic()
            report = run_tick(runtime)
            ticks += 1
            ended = jvm_ended()
            if report.error and not ended:
                log.error("tick %s ended with an error; retrying at the next tick", report.tick_id)
            if not report.error:
                config_watch.tick_ended_well()
            if args.max_ticks and ticks >= args.max_ticks:
                break
            if args.until_idle and report.idle:
                log.info("idle: this tick started nothing and no run is going")
                break
            if ended:  # every later tick would fail on it: a new JVM, as for a changed heartbeat.yml
                endings = config_watch.jvm_ended_again()
                wait_to_start_again = config_watch.wait_before_starting_again(endings, args.interval)
                log.error(
                    "Spark's JVM %s (by the end of tick %s): the loop starts again with a new one%s "
                    '(docs/operations.md, "Seeing that ticks fail")',
                    ended,
                    report.tick_id,
                    f" in {wait_to_start_again:g} s ({endings} times in a row, no tick ended well between them)"
                    if wait_to_start_again
                    else "",
                )
            if ended or watched.changed():
                again = True
                ticks_left = args.max_ticks - ticks if args.max_ticks else None
                break
            # The interval counts from the tick's start, as cron's does: a landing waits at most one interval
            # for the tick that detects and starts it, however long the ticks take (a longer tick: at once).
            stop.wait(max(0.0, args.interval - (time.monotonic() - started)))
        log.info("stopped after %d ticks", ticks)
        if again:
            end_jvm()
        return 0

    try:
        lock = _wait_for_state(config, stop, min(args.interval, LOCK_POLL_SECONDS))
        if lock is None:
            log.info("stopped before its first tick")
            return 0
        try:
            code = action()
        finally:
            lock.release()
        if again:
            stop.wait(wait_to_start_again)  # the state and the JVM let go; a stop meanwhile ends the loop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if again and not stop.is_set():
        config_watch.start_again(ticks_left)
    return code


LOCK_POLL_SECONDS = 5.0  # how often a `run` loop waiting for the state folder tries again


def _wait_for_state(config: Config, stop: threading.Event, every: float) -> StateLock | None:
    """The state folder's lock, once no other heartbeat holds it: a loop started while a cron tick (or
    another loop) runs waits for it, saying so once, rather than exit. None when stopped while waiting."""
    waiting = False
    while not stop.is_set():
        try:
            return StateLock(config.state_dir).acquire()
        except StateBusyError as exc:
            if not waiting:
                log.warning("%s: waiting until it ends (tried every %g s; Ctrl-C gives up)", exc, every)
                waiting = True
        stop.wait(every)
    return None


def _refuse_busy(command: str) -> Callable[[StateBusyError], int]:
    """A command that opens the state's metastore, refused while another process holds it (a `run` loop
    holds it until it stops): what to do instead, in the same line."""

    def refuse(exc: StateBusyError) -> int:
        log.error(
            "%s: `%s` opens the state's metastore, which one process holds at a time; run it while no heartbeat "
            "process runs (a `run` loop holds the state until it stops). Meanwhile `status` and `why --job ID` show "
            "the last tick's decisions without it",
            exc,
            command,
        )
        return 1

    return refuse


def _manual(config: Config, command: str, job_id: str) -> int:
    """Queue the request for the next tick (no Spark: a job's last task runs this). The last tick's
    snapshot tells whether the job is known and what the request will move."""
    from harness.tick import inbox

    request = inbox.new_request(command, job_id)
    snapshot = _last_snapshot(config)
    rows = snapshot_rows(snapshot)
    job_rows = [r for r in rows or [] if r.key.trigger_job_id == job_id]
    moving = request.events(job_rows, "from the command line")
    if snapshot is not None and not moving:
        started = _started_since(config, job_id, snapshot["written_at"])
        if started:  # a job's last task, before the tick that started it wrote its snapshot
            print(f"note: job {job_id} started after the last tick's snapshot ({started}): checked when applied")
        elif not job_rows:
            raise HeartbeatError(
                f"job {job_id} is not in the control table (as of the last tick); "
                f"{operator.guess_before(snapshot, job_id)}check trigger_job_id in the controls CSV"
            )
        else:
            print(f"job {job_id} has no run IN_PROGRESS or FAILED (as of the last tick): nothing to {command}")
            return 0
    running = {r.latest_run_id or "?" for r in job_rows if r.status == Status.IN_PROGRESS.value}
    if command == "retry" and running:
        print(
            f"note: job {job_id}'s run {', '.join(sorted(running))} is IN_PROGRESS as of the last tick: the next "
            "tick applies the retry only if the run failed or its backend cannot tell of it (a run still going is "
            "not started a second time: the retry is dropped, and the tick's log says so)"
        )
    elif command == "complete" and running:
        print(
            f"note: job {job_id}'s run {', '.join(sorted(running))} is IN_PROGRESS as of the last tick: its range "
            "counts as consumed once the next tick applies this, whatever the run does after (as when a job's "
            "last task runs `complete`)"
        )
    path = inbox.submit(config.state_dir, request)
    what = f": {len(moving)} rows move to {moving[0].status}" if moving else ""
    print(f"job {job_id}: the request is queued ({path.name}) and applied at the next tick{what}")
    return 0


def _started_since(config: Config, job_id: str, written_at: str) -> str | None:
    """The latest start of the job the event log holds from after the last tick's snapshot, written at
    `written_at` (the tick writes a start's events before its snapshot), or None; read from the log's
    files, without Spark."""
    from harness.state.event_reader import EventQuery, read_events

    since = datetime.fromisoformat(written_at)
    starts = (EventType.TRIGGER_REQUESTED.value, EventType.RUN_STARTED.value)
    try:
        found = read_events(config.state_dir, EventQuery(since=since, job_id=job_id, event_types=starts, limit=1))
    except HeartbeatError:
        return None
    return f"{found[-1]['event_type']} at {found[-1]['event_time']:%Y-%m-%d %H:%M:%S} UTC" if found else None


def _last_snapshot(config: Config) -> dict[str, Any] | None:
    """The status snapshot the last tick left, to check a request against; one that cannot be read checks
    nothing (the request is queued all the same: a job's last task must not fail for it) and says so."""
    try:
        return read_snapshot(config.state_dir)
    except StateFileError as exc:
        print(f"note: not checked against the control table, queued all the same: {exc}")
        return None


def cmd_complete(config: Config, args: argparse.Namespace) -> int:
    return _manual(config, "complete", args.job_id)


def cmd_retry(config: Config, args: argparse.Namespace) -> int:
    return _manual(config, "retry", args.job_id)


def cmd_publish(config: Config, args: argparse.Namespace) -> int:
    """Queue the publication for the next tick (no Spark: a producer's last step runs this); one
    already in the event log is not queued again."""
    from harness.jobs import publish

    publication = publish.Publication(
        args.table, args.snapshot, publish.partitions(args.partition), publish.pairs(args.tag, "--tag"), args.operation
    )
    what = f"{publication.table}" + (f" snapshot {publication.snapshot_id}" if publication.snapshot_id else "")
    if publish.recorded(config.state_dir, publication):
        print(f"{what}: already published (nothing added)")
        return 0
    path = publish.enqueue(config.state_dir, publication)
    print(f"{what}: the publication is queued ({path.name}) and recorded at the next tick")
    watching = publish.watching_rows(snapshot_rows(_last_snapshot(config)), publication.table)
    if watching is not None and not watching:
        print(
            f"note: no row of the control table (as of the last tick) has sensor_source published and sensor_id "
            f"{publication.table.strip()!r}: nothing triggers on it now; it is recorded anyway, and a row added "
            f"within {publish.PUBLICATION_WINDOW.days} days sees it (check the table name against the controls CSV)"
        )
    elif watching:
        print(f"watched by {len(watching)} row(s): {', '.join(sorted({r.key.trigger_job_id for r in watching}))}")
    return 0


def cmd_validate(config: Config, args: argparse.Namespace) -> int:
    """The configuration (already parsed by main), the controls CSV, and the CSV's rows against the
    configuration (a connection or catalog it does not define), touching nothing. Every problem of both
    files is said in one run: a refused source section does not hide the CSV's own problems."""
    from harness.core.controls import read_controls, second_seed
    from harness.core.errors import ConfigError, ControlsError
    from harness.core.preprocess import of_new_data_alone
    from harness.core.vocabulary import JobState
    from harness.sensors import build_registry, doubtful_rows, unserved_rows

    path = Path(args.csv) if args.csv else config.controls_csv
    try:
        registry = build_registry(config)  # source settings are checked when the sensors are built
    except ConfigError as refused:
        print(f"error: {refused}", file=sys.stderr)
        _validate_csv_alone(path)
        return 2
    specs = read_controls(path)
    copy = second_seed(config.controls_csv) if path == config.controls_csv else None
    if copy:
        raise ControlsError(copy)
    # A tick loads such a file (the rows are right, heartbeat.yml lacks what they name, or the other way
    # round); each check of its rows fails until one is changed. A paused row is not checked until unpaused.
    unserved = unserved_rows(registry, specs)
    failing = [f"{s.name}: {problem}" for s, problem in unserved if s.job_state != JobState.PAUSED.value]
    failing += _unstartable(config, specs)
    if failing:
        raise ControlsError(
            f"{path}: {len(failing)} row{'s' if len(failing) > 1 else ''} that "
            f"{config.config_path or 'the configuration (defaults)'} cannot serve: a tick loads the file, "
            "and each check (or start) of such a row fails until the row or heartbeat.yml is changed:\n  "
            + "\n  ".join(failing)
        )
    jobs = {s.trigger_job_id for s in specs}
    print(f"{config.config_path or 'configuration (defaults)'}: OK")
    print(f"{path}: OK, {len(specs)} rows, {len(jobs)} jobs")
    for spec, problem in unserved:
        if spec.job_state == JobState.PAUSED.value:
            print(f"note: {spec.name}: paused; once unpaused, each check of it fails: {problem}")
    for spec, doubt in doubtful_rows(registry, specs):
        print(f"note: {spec.name}: {doubt}")
    if config.backend == "local":
        undefined = sorted(jobs - set(config.local_jobs))
        if undefined:
            print(f"note: jobs not defined in local_runner.jobs (their starts will be refused): {', '.join(undefined)}")
    token_env = config.settings.databricks.token_env
    if config.backend == "databricks" and token_env and not os.environ.get(token_env):
        print(
            f"note: databricks.token_env: {token_env} is not set in this environment; the heartbeat's own (cron's) "
            "must set it, or every start is refused"
        )
    for spec, change in _range_changes(config, specs):
        print(f"note: {spec.name}: {change}")
    for spec in specs:
        if spec.preprocess_query and not of_new_data_alone(spec.preprocess_query):
            print(
                f"note: {spec.name}: its preprocess_query reads the time, chance or another table than "
                "sensor_new_data, so every check runs it again over data it dropped (a cron tick opens Spark "
                "for it at each tick until a row it keeps lands; docs/sources.md)"
            )
    return 0


def _range_changes(config: Config, specs: Sequence[ControlSpec]) -> list[tuple[ControlSpec, str]]:
    """The rows whose max_range the file changes while steps of their range are not consumed yet (the last
    tick's snapshot): what their next runs are handed then. Nothing before the first tick or where the
    snapshot cannot be read (`status` says why)."""
    try:
        snapshot = read_snapshot(config.state_dir)
    except StateFileError:
        return []
    pending = {
        (r["sensor_source"], r["sensor_id"], r["trigger_job_id"]): (r.get("max_range"), len(json.loads(steps)))
        for r in (snapshot or {}).get("rows", [])
        if (steps := r.get("range_steps"))
    }
    changes = []
    for spec in specs:
        before, steps = pending.get((spec.sensor_source, spec.sensor_id, spec.trigger_job_id), (None, 0))
        if steps == 0 or before == spec.max_range:
            continue
        waiting = f"{steps} step{'s' if steps > 1 else ''} of its range not consumed yet (as of the last tick)"
        if spec.max_range is None:
            note = f"max_range {before} removed with {waiting}: its next run, at its next new data, is handed them all"
        else:
            runs = math.ceil(steps / spec.max_range)
            note = (
                f"max_range {before} -> {spec.max_range} with {waiting}: they go in {runs} run{'s' if runs > 1 else ''}"
            )
        changes.append((spec, note))
    return changes


def _unstartable(config: Config, specs: Sequence[ControlSpec]) -> list[str]:
    """The rows whose job the backend can never start (a Databricks job id that is not a number)."""
    if config.backend != "databricks":
        return []
    from harness.backends.databricks import job_id_refusal

    return [f"{s.name}: {refusal}" for s in specs if (refusal := job_id_refusal(s.trigger_job_id))]


def _validate_csv_alone(path: Path | None) -> None:
    """`validate` with a configuration it refused: the controls CSV's own rows are checked all the same
    (`path`: None when the refused file does not say where the CSV is), so that one run says what to
    change in both files. Its rows are checked against heartbeat.yml once the file is accepted."""
    from harness.core.controls import read_controls

    if path is None:
        print("note: the controls CSV is not checked: heartbeat.yml must be read to find it", file=sys.stderr)
        return
    try:
        specs = read_controls(path)
    except HeartbeatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return
    print(f"{path}: OK, {len(specs)} rows (checked against heartbeat.yml once that file is accepted)")


def _controls_csv_of(args: argparse.Namespace) -> Path | None:
    """The controls CSV `validate` checks when the configuration is refused: the one named on the command
    line, else the one the file names (or the default), where the file can still be read."""
    from harness.core.config import DEFAULT_CONTROLS_CSV
    from harness.core.config_source import read_source

    if args.csv:
        return Path(args.csv)
    try:
        source = read_source(args.config, dict(args.set))
    except HeartbeatError:
        return None
    named = source.raw.get("controls_csv", DEFAULT_CONTROLS_CSV)
    return source.path(named) if isinstance(named, (str, Path)) else None


def cmd_seed(config: Config, args: argparse.Namespace) -> int:
    from harness.core.controls import read_controls

    read_controls(config.controls_csv)

    def action() -> int:
        from harness.tick import fold

        fold.fold(_runtime(config, parse_ahead=True), with_seed=True)
        print(f"{config.controls_csv}: loaded")
        return 0

    def busy(exc: StateBusyError) -> int:
        print(f"{exc}: it validates and loads the changed CSV at its next tick")
        return 0

    return _locked(config, action, busy)


def cmd_docs(config: Config, args: argparse.Namespace) -> int:
    def action() -> int:
        from harness.platform import dbt_runner

        _runtime(config)
        dbt_runner.invoke(config, ["docs", "generate"])
        print(f"docs written to {config.dbt_target_path} (open index.html, or `dbt docs serve`)")
        return 0

    return _locked(config, action, _refuse_busy("docs"))


def _logging_options(p: argparse.ArgumentParser, default: object) -> None:
    """Before or after the subcommand's name: `--log-format json tick` and `tick --log-format json`."""
    p.add_argument(
        "--log-format",
        choices=["text", "json"],
        default=default,
        help="progress lines as text (default) or one JSON object per line",
    )
    p.add_argument("-v", "--verbose", action="store_true", default=default, help="debug lines too")


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _interval(text: str) -> float:
    """`run --interval`: seconds above 0 (at 0 or below, or not a number, the loop would never wait)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds < math.inf):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return seconds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m harness", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--config", help="config file (default: $HEARTBEAT_CONFIG or ./heartbeat.yml)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=_setting,
        help="a key of the config file (dotted for a section: databricks.dbt_http_path=...), "
        "over the file and the environment; repeatable",
    )
    p.add_argument("--log-format", choices=["text", "json"], default="text")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)
    tick = sub.add_parser("tick", help="one heartbeat")
    tick.add_argument(
        "--dry-run",
        action="store_true",
        help="sense and decide, print which jobs would start with their change ranges; start nothing, append nothing",
    )
    tick.set_defaults(func=cmd_tick)
    run = sub.add_parser("run", help="tick in a loop until Ctrl-C")
    run.add_argument("--interval", type=_interval, default=60.0, help="seconds from one tick's start to the next's")
    run.add_argument("--max-ticks", type=operator.count, default=0, help="stop after this many ticks (0: never)")
    run.add_argument(
        "--until-idle", action="store_true", help="stop after a tick that started nothing while no run was going"
    )
    run.set_defaults(func=cmd_run)
    operator.register(sub)
    serve.register(sub)
    for name, func, text in (
        ("complete", cmd_complete, "mark the job's latest run successful"),
        ("retry", cmd_retry, "hand a FAILED job's range to its next run"),
    ):
        sp = sub.add_parser(
            name,
            help=text,
            description=f"{text[0].upper()}{text[1:]}: the request is queued and applied at the next tick.",
        )
        sp.add_argument(
            "--job",
            "--job-id",
            dest="job_id",
            required=True,
            metavar="JOB",
            help="the job's trigger_job_id in the controls CSV (the backend's job id: a Databricks job's id, "
            "a key of local_runner.jobs); quote one holding spaces",
        )
        sp.set_defaults(func=func)
    pub = sub.add_parser("publish", help="register a change of a table")
    pub.add_argument("--table", required=True, help="the table that changed (the sensor_id of `published` rows)")
    pub.add_argument("--partition", action="append", default=[], metavar="K=V", help="a partition value written")
    pub.add_argument("--snapshot", help="the table's snapshot / version id: the same one twice is one event")
    pub.add_argument("--tag", action="append", default=[], metavar="K=V", help="a tag of the change")
    pub.add_argument("--operation", choices=PUBLISH_OPERATIONS, default="APPEND")
    pub.set_defaults(func=cmd_publish)
    validate = sub.add_parser("validate", help="check the controls CSV, touching nothing")
    validate.add_argument("csv", nargs="?")
    validate.set_defaults(func=cmd_validate)
    sub.add_parser("seed", help="load the controls CSV now").set_defaults(func=cmd_seed)
    sub.add_parser("docs", help="generate the dbt docs site").set_defaults(func=cmd_docs)
    refresh.register(sub)
    lakehouse_engine.register(sub)
    ranges.register(sub)
    for command in sub.choices.values():
        _logging_options(command, argparse.SUPPRESS)
        command.set_defaults(command_parser=command)  # an unknown option is refused with this command's usage
    return p


def main(argv: list[str] | None = None) -> int:
    args, unknown = parser().parse_known_args(argv)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    setup_logging(args.log_format, args.verbose)
    started_at, started = datetime.now(timezone.utc), time.monotonic()
    try:
        config = _configuration(args)
    except HeartbeatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if args.command == "validate":
            _validate_csv_alone(_controls_csv_of(args))
        elif args.command in TICKING and not getattr(args, "dry_run", False):
            _record_refused_configuration(args, exc, started_at, time.monotonic() - started)
        return 2
    try:
        code = int(args.func(config, args))
        sys.stdout.flush()
        return code
    except HeartbeatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`status | head`): the rest of the output is not wanted. Python would
        # flush stdout again at exit and fail the same way, so stdout points at nothing from here on.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _record_refused_configuration(
    args: argparse.Namespace, exc: HeartbeatError, started_at: datetime, seconds: float
) -> None:
    """A tick (or a `run` loop) that refused its configuration is a failed tick in the health record, in
    step "config", as one that cannot open Spark is: `status` and `failures_in_a_row` say the ticks fail,
    where they would otherwise keep showing the last tick that went well. Recorded when the state folder
    can still be told from the file and no heartbeat holds it (one that does records its own ticks)."""
    from harness.tick.steps import TickReport

    try:
        state_dir = locate_state(args.config, dict(args.set)).state_dir
    except HeartbeatError as unlocated:
        print(f"note: the failed tick is not in the health record: {unlocated}", file=sys.stderr)
        return
    report = TickReport(tick_id=uuid.uuid4().hex[:12], error=root_cause(exc), step="config")
    try:
        with StateLock(state_dir):
            record_tick(state_dir, report.result(started_at, seconds))
    except StateBusyError:
        return
    except OSError as unrecorded:  # the error that matters is the configuration's
        print(f"note: the failed tick is not in the health record: {unrecorded}", file=sys.stderr)


def _configuration(args: argparse.Namespace) -> Config | StateFolder:
    """The validated configuration; for the commands that only read the state folder, the folder alone
    (harness.core.config_source: no pydantic, half of what `status` cost)."""
    if getattr(args, "state_only", False):
        return locate_state(args.config, dict(args.set))
    from harness.core.config import load_config

    return load_config(args.config, dict(args.set))


def run() -> None:
    """The `heartbeat` entry point (console script, Databricks python_wheel_task): the exit code of `main`
    ends the process, so a Databricks task fails when the command failed."""
    raise SystemExit(main())
