"""What a process keeps of its readings of the tables (harness.state.tables): read once until what they read
changes."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.core.config import PROJECT_DIR, Config
from harness.core.controls import SEED
from harness.state.tables import CONTROL_TABLE, ELIGIBILITY, OPEN_RUNS, TRIGGER_SET, Tables
from harness.tick.cold import facts
from harness.tick.runtime import Runtime
from tests.support import LogCounters

pytestmark = pytest.mark.unit


class CountingTables(Tables):
    """Tables whose reads are counted, with no Spark behind them."""

    def __init__(self, config: Config, counters: LogCounters) -> None:
        super().__init__(None, config, counters)  # type: ignore[arg-type]
        self.reads: Counter[str] = Counter()

    def _list(self) -> frozenset[str]:
        self.reads["listing"] += 1
        return frozenset({CONTROL_TABLE, TRIGGER_SET, OPEN_RUNS, ELIGIBILITY, SEED})

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


def test_a_reading_is_kept_until_a_fold_and_the_open_runs_until_a_runs_event(config: Config) -> None:
    # GIVEN tables read once
    counters = LogCounters()
    tables = CountingTables(config, counters)
    tables.control_rows(), tables.job_decisions(), tables.open_runs()

    # WHEN a run's events are appended to the log, THEN only the open runs (a view over them) are read again
    counters.run_events += 1
    tables.control_rows(), tables.job_decisions(), tables.open_runs()
    assert tables.reads == {CONTROL_TABLE: 1, TRIGGER_SET: 1, OPEN_RUNS: 2, "listing": 1}

    # WHEN a fold changes what dbt built, THEN everything is read again, the schema listed once more
    counters.run_events, counters.folds = counters.run_events + 1, counters.folds + 1
    tables.control_rows(), tables.job_decisions(), tables.open_runs()
    assert tables.reads == {CONTROL_TABLE: 2, TRIGGER_SET: 2, OPEN_RUNS: 3, "listing": 2}


def test_the_schema_is_listed_once_for_every_table_until_a_fold_or_a_new_tick(config: Config) -> None:
    # GIVEN tables that answered whether each model is there, and the seed
    counters = LogCounters()
    tables = CountingTables(config, counters)
    assert all(tables.exists(name) for name in (CONTROL_TABLE, TRIGGER_SET, OPEN_RUNS, ELIGIBILITY, SEED))
    assert not tables.exists("heartbeat_other") and tables.exists(CONTROL_TABLE.upper())
    assert tables.reads == {"listing": 1}

    # WHEN a tick lists the schema again (an operator may have dropped a table), THEN it is listed once more
    tables.list_again()
    tables.exists(CONTROL_TABLE), tables.exists(SEED)
    assert tables.reads == {"listing": 2}
    # AND a fold (which may have made tables) too
    counters.folds += 1
    tables.exists(CONTROL_TABLE), tables.exists(SEED)
    assert tables.reads == {"listing": 3}


def test_without_a_version_nothing_is_kept(config: Config) -> None:
    tables = CountingTables(config, LogCounters())
    tables._log = None
    tables.control_table(), tables.control_table()
    assert tables.reads == {CONTROL_TABLE: 2}


class SideBySideTables(CountingTables):
    """Each read waits until all `together` reads have begun: read one after another, the first times out."""

    def __init__(self, config: Config, counters: LogCounters, together: int) -> None:
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
    counters = LogCounters()
    tables = SideBySideTables(config, counters, together=5)
    counters.folds += 1

    # WHEN the snapshot's readings are taken, THEN they ran side by side (none timed out)
    tables.snapshot_readings()

    # AND what the snapshot then shows reads nothing more
    runtime = Runtime(config=config, spark=None, events=None, tables=tables, sensors=None, backend=None)  # type: ignore[arg-type]
    tables.job_decisions(), tables.control_table(), tables.sensed_rows(), facts(runtime)
    assert tables.reads == {CONTROL_TABLE: 1, TRIGGER_SET: 1, OPEN_RUNS: 1, "sensed": 1, "digest": 1, "listing": 1}


def test_readings_side_by_side_run_on_the_same_threads_at_every_tick(config: Config) -> None:
    # GIVEN five readings that each wait for the other four to begin (so each has a thread of its own)
    tables = CountingTables(config, LogCounters())
    barrier = threading.Barrier(5, timeout=5)
    threads: set[threading.Thread] = set()

    def reading() -> None:
        barrier.wait()
        threads.add(threading.current_thread())

    # WHEN they are read together at three ticks
    for _ in range(3):
        tables.read_together(*[reading] * 5)

    # THEN the same five threads read them every time (each keeps its metastore client in Spark's JVM)
    assert len(threads) == 5


def test_a_reading_that_reads_together_itself_does_so_in_its_own_thread(config: Config) -> None:
    # GIVEN five readings that each take two more readings together (every reader thread is busy)
    tables = CountingTables(config, LogCounters())
    inner: list[str] = []

    def outer() -> None:
        tables.read_together(*[lambda: inner.append(threading.current_thread().name)] * 2)

    # WHEN they are read together, THEN all of them end (none waits for a free reader thread)
    reader = threading.Thread(target=tables.read_together, args=[outer] * 5, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive() and len(inner) == 10
    assert all(name.startswith("read") for name in inner)
