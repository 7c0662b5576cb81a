"""The sensors are built from their own sections of heartbeat.yml when the harness starts: a bad section
stops the start (and `validate`) with the key named, instead of failing every check of its rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.core.errors import ConfigError
from harness.sensors import build_registry
from tests.fixtures_sources import sensor_config

UNSET = "HB_TEST_VARIABLE_NOT_SET"
PG = {"url": "jdbc:postgresql://127.0.0.1:5432/lake", "driver": "org.postgresql.Driver", "user": "hb"}


@pytest.mark.parametrize(
    "sections, message",
    [
        (
            {"kafka": {"bootstrap_servers": "broker:9092", "password_env": UNSET}},
            f"kafka.password_env: environment variable {UNSET} is not set",
        ),
        (
            {"kafka": {"products": {"shop": {"username": "hb"}}}},
            "kafka.products.shop.bootstrap_servers: not set, neither for the product nor in kafka.bootstrap_servers",
        ),
        (
            {"kafka": {"bootstrap_servers": "broker:9092", "properties": {"request.timeout.ms": "soon"}}},
            "kafka.properties.request.timeout.ms: refused by librdkafka: Invalid value for configuration property "
            '"request.timeout.ms"',
        ),
        (
            {"jdbc": {**PG, "url": "postgresql://127.0.0.1/lake"}},
            "jdbc.connections.default.url: a JDBC URL starts with 'jdbc:'",
        ),
        (
            {"jdbc": {"connections": {"sales": {**PG, "password_env": UNSET}}}},
            f"jdbc.connections.sales.password_env: environment variable {UNSET} is not set",
        ),
        (
            {"jdbc": {"connections": {"sales": {**PG, "properties": {"queryTimeout": "soon"}}}}},
            "jdbc.connections.sales.properties.queryTimeout: a number of seconds, got 'soon'",
        ),
        (
            {"jdbc": {"connections": {"sales": {**PG, "log_table": "RSPCLOGCHAIN"}}}},
            "jdbc.connections.sales.log_table: only sap_bw and sap_b4 connections have a chain log table",
        ),
        (
            {"sap_b4": {"connections": {"b4": {**PG, "user": None, "user_env": UNSET}}}},
            f"sap_b4.connections.b4.user_env: environment variable {UNSET} is not set",
        ),
        (
            {"delta": {"storage_options_env": {"AWS_SECRET_ACCESS_KEY": UNSET}}},
            f"delta.storage_options_env.AWS_SECRET_ACCESS_KEY: environment variable {UNSET} is not set",
        ),
        (
            {"upstream_sensor_table": {"tables": {"le": {"table": "a.b.c.d"}}}},
            "upstream_sensor_table.tables.le.table: a table name is [catalog.]schema.table, got 'a.b.c.d'",
        ),
    ],
    ids=[
        "kafka-secret",
        "kafka-product-brokers",
        "kafka-property",
        "jdbc-url",
        "jdbc-secret",
        "jdbc-query-timeout",
        "jdbc-log-table",
        "sap-secret",
        "delta-secret",
        "upstream-table-name",
    ],
)
def test_bad_source_section_fails_when_the_registry_is_built_naming_the_key(
    sections: dict[str, Any], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a section that parses but cannot work (a secret's variable unset, a property librdkafka refuses, ...)
    monkeypatch.delenv(UNSET, raising=False)
    config = sensor_config(tmp_path, **sections)

    # WHEN the sensors are built (at start, and by `validate`), THEN it is refused, naming the key
    with pytest.raises(ConfigError) as refused:
        build_registry(config)
    assert str(refused.value).startswith(f"heartbeat.yml: refused:\n  {message}")


def test_every_bad_section_is_reported_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a bad kafka section and a bad jdbc section
    monkeypatch.delenv(UNSET, raising=False)
    config = sensor_config(
        tmp_path, kafka={"bootstrap_servers": "broker:9092", "password_env": UNSET}, jdbc={**PG, "url": "postgres://x"}
    )

    # WHEN the sensors are built, THEN one refusal names both
    with pytest.raises(ConfigError) as refused:
        build_registry(config)
    lines = str(refused.value).splitlines()[1:]
    assert [line.strip().split(":")[0] for line in lines] == ["kafka.password_env", "jdbc.connections.default.url"]
