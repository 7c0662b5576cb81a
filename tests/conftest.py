"""Test session setup: one SparkSession for the whole run (starting Spark costs ~10 s), a private
HOME and Databricks config, and no network but 127.0.0.1."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

# A space in the session's folder: its metastore, warehouse and tables live under a path users may well have.
_SESSION_HOME = Path(tempfile.mkdtemp(prefix="heartbeat tests-"))
for _name in list(os.environ):
    if _name.startswith("DATABRICKS_") or _name.startswith("HEARTBEAT_"):
        del os.environ[_name]
os.environ.update(
    {
        "HOME": str(_SESSION_HOME),
        "DATABRICKS_CONFIG_FILE": str(_SESSION_HOME / ".databrickscfg"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "NO_PROXY": "127.0.0.1,localhost",
    }
)

from pyspark.sql import SparkSession  # noqa: E402

from harness.core.config import PROJECT_DIR, Config  # noqa: E402
from harness.platform.jvm_options import expect_long_life  # noqa: E402
from harness.platform.spark import get_spark  # noqa: E402
from tests import layers  # noqa: E402
from tests.support import SESSION_SEEDS, HeartbeatHarness  # noqa: E402

_layer_times = layers.LayerTimes()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    layers.assign(items)


@pytest.fixture(autouse=True)
def _layer_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    layers.guard_unit(request.node, monkeypatch)


@pytest.fixture(autouse=True)
def _harness_logging() -> Iterator[None]:
    """`cli.main` sets the `harness` logger up as a process's own (a handler on the stderr of the moment,
    which a test's capture closes after it): put back as it was after each test."""
    logger = logging.getLogger("harness")
    handlers, level, propagate = logger.handlers[:], logger.level, logger.propagate
    yield
    logger.handlers[:], logger.propagate = handlers, propagate
    logger.setLevel(level)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    layer = next((k for k in report.keywords if k in layers.LAYERS), "unit")
    _layer_times.add(report, layer)


def pytest_sessionfinish() -> None:
    shutil.rmtree(SESSION_SEEDS, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.section("time per layer")
    for line in _layer_times.lines():
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def session_state() -> Path:
    return _SESSION_HOME / "state"


@pytest.fixture(scope="session")
def spark(session_state: Path) -> Iterator[SparkSession]:
    expect_long_life()  # one session for the whole run, as a `run` loop's
    session = get_spark(Config(config_path=None, project_dir=PROJECT_DIR, state_dir=session_state))
    yield session
    session.stop()


@pytest.fixture
def heartbeat(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HeartbeatHarness:
    """A heartbeat of its own: an emptied schema in the shared metastore, own CSV, trigger root, jobs, runs
    and state folder (the schema's name is the same for every test, so dbt parses the project once)."""
    return HeartbeatHarness.create(spark, tmp_path, monkeypatch)


# --- Source sensor fixtures (issue 3): PostgreSQL server, Kafka mock cluster --------------------
from tests.fixtures_sources import kafka, pg_password, postgres  # noqa: E402,F401
from tests.jobs_api_server import jobs_api  # noqa: E402,F401  (Databricks backend tests)
