"""`validate` checks the controls CSV's rows against heartbeat.yml: a row naming a connection, a catalog or a
section the file does not define, or a sensor_id its kind cannot read, is one whose every check would fail
at every tick. Each sensor says why (`Sensor.check_upstream`, the first step of its own check, so a tick's
failed check says the same), and `validate` names the row and what to change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.commands import cli
from harness.core.config import DELTA_JARS_ENV
from harness.core.errors import SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors import build_registry
from harness.sensors.base import Upstream
from tests.fixtures_sources import check_context, sensor_config
from tests.support import control_row, write_controls_csv

CONNECTION = {"url": "jdbc:postgresql://127.0.0.1:5432/lake", "driver": "org.postgresql.Driver", "user": "hb"}
CATALOG = {"properties": {"type": "sql", "uri": "sqlite:////nowhere/catalog.db", "warehouse": "file:///nowhere"}}


@pytest.fixture(autouse=True)
def no_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the configuration alone says: no trigger root or Delta jars from the environment."""
    for variable in ("HEARTBEAT_TRIGGER_ROOT", DELTA_JARS_ENV, "SPARK_HOME"):
        monkeypatch.delenv(variable, raising=False)


def project(tmp_path: Path, sections: dict[str, Any], rows: list[dict[str, str]]) -> Path:
    """A project of its own: heartbeat.yml with `sections`, and a controls CSV of `rows` (line 2 on)."""
    (tmp_path / "seeds").mkdir()
    write_controls_csv(tmp_path / "seeds" / "heartbeat_controls.csv", rows)
    return project_file(tmp_path, sections)


def project_file(tmp_path: Path, sections: dict[str, Any]) -> Path:
    """project()'s heartbeat.yml alone, with `sections` (the controls CSV as it is)."""
    config = tmp_path / "heartbeat.yml"
    csv_path = tmp_path / "seeds" / "heartbeat_controls.csv"
    config.write_text(
        json.dumps({"project_dir": str(tmp_path), "controls_csv": str(csv_path), **sections})
    )  # JSON is YAML
    return config


def validate(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(["--config", str(config), "validate"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# (heartbeat.yml sections, the row, what validate says of it after its name)
UNSERVED = {
    "a jdbc connection not defined": (
        {"jdbc": {"connections": {"sales": CONNECTION}}},
        control_row("jdbc", "crm: public.orders", "j", upstream_key="id"),
        "no connection 'crm' in the jdbc: section of heartbeat.yml (configured: sales); add "
        "jdbc.connections.crm with url, driver, user, password_env, or name a configured one in sensor_id "
        "('sales: public.orders')",
    ),
    "a jdbc row without a jdbc section": (
        {},
        control_row("jdbc", "public.orders", "j", upstream_key="id"),
        "heartbeat.yml defines no jdbc connection (a jdbc row reads only those of the jdbc: section); add a "
        "jdbc: section with url, driver, user, password_env (one connection given directly is the connection "
        "`default`)",
    ),
    "a jdbc table name of four parts": (
        {"jdbc": CONNECTION},
        control_row("jdbc", "a.b.c.d", "j", upstream_key="id"),
        "expected a table as [catalog.][schema.]table, got 'a.b.c.d'",
    ),
    "a sap_bw connection not defined": (
        {"sap_bw": CONNECTION},
        control_row("sap_bw", "bw_prod: ZPC_SALES", "j"),
        "no connection 'bw_prod' in the sap_bw: section of heartbeat.yml (configured: default); add "
        "sap_bw.connections.bw_prod with url, driver, user, password_env, or name a configured one in "
        "sensor_id ('default: ZPC_SALES')",
    ),
    "a sap_b4 row where only sap_bw is configured": (
        {"sap_bw": CONNECTION},
        control_row("sap_b4", "ZPC_SALES", "j"),
        "heartbeat.yml defines no sap_b4 connection (a sap_b4 row reads only those of the sap_b4: section); "
        "add a sap_b4: section with url, driver, user, password_env",
    ),
    "a sap_b4 connection named where the section has none": (
        {"sap_b4": {"schema": "SAPABAP1"}},
        control_row("sap_b4", "b4: ZPC_SALES", "j"),
        "heartbeat.yml defines no sap_b4 connection (a sap_b4 row reads only those of the sap_b4: section); "
        "add sap_b4.connections.b4 with url, driver, user, password_env",
    ),
    "an iceberg catalog not configured": (
        {"iceberg": {"catalogs": {"lake": CATALOG}}},
        control_row("iceberg_table", "warehouse: sales.orders", "j"),
        "no Iceberg catalog 'warehouse' in heartbeat.yml (iceberg.catalogs: lake); add "
        "iceberg.catalogs.warehouse with its pyiceberg properties (type, uri, warehouse), or name a "
        "configured one in sensor_id ('lake: sales.orders')",
    ),
    "an iceberg table without its catalog's default": (
        {},
        control_row("iceberg_table", "sales.orders", "j"),
        "no Iceberg catalog 'default' in heartbeat.yml (iceberg.catalogs: none); add iceberg.catalogs.default "
        "with its pyiceberg properties (type, uri, warehouse)",
    ),
    "an iceberg table without its namespace": (
        {"iceberg": {"catalogs": {"lake": CATALOG}}},
        control_row("iceberg_table", "lake: orders", "j"),
        "expected namespace.table after the catalog, e.g. sales.orders",
    ),
    "an upstream sensor table without the upstream id": (
        {},
        control_row("upstream_sensor_table", "other_product.heartbeat_control_table", "j"),
        "sensor_id must look like '<table>: <upstream sensor_id>', e.g. "
        "'main.sales_prod.heartbeat_control_table: orders'",
    ),
    "an upstream sensor table neither a table name nor an alias": (
        {"upstream_sensor_table": {"tables": {"sales": {"table": "sales_prod.heartbeat_control_table"}}}},
        control_row("upstream_sensor_table", "a.b.c.d: orders", "j"),
        "a table name is [catalog.]schema.table, got 'a.b.c.d', nor an alias of upstream_sensor_table.tables "
        "in heartbeat.yml (configured: sales)",
    ),
    "a kafka topic without brokers": (
        {},
        control_row("kafka", "shop: orders", "j"),
        "no Kafka brokers configured; set kafka.bootstrap_servers (or kafka.products.shop.bootstrap_servers) "
        "in heartbeat.yml",
    ),
    "a kafka topic name Kafka refuses": (
        {"kafka": {"bootstrap_servers": "broker:9092"}},
        control_row("kafka", "shop: new orders", "j"),
        "'new orders' is not a Kafka topic name (letters, digits, '.', '_', '-'); sensor_id is "
        "'product: topic' or 'topic'",
    ),
    "a named delta table without Delta on Spark": (
        {},
        control_row("delta_table", "sales.orders", "j"),
        "a named table is read with Spark's DESCRIBE HISTORY, which needs Delta on Spark's classpath (this "
        "heartbeat's Spark has none: no delta-spark jar in HEARTBEAT_DELTA_JARS or $SPARK_HOME/jars, and its "
        "dbt target is not databricks); give the table's path or URI as sensor_id instead",
    ),
    "a hive table name of four parts": (
        {},
        control_row("hive_table", "a.b.c.d", "j"),
        "a table name is [catalog.]schema.table, got 'a.b.c.d'",
    ),
    "a trigger file without a trigger root": (
        {},
        control_row("trigger_file", "orders_landed", "j"),
        "no trigger root configured; set trigger_file.root in heartbeat.yml or the HEARTBEAT_TRIGGER_ROOT "
        "environment variable",
    ),
    "a trigger folder out of the root": (
        {"trigger_file": {"root": "/tmp"}},
        control_row("trigger_file", "../escape", "j"),
        "sensor_id must name a folder inside the trigger root /tmp (a path relative to it, e.g. orders_landed)",
    ),
    "a trigger folder given by its absolute path": (
        {"trigger_file": {"root": "/tmp"}},
        control_row("trigger_file", "/etc", "j"),
        "sensor_id must name a folder inside the trigger root /tmp (a path relative to it, e.g. orders_landed)",
    ),
}


@pytest.mark.parametrize("sections, row, problem", UNSERVED.values(), ids=UNSERVED.keys())
def test_validate_refuses_a_row_heartbeat_yml_cannot_serve_naming_the_row_and_what_to_change(
    sections: dict[str, Any], row: dict[str, str], problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a controls CSV valid on its own, whose row names what heartbeat.yml does not define
    config = project(tmp_path, sections, [row])
    # WHEN validate runs
    code, out, err = validate(config, capsys)
    # THEN it exits non-zero, naming the row as the CSV's own check names rows, and what to change
    assert code == 2
    assert f"1 row that {config} cannot serve" in err
    name = f"line 2 ({row['sensor_source']} {row['sensor_id']!r} -> job j)"
    assert f"{name}: {problem}" in err, err
    assert "OK" not in out


@pytest.mark.parametrize("sections, row, problem", UNSERVED.values(), ids=UNSERVED.keys())
def test_a_ticks_check_of_an_unserved_row_fails_with_what_validate_says(
    sections: dict[str, Any], row: dict[str, str], problem: str, tmp_path: Path
) -> None:
    # GIVEN the sensor of the row's kind, built from that heartbeat.yml
    kind = SensorSource(row["sensor_source"])
    sensor = build_registry(sensor_config(tmp_path, **sections), [kind])[kind]
    upstream = Upstream(kind, row["sensor_id"], row["upstream_key"] or None)
    # WHEN validate's question is asked and a tick's check reads the upstream
    with pytest.raises(SensorError) as asked:
        sensor.check_upstream(upstream)
    with pytest.raises(SensorError) as checked:
        sensor.read_position(check_context(), upstream)
    # THEN both fail with the one message, naming the upstream, before anything is read
    assert str(asked.value) == str(checked.value)
    assert str(asked.value).startswith(f"{upstream.label}: {problem}")


def test_validate_passes_rows_of_every_kind_that_heartbeat_yml_serves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a heartbeat.yml defining what each row names (Delta on Spark: its jars named), and the rows
    monkeypatch.setenv(DELTA_JARS_ENV, str(tmp_path / "delta-spark.jar"))
    sections = {
        "trigger_file": {"root": str(tmp_path / "triggers")},  # not there yet: created before the files land
        "jdbc": {"connections": {"default": CONNECTION, "crm": CONNECTION}},
        "sap_bw": CONNECTION,
        "sap_b4": {"connections": {"b4": CONNECTION}},
        "iceberg": {"catalogs": {"default": CATALOG, "lake": CATALOG}},
        "upstream_sensor_table": {"tables": {"sales": {"table": "sales_prod.heartbeat_control_table"}}},
        "kafka": {
            "bootstrap_servers": "broker:9092",
            "products": {"shop": {"bootstrap_servers": "shop:9092"}, "billing": {}},
        },
    }
    rows = [
        control_row("trigger_file", "orders_landed", "j"),
        control_row("jdbc", "public.orders", "j", upstream_key="id"),
        control_row("jdbc", "crm: public.customers", "j", upstream_key="id"),
        control_row("sap_bw", "ZPC_SALES", "j"),
        control_row("sap_b4", "b4: ZPC_SALES", "j"),
        control_row("iceberg_table", "sales.orders", "j"),
        control_row("iceberg_table", "lake: sales.orders", "j"),
        control_row("upstream_sensor_table", "sales: orders", "j"),
        control_row("upstream_sensor_table", "main.other.heartbeat_control_table: orders", "j"),
        control_row("kafka", "shop: orders", "j"),
        control_row("kafka", "billing: invoices", "j"),  # listed without settings: the kafka: section's
        control_row("kafka", "orders", "j"),
        control_row("delta_table", "/lake/sales/orders", "j"),
        control_row("lmu_delta_table", "sales.uploads", "j"),
        control_row("hive_table", "sales.orders", "j"),
        control_row("published", "sales.orders", "j"),
    ]
    config = project(tmp_path, sections, rows)
    # WHEN validate runs, THEN it passes and notes nothing
    code, out, err = validate(config, capsys)
    assert (code, err) == (0, "")
    assert f"OK, {len(rows)} rows, 1 jobs" in out and "note: line" not in out


def test_validate_lists_every_unserved_row_at_once_each_by_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two jobs reading one undefined connection's table, beside a row heartbeat.yml serves
    rows = [
        control_row("jdbc", "crm: public.orders", "daily", upstream_key="id"),
        control_row("jdbc", "public.orders", "daily", upstream_key="id"),
        control_row("jdbc", "crm: public.orders", "hourly", upstream_key="id"),
    ]
    config = project(tmp_path, {"jdbc": CONNECTION}, rows)
    # WHEN validate runs, THEN both rows are named, the served one is not
    code, _, err = validate(config, capsys)
    assert code == 2 and f"2 rows that {config} cannot serve" in err
    assert "line 2 (jdbc 'crm: public.orders' -> job daily): no connection 'crm'" in err
    assert "line 4 (jdbc 'crm: public.orders' -> job hourly): no connection 'crm'" in err
    assert "line 3" not in err


def test_validate_notes_a_paused_row_heartbeat_yml_cannot_serve_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a paused row naming a SAP system heartbeat.yml does not define yet (a paused row is not checked)
    config = project(tmp_path, {}, [control_row("sap_b4", "ZPC_SALES", "j", paused=True)])
    # WHEN validate runs, THEN it passes, noting what its checks will say once the row is unpaused
    code, out, _ = validate(config, capsys)
    assert code == 0
    assert (
        "note: line 2 (sap_b4 'ZPC_SALES' -> job j): paused; once unpaused, each check of it fails: heartbeat.yml "
        "defines no sap_b4 connection"
    ) in out
    assert "OK, 1 rows, 1 jobs" in out


def test_validate_notes_a_preprocess_query_every_check_runs_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a query of the time and one of the new data alone, on a topic heartbeat.yml serves
    of_the_time = "SELECT * FROM sensor_new_data WHERE timestamp > current_timestamp() - INTERVAL 1 HOUR"
    rows = [
        control_row("kafka", "orders", "recent", preprocess_query=of_the_time),
        control_row("kafka", "orders", "marked", preprocess_query="SELECT * FROM sensor_new_data WHERE key = 'done'"),
    ]
    config = project(tmp_path, {"kafka": {"bootstrap_servers": "broker:9092"}}, rows)
    # WHEN validate runs, THEN it passes, noting the row whose query a cron tick runs at every tick
    code, out, _ = validate(config, capsys)
    assert code == 0 and "OK, 2 rows, 2 jobs" in out
    assert "note: line 2 (kafka 'orders' -> job recent): its preprocess_query reads the time, chance" in out
    assert "line 3" not in out


def test_validate_says_every_problem_of_both_files_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a controls CSV with a bad row, and a heartbeat.yml refused three ways in turn: a misspelt
    # key, a source section librdkafka refuses, and a file YAML cannot read
    rows = [control_row("kafka", "orders", "j") | {"job_state": "?"}]
    config = project(tmp_path, {"sensing": {"check_timeout_secnds": 5}}, rows)
    csv_path = tmp_path / "seeds" / "heartbeat_controls.csv"
    # WHEN validate runs, THEN it names the key and the CSV's row in one run
    code, out, err = validate(config, capsys)
    assert code == 2 and "did you mean 'check_timeout_seconds'?" in err
    assert "line 2" in err and "unknown job_state '?'" in err and out == ""

    refused_section = {"kafka": {"bootstrap_servers": "127.0.0.1:9", "properties": {"request.timeout.msx": "5"}}}
    config = project_file(tmp_path, refused_section)
    code, out, err = validate(config, capsys)
    assert code == 2 and "kafka.properties.request.timeout.msx: refused by librdkafka" in err
    assert "unknown job_state '?'" in err

    # WHEN the CSV is fixed, THEN the refused section alone is said, and the CSV's own rows pass
    write_controls_csv(csv_path, [control_row("kafka", "orders", "j")])
    code, out, err = validate(config, capsys)
    assert code == 2 and "request.timeout.msx" in err and "job_state" not in err
    assert f"{csv_path}: OK, 1 rows (checked against heartbeat.yml once that file is accepted)" in out

    # WHEN heartbeat.yml cannot be read, THEN the CSV named on the command line is checked all the same
    config.write_text("sensing: [\n")
    assert cli.main(["--config", str(config), "validate", str(csv_path)]) == 2
    captured = capsys.readouterr()
    assert f"{csv_path}: OK, 1 rows" in captured.out and str(config) in captured.err
    # and without it, validate says the CSV could not be found
    code, out, err = validate(config, capsys)
    assert code == 2 and "the controls CSV is not checked: heartbeat.yml must be read to find it" in err


def test_validate_notes_a_kafka_product_without_settings_where_heartbeat_yml_lists_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a product on a cluster of its own, a row naming it misspelt, and one naming it right
    kafka = {"bootstrap_servers": "127.0.0.1:9092", "products": {"shop": {"bootstrap_servers": "127.0.0.1:9093"}}}
    rows = [control_row("kafka", "shpo: orders", "misspelt"), control_row("kafka", "shop: orders", "right")]
    config = project(tmp_path, {"kafka": kafka}, rows)
    # WHEN validate runs, THEN it passes (a product may be a label alone) and notes the misspelt one
    code, out, _ = validate(config, capsys)
    assert code == 0 and "OK, 2 rows, 2 jobs" in out
    assert (
        "note: line 2 (kafka 'shpo: orders' -> job misspelt): product 'shpo' has no settings under "
        "kafka.products (shop), so its checks read the kafka: section's cluster; check its spelling, or list "
        "it there (`shpo: {}` keeps the kafka: section's settings)"
    ) in out
    assert "line 3" not in out
    # WHEN no product has settings of its own, THEN products are labels and nothing is noted
    config = project_file(tmp_path, {"kafka": {"bootstrap_servers": "127.0.0.1:9092"}})
    code, out, _ = validate(config, capsys)
    assert code == 0 and "note: line" not in out


def test_validate_refuses_a_databricks_job_id_that_is_no_number_and_notes_an_unset_token_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the Databricks backend, a token variable this environment lacks, and a job named, not numbered
    monkeypatch.delenv("HB_TEST_DBX_TOKEN", raising=False)
    sections = {"backend": "databricks", "catalog": "main", "databricks": {"token_env": "HB_TEST_DBX_TOKEN"}}
    rows = [control_row("published", "sales.orders", "orders-job"), control_row("published", "sales.items", "42")]
    config = project(tmp_path, sections, rows)
    # WHEN validate runs, THEN the named job's row is refused, saying what to set, and the other is not
    code, _, err = validate(config, capsys)
    assert code == 2 and "1 row that" in err
    assert "line 2 (published 'sales.orders' -> job orders-job): Databricks job ids are numbers" in err
    assert "line 3" not in err
    # WHEN the job is numbered, THEN it passes, noting the variable the heartbeat's environment must set
    write_controls_csv(tmp_path / "seeds" / "heartbeat_controls.csv", [control_row("published", "sales.orders", "41")])
    code, out, _ = validate(config, capsys)
    assert code == 0 and "note: databricks.token_env: HB_TEST_DBX_TOKEN is not set in this environment" in out


def test_validate_notes_a_trigger_folder_not_written_in_its_plain_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN three rows of one job naming one folder three ways
    rows = [control_row("trigger_file", name, "j") for name in ("orders", "orders/", "./orders")]
    config = project(tmp_path, {"trigger_file": {"root": str(tmp_path)}}, rows)
    # WHEN validate runs, THEN the two other ways are noted with the plain one to write
    code, out, _ = validate(config, capsys)
    assert code == 0
    assert "note: line 3 (trigger_file 'orders/' -> job j): the folder is written 'orders/'; write it 'orders'" in out
    assert "note: line 4 (trigger_file './orders' -> job j): the folder is written './orders'; write it" in out
    assert "note: line 2" not in out


def test_a_max_range_changed_while_steps_wait_says_what_the_next_runs_are_handed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.core.state_layout import StateLayout

    # GIVEN four rows whose last tick left steps of their range unconsumed (d: none), each with max_range 2
    def row(name: str, max_range: str) -> dict[str, str]:
        return {**control_row("trigger_file", name, f"job_{name}"), "max_range": max_range}

    steps = json.dumps([json.dumps({"file": f"batch-{i}"}) for i in range(5)])
    state = tmp_path / "state"
    StateLayout(state).snapshot.parent.mkdir(parents=True)
    StateLayout(state).snapshot.write_text(
        json.dumps(
            {
                "rows": [
                    {
                        "sensor_source": "trigger_file",
                        "sensor_id": name,
                        "trigger_job_id": f"job_{name}",
                        "max_range": 2,
                        "range_steps": steps if name != "d" else "[]",
                    }
                    for name in "abcd"
                ]
            }
        )
    )
    # WHEN the CSV removes a's max_range, raises b's to 3, keeps c's, and raises d's
    rows = [row("a", ""), row("b", "3"), row("c", "2"), row("d", "3")]
    config = project(tmp_path, {"trigger_file": {"root": str(tmp_path)}, "state_dir": str(state)}, rows)
    code, out, _ = validate(config, capsys)
    # THEN validate says what a's and b's next runs are handed; c and d have nothing to say
    assert code == 0, out
    notes = [line for line in out.splitlines() if line.startswith("note:") and "max_range" in line]
    assert notes == [
        "note: line 2 (trigger_file 'a' -> job job_a): max_range 2 removed with 5 steps of its range not consumed "
        "yet (as of the last tick): its next run, at its next new data, is handed them all",
        "note: line 3 (trigger_file 'b' -> job job_b): max_range 2 -> 3 with 5 steps of its range not consumed "
        "yet (as of the last tick): they go in 2 runs",
    ]
