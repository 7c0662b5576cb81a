"""Folding: bringing the heartbeat's models up to date with the event log and the controls CSV (dbt build).

When a fold is needed:
  - the models were built from another version of the dbt project, its vars or target (or never):
    a full build recreates the views (`<state>/dbt_models.sha256` records what they were built from);
  - the controls CSV differs from the one the seed holds (validated first; a bad file keeps the last
    good one and is recorded once as CONFIG_REJECTED);
  - control rows' events were appended since the last successful fold (EventLog.unfolded, kept across
    a kill; the models read no other events, so a publication alone needs no fold).
Otherwise a tick does no dbt work at all.

What is built: a full build selects every heartbeat model (and compiles heartbeat_trigger_set_as_if,
whose SQL the tick runs itself), and makes the views over the tick log and health record that the
operators' dashboard and alerts read (harness.state.tick_views; one that cannot be made is a warning,
never a failed tick); later ones only the control table, the one table (the eligibility,
trigger set and open runs are views over it and the events).
A tick runs no dbt tests. The CSV it loads has passed the one validator first (harness.core.controls, the
rules the seed's data tests state), so a bad file never reaches the seed. `dbt build` and `dbt test`
run the data tests (the CSV's, and what the models make of any input: a key unique in the control
table, a reason on every decision) and the unit tests of the rules; the test suite runs both over a
heartbeat it drove.
"""

from __future__ import annotations

import logging
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from harness.core.config import Config
from harness.core.controls import MISSING, SEED, file_digest, file_version, read_controls
from harness.core.errors import ControlsError, first_problem, root_cause
from harness.core.state_layout import StateLayout
from harness.core.vocabulary import EventType
from harness.platform import dbt_runner
from harness.state import tick_views
from harness.state.event_log import Event
from harness.state.files import write_atomic
from harness.state.tables import CONTROL_TABLE, ELIGIBILITY, OPEN_RUNS, TRIGGER_SET, TRIGGER_SET_AS_IF
from harness.tick.runtime import Runtime

log = logging.getLogger(__name__)

# The as-if trigger set is compiled, never built (its SQL reads a temporary view: Tables.job_decisions_as_if).
ALL_MODELS = ["+heartbeat_trigger_set", "+heartbeat_sensing_eligibility", "+heartbeat_open_runs", TRIGGER_SET_AS_IF]
BUILT_MODELS = (CONTROL_TABLE, ELIGIBILITY, TRIGGER_SET, OPEN_RUNS)  # what a full build leaves in the schema
NO_TESTS = ["--exclude-resource-type", "unit_test", "--exclude-resource-type", "test"]
# dbt-spark's incremental build makes a temporary view of the model's SELECT, then inserts from it. A
# temporary view made by SQL keeps its text, so Spark analyzes the model again where the insert reads it;
# with this setting it keeps the plan analyzed when it was made.
VIEWS_KEEP_PLANS = "spark.sql.legacy.storeAnalyzedPlanForView"


NO_CONTROLS_TO_KEEP = (
    "the metastore holds no controls loaded before (a first tick, or a lost metastore), so a refused controls "
    "CSV leaves no control table to keep: write it (the README's section The control table shows one), check "
    "it with `python -m harness validate`, then tick"
)


@dataclass(frozen=True)
class FoldPlan:
    needed: bool
    with_seed: bool
    controls_error: str | None = None
    reason: str = ""


def fold_id(state_dir: Path) -> str | None:
    path = StateLayout(state_dir).fold_id  # a new id after every fold: the snapshot names the fold it shows
    return path.read_text().strip() if path.exists() else None


def plan(runtime: Runtime) -> FoldPlan:
    """Whether this tick must fold, and with the controls seed."""
    error = None
    try:
        with_seed = controls_changed(runtime)
    except ControlsError as exc:
        with_seed, error = False, str(exc)
        if not runtime.tables.exists(SEED):
            raise ControlsError(f"{NO_CONTROLS_TO_KEEP}. {error}") from None
        record_rejection(runtime, error)
    if with_seed:
        return FoldPlan(True, True, error, "the controls CSV changed")
    # A built process still checks that the models are there (an operator may have dropped one: the
    # tick lists the schema again at its start).
    runtime.views_built = (runtime.views_built and models_listed(runtime)) or views_current(runtime)
    if not runtime.views_built:
        if error is None and not runtime.tables.exists(SEED):
            # lost with the models (a lost metastore), where the readings a cold tick kept show it loaded
            read_controls(runtime.config.controls_csv)  # raises ControlsError naming every bad row
            return FoldPlan(True, True, None, "the controls seed is missing")
        return FoldPlan(True, False, error, "the models are missing or changed since they were built")
    if runtime.events.unfolded:
        return FoldPlan(True, False, error, "new events")
    return FoldPlan(False, False, error, "nothing new since the last fold")


def controls_changed(runtime: Runtime) -> bool:
    """True when the CSV differs from what the seed holds and is valid (ControlsError when refused)."""
    return csv_changed(runtime.config.controls_csv, runtime.tables.controls_digest())


def csv_changed(path: Path, held: str | None) -> bool:
    """True when the controls CSV at `path` differs from the one whose digest is `held` (the seed's) and
    is valid; ControlsError naming every bad row when it is refused (a missing file among them)."""
    version = file_version(path)
    if version != MISSING and held == version:
        return False
    read_controls(path)  # raises ControlsError naming every bad row
    return True


def record_rejection(runtime: Runtime, message: str) -> None:
    """One CONFIG_REJECTED event per refused version of the CSV, not one per tick; every tick says it in
    its log (the tick exits 1 for it)."""
    marker = runtime.config.layout.controls_rejected
    digest = file_version(runtime.config.controls_csv)
    where = {"tick_id": runtime.events.tick_id, "step": "fold"}
    if marker.exists() and marker.read_text().strip() == digest:
        log.warning("%s", still_refused(message), extra=where)
        return
    runtime.events.append([Event(EventType.CONFIG_REJECTED, message=message)])
    write_atomic(marker, digest)
    log.error("%s", message, extra=where)
    log.error("the control table keeps the last valid controls CSV until the file is fixed", extra=where)


def still_refused(message: str) -> str:
    """A refusal recorded by an earlier tick, in one line: the file, its first problem, how many more."""
    return f"the controls CSV is still refused, so the control table keeps the last valid one: {refusal(message)}"


def refusal(message: str) -> str:
    """The controls CSV's refusal in one line: the file, its first problem, how many more."""
    line, more = first_problem(message)
    return (
        line + (f"; and {more} more problems" if more else "") + " (`python -m harness validate` lists every problem)"
    )


def views_current(runtime: Runtime) -> bool:
    """The models exist and were built from this very project, vars and target. A control table that is
    gone (dropped by an operator, a lost metastore) makes the next fold rebuild it from the CSV and events."""
    recorded = runtime.config.layout.models_digest
    return (
        recorded.exists()
        and recorded.read_text().strip() == dbt_runner.project_digest(runtime.config)
        and models_listed(runtime)
    )


def models_listed(runtime: Runtime) -> bool:
    return all(runtime.tables.exists(name) for name in BUILT_MODELS)


def seed_vars(config: Config) -> dict[str, Any]:
    """What a seed load needs beyond the folds' vars. The local target's adapter validates the CSV itself
    and records the digest of the file it checked; another target (dbt-databricks) is passed the digest of
    the file the harness validated. Passing no var on the local target lets the seed load use the folds'
    parse of the project (a var changes what dbt parses)."""
    if config.dbt_target == "local":
        return {}
    return {"heartbeat_controls_sha256": file_digest(config.controls_csv)}


def since_var(runtime: Runtime) -> dict[str, Any]:
    """The time from which the fold reads the log: that of the earliest event appended since the last
    fold (the control table's model then reads only the new events); none when it is not known, and the
    model reads from its look-back (macros/fold_window.sql)."""
    since = runtime.events.unfolded_since
    return {dbt_runner.FOLD_SINCE_VAR: since.isoformat()} if since is not None else {}


def fold(runtime: Runtime, *, with_seed: bool = False) -> float:
    """Refresh the heartbeat models; returns the seconds dbt took. Raises DbtError."""
    started = time.monotonic()
    runtime.events.changed()
    select = ALL_MODELS if with_seed or not runtime.views_built else [CONTROL_TABLE]
    # manifest.json and run_results.json are for people and `dbt docs`, not a tick: writing them cost
    # about 0.4 s a fold (the compiled SQL the tick reads is still written).
    command = ["build", "--no-write-json", "--select", *select, *NO_TESTS]
    since = since_var(runtime)
    with views_keep_plans(runtime):
        if with_seed:
            dbt_runner.invoke(runtime.config, command, **seed_vars(runtime.config), **since)
        else:
            dbt_runner.invoke(runtime.config, [*command, "--exclude-resource-type", "seed"], **since)
    runtime.events.mark_folded()
    write_atomic(runtime.config.layout.fold_id, uuid.uuid4().hex)
    if select is ALL_MODELS:
        make_tick_views(runtime)
        write_atomic(runtime.config.layout.models_digest, dbt_runner.project_digest(runtime.config))
    runtime.views_built = True
    return time.monotonic() - started


def make_tick_views(runtime: Runtime) -> None:
    """The views of the tick log and health record. They are for the operators' dashboard and alerts, not
    for a tick: one that cannot be made is said (the next full build tries again), and the tick goes on."""
    try:
        tick_views.create(runtime.spark, runtime.config)
    except Exception as exc:  # noqa: BLE001 - the heartbeat's work does not depend on them
        log.warning(
            "the views %s could not be made (%s): the dashboard's tick health and its alerts on ticks and the "
            "controls CSV cannot read them until a full build makes them",
            ", ".join(runtime.config.table(name) for name in tick_views.TICK_VIEWS),
            root_cause(exc),
        )


@contextmanager
def views_keep_plans(runtime: Runtime) -> Iterator[None]:
    """During a fold on the embedded default, the temporary views dbt makes keep their analyzed plans
    (VIEWS_KEEP_PLANS): the control table's SQL is analyzed once a fold, not twice, about 0.3 s of a warm
    fold at 10,000 rows (docs/performance-notes.md). The fold reads its view right after making it, so the
    plan is that of the tables as they are; the setting is put back after the fold, for every other
    view of the process."""
    if runtime.config.dbt_target != "local":
        yield
        return
    before = runtime.spark.conf.get(VIEWS_KEEP_PLANS, "false") or "false"
    runtime.spark.conf.set(VIEWS_KEEP_PLANS, "true")
    try:
        yield
    finally:
        runtime.spark.conf.set(VIEWS_KEEP_PLANS, before)
