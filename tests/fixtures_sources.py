"""Session fixtures for the source sensors: the real components they are tested against."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest
from pyspark.sql import SparkSession

from harness.core.config import Config, config_from_mapping
from harness.core.vocabulary import ControlRow, RowKey
from harness.sensors.context import CheckContext
from tests.kafka_mock import MockKafka
from tests.postgres import PASSWORD as PG_PASSWORD
from tests.postgres import USER as PG_USER
from tests.postgres import PostgresServer


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL 15 server on 127.0.0.1, stopped at the end of the session."""
    server = PostgresServer.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def kafka() -> Iterator[MockKafka]:
    """librdkafka's mock cluster; its brokers listen on 127.0.0.1."""
    cluster = MockKafka.start()
    yield cluster
    cluster.producer.flush(5)


PG_PASSWORD_ENV = "HB_TEST_PG_PASSWORD"


def sensor_config(tmp_path: Path, timeout: float = 20.0, **sections: Mapping[str, Any]) -> Config:
    """A Config with only the given heartbeat.yml sections; a sensor takes its own section of it."""
    raw = {
        "state_dir": str(tmp_path / "state"),
        "sensing": {"check_timeout_seconds": timeout, "max_parallel_checks": 4},
        **sections,
    }
    return config_from_mapping(raw, base=tmp_path)


def sensed_row(source: str, sensor_id: str, job: str, **fields: Any) -> ControlRow:
    """A control row as sensing reads it: hard, UNPAUSED, never sensed, no run yet; `fields` set the rest."""
    row = ControlRow(
        key=RowKey(source, sensor_id, job),
        upstream_key=None,
        preprocess_query=None,
        trigger_job_name=job,
        is_hard_dependency=True,
        job_state="UNPAUSED",
        status=None,
        watermark=None,
        last_success_watermark=None,
        trigger_watermark=None,
        latest_trigger_token=None,
        latest_run_id=None,
        job_start_timestamp=None,
    )
    return replace(row, **fields)


def check_context(spark: SparkSession | None = None, timeout: float = 20.0) -> CheckContext:
    """The context of one check started now, as sensing gives it: the session and a deadline."""
    return CheckContext.starting_now(spark, timeout)


def pg_connection(server: PostgresServer, **extra: Any) -> dict[str, Any]:
    """A heartbeat.yml connection to the test server; the password is read from PG_PASSWORD_ENV."""
    return {
        "url": server.url,
        "driver": "org.postgresql.Driver",
        "user": PG_USER,
        "password_env": PG_PASSWORD_ENV,
        **extra,
    }


@pytest.fixture
def pg_password(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(PG_PASSWORD_ENV, PG_PASSWORD)
    return PG_PASSWORD


def a_moment_later() -> datetime:
    """A time strictly between what was written (or landed) before and what is written after: clocks tick
    in milliseconds."""
    time.sleep(0.05)
    moment = datetime.now(timezone.utc)
    time.sleep(0.05)
    return moment
