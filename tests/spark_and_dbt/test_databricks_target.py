"""The `databricks` dbt target compiles without a workspace, and what it compiles is Databricks SQL.

dbt-databricks asks its connection three things while compiling: whether a relation exists (for
`is_incremental()`), the columns of the controls seed (its optional columns) and the compute's
capabilities. Here no workspace exists, so the test answers them as a SQL warehouse would (every
capability; the relation absent, then present as a table; the seed with every column) and the
target's host points at a closed local port: nothing leaves the machine. Every model and data test is
compiled in both modes and each compiled statement is parsed with sqlglot's Databricks dialect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from dbt.adapters.databricks.impl import DatabricksAdapter
from dbt.cli.main import dbtRunner

from harness.core.config import PROJECT_DIR, Config
from harness.core.controls import OPTIONAL_COLUMNS, USER_COLUMNS
from harness.platform.dbt_runner import dbt_args

pytestmark = pytest.mark.scenario  # dbt compiles the project in-process


def compile_for_databricks(tmp_path: Path, relations_exist: bool) -> tuple[dict[str, str], dict[str, Any]]:
    """Compiled SQL of every node (by unique id) and the manifest, as `dbt compile --target databricks`."""
    config = Config(
        config_path=None,
        project_dir=PROJECT_DIR,
        state_dir=tmp_path / "state",
        dbt_target="databricks",
        catalog="main",
        schema="heartbeat",
        dbt_target_dir=tmp_path / f"target_{relations_exist}",
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABRICKS_HOST", "127.0.0.1:9")  # a closed port: a connection attempt fails at once
        patch.setenv("DATABRICKS_TOKEN", "no-workspace")
        patch.setattr(DatabricksAdapter, "has_dbr_capability", lambda self, name: True)
        patch.setattr(DatabricksAdapter, "is_cluster", lambda self: False)
        patch.setattr(
            DatabricksAdapter,
            "get_columns_in_relation",
            lambda self, relation: [self.Column(name, "string") for name in (*USER_COLUMNS, *OPTIONAL_COLUMNS)],
        )
        patch.setattr(
            DatabricksAdapter,
            "get_relation",
            lambda self, database, schema, identifier, needs_information=False: (
                self.Relation.create(database=database, schema=schema, identifier=identifier, type="table")
                if relations_exist
                else None
            ),
        )
        result = dbtRunner().invoke(
            [
                "--quiet",
                "--no-send-anonymous-usage-stats",
                *dbt_args(
                    config, ["compile", "--no-introspect", "--no-populate-cache", "--exclude", "resource_type:seed"]
                ),
            ]
        )
    assert result.success and result.exception is None, result.exception
    compiled = {r.node.unique_id: r.node.compiled_code for r in result.result}
    manifest = json.loads((config.dbt_target_path / "manifest.json").read_text())
    return compiled, manifest


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, tuple[dict[str, str], dict[str, Any]]]:
    root = tmp_path_factory.mktemp("databricks_target")
    return {exists: compile_for_databricks(root, exists) for exists in (False, True)}


@pytest.mark.parametrize("relations_exist", [False, True], ids=["first build", "incremental build"])
def test_every_model_compiles_for_databricks_and_parses_as_databricks_sql(
    compiled: dict[bool, tuple[dict[str, str], dict[str, Any]]], relations_exist: bool
) -> None:
    statements, manifest = compiled[relations_exist]
    models = {k for k, v in manifest["nodes"].items() if v["resource_type"] == "model"}
    # every model (and every data test) compiled ...
    assert models and models <= set(statements)
    for unique_id, sql in statements.items():
        # ... into one statement sqlglot's Databricks dialect reads, naming the catalog of the target
        parsed = sqlglot.parse(sql, read="databricks", error_level=sqlglot.ErrorLevel.RAISE)
        assert len([p for p in parsed if p is not None]) == 1, unique_id
    assert "`main`.`heartbeat`.`heartbeat_events`" in statements["model.heartbeat.stg_heartbeat__events"]


def test_the_incremental_build_folds_only_recent_events(
    compiled: dict[bool, tuple[dict[str, str], dict[str, Any]]],
) -> None:
    first, incremental = (compiled[e][0]["model.heartbeat.heartbeat_control_table"] for e in (False, True))
    assert first != incremental and "`main`.`heartbeat`.`heartbeat_control_table`" in incremental


def test_the_heartbeat_adapters_macros_leave_dbt_databricks_its_own(
    compiled: dict[bool, tuple[dict[str, str], dict[str, Any]]],
) -> None:
    macros = compiled[True][1]["macros"]
    assert not [m for m in macros if m.startswith("macro.dbt_heartbeat.")]
    assert "macro.dbt_databricks.get_insert_overwrite_sql" in macros
    assert "macro.dbt_databricks.databricks__load_csv_rows" in macros
