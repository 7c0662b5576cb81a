"""The Databricks Asset Bundle at the repository's root (databricks.yml + resources/*.yml), checked as far
as this machine allows: every resource loads into the typed classes of `databricks-bundles` (an unknown
or misspelt field fails), every variable used is declared, every wheel task names an entry point the
project's wheel has, every file a task or the sync needs exists, and the heartbeat's configuration on
Databricks resolves, per target as the CLI resolves it (development-mode prefixes included), to the
schema and state volume the bundle creates, with three-part names in the bundle's catalog."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from databricks.bundles.jobs import Job

from harness.commands import cli
from harness.core.config import PROJECT_DIR, load_config
from harness.platform.dbt_runner import dbt_vars
from tests.bundle_resolution import TYPES, resolve

pytestmark = pytest.mark.unit

BUNDLE = yaml.safe_load((PROJECT_DIR / "databricks.yml").read_text())
RESOURCE_FILES = sorted((PROJECT_DIR / "resources").glob("*.yml"))
TOP_LEVEL = {
    "bundle",
    "include",
    "artifacts",
    "sync",
    "variables",
    "targets",
    "workspace",
    "permissions",
    "run_as",
    "resources",
    "presets",
    "experimental",
}
TARGET_KEYS = {
    "mode",
    "default",
    "workspace",
    "run_as",
    "variables",
    "resources",
    "presets",
    "artifacts",
    "sync",
    "permissions",
    "git",
    "bundle",
    "cluster_id",
    "compute_id",
}
VARIABLE_KEYS = {"description", "default", "type", "lookup"}
PYPROJECT = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())


def resources() -> Iterator[tuple[Path, str, str, dict[str, Any]]]:
    for path in RESOURCE_FILES:
        for kind, items in yaml.safe_load(path.read_text())["resources"].items():
            for name, body in items.items():
                yield path, kind, name, body


def tasks() -> Iterator[tuple[Path, str, dict[str, Any]]]:
    for path, kind, name, body in resources():
        if kind == "jobs":
            for task in body.get("tasks", []):
                yield path, f"{name}.{task['task_key']}", task


def test_the_bundle_has_a_name_dev_and_prod_targets_and_only_known_keys() -> None:
    assert set(BUNDLE) <= TOP_LEVEL, set(BUNDLE) - TOP_LEVEL
    assert BUNDLE["bundle"]["name"] == "heartbeat" and BUNDLE["include"] == ["resources/*.yml"]
    assert {"dev", "prod"} <= set(BUNDLE["targets"])
    assert BUNDLE["targets"]["prod"]["mode"] == "production" and BUNDLE["targets"]["dev"]["mode"] == "development"
    for name, target in BUNDLE["targets"].items():
        assert set(target) <= TARGET_KEYS, (name, set(target) - TARGET_KEYS)
    for name, variable in BUNDLE["variables"].items():
        assert set(variable) <= VARIABLE_KEYS and variable.get("description"), name


@pytest.mark.parametrize("path, kind, name, body", list(resources()), ids=lambda v: v if isinstance(v, str) else "")
def test_each_resource_loads_into_the_databricks_bundles_types(
    path: Path, kind: str, name: str, body: dict[str, Any]
) -> None:
    assert kind in TYPES, f"{path.name}: no typed check for resources of kind {kind}"
    TYPES[kind].from_dict(body)  # ValueError on an unknown field


def test_the_typed_check_refuses_an_unknown_field() -> None:
    path, kind, name, body = next(r for r in resources() if r[1] == "jobs")
    with pytest.raises(ValueError, match="max_concurent_runs"):
        Job.from_dict({**body, "max_concurent_runs": 1})


def test_every_variable_the_bundle_uses_is_declared() -> None:
    text = (PROJECT_DIR / "databricks.yml").read_text() + "".join(p.read_text() for p in RESOURCE_FILES)
    used = set(re.findall(r"\$\{var\.(\w+)\}", text))
    assert used <= set(BUNDLE["variables"]), used - set(BUNDLE["variables"])


def test_every_wheel_task_runs_an_entry_point_of_the_projects_wheel() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    wheel_tasks = [(where, t["python_wheel_task"]) for _, where, t in tasks() if "python_wheel_task" in t]
    assert wheel_tasks
    for where, task in wheel_tasks:
        assert task["package_name"] == PYPROJECT["project"]["name"], where
        assert task["entry_point"] in scripts, f"{where}: no entry point {task['entry_point']} in pyproject.toml"
        module, _, function = scripts[task["entry_point"]].partition(":")
        assert callable(getattr(importlib.import_module(module), function)), where


def test_every_file_a_task_or_the_wheel_needs_is_in_the_repository() -> None:
    artifact = BUNDLE["artifacts"]["heartbeat"]
    assert artifact["type"] == "whl" and "build" in artifact["build"]
    for path, kind, name, body in resources():
        environments = {e["environment_key"]: e["spec"] for e in body.get("environments", [])}
        for task in body.get("tasks", []):
            if "python_wheel_task" in task:  # its environment installs the wheel the bundle builds
                (wheel,) = environments[task["environment_key"]]["dependencies"]
                assert (path.parent / wheel).resolve().parent == PROJECT_DIR / "dist", task["task_key"]
    for path, where, task in tasks():
        if "spark_python_task" in task:
            assert (path.parent / task["spark_python_task"]["python_file"]).is_file(), where
        parameters = task.get("python_wheel_task", {}).get("parameters", [])
        for parameter in parameters:
            if parameter.startswith("${workspace.file_path}/"):
                synced = parameter.removeprefix("${workspace.file_path}/")
                assert (PROJECT_DIR / synced).is_file(), f"{where}: {synced}"
                assert any(Path(synced).match(g.replace("**", "*")) for g in BUNDLE["sync"]["include"]), synced


def test_the_heartbeat_job_ticks_on_a_schedule_one_run_at_a_time() -> None:
    (job,) = [body for _, kind, name, body in resources() if kind == "jobs" and name == "heartbeat"]
    assert job["max_concurrent_runs"] == 1 and job["schedule"]["quartz_cron_expression"]
    assert job["tasks"][-1]["python_wheel_task"]["parameters"][-1] == "tick"
    (downstream,) = [body for _, kind, name, body in resources() if kind == "jobs" and name != "heartbeat"]
    last = downstream["tasks"][-1]
    assert last["python_wheel_task"]["parameters"][-3:] == ["complete", "--job-id", "{{job.id}}"]
    assert {d["task_key"] for d in last["depends_on"]} == {t["task_key"] for t in downstream["tasks"][:-1]}


VARIABLES = {
    "catalog": "sales",
    "warehouse_id": "abc",
    "heartbeat_identity": "0000-principal",
    "alert_destination_id": "oncall-destination",
}


@pytest.mark.parametrize("target, schema", [("prod", "heartbeat"), ("dev", "dev_dev_eloper_heartbeat")])
def test_each_wheel_task_is_handed_the_schema_and_volume_the_target_creates(target: str, schema: str) -> None:
    # GIVEN the bundle resolved for the target as the CLI resolves it (dev: prefixed with the user's name)
    bundle = resolve(target, VARIABLES, user="dev.eloper@example.com")
    created = bundle.resources["schemas"]["heartbeat"]
    volume = bundle.resources["volumes"]["state"]
    assert (created["catalog_name"], created["name"]) == ("sales", schema)
    assert (volume["catalog_name"], volume["schema_name"]) == ("sales", schema)
    for job, task in (("heartbeat", "tick"), ("example_downstream", "report_to_heartbeat")):
        parameters = bundle.task(job, task)["python_wheel_task"]["parameters"]
        # WHEN the command line is read as the wheel's entry point reads it
        args = cli.parser().parse_args([p.replace(bundle.workspace["file_path"], str(PROJECT_DIR)) for p in parameters])
        config = load_config(args.config, dict(args.set))
        # THEN the harness and dbt address the tables of that schema and keep their state in its volume,
        # and dbt connects to the warehouse with the token of the secret scope
        assert (config.backend, config.dbt_target) == ("databricks", "databricks")
        assert config.table("heartbeat_events") == f"sales.{schema}.heartbeat_events", (job, target)
        assert str(config.state_dir) == f"/Volumes/sales/{schema}/state", (job, target)
        assert config.project_dir == PROJECT_DIR and config.table_format == "delta"
        assert config.settings.databricks.dbt_http_path == "/sql/1.0/warehouses/abc"
        assert config.settings.databricks.dbt_token_secret == "heartbeat/dbt_token"
        assert dbt_vars(config)["heartbeat_catalog"] == "sales" and dbt_vars(config)["heartbeat_schema"] == schema


def test_the_dev_target_never_shares_production_state_or_schedule() -> None:
    prod, dev = resolve("prod", VARIABLES), resolve("dev", VARIABLES, user="ann@example.com")
    assert (
        dev.resources["schemas"]["heartbeat"]["name"]
        == "dev_ann_heartbeat"
        != prod.resources["schemas"]["heartbeat"]["name"]
    )
    assert (
        dev.job("heartbeat")["name"] == "[dev ann] heartbeat"
        and dev.job("heartbeat")["schedule"]["pause_status"] == "PAUSED"
    )
    assert prod.job("heartbeat")["schedule"]["pause_status"] == "UNPAUSED"


def test_a_tick_due_while_one_runs_is_skipped_not_queued() -> None:
    job = resolve("prod", VARIABLES).job("heartbeat")
    assert job["max_concurrent_runs"] == 1 and job["queue"] == {"enabled": False}
    assert Job.from_dict(job).queue.enabled is False  # type: ignore[union-attr]


def test_production_files_are_deployed_where_only_the_deployer_writes_and_the_principal_reads() -> None:
    prod = resolve("prod", VARIABLES, user="ci-principal@example.com")
    assert prod.workspace["root_path"] == "/Workspace/Users/ci-principal@example.com/.bundle/heartbeat/prod"
    assert not prod.workspace["root_path"].startswith("/Workspace/Shared")
    assert {"level": "CAN_VIEW", "service_principal_name": "${var.heartbeat_identity}"} in BUNDLE["targets"]["prod"][
        "permissions"
    ]


def test_each_deploy_builds_one_wheel_of_its_own_version() -> None:
    artifact = BUNDLE["artifacts"]["heartbeat"]
    clean, _, build = artifact["build"].partition("&&")
    assert "rmtree" in clean and "'dist'" in clean and "'build'" in clean
    assert build.strip() == "python -m build --wheel"
    assert artifact["dynamic_version"] is True
