"""Two phases, atomic: a refresh that fails or is killed between or inside its phases leaves the dataset at
its old or its new version, and the next run (the same batch sent again, or the next batch) repairs the
rest, with every batch applied exactly once. Failures are injected at the materialization's named points
(HEARTBEAT_FAIL_AT, in-process: between the phases, inside phase 1 after the batch's rows are written,
inside phase 2 after the dataset's switch). Nothing of the materialization runs after its point, so what
is on disk is what a kill there leaves, and the next run is a new dbt invocation: no process of its own is
needed. That a kill inside one switch (a half-written version) leaves the old or the new version is the
adapter's heartbeat_write_version, which tests/tick/test_crash_safety.py kills in a process there. Also: wrong
parameters are compilation errors naming the model and the parameter, and the Delta statements
(Databricks) compile and parse.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlglot
from dbt.cli.main import dbtRunner
from pyspark.sql import SparkSession

from harness.core.errors import DbtError
from tests.refresh_support import EXAMPLES_DIR, RefreshProject, examples_config, install_package

D0 = datetime(2025, 12, 31)


def day(d: int) -> datetime:
    return datetime(2026, 1, d)


K = {
    "k1": [(1, "new", 10.0, day(1)), (2, "new", 20.0, day(1))],
    "k2": [(1, "paid", 10.0, day(2)), (3, "new", 5.0, day(2))],
    "k3": [(2, "gone", 0.0, day(3)), (1, "draft", 9.0, D0)],
    "k4": [(4, "new", 1.0, day(4)), (3, "new", 5.0, day(4))],
}
DATASET = ["order_id", "status", "amount", "s_batch_id"]
AFTER_K1 = [(1, "new", 10.0, "k1"), (2, "new", 20.0, "k1")]
AFTER_K2 = [(1, "paid", 10.0, "k2"), (2, "new", 20.0, "k1"), (3, "new", 5.0, "k2")]
AFTER_K3 = [(1, "paid", 10.0, "k2"), (2, "gone", 0.0, "k3"), (3, "new", 5.0, "k2")]
AFTER_K4 = [(1, "paid", 10.0, "k2"), (2, "gone", 0.0, "k3"), (3, "new", 5.0, "k4"), (4, "new", 1.0, "k4")]
CODES = sorted(
    [
        ("k1", 1, "N"),
        ("k1", 2, "N"),
        ("k2", 1, "C"),
        ("k2", 3, "N"),
        ("k3", 1, "O"),
        ("k3", 2, "C"),
        ("k4", 3, "S"),
        ("k4", 4, "N"),
    ],
    key=repr,
)


# --- failures, in-process ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def failures(spark: SparkSession, session_state: Path) -> Iterator[dict[str, Any]]:
    install_package()
    schema = "rf_atomic"
    spark.sql(f"drop database if exists {schema} cascade")
    spark.sql(f"create database {schema}")
    project = RefreshProject(spark, examples_config(session_state, schema, session_state / "refresh_target"))
    seen: dict[str, Any] = {}

    def snapshot(point: str) -> None:
        seen[point] = {
            "dataset": project.rows("key_orders", DATASET),
            "codes": project.rows("key_orders__batches", ["s_batch_id", "order_id", "s_record_status_code"]),
            "metrics": project.metrics("key_orders"),
        }

    def load(batch: str, rows: list[tuple[Any, ...]], fail_at: str | None = None) -> None:
        try:
            project.load({"key_orders": rows}, batch=batch, fail_at=fail_at)
        except DbtError as exc:
            seen.setdefault("errors", {})[batch] = str(exc)

    load("k1", K["k1"])
    load("k2", K["k2"], fail_at="refresh:captured")  # between the phases
    snapshot("failed between the phases")
    load("k2", K["k2"])  # the same run sent again
    snapshot("k2 sent again")
    load("k3", K["k3"], fail_at="refresh:dataset-written")  # inside phase 2: dataset switched, metrics not
    snapshot("failed inside phase 2")
    load("k4", K["k4"])
    snapshot("next batch")
    load(
        "k5", [(5, "new", 1.0, day(5))], fail_at="refresh:batch-written"
    )  # inside phase 1: rows written, not committed
    snapshot("failed inside phase 1")
    load("k5", [(5, "new", 1.0, day(5))])
    snapshot("k5 sent again")
    yield seen


def test_failure_between_the_phases_leaves_the_dataset_untouched(failures: dict[str, Any]) -> None:
    # GIVEN k1 applied WHEN k2 fails right after its change capture
    point = failures["failed between the phases"]
    # THEN the dataset is k1's; k2 is captured (its codes precomputed) but not applied
    assert "injected failure at refresh:captured" in failures["errors"]["k2"]
    assert point["dataset"] == AFTER_K1
    assert [c for c in point["codes"] if c[0] == "k2"] == [("k2", 1, "C"), ("k2", 3, "N")]
    assert set(point["metrics"]) == {"k1"}


def test_the_same_batch_sent_again_applies_what_its_failed_run_captured(failures: dict[str, Any]) -> None:
    point = failures["k2 sent again"]
    assert point["dataset"] == AFTER_K2
    assert point["metrics"]["k2"]["batch_seq"] == 2 and point["metrics"]["k2"]["status"] == "applied"
    assert point["metrics"]["k2"]["record_count"] == 2


def test_failure_inside_phase_two_is_repaired_by_the_next_batch_without_duplicates(failures: dict[str, Any]) -> None:
    # WHEN k3 fails after its dataset switch, before its metrics; THEN the dataset is k3's already
    assert failures["failed inside phase 2"]["dataset"] == AFTER_K3
    assert "k3" not in failures["failed inside phase 2"]["metrics"]
    # WHEN k4 comes: k3 is applied again (the same dataset), then k4
    point = failures["next batch"]
    assert point["dataset"] == AFTER_K4
    assert point["codes"] == CODES
    assert {b: (m["batch_seq"], m["status"], m["effective_record_count"]) for b, m in point["metrics"].items()} == {
        "k1": (1, "applied", 0),
        "k2": (2, "applied", 1),
        "k3": (3, "applied", 1),
        "k4": (4, "applied", 2),
    }


def test_failure_inside_phase_one_changes_nothing_and_the_batch_loads_when_sent_again(failures: dict[str, Any]) -> None:
    point = failures["failed inside phase 1"]
    assert point["dataset"] == AFTER_K4
    assert not [c for c in point["codes"] if c[0] == "k5"] and "k5" not in point["metrics"]
    again = failures["k5 sent again"]
    assert again["dataset"] == AFTER_K4 + [(5, "new", 1.0, "k5")]
    assert again["metrics"]["k5"]["batch_seq"] == 5 and again["metrics"]["k5"]["records_n"] == 1


# --- the next batch after a stop between the phases, in-process ----------------------------------------
@pytest.fixture(scope="module")
def stopped(spark: SparkSession, session_state: Path) -> dict[str, Any]:
    """k1 applied; k2's run stopped right after its change capture (nothing runs after the point, as after a
    kill: the materialization has no cleanup); then the next run, k3's, in a new dbt invocation."""
    install_package()
    schema = "rf_stopped"
    spark.sql(f"drop database if exists {schema} cascade")
    spark.sql(f"create database {schema}")
    project = RefreshProject(spark, examples_config(session_state, schema, session_state / "refresh_target"))
    project.load({"key_orders": K["k1"]}, batch="k1")
    with pytest.raises(DbtError, match="injected failure at refresh:captured"):
        project.load({"key_orders": K["k2"]}, batch="k2", fail_at="refresh:captured")
    project.load({"key_orders": K["k3"]}, batch="k3")
    return {
        "dataset": project.rows("key_orders", DATASET),
        "codes": project.rows("key_orders__batches", ["s_batch_id", "order_id", "s_record_status_code"]),
        "metrics": project.metrics("key_orders"),
    }


def test_a_stop_between_the_phases_is_repaired_by_the_next_batch(stopped: dict[str, Any]) -> None:
    # GIVEN k2 stopped right after its change capture WHEN the next run loads k3
    # THEN k2 is applied first, then k3, each once, with the codes of an uninterrupted load
    assert stopped["dataset"] == AFTER_K3
    assert stopped["codes"] == [c for c in CODES if c[0] != "k4"]
    assert {b: (m["batch_seq"], m["status"]) for b, m in stopped["metrics"].items()} == {
        "k1": (1, "applied"),
        "k2": (2, "applied"),
        "k3": (3, "applied"),
    }


# --- parameters, Databricks ------------------------------------------------------------------------------
def test_wrong_parameters_are_compilation_errors_naming_the_model_and_the_parameter(
    spark: SparkSession, session_state: Path
) -> None:
    install_package()
    schema = "rf_params"
    spark.sql(f"create database if not exists {schema}")
    project = RefreshProject(spark, examples_config(session_state, schema, session_state / "refresh_target"))
    project.write_batch("bad_missing_parameter", [(1, day(1))])
    with pytest.raises(DbtError) as raised:
        project.run(
            "bad_missing_parameter", "bad_unknown_parameter", "bad_unknown_column", "bad_custom_predicate", batch="x"
        )
    message = str(raised.value)
    assert "bad_missing_parameter: refresh parameter 'key_columns' is missing" in message
    assert "bad_missing_parameter: bad_missing_parameter" not in message and "> in macro" not in message
    assert "bad_unknown_parameter: refresh parameter 'sequence_column' is unknown for type key" in message
    assert (
        "bad_unknown_column: refresh parameter 'key_columns' names the column ident, which the model does not "
        "return" in message
    )
    assert not project.exists("bad_unknown_column__batches")
    # a custom expression is checked at capture, before anything is written
    assert (
        "bad_custom_predicate: refresh parameter 'delete_predicate' names this.ident, which is not a column of the "
        "model (its columns: id, updated_at); nothing was changed" in message
    )
    assert not project.exists("bad_custom_predicate__batches") and not project.exists("bad_custom_predicate")


@pytest.mark.scenario
def test_delta_statements_of_every_type_compile_for_databricks_and_parse(tmp_path: Path) -> None:
    # GIVEN the databricks target (no workspace): the statements the materialization runs on Delta
    install_package()
    result = dbtRunner().invoke(
        [
            "--quiet",
            "compile",
            "--select",
            "delta_statements",
            "--target",
            "databricks",
            "--no-populate-cache",
            "--project-dir",
            str(EXAMPLES_DIR),
            "--profiles-dir",
            str(EXAMPLES_DIR),
            "--target-path",
            str(tmp_path),
            "--vars",
            json.dumps({"heartbeat_catalog": "lake"}),
        ]
    )
    assert result.success, result.exception
    text = (tmp_path / "compiled" / "refresh_tests" / "analyses" / "delta_statements.sql").read_text()
    statements = [s.strip() for s in text.split("-- ;") if s.strip() and not s.strip().startswith("-- type")]
    statements = ["\n".join(line for line in s.splitlines() if not line.startswith("-- type")) for s in statements]
    # THEN each parses as Databricks SQL (RESTORE, which sqlglot does not know, by its documented form)
    kinds: dict[str, int] = {}
    for statement in statements:
        if statement.lower().startswith("restore table"):
            assert statement.split() == [
                "restore",
                "table",
                "`lake`.`sales`.`orders`",
                "to",
                "version",
                "as",
                "of",
                "41",
            ]
            kind = "Restore"
        else:
            kind = type(sqlglot.parse_one(statement, read="databricks")).__name__
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds["Merge"] == 2  # key: MERGE ... UPDATE/INSERT; custom: MERGE ... DELETE
    assert kinds["Restore"] == 6 and kinds["Delete"] == 4 and kinds["Insert"] >= 18
    assert "`lake`.`sales`.`orders__batches`" in text
    # a batch may return the kept columns in another order: every INSERT of the model's columns names them
    inserts = [s for s in statements if s.lower().startswith("insert") and "__metrics" not in s.splitlines()[0]]
    assert inserts and all(s.splitlines()[0].rstrip().endswith(")") for s in inserts), inserts
    # widening: the kept batches cast to the wider types with the batch's rows, one CREATE OR REPLACE (Delta's
    # ALTER COLUMN cannot widen int to double); retention: the baseline replaces the folded batches in one statement
    assert "create or replace table `lake`.`sales`.`orders__batches` using delta as" in text
    assert "where s_batch_seq not in (1, 2, -2)" in text
    assert "create or replace view `lake`.`sales`.`orders__dataset_metrics` as" in text
