"""dbt from the command line and the heartbeat share one configuration: the state folder (so the one
metastore and warehouse) and the schema come from heartbeat.yml alone, read by the heartbeat adapter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.core.config import PROJECT_DIR
from tests.support import RECORDING_JOB, SESSION_SEEDS, control_row, write_controls_csv

pytestmark = pytest.mark.process  # the `dbt` command line, as users run it

SCHEMA = "hb_cli_only_yml"


def test_state_dir_and_schema_named_only_in_heartbeat_yml_are_what_dbt_and_the_heartbeat_use(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # GIVEN a heartbeat.yml naming its state folder and schema, and no HEARTBEAT_* variable anywhere
    seeds = SESSION_SEEDS / f"cli_{tmp_path.name}"
    seeds.mkdir(parents=True, exist_ok=True)
    request.addfinalizer(lambda: shutil.rmtree(seeds, ignore_errors=True))
    write_controls_csv(seeds / "heartbeat_controls.csv", [control_row("trigger_file", "in", "j")])
    (tmp_path / "triggers" / "in").mkdir(parents=True)
    state = tmp_path / "only-here"
    config = tmp_path / "heartbeat.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "state_dir": str(state),
                "schema": SCHEMA,
                "controls_csv": str(seeds / "heartbeat_controls.csv"),
                "trigger_file": {"root": str(tmp_path / "triggers")},
                "local_runner": {"jobs": {"j": {"command": RECORDING_JOB}}},
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEARTBEAT_", "DBT_"))}
    env.update(
        HEARTBEAT_CONFIG=str(config),
        RUNS_DIR=str(tmp_path / "runs"),
        PYTHONPATH=str(PROJECT_DIR),
        DBT_TARGET_PATH=str(tmp_path / "target"),
        DBT_LOG_PATH=str(tmp_path / "logs"),
    )
    # The seed's folder, when it is not seeds/: the one thing a command-line dbt is told by a var.
    seed_vars = ["--vars", json.dumps({"heartbeat_seeds_dir": str(seeds.relative_to(PROJECT_DIR))})]

    def run(*command: str) -> str:
        result = subprocess.run(list(command), cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout + result.stderr

    dbt = str(PROJECT_DIR / ".venv" / "bin" / "dbt")
    # WHEN a tick runs, then dbt builds the seed and the control table from the command line, then a tick
    first = run(sys.executable, "-m", "harness", "tick")
    run(dbt, "build", "--select", "+heartbeat_control_table", "--exclude-resource-type", "unit_test", *seed_vars)
    second = run(sys.executable, "-m", "harness", "tick")

    # THEN all four used the one metastore and warehouse in the state folder, under heartbeat.yml's schema
    assert "with the new controls CSV" in first
    assert "with the new controls CSV" not in second, "the tick did not see the seed dbt loaded"
    assert (state / "warehouse" / f"{SCHEMA}.db").is_dir() and (state / "metastore_db").is_dir()
    assert not (PROJECT_DIR / "state" / "warehouse" / f"{SCHEMA}.db").exists()
    assert "trigger_file:in" in run(sys.executable, "-m", "harness", "status")
