"""The suite's three layers, each a registered marker (docs/contributing.md has their commands):

  unit      no Spark, no JVM, no subprocess, no dbt: the rules, run on every change (`-m unit`);
  scenario  on the test session's one SparkSession, with dbt in-process (and the servers the tests
            start: PostgreSQL, the Kafka mock cluster, the Jobs API server, the local runner's jobs);
  process   the tests whose point is a separate process (a kill -9, the cron tick as a process, the
            command line end to end); each says in its docstring why.

A test is `process` or `scenario` when marked so (a module's `pytestmark` or the test's own marker);
otherwise `scenario` when it uses the `spark` fixture (directly or through another fixture), else
`unit`. A unit test that starts Spark or a process fails, naming what to mark. In one session the
layers run in that order, so a broken rule shows in seconds. Spread over workers (`pytest -n 2`, the
README's test command) they run in the reverse order, heaviest first, so that the short tests fill the
end and both workers finish together. The summary prints each layer's total time.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

LAYERS = ("unit", "scenario", "process")
FILE_SECONDS = Path(__file__).with_name("file_seconds.json")  # tests/record_file_seconds.py writes it


def layer_of(item: pytest.Item) -> str:
    marked = {m.name for m in item.iter_markers() if m.name in LAYERS}
    if len(marked) > 1:
        raise pytest.UsageError(f"{item.nodeid}: marked {sorted(marked)}; a test is in one layer")
    if marked:
        return marked.pop()
    return "scenario" if "spark" in getattr(item, "fixturenames", ()) else "unit"


def assign(items: list[pytest.Item]) -> None:
    """Mark every test with its layer and order the run unit, scenario, process (stable within each);
    on a pytest-xdist worker process, scenario, unit, and within a layer the heaviest files first
    (tests/file_seconds.json, a file not in it last): its scheduler hands out files in this order, so
    the last files handed out are short and both workers finish together."""
    for item in items:
        item.add_marker(layer_of(item))
    if "PYTEST_XDIST_WORKER" not in os.environ:
        items.sort(key=lambda item: LAYERS.index(layer_of(item)))
        return
    seconds = json.loads(FILE_SECONDS.read_text()) if FILE_SECONDS.exists() else {}
    items.sort(key=lambda item: (-LAYERS.index(layer_of(item)), -seconds.get(item.nodeid.split("::")[0], 0.0)))


def guard_unit(item: pytest.Item, monkeypatch: pytest.MonkeyPatch) -> None:
    """Within a unit test, starting a process or Spark fails with what to do."""
    if layer_of(item) != "unit":
        return

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(
            f"{item.nodeid} is in the unit layer but starts a process or Spark: mark it "
            "`scenario` (in-process Spark, dbt, helper processes) or `process`"
        )

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr("harness.platform.spark.get_spark", refuse)
    monkeypatch.setattr("harness.tick.runtime.get_spark", refuse)


class LayerTimes:
    """Each layer's tests and seconds (setup, call and teardown), for the run's summary."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.tests: dict[str, set[str]] = defaultdict(set)

    def add(self, report: pytest.TestReport, layer: str) -> None:
        self.seconds[layer] += report.duration
        self.tests[layer].add(report.nodeid)

    def lines(self) -> list[str]:
        return [
            f"{layer:<9} {len(self.tests[layer]):>4} tests {self.seconds[layer]:>8.1f} s"
            for layer in LAYERS
            if self.tests[layer]
        ]
