"""Sensing: one check per distinct upstream per tick, run concurrently, each bounded by a deadline.

A failing or slow upstream becomes a CHECK_FAILED event for its rows and never delays the others.
Each check gets its deadline (`sensing.check_timeout_seconds` after it starts) in its `CheckContext`,
and its inner waits (requests, query timeouts) end by it; a check still running at its deadline is
abandoned all the same (its thread is left to finish on its own) and its result, if it ever comes,
is ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
import uuid
from collections import defaultdict, deque
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Collection, Iterator, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession

from harness.core.config import Config, SensingSettings
from harness.core.errors import HeartbeatError, SensorError
from harness.core.partition_filter import parse_filter, parse_tags
from harness.core.preprocess import as_written, of_new_data_alone, over_view, render
from harness.core.redact import redact
from harness.core.vocabulary import ControlRow, EventType, RowKey, SensorSource, StartFrom, Status, dumps
from harness.sensors.base import Detection, NewData, NothingNew, Position, Sensor, Upstream, Watermark
from harness.sensors.context import CheckContext
from harness.sensors.partition_trigger import PartitionedPosition, detect_partitions
from harness.sensors.spark_sql import spark_error_text
from harness.state.event_log import Event, now

log = logging.getLogger(__name__)


@dataclass
class SensingOutcome:
    events: list[Event] = field(default_factory=list)
    upstreams: int = 0
    new_data: int = 0
    errors: int = 0
    nothing_new: dict[str, str] = field(default_factory=dict)  # row (RowKey.ref) -> why it waits
    # row (RowKey.ref) -> the new data its preprocess_query returned no row over (`filtered_key`)
    filtered: dict[str, str] = field(default_factory=dict)

    def count(self) -> SensingOutcome:
        """`new_data` and `errors` counted from the events (rows, not upstreams)."""
        self.new_data = sum(1 for e in self.events if e.event_type is EventType.DATA_CHANGED)
        self.errors = sum(1 for e in self.events if e.event_type is EventType.CHECK_FAILED)
        return self

    @property
    def failed_checks(self) -> list[str]:
        """Each failed check's message (it names the upstream and the cause), once: an upstream read by
        several rows fails once for all of them."""
        return list(dict.fromkeys(e.message or "" for e in self.events if e.event_type is EventType.CHECK_FAILED))


def to_record(outcome: SensingOutcome, rows: Sequence[ControlRow], failing_before: Collection[str]) -> list[Event]:
    """The sensing's events to append. A check failing as it failed in the last tick (`failing_before`,
    the health record's), whose row already shows that failure as its last error, is not recorded again:
    a failure is an event when it begins or its message changes, as a freshness lapse is one event (the
    health record names it in every tick it lasts, and `status` with it). So an upstream that stays down
    does not make every tick record and fold; one that recovered and fails again is recorded again.
    Messages are compared without the figures a client puts in them that change from one attempt to the
    next (`same_failure`)."""
    shown = {r.key: r.last_error for r in rows}
    before = {same_failure(message) for message in failing_before}

    def recorded_before(e: Event) -> bool:
        if e.event_type is not EventType.CHECK_FAILED or e.row is None:
            return False
        said = same_failure(e.message)
        return said in before and e.row in shown and same_failure(shown[e.row]) == said

    return [e for e in outcome.events if not recorded_before(e)]


# What an object store's client (delta-rs, pyiceberg) says of its retries: how long, how many times.
ATTEMPT_FIGURES = re.compile(r"\b\d+(?:\.\d+)?(?:ns|µs|us|ms|s)\b|\b\d+ retries\b")


def same_failure(message: str | None) -> str:
    """A check's failure message without the durations and retry counts that change between two
    attempts at the same failure ("... after 3 retries in 30.0012s"), so a failure that lasts is one."""
    return ATTEMPT_FIGURES.sub("…", message or "")


_SOURCES = {s.value: s for s in SensorSource}  # a dict's lookup: the enum's own call costs about 15 µs


def upstream_of(row: ControlRow) -> Upstream:
    """The row's upstream (ValueError for a sensor_source no sensor reads)."""
    source = _SOURCES.get(row.key.sensor_source)
    if source is None:
        raise ValueError(f"{row.key.sensor_source!r} is not a valid SensorSource")
    return Upstream(source, row.key.sensor_id, row.upstream_key)


def _upstreams(rows: Sequence[ControlRow]) -> set[Upstream]:
    """The distinct upstreams of `rows` (a row of an unknown source has none)."""
    found = set()
    for row in rows:
        try:
            found.add(upstream_of(row))
        except ValueError:
            continue
    return found


def _error_events(rows: Sequence[ControlRow], message: str) -> list[Event]:
    message = redact(message) or message
    return [Event(EventType.CHECK_FAILED, row=row.key, watermark_before=row.watermark, message=message) for row in rows]


def _row_error(row: ControlRow, message: str) -> str:
    """A failure of one row's comparison (its partition_filter, its preprocess_query), named by its job as
    well: the upstream itself was read, and its other rows go on."""
    upstream = f"{row.label}: "
    if message.startswith(upstream):
        return f"{row.label} -> job {row.key.trigger_job_id}: {message[len(upstream) :]}"
    return message


def _since(row: ControlRow) -> Watermark | None:
    return json.loads(row.watermark) if row.watermark else None  # type: ignore[no-any-return]


CheckResult = tuple[list[Event], dict[str, str], dict[str, str]]  # events, nothing-new reasons, filtered


def watch_started(row: ControlRow, detection: Detection) -> Event:
    """The first check of a row with start_from now: WATCH_STARTED with where its upstream is (what a
    detection since nothing found), which the fold makes the row's watermark and the start of its next
    range, without new data; an upstream with nothing yet is watched from its start. Every kind answers
    through its sensor's `detect`, so this holds for each."""
    named = f"{row.label} -> job {row.key.trigger_job_id}"
    if isinstance(detection, NewData):
        return Event(
            EventType.WATCH_STARTED,
            row=row.key,
            watermark_after=dumps(detection.watermark),
            message=f"{named}: watching from where the upstream is now (start_from now): what it holds is not new data",
            details={"start_from": StartFrom.NOW.value, "upstream": row.label},
        )
    return Event(
        EventType.WATCH_STARTED,
        row=row.key,
        message=f"{named}: watching from the start (start_from now): {detection.reason}",
        details={"start_from": StartFrom.NOW.value, "upstream": row.label, "nothing_yet": detection.reason},
    )


def filtered_key(row: ControlRow, query: str, detection: NewData) -> str:
    """The new data a row's preprocess_query runs over, and the query: the row's watermark, the position
    found and the rendered query, as one digest."""
    text = json.dumps([row.watermark, dumps(detection.watermark), query])
    return hashlib.sha256(text.encode()).hexdigest()


class UpstreamCheck:
    """Reads one upstream once and compares it with each of its rows' watermarks (a partition trigger's
    row: with the partitions its filter names at the tick's time `at`). `filtered_before`: the new data
    each row's preprocess_query returned no row over in the last tick (`filtered_key`)."""

    def __init__(
        self,
        sensor: Sensor[Any],
        upstream: Upstream,
        rows: Sequence[ControlRow],
        at: datetime,
        filtered_before: Mapping[str, str] | None = None,
    ):
        self.sensor, self.upstream, self.rows, self.at = sensor, upstream, rows, at
        self.filtered_before = filtered_before or {}
        self.filtered: dict[str, str] = {}

    def run(self, context: CheckContext) -> CheckResult:
        position = self.sensor.read_position(context, self.upstream)
        events: list[Event] = []
        reasons: dict[str, str] = {}
        compared: dict[str | None, Detection] = {}  # a pure comparison: once per watermark of the upstream's rows
        for row in self.rows:
            try:
                if row.partition_filter:
                    detection = self._partition_trigger(row, position, _since(row))
                elif row.watermark in compared:
                    detection = compared[row.watermark]
                else:
                    detection = compared[row.watermark] = self.sensor.detect(self.upstream, position, _since(row))
                if row.starts_watching:  # start_from now: where the upstream is now, not new data
                    events.append(watch_started(row, detection))
                    continue
                if isinstance(detection, NewData) and row.preprocess_query:
                    detection = self._preprocess(context, row, position, _since(row), detection)
            except HeartbeatError as exc:  # this row's own: its upstream was read, other rows of it go on
                events.extend(_error_events([row], _row_error(row, str(exc))))
                continue
            if isinstance(detection, NothingNew):
                reasons[row.key.ref] = detection.reason
                continue
            details = {"upstream": row.label, "detected_at": now().isoformat(), **detection.changes}
            steps = detection.steps() if row.max_range is not None else ()
            if len(steps) > 1:  # where a part of the range may end inside this change (max_range)
                details["steps"] = [dumps(step) for step in steps]
            events.append(
                Event(
                    EventType.DATA_CHANGED,
                    row=row.key,
                    status=Status.NEW_EVENT_AVAILABLE.value,
                    watermark_before=row.watermark,
                    watermark_after=dumps(detection.watermark),
                    details=details,
                )
            )
        return events, reasons, self.filtered

    def _partition_trigger(self, row: ControlRow, position: Position, since: Watermark | None) -> Detection:
        if not isinstance(position, PartitionedPosition):
            raise SensorError(f"{row.label}: partition_filter is not supported for {self.upstream.kind.value}")
        try:
            trigger, tags = parse_filter(row.partition_filter or ""), parse_tags(row.tags or "")
        except ValueError as exc:  # the CSV's validator refuses these; a table edited by hand is not checked
            raise SensorError(f"{row.label}: partition_filter or tags refused: {exc}") from exc
        return detect_partitions(row.label, position, trigger, tags, since, self.at)

    def _preprocess(
        self, context: CheckContext, row: ControlRow, position: Position, since: Watermark | None, detection: NewData
    ) -> Detection:
        named = f"{row.label} -> job {row.key.trigger_job_id}: preprocess_query"  # the row's, not its upstream's
        query = render(row.preprocess_query or "", row.upstream_key)
        kept = of_new_data_alone(query) and self.sensor.position_names_data
        over = filtered_key(row, query, detection) if kept else None
        if over is not None and self.filtered_before.get(row.key.ref) == over:
            self.filtered[row.key.ref] = over
            return NothingNew("new data found, but preprocess_query returned no row (the same data as the last tick's)")
        if context.spark is None:
            raise SensorError(f"{named} needs Spark")
        if context.expired:
            raise context.timed_out(self.upstream.label)
        with closing(self.sensor.new_data_pages(context, self.upstream, position, since)) as pages:
            if any(self._matches(context, named, query, page) for page in pages):
                return detection
        if over is not None:
            self.filtered[row.key.ref] = over
        return NothingNew("new data found, but preprocess_query returned no row")

    def _matches(self, context: CheckContext, named: str, query: str, frame: DataFrame) -> bool:
        """Whether the query returns a row over `frame`. Checks run concurrently on one session (Spark
        Connect has no newSession): the new data gets a view of its own, named `sensor_new_data` for the
        query by a CTE around it."""
        assert context.spark is not None  # _preprocess asked
        view = f"sensor_new_data_{uuid.uuid4().hex}"
        frame.createOrReplaceTempView(view)
        try:
            with context.spark_until_deadline(self.upstream.label) as session:
                return session.sql(over_view(query, view)).limit(1).count() > 0
        except Exception as exc:  # noqa: BLE001 - Spark analysis errors carry the user's mistake
            if context.expired:
                raise context.timed_out(self.upstream.label) from exc
            # the Java exception when there is one: a source that stopped answering mid-read is named as such
            raise SensorError(f"{named} failed: {as_written(spark_error_text(exc))}") from exc
        finally:
            context.spark.catalog.dropTempView(view)


def sense(
    rows: Sequence[ControlRow],
    registry: Mapping[SensorSource, Sensor[Any]],
    spark: SparkSession | None,
    config: Config,
    clock: Callable[[], float] = time.monotonic,
    at: datetime | None = None,
    filtered_before: Mapping[str, str] | None = None,
) -> SensingOutcome:
    """Check every distinct upstream of `rows` once; return the events to append. Only `config.settings.sensing`
    is read: each sensor has its own settings since the registry was built. `at` is the tick's time,
    which partition filters are relative to (default: now). `filtered_before`: the new data each row's
    preprocess_query returned no row over in the last tick (status_files.filtered_before); such a query
    of the new data alone is not run again over the same data."""
    outcome = SensingOutcome()
    at = at or now()  # one time for every row of the tick
    by_columns: dict[tuple[str, str, str | None], list[ControlRow]] = defaultdict(list)
    for row in rows:  # by the columns an upstream is made of: one Upstream a group, not one a row
        by_columns[(row.key.sensor_source, row.key.sensor_id, row.upstream_key)].append(row)
    groups: dict[Upstream, list[ControlRow]] = defaultdict(list)
    for same in by_columns.values():
        try:
            groups[upstream_of(same[0])].extend(same)
        except ValueError:
            for row in same:
                outcome.events.extend(_error_events([row], f"{row.label}: unknown sensor_source"))
    outcome.upstreams = len(groups)
    checks: list[UpstreamCheck] = []
    for upstream, group in groups.items():
        sensor = registry.get(upstream.kind)
        if sensor is None:
            outcome.events.extend(_error_events(group, f"{upstream.label}: no sensor for {upstream.kind.value}"))
            continue
        checks.append(UpstreamCheck(sensor, upstream, group, at, filtered_before))
    for check, result in _run_bounded(checks, spark, config.settings.sensing, clock):
        if isinstance(result, BaseException):
            outcome.events.extend(_error_events(check.rows, _describe(check.upstream, result)))
            continue
        events, reasons, filtered = result
        outcome.events.extend(events)
        outcome.nothing_new.update(reasons)
        outcome.filtered.update(filtered)
    return outcome.count()


@dataclass(frozen=True)
class FirstLook:
    """A cold tick's sensing before it handed over to the full tick: the rows as it sensed them (from the
    status snapshot), what their checks found, and the tick's time it sensed at."""

    rows: Mapping[RowKey, ControlRow]
    outcome: SensingOutcome
    at: datetime

    def still_holds(self, rows: Sequence[ControlRow]) -> set[RowKey]:
        """The rows of `rows` whose check in this look still holds: the row is as the look sensed it (its
        watermark, status and last error), and its check found new data, nothing new, or where a row with
        start_from now watches from. A failed check (a source read through Spark among them) is checked again."""
        failed = {e.row for e in self.outcome.events if e.event_type is EventType.CHECK_FAILED}
        answers = (EventType.DATA_CHANGED, EventType.WATCH_STARTED)  # new data, or where a start_from now row is
        found = {e.row for e in self.outcome.events if e.event_type in answers}
        return {
            r.key
            for r in rows
            if self.rows.get(r.key) == r
            and r.key not in failed
            and (r.key in found or r.key.ref in self.outcome.nothing_new)
        }


def sense_once(
    rows: Sequence[ControlRow],
    look: FirstLook | None,
    registry: Mapping[SensorSource, Sensor[Any]],
    spark: SparkSession | None,
    config: Config,
    filtered_before: Mapping[str, str] | None = None,
) -> tuple[SensingOutcome, int]:
    """`sense`, in a tick that goes on from a cold tick's first look: the look's checks of the rows it
    left as they were are taken, the other rows are checked, at the look's time. So a busy cron tick
    checks each upstream once, as a warm tick does. Returns the outcome and how many rows' checks were
    the look's."""
    if look is None:
        return sense(rows, registry, spark, config, filtered_before=filtered_before), 0
    kept = look.still_holds(rows)
    rest = sense(
        [r for r in rows if r.key not in kept], registry, spark, config, at=look.at, filtered_before=filtered_before
    )
    refs = {key.ref for key in kept}
    outcome = SensingOutcome(
        events=[e for e in look.outcome.events if e.row in kept] + rest.events,
        upstreams=len(_upstreams(rows)),
        nothing_new={ref: why for ref, why in look.outcome.nothing_new.items() if ref in refs} | rest.nothing_new,
        filtered={ref: over for ref, over in look.outcome.filtered.items() if ref in refs} | rest.filtered,
    )
    return outcome.count(), len(kept)


def _describe(upstream: Upstream, exc: BaseException) -> str:
    if isinstance(exc, HeartbeatError):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{upstream.label}: {type(exc).__name__}: {text}".rstrip(": ")


RESULTS_AT_ONCE = 256  # finished checks handed to the tick together
WAKE_SECONDS = 0.05  # the longest a finished check waits to be handed over


def _run_bounded(
    checks: list[UpstreamCheck], spark: SparkSession | None, settings: SensingSettings, clock: Callable[[], float]
) -> Iterator[tuple[UpstreamCheck, CheckResult | BaseException]]:
    """Run checks on at most `max_parallel_checks` daemon worker threads, each taking the next check when
    it is done with one. Each check's deadline is set when its worker takes it, `check_timeout_seconds`
    later; the check is given it (its inner waits end by it) and is abandoned if it is still running
    then: its worker is left to finish on its own, its result is ignored, and a new worker takes its
    place. Yields (check, result or exception) as each finishes or times out.

    Workers, not a thread per check: starting a thread waits for it to run, about 0.4 ms each, which
    was most of the sensing of 2,000 trigger folders (docs/performance-notes.md). Results are handed over in
    batches (RESULTS_AT_ONCE, or every WAKE_SECONDS): a folder's check takes tens of microseconds, and
    waking this thread for each one of 20,000 took more than the checks."""
    todo = deque(checks)
    lock = threading.Lock()  # guards todo, running, abandoned, finished
    arrived = threading.Condition(lock)
    running: dict[UpstreamCheck, CheckContext] = {}
    abandoned: set[UpstreamCheck] = set()
    finished: list[tuple[UpstreamCheck, CheckResult | BaseException]] = []

    def work() -> None:
        while True:
            with lock:
                if not todo:
                    return
                check = todo.popleft()
                context = CheckContext.starting_now(spark, settings.check_timeout_seconds, clock)
                running[check] = context
            result: CheckResult | BaseException
            try:
                result = check.run(context)
            except BaseException as exc:  # noqa: BLE001 - reported as the check's error event
                result = exc
            with lock:
                if check in abandoned:
                    return  # given up on at its deadline; another worker took this one's place
                del running[check]
                finished.append((check, result))
                if len(finished) >= RESULTS_AT_ONCE or not (todo or running):
                    arrived.notify()

    def hire() -> None:
        threading.Thread(target=work, name="sensing", daemon=True).start()

    for _ in range(min(max(1, settings.max_parallel_checks), len(checks))):
        hire()
    left, next_deadline = len(checks), clock() + WAKE_SECONDS
    while left:
        with lock:
            if not finished:
                arrived.wait(timeout=max(0.0, min(next_deadline - clock(), WAKE_SECONDS)))
            ready = finished[:]
            finished.clear()
            expired = [(check, context) for check, context in running.items() if context.expired]
            for check, _ in expired:
                del running[check]
                abandoned.add(check)
            next_deadline = min((context.deadline for context in running.values()), default=clock() + WAKE_SECONDS)
        for check, context in expired:
            log.warning("check of %s abandoned after %gs", check.upstream.label, context.timeout_seconds)
            hire()
            left -= 1
            yield check, context.timed_out(check.upstream.label)
        for check, result in ready:
            left -= 1
            yield check, result
