"""Folding: bringing the heartbeat's models up to date with the event log and the controls CSV (dbt build).

When a fold is needed:
  - the process has not built the models yet (its first build also (re)creates the views);
  - the controls CSV differs from the one the seed holds (validated first; a bad file keeps the last
    good one and is recorded once as CONFIG_REJECTED);
  - events were appended since the last successful fold (EventLog.unfolded, kept across a kill).
Otherwise a tick does no dbt work at all.

What is built: the first build of a process selects every heartbeat model; later ones only the control
table, the one table (the eligibility, trigger set and open runs are views over it and the events).
dbt unit tests check the rules themselves (the test suite runs them), never a tick; data tests run when
the seed is (re)loaded.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from harness import dbt_runner
from harness.controls import file_digest, read_controls
from harness.errors import ControlsError
from harness.events import Event
from harness.model import EventType
from harness.runtime import Runtime

log = logging.getLogger(__name__)

ALL_MODELS = ["+heartbeat_trigger_set", "+heartbeat_sensing_eligibility", "+heartbeat_open_runs"]
NO_UNIT_TESTS = ["--exclude-resource-type", "unit_test"]
NO_TESTS = NO_UNIT_TESTS + ["--exclude-resource-type", "test"]


@dataclass(frozen=True)
class FoldPlan:
    needed: bool
    with_seed: bool
    controls_error: str | None = None
    reason: str = ""


def plan(runtime: Runtime) -> FoldPlan:
    """Whether this tick must fold, and with the controls seed."""
    error = None
    try:
        with_seed = controls_changed(runtime)
    except ControlsError as exc:
        with_seed, error = False, str(exc)
        record_rejection(runtime, error)
    if with_seed:
        return FoldPlan(True, True, error, "the controls CSV changed")
    if not runtime.views_built:
        return FoldPlan(True, False, error, "first build of this process")
    if runtime.events.unfolded:
        return FoldPlan(True, False, error, "new events")
    return FoldPlan(False, False, error, "nothing new since the last fold")


def controls_changed(runtime: Runtime) -> bool:
    """True when the CSV differs from what the seed holds and is valid (ControlsError when refused)."""
    path = runtime.config.controls_csv
    if path.exists() and runtime.tables.controls_digest() == file_digest(path):
        return False
    read_controls(path)  # raises ControlsError naming every bad row
    return True


def record_rejection(runtime: Runtime, message: str) -> None:
    """One CONFIG_REJECTED event per refused version of the CSV, not one per tick."""
    marker = runtime.config.state_dir / "controls.rejected.sha256"
    path = runtime.config.controls_csv
    digest = file_digest(path) if path.exists() else "missing"
    if marker.exists() and marker.read_text().strip() == digest:
        return
    runtime.events.append([Event(EventType.CONFIG_REJECTED, message=message)])
    marker.write_text(digest)
    log.error("%s", message)
    log.error("the control table keeps the last valid controls CSV until the file is fixed")


def fold(runtime: Runtime, *, with_seed: bool = False) -> float:
    """Refresh the heartbeat models; returns the seconds dbt took. Raises DbtError."""
    started = time.monotonic()
    select = ALL_MODELS if with_seed or not runtime.views_built else ["heartbeat_control_table"]
    command = ["build", "--select", *select]
    if with_seed:
        digest = file_digest(runtime.config.controls_csv)
        dbt_runner.invoke(runtime.config, [*command, *NO_UNIT_TESTS], heartbeat_controls_sha256=digest)
    else:
        dbt_runner.invoke(runtime.config, [*command, *NO_TESTS, "--exclude-resource-type", "seed"])
    runtime.events.mark_folded()
    runtime.views_built = True
    return time.monotonic() - started
