"""Driving the refresh materialization in tests: the example project demo/refresh_examples (a downstream dbt
project that installs Heartbeat as a local package) in a schema of the test's own, on the session's
SparkSession. A test writes a model's next batch (`src_<model>`), runs dbt with the batch id the heartbeat
would give (HEARTBEAT_RUN_CONTEXT_ID), and reads the tables back as sorted rows.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from dbt.cli.main import dbtRunner
from pyspark.sql import SparkSession

from harness.core.config import PROJECT_DIR, Config
from harness.platform.dbt_runner import DbtOutcome
from harness.refresh import runner

EXAMPLES_DIR = PROJECT_DIR / "demo" / "refresh_examples"

# The columns of each example model's batch (its source table src_<model>).
SOURCE_SCHEMAS = {
    "key_orders": "order_id int, status string, amount double, updated_at timestamp",
    "key_customers": "country string, customer_no int, name string, extracted_at timestamp",
    "ts_readings": "sensor string, read_at string, reading double",
    "ts_iso_readings": "sensor string, read_at string, reading double",
    "seq_ledger": "entry_no bigint, account string, amount double",
    "full_prices": "product string, price double",
    "none_events": "event_id int, kind string",
    "custom_stock": "warehouse string, item string, quantity int",
    "key_amounts": "id int, amount int, price decimal(5,2)",
    "key_logins": "user_id int, last_login timestamp",
    "key_dates": "id int, status string, updated_at string",
    "bad_params": "id int, updated_at timestamp",
}
BAD_MODELS = (
    "bad_missing_parameter",
    "bad_unknown_parameter",
    "bad_unknown_column",
    "bad_custom_predicate",
    "bad_unique_key",
    "bad_unique_key_range",
    "bad_fine_format",
    "bad_unread_settings",
)


def install_package() -> None:
    """`dbt deps` for the example project: Heartbeat as a local package (no network)."""
    if (EXAMPLES_DIR / "dbt_packages" / "heartbeat").exists():
        return
    result = dbtRunner().invoke(
        ["--quiet", "deps", "--project-dir", str(EXAMPLES_DIR), "--profiles-dir", str(EXAMPLES_DIR)]
    )
    assert result.success, result.exception


def examples_config(state_dir: Path, schema: str, target_dir: Path) -> Config:
    return Config(
        config_path=None,
        project_dir=EXAMPLES_DIR,
        state_dir=state_dir,
        schema=schema,
        controls_csv=EXAMPLES_DIR / "seeds" / "heartbeat_controls.csv",
        dbt_target_dir=target_dir,
    )


@contextmanager
def environment(**values: str | None) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def plain(value: Any) -> Any:
    """Spark values as comparable plain values (timestamps as text, to the microsecond when they have
    one; decimals as floats)."""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    return value


@dataclass
class RefreshProject:
    spark: SparkSession
    config: Config

    @property
    def schema(self) -> str:
        return self.config.schema

    def write_batch(self, model: str, rows: Sequence[Sequence[Any]], schema: str | None = None) -> None:
        """The model's next batch; `schema`: its columns' types when not the usual ones."""
        source = "bad_params" if model in BAD_MODELS else model
        frame = self.spark.createDataFrame(list(rows), schema or SOURCE_SCHEMAS[source])
        frame.write.mode("overwrite").format("parquet").saveAsTable(f"{self.schema}.src_{source}")

    def run(self, *models: str, batch: str, fail_at: str | None = None, **variables: Any) -> DbtOutcome:
        """`dbt run` of the models, as the heartbeat's run `batch` would (raises DbtError on failure)."""
        with environment(HEARTBEAT_RUN_CONTEXT_ID=batch, HEARTBEAT_FAIL_AT=fail_at):
            return runner.run(self.config, ["run", "--select", *models], **variables)

    def load(
        self,
        batches: Mapping[str, Sequence[Sequence[Any]]],
        batch: str,
        schemas: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Write each model's batch (`schemas`: other column types, by model), then run them all as one batch id."""
        for model, rows in batches.items():
            self.write_batch(model, rows, (schemas or {}).get(model))
        self.run(*batches, batch=batch, **kwargs)

    def exists(self, table: str) -> bool:
        return bool(self.spark.catalog.tableExists(f"{self.schema}.{table}"))

    def rows(self, table: str, columns: Sequence[str] | None = None, where: str = "true") -> list[tuple[Any, ...]]:
        """The table's rows (the given columns, all by default), sorted."""
        self.spark.sql(f"refresh table {self.schema}.{table}")
        frame = self.spark.sql(f"select * from {self.schema}.{table} where {where}")
        picked = frame.select(*columns) if columns else frame
        return sorted((tuple(plain(v) for v in row) for row in picked.collect()), key=repr)

    def metrics(self, model: str) -> dict[str, dict[str, Any]]:
        """The metrics rows of a model, by batch id."""
        rows = self.spark.sql(f"select * from {self.schema}.{model}__metrics").collect()
        return {r["batch_id"]: {k: plain(v) for k, v in r.asDict().items()} for r in rows}

    def dump(self, *tables: str) -> dict[str, list[list[Any]]]:
        return {t: [list(r) for r in self.rows(t)] for t in tables if self.exists(t)}
