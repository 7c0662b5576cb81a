"""What a refresh model is given, and what it records of it: every batch records when it was received, one
without rows too. Each test runs a few batches of demo/refresh_examples in a schema of its own, on the
session's SparkSession.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from harness.commands.refresh import run_action
from harness.refresh import metrics
from tests.refresh_support import RefreshProject, examples_config, install_package

SCHEMA = "rf_inputs"


@pytest.fixture
def project(spark: SparkSession, session_state: Path) -> RefreshProject:
    install_package()
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    spark.sql(f"create database {SCHEMA}")
    return RefreshProject(spark, examples_config(session_state, SCHEMA, session_state / "refresh_target"))


def test_every_batch_shows_when_it_was_received_one_without_rows_too(project: RefreshProject) -> None:
    # GIVEN a batch with rows, then one without rows (each received at the start of its dbt run)
    project.load({"key_customers": [("DE", 1, "Anna", None)]}, batch="e1")
    before = datetime.now(timezone.utc).replace(tzinfo=None)
    project.load({"key_customers": []}, batch="e2")
    after = datetime.now(timezone.utc).replace(tzinfo=None)
    # THEN the metrics and `refresh status` give each its received time
    received = {b: m["received_at"] for b, m in project.metrics("key_customers").items()}
    assert received["e1"] is not None and received["e2"] is not None
    assert before <= datetime.fromisoformat(received["e2"]) <= after
    status = metrics.render_all(project.spark, project.config, "key_customers").splitlines()
    assert [line.split()[:4] for line in status if line.split()[0] == "e2"] == [
        ["e2", "applied", *received["e2"].split(".")[0].split()]
    ]
    # WHEN the model is recomputed from its kept batches THEN the times stay
    run_action(project.config, "key_customers", "reset")
    assert {b: m["received_at"] for b, m in project.metrics("key_customers").items()} == received
