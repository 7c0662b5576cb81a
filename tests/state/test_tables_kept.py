"""What a process keeps of its readings of the tables (harness.state.tables): read once until what they read
changes."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.config import PROJECT_DIR, Config
from harness.state.tables import CONTROL_TABLE, OPEN_RUNS, TRIGGER_SET, Tables
from harness.tick.cold import facts
from harness.tick.runtime import Runtime

pytestmark = pytest.mark.unit


class Counters:
    version = folds = 0


class CountingTables(Tables):
    """Tables whose reads are counted, with no Spark behind them."""

    def __init__(self, config: Config, counters: Counters) -> None:
        super().__init__(None, config, counters)  # type: ignore[arg-type]
        self.reads: Counter[str] = Counter()

    def exists(self, name: str) -> bool:
        return True

    def _read(self, name: str, *order: str) -> list[dict[str, Any]]:
        self.reads[name] += 1
        return []

    def _read_sensed_keys(self) -> set[Any]:
        self.reads["sensed"] += 1
        return set()

    def _read_controls_digest(self) -> str | None:
        self.reads["digest"] += 1
        return "d"


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(config_path=None, project_dir=PROJECT_DIR, state_dir=tmp_path, controls_csv=tmp_path / "c.csv")


def test_a_reading_is_kept_until_a_fold_and_the_open_runs_until_an_append(config: Config) -> None:
    # GIVEN tables read once
    counters = Counters()
    tables = CountingTables(config, counters)
    tables.control_rows(), tables.job_decisions(), tables.open_runs()

    # WHEN the log is appended to, THEN only the open runs (a view over the log) are read again
    counters.version += 1
    tables.control_rows(), tables.job_decisions(), tables.open_runs()
    assert tables.reads == {CONTROL_TABLE: 1, TRIGGER_SET: 1, OPEN_RUNS: 2}

    # WHEN a fold changes what dbt built, THEN everything is read again
    counters.version, counters.folds = counters.version + 1, counters.folds + 1
    tables.control_rows(), tables.job_decisions(), tables.open_runs()
    assert tables.reads == {CONTROL_TABLE: 2, TRIGGER_SET: 2, OPEN_RUNS: 3}


def test_without_a_version_nothing_is_kept(config: Config) -> None:
    tables = CountingTables(config, Counters())
    tables._log = None
    tables.control_table(), tables.control_table()
    assert tables.reads == {CONTROL_TABLE: 2}


class SideBySideTables(CountingTables):
    """Each read waits until all `together` reads have begun: read one after another, the first times out."""

    def __init__(self, config: Config, counters: Counters, together: int) -> None:
        super().__init__(config, counters)
        self.barrier = threading.Barrier(together, timeout=5)

    def _read(self, name: str, *order: str) -> list[dict[str, Any]]:
        self.barrier.wait()
        return super()._read(name, *order)

    def _read_sensed_keys(self) -> set[Any]:
        self.barrier.wait()
        return super()._read_sensed_keys()

    def _read_controls_digest(self) -> str | None:
        self.barrier.wait()
        return super()._read_controls_digest()


def test_the_snapshots_readings_are_taken_side_by_side_once_each(config: Config) -> None:
    # GIVEN tables after a fold, whose five reads each wait for the other four to begin
    counters = Counters()
    tables = SideBySideTables(config, counters, together=5)
    counters.folds += 1

    # WHEN the snapshot's readings are taken, THEN they ran side by side (none timed out)
    tables.snapshot_readings()

    # AND what the snapshot then shows reads nothing more
    runtime = Runtime(config=config, spark=None, events=None, tables=tables, sensors=None, backend=None)  # type: ignore[arg-type]
    tables.job_decisions(), tables.control_table(), tables.sensed_rows(), facts(runtime)
    assert tables.reads == {CONTROL_TABLE: 1, TRIGGER_SET: 1, OPEN_RUNS: 1, "sensed": 1, "digest": 1}
