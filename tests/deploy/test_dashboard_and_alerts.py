"""The bundle's dashboard and alerts, checked offline as the jobs are (tests/deploy/test_bundle.py): each
resolves per target with the typed loaders of `databricks-bundles` and no key lost, reads the schema the
target creates (dev: the developer's own), and notifies the bundle's destinations in prod only; every
dataset, widget and alert query parses as Databricks SQL and names only the heartbeat's own tables and
views, through the bundle's catalog and schema. What their numbers are is tests/deploy/test_dashboard_queries.py's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from sqlglot import exp

from harness.core.config import PROJECT_DIR
from harness.state.tables import CONTROL_TABLE, TRIGGER_SET
from harness.state.tick_views import TICK_VIEWS
from tests.bundle_queries import dashboard, parse, tables
from tests.bundle_resolution import load, resolve

pytestmark = pytest.mark.unit

VARIABLES = {
    "catalog": "sales",
    "warehouse_id": "abc",
    "heartbeat_identity": "0000-principal",
    "alert_destination_id": "oncall-destination",
}
HEARTBEAT_TABLES = {CONTROL_TABLE, TRIGGER_SET, "heartbeat_events", *TICK_VIEWS}
ALERTS = {"no_tick", "tick_failing", "job_failed", "upstream_stale", "controls_refused"}
SCHEMA_REFERENCE = "${resources.schemas.heartbeat.catalog_name}.${resources.schemas.heartbeat.name}"


@pytest.mark.parametrize("target, schema", [("prod", "heartbeat"), ("dev", "dev_dev_eloper_heartbeat")])
def test_the_dashboard_and_alerts_resolve_per_target_on_the_schema_it_creates(target: str, schema: str) -> None:
    # GIVEN the bundle resolved for the target as the CLI resolves it, each resource loaded into the typed
    # classes and written back from them with no key lost (resolve raises otherwise)
    bundle = resolve(target, VARIABLES, user="dev.eloper@example.com")

    # THEN the dashboard's datasets read the schema the target creates, on the bundle's warehouse
    board = bundle.dashboard("heartbeat")
    assert (board["dataset_catalog"], board["dataset_schema"]) == ("sales", schema)
    assert board["warehouse_id"] == "abc" and json.loads(board["serialized_dashboard"])["pages"]
    # and each alert reads that schema's tables, every 5 minutes on the bundle's warehouse
    assert set(bundle.resources["alerts"]) == ALERTS
    for key, alert in bundle.resources["alerts"].items():
        named = {t.rsplit(".", 1)[0] for t in tables(alert["query_text"])}
        assert named == {f"sales.{schema}"}, key
        assert alert["warehouse_id"] == "abc" and alert["schedule"]["quartz_cron_schedule"] == "0 0/5 * * * ?"
    # and the names say which copy it is, as the jobs' do
    if target == "dev":
        assert board["display_name"] == "[dev dev_eloper] Heartbeat"
        assert all(a["display_name"].startswith("[dev dev_eloper] ") for a in bundle.resources["alerts"].values())


def test_prod_alerts_notify_the_bundles_destination_and_dev_alerts_notify_no_one() -> None:
    prod, dev = resolve("prod", VARIABLES), resolve("dev", VARIABLES, user="ann@example.com")
    for key in ALERTS:
        assert prod.alert(key)["evaluation"]["notification"]["subscriptions"] == [
            {"destination_id": "oncall-destination"}
        ]
        assert prod.alert(key)["schedule"]["pause_status"] == "UNPAUSED"
        assert dev.alert(key)["evaluation"]["notification"]["subscriptions"] == []
        assert dev.alert(key)["schedule"]["pause_status"] == "PAUSED"


def test_prod_without_a_destination_for_its_alerts_does_not_resolve() -> None:
    without = {k: v for k, v in VARIABLES.items() if k != "alert_destination_id"}
    with pytest.raises(ValueError, match="alert_destination_id"):
        resolve("prod", without)
    resolve("dev", without)  # a developer's copy needs none


def test_a_misspelt_alert_field_fails_the_resolution(tmp_path: Path) -> None:
    # GIVEN a copy of the bundle whose alert has a key the alerts resource does not know
    for name in ("databricks.yml", "resources"):
        copy = shutil.copytree if (PROJECT_DIR / name).is_dir() else shutil.copy
        copy(PROJECT_DIR / name, tmp_path / name)
    path = tmp_path / "resources" / "heartbeat_alerts.yml"
    alerts = yaml.safe_load(path.read_text())
    alerts["resources"]["alerts"]["job_failed"]["query"] = alerts["resources"]["alerts"]["job_failed"].pop("query_text")
    path.write_text(yaml.safe_dump(alerts))
    # WHEN it is resolved THEN the typed loader refuses it, naming the key
    with pytest.raises(ValueError, match="'query'"):
        resolve("prod", VARIABLES, root=tmp_path)


def test_every_dataset_and_alert_query_parses_and_names_only_the_heartbeats_tables_through_the_bundle() -> None:
    _, resources = load()
    board = dashboard(resolve("prod", VARIABLES))
    assert board.datasets
    for name, sql in board.datasets.items():
        # unqualified: the dashboard's dataset_catalog and dataset_schema, never a hard-coded name
        assert tables(sql) <= HEARTBEAT_TABLES, (name, tables(sql) - HEARTBEAT_TABLES)
    prod = resolve("prod", VARIABLES)
    for key, alert in resources["alerts"].items():
        # as written: each table through the bundle's references to the schema it creates
        named = re.findall(r"(\S+)\.(\w+)\s", alert["query_text"] + " ")
        assert named and {prefix for prefix, _ in named} == {SCHEMA_REFERENCE}, (key, named)
        # as resolved: that schema's, and the heartbeat's own
        assert tables(prod.alert(key)["query_text"]) <= {f"sales.heartbeat.{t}" for t in HEARTBEAT_TABLES}, key


def test_every_widget_shows_columns_its_dataset_returns() -> None:
    board = dashboard(resolve("prod", VARIABLES))
    assert {w.dataset for w in board.widgets} == set(board.datasets)  # no dataset shown nowhere
    for widget in board.widgets:
        returned = set(parse(board.datasets[widget.dataset]).named_selects)
        for field in widget.fields:
            columns = {c.name for c in parse(field["expression"].replace("`*`", "*")).find_all(exp.Column)} - {"*"}
            assert columns <= returned, (widget.name, columns - returned)
        shown = {f["name"] for f in widget.fields}
        encodings = widget.spec["encodings"]
        used = [c["fieldName"] for c in encodings.get("columns", [])] + [
            e["fieldName"] for e in encodings.values() if isinstance(e, dict)
        ]
        assert set(used) <= shown, (widget.name, set(used) - shown)


def test_the_no_tick_alert_fires_after_three_of_the_heartbeat_jobs_intervals() -> None:
    bundle = resolve("prod", VARIABLES)
    cron = bundle.job("heartbeat")["schedule"]["quartz_cron_expression"]
    minutes = re.fullmatch(r"0 0/(\d+) \* \* \* \?", cron)
    assert minutes, cron
    evaluation = bundle.alert("no_tick")["evaluation"]
    assert evaluation["source"]["name"] == "seconds_since_last_tick"
    assert evaluation["comparison_operator"] == "GREATER_THAN"
    assert evaluation["threshold"]["value"]["double_value"] == 3 * int(minutes.group(1)) * 60


def test_each_alert_names_what_to_do_and_the_docs_list_each_one() -> None:
    docs = (PROJECT_DIR / "docs" / "production.md").read_text()
    for key, alert in resolve("prod", VARIABLES).resources["alerts"].items():
        assert "What to do:" in alert["custom_description"] and alert["custom_summary"], key
        assert alert["display_name"] in docs, f"docs/production.md: no row for the alert {alert['display_name']!r}"
