"""dbt, invoked in-process on the harness's SparkSession (dbt-spark `method: session`).

One invocation at a time. `dbtRunner.invoke` returns rather than raises: success, the exception and
each failed node are checked and turned into one DbtError whose message names what failed.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from dbt.cli.main import dbtRunner, dbtRunnerResult

from harness.config import Config
from harness.errors import DbtError

log = logging.getLogger(__name__)

# The heartbeat's own models, in the order the tick needs them.
HEARTBEAT_MODELS = "stg_heartbeat__controls stg_heartbeat__events int_heartbeat__row_events heartbeat_control_table heartbeat_sensing_eligibility heartbeat_trigger_set"


@dataclass(frozen=True)
class DbtOutcome:
    seconds: float
    nodes: int
    failures: list[str]


def prepare_environment(config: Config, table_format: str) -> None:
    """The environment profiles.yml and dbt_project.yml read; set before every invocation."""
    os.environ["HEARTBEAT_STATE_DIR"] = str(config.state_dir)
    os.environ["HEARTBEAT_FILE_FORMAT"] = table_format
    os.environ["HEARTBEAT_DBT_TARGET"] = config.dbt_target
    # Relative to the project: dbt writes each seed's SQL to target/run/<project>/<seed path>, which an
    # absolute seed path would turn into the CSV itself.
    os.environ["HEARTBEAT_SEEDS_DIR"] = str(config.controls_csv.parent.relative_to(config.project_dir))
    os.environ["DBT_TARGET_PATH"] = str(config.dbt_target_path)
    os.environ["DBT_LOG_PATH"] = str(config.state_dir / "dbt_logs")
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")


def invoke(config: Config, table_format: str, args: list[str], *, quiet: bool = True) -> DbtOutcome:
    """Run one dbt command; raise DbtError with the failing nodes' messages when it does not succeed."""
    prepare_environment(config, table_format)
    full = [
        *args,
        "--project-dir", str(config.project_dir),
        "--profiles-dir", str(config.project_dir),
        "--target", config.dbt_target,
    ]
    if quiet:
        full = ["--quiet", "--no-use-colors", *full]
    started = time.monotonic()
    result: dbtRunnerResult = dbtRunner().invoke(full)
    seconds = time.monotonic() - started
    failures = _failures(result)
    if not result.success or result.exception is not None:
        detail = "; ".join(failures) or str(result.exception) or "dbt reported failure"
        raise DbtError(f"dbt {' '.join(args[:1])} failed: {detail}")
    nodes = len(result.result) if result.result is not None and hasattr(result.result, "__len__") else 0
    return DbtOutcome(seconds=seconds, nodes=nodes, failures=failures)


def _failures(result: dbtRunnerResult) -> list[str]:
    out: list[str] = []
    for node_result in getattr(result.result, "results", None) or []:
        status = str(getattr(node_result, "status", "")).lower()
        if status in ("error", "fail", "runtime error"):
            name = getattr(getattr(node_result, "node", None), "name", "?")
            message = (getattr(node_result, "message", None) or "").strip().splitlines()
            out.append(f"{name}: {message[0] if message else status}")
    return out
