"""The dbt project: its unit tests pass, every model and column is documented, the Databricks target parses."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from dbt.cli.main import dbtRunner

from harness.core.config import PROJECT_DIR, config_from_mapping
from harness.core.errors import DbtError
from harness.core.vocabulary import EventType, RowKey
from harness.platform import dbt_runner
from harness.state.event_log import Event, now
from harness.state.tables import CONTROL_TABLE
from harness.tick.fold import VIEWS_KEEP_PLANS
from tests.support import HeartbeatHarness, control_row

pytestmark = pytest.mark.scenario  # dbt parses, tests and documents the project in-process


def test_dbt_unit_tests_for_every_rule_and_the_models_data_tests_pass(heartbeat: HeartbeatHarness) -> None:
    heartbeat.write_controls(
        [
            control_row("trigger_file", "in", "j"),
            control_row("trigger_file", "in", "k"),
            control_row("trigger_file", "other", "k", hard=False),
        ]
    )
    heartbeat.define_jobs("j", "k")
    heartbeat.tick()  # the models must exist before their unit tests (incremental mode reads `this`)
    outcome = dbt_runner.invoke(heartbeat.config, ["test", "--select", "test_type:unit"])
    assert outcome.nodes >= 13
    # A tick runs no dbt tests (harness.tick.fold): the data tests (the CSV's and the models') run here over a
    # heartbeat whose jobs ran: detections, triggers, run starts and ends are all in the events and the
    # control table.
    heartbeat.drop_trigger_file("in", "batch1")
    heartbeat.tick_until_settled()
    assert {run["job"] for run in heartbeat.job_runs()} == {"j", "k"}
    outcome = dbt_runner.invoke(heartbeat.config, ["test", "--select", "test_type:data"])
    assert outcome.nodes >= 38


@pytest.fixture(scope="module")
def databricks_manifest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`dbt parse` on the databricks target, with the flags and vars the harness passes; no workspace.
    Parsed once for the tests that read what it wrote (manifest.json)."""
    tmp_path = tmp_path_factory.mktemp("databricks_parse")
    config = config_from_mapping(
        {
            "backend": "databricks",
            "catalog": "lake",
            "state_dir": str(tmp_path / "state"),
            "dbt_target_dir": str(tmp_path / "target"),
        },
        base=PROJECT_DIR,
    )
    result = dbtRunner().invoke(["--quiet", *dbt_runner.dbt_args(config, ["parse"])])
    assert result.success, result.exception
    return dict(json.loads((tmp_path / "target" / "manifest.json").read_text()))


def test_databricks_target_parses_without_a_workspace(databricks_manifest: dict[str, Any]) -> None:
    manifest = databricks_manifest
    models = {n["name"]: n for n in manifest["nodes"].values() if n["resource_type"] == "model"}
    assert set(models) == {
        "stg_heartbeat__controls",
        "stg_heartbeat__events",
        "int_heartbeat__row_events",
        "heartbeat_control_table",
        "heartbeat_sensing_eligibility",
        "heartbeat_trigger_set",
        "heartbeat_trigger_set_as_if",
        "heartbeat_open_runs",
    }
    assert models["heartbeat_control_table"]["config"]["incremental_strategy"] == "merge"


def test_every_model_and_column_has_a_description_for_the_docs_site(databricks_manifest: dict[str, Any]) -> None:
    manifest = databricks_manifest
    undocumented = [
        f"{n['name']}.{column}" if column else n["name"]
        for n in manifest["nodes"].values()
        if n["resource_type"] in ("model", "seed")
        for column, description in [(None, n["description"])] + [(c, v["description"]) for c, v in n["columns"].items()]
        if not description.strip()
    ]
    assert undocumented == []


def test_docs_site_opens_on_an_overview_and_every_unit_test_is_described(databricks_manifest: dict[str, Any]) -> None:
    manifest = databricks_manifest
    overview = manifest["docs"]["doc.heartbeat.__overview__"]["block_contents"]
    assert all(part in overview for part in ("## The control table", "| `IN_PROGRESS` |", "## When a job starts"))
    undescribed = [n["name"] for n in manifest["unit_tests"].values() if not (n.get("description") or "").strip()]
    assert len(manifest["unit_tests"]) >= 13 and undescribed == []


def test_a_failing_dbt_command_prints_nothing_itself_and_raises_what_failed(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the heartbeat's dbt project (no Spark needed: dbt fails before connecting)
    config = config_from_mapping(
        {"state_dir": str(tmp_path / "state"), "dbt_target_dir": str(tmp_path / "target")}, base=PROJECT_DIR
    )
    # WHEN a command fails
    with pytest.raises(DbtError, match="could not find a macro with the name 'no_such_macro'"):
        dbt_runner.invoke(config, ["run-operation", "no_such_macro"])
    # THEN dbt printed nothing (a tick's JSON log lines stay JSON: the failure is the tick's error line)
    assert capfd.readouterr() == ("", "")


def test_a_fold_keeps_its_temporary_views_plan_and_puts_the_setting_back(
    heartbeat: HeartbeatHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a heartbeat whose first tick built every model
    heartbeat.write_controls([control_row("trigger_file", "in", "j")])
    heartbeat.define_jobs("j")
    heartbeat.tick()
    during: list[str | None] = []
    invoke = dbt_runner.invoke

    def watched(config: Any, command: list[str], **extra: Any) -> dbt_runner.DbtOutcome:
        during.append(heartbeat.spark.conf.get(VIEWS_KEEP_PLANS))
        return invoke(config, command, **extra)

    monkeypatch.setattr(dbt_runner, "invoke", watched)
    # WHEN a file lands and the next tick folds it (dbt-spark makes a temporary view, then inserts from it)
    heartbeat.drop_trigger_file("in", "a.done")
    assert heartbeat.tick().dbt_builds == 1
    # THEN dbt built with temporary views keeping their analyzed plans (the model's SQL analyzed once), and
    # the session's setting is back as it was for every other view
    assert during == ["true"]
    assert heartbeat.spark.conf.get(VIEWS_KEEP_PLANS) == "false"


def test_a_fold_reads_from_its_earliest_new_event_so_one_timed_hours_before_those_folded_is_folded(
    heartbeat: HeartbeatHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a heartbeat whose ticks folded a landing and the run it started
    heartbeat.write_controls([control_row("trigger_file", "in", "j")])
    heartbeat.define_jobs("j")
    heartbeat.drop_trigger_file("in", "a.done")
    heartbeat.tick_until_settled()
    passed: list[Any] = []
    invoke = dbt_runner.invoke

    def watched(config: Any, command: list[str], **extra: Any) -> dbt_runner.DbtOutcome:
        passed.append(extra.get(dbt_runner.FOLD_SINCE_VAR))
        return invoke(config, command, **extra)

    monkeypatch.setattr(dbt_runner, "invoke", watched)
    # WHEN an event is appended whose time is three hours behind every folded one (a clock set back), and
    # a tick folds it
    behind = now() - timedelta(hours=3)
    row = RowKey("trigger_file", "in", "j")
    heartbeat.runtime().events.append(
        [Event(EventType.FRESHNESS_MISSED, row=row, message="in: no new file", event_time=behind)]
    )
    assert heartbeat.tick().dbt_builds == 1
    # THEN the fold folded it: it read the log from that event's time on (only the new events)
    folded = {r.key: r for r in heartbeat.tables.control_rows()}[row]
    assert folded.freshness_missed_at == behind
    assert passed == [behind.isoformat()]


def test_a_control_table_an_earlier_version_built_without_a_column_gets_it_at_the_next_fold(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN a control table as a version of the heartbeat before watched_since left it
    heartbeat.write_controls([control_row("trigger_file", "in", "j")])
    heartbeat.define_jobs("j")
    heartbeat.drop_trigger_file("in", "a.done")
    heartbeat.tick_until_settled()
    table = heartbeat.config.table(CONTROL_TABLE)
    before = heartbeat.spark.table(table).drop("watched_since")
    before.write.format("parquet").saveAsTable(f"{table}_earlier")
    heartbeat.spark.sql(f"DROP TABLE {table}")
    heartbeat.spark.sql(f"ALTER TABLE {table}_earlier RENAME TO {heartbeat.config.schema}.{CONTROL_TABLE}")
    heartbeat.restart()

    # WHEN the next tick folds a new batch
    heartbeat.drop_trigger_file("in", "b.done")
    report = heartbeat.tick_until_settled()

    # THEN the fold read the older table (the column it lacked as NULL) and added the column
    assert report.error is None and not any(r.error for r in heartbeat.reports), heartbeat.reports
    assert "watched_since" in heartbeat.spark.table(table).columns
    assert heartbeat.job_status("j") == {"COMPLETED"} and len(heartbeat.job_runs("j")) == 2


def _plan(heartbeat: HeartbeatHarness, query: str) -> list[str]:
    (plan,) = heartbeat.spark.sql(f"EXPLAIN FORMATTED {query}").collect()[0]
    return str(plan).splitlines()


def _scan_filters(heartbeat: HeartbeatHarness, query: str) -> list[str]:
    """The filters each scan of the event log in `query`'s plan takes to the table (its PushedFilters)."""
    return [line for line in _plan(heartbeat, query) if line.startswith("PushedFilters:")]


def test_the_readers_bounds_on_event_time_reach_the_event_logs_scan_and_the_open_runs_read_it_once(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN a heartbeat whose models are built
    heartbeat.write_controls([control_row("trigger_file", "in", "j")])
    heartbeat.define_jobs("j")
    heartbeat.tick()
    table = heartbeat.config.table

    # WHEN the events from a time on are read through the staging model (as a fold reads them), and the
    # open runs are read (their bound is a subquery over the control table)
    staged = _scan_filters(
        heartbeat, f"SELECT * FROM {table('stg_heartbeat__events')} WHERE event_time >= timestamp'2026-11-26 10:00:00'"
    )
    open_runs = _plan(heartbeat, f"SELECT * FROM {table('heartbeat_open_runs')}")

    # THEN the time bound is a filter of the table's scan, below the removal of an event appended twice:
    # the scan skips the row groups before it instead of reading the whole day
    assert staged and all("GreaterThanOrEqual(event_time,2026-11-26 10:00:00" in line for line in staged)
    pushed = [line for line in open_runs if line.startswith("PushedFilters:")]
    assert pushed and all("GreaterThanOrEqual(event_time,ScalarSubquery" in line for line in pushed)
    # AND the open runs scan the log once, and shuffle its events by request once: the grouping by
    # request and row and the window over the request share it
    scans = [
        line for line in open_runs if line.startswith("(") and "Scan parquet" in line and "heartbeat_events" in line
    ]
    by_request = [line for line in open_runs if line.startswith("Arguments: hashpartitioning(idempotency_token#")]
    assert len(scans) == 1, open_runs
    assert len(by_request) == 1, open_runs


def test_the_trigger_set_read_again_a_moment_later_compiles_no_new_code(heartbeat: HeartbeatHarness) -> None:
    # GIVEN a heartbeat whose models are built, with a job waiting out a quiet period (a rule that reads
    # the current time), and the trigger set read once
    heartbeat.write_controls([control_row("trigger_file", "in", "j") | {"quiet_period": "1h"}])
    heartbeat.define_jobs("j")
    heartbeat.drop_trigger_file("in", "a.done")
    heartbeat.tick()
    trigger_set = heartbeat.config.table("heartbeat_trigger_set")
    first = heartbeat.spark.table(trigger_set).collect()
    compiled = heartbeat.spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    before = compiled.getCount()

    # WHEN it is read again, at a later time
    time.sleep(0.01)
    again = heartbeat.spark.table(trigger_set).collect()

    # THEN Spark ran it with the code it generated the first time (the time is not a literal in that code),
    # and the decision is the same
    assert compiled.getCount() == before
    assert [(r.trigger_job_id, r.should_start, r.earliest_start_at) for r in again] == [
        (r.trigger_job_id, r.should_start, r.earliest_start_at) for r in first
    ]
    assert not again[0].should_start and "quiet" in again[0].reason
