"""Reading what dbt built: the control table, the sensing eligibility and the trigger set."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timezone
from typing import Any

from pyspark.sql import SparkSession

from harness.events import schema_name
from harness.model import ControlRow, RowKey

CONTROL_TABLE = "heartbeat_control_table"
ELIGIBILITY = "heartbeat_sensing_eligibility"
TRIGGER_SET = "heartbeat_trigger_set"


@dataclass(frozen=True)
class JobDecision:
    job_id: str
    job_name: str | None
    should_start: bool
    reason: str


def relation(name: str) -> str:
    return f"{schema_name()}.{name}"


def exists(spark: SparkSession, name: str) -> bool:
    return bool(spark.catalog.tableExists(relation(name)))


def _utc(value: Any) -> Any:
    return value.replace(tzinfo=timezone.utc) if value is not None else None


def _control_row(r: dict[str, Any]) -> ControlRow:
    return ControlRow(
        key=RowKey(r["sensor_source"], r["sensor_id"], r["trigger_job_id"]),
        upstream_key=r["upstream_key"],
        preprocess_query=r["preprocess_query"],
        trigger_job_name=r["trigger_job_name"],
        is_hard_dependency=bool(r["is_hard_dependency"]),
        job_state=r["job_state"],
        status=r["status"],
        watermark=r["watermark"],
        last_success_watermark=r["last_success_watermark"],
        trigger_watermark=r["trigger_watermark"],
        latest_trigger_token=r["latest_trigger_token"],
        latest_run_id=r["latest_run_id"],
        job_start_timestamp=_utc(r["job_start_timestamp"]),
    )


def control_rows(spark: SparkSession) -> list[ControlRow]:
    if not exists(spark, CONTROL_TABLE):
        return []
    return [_control_row(r.asDict()) for r in spark.table(relation(CONTROL_TABLE)).collect()]


def control_table(spark: SparkSession) -> list[dict[str, Any]]:
    if not exists(spark, CONTROL_TABLE):
        return []
    df = spark.table(relation(CONTROL_TABLE)).orderBy("trigger_job_id", "sensor_source", "sensor_id")
    return [r.asDict() for r in df.collect()]


def sensed_rows(spark: SparkSession) -> list[ControlRow]:
    """Rows to sense this tick (the eligibility model), with their control-table state."""
    if not exists(spark, ELIGIBILITY):
        return []
    df = spark.sql(
        f"SELECT c.* FROM {relation(CONTROL_TABLE)} c JOIN {relation(ELIGIBILITY)} e "
        "USING (sensor_source, sensor_id, trigger_job_id) WHERE e.is_sensed"
    )
    return [_control_row(r.asDict()) for r in df.collect()]


def job_decisions(spark: SparkSession) -> list[JobDecision]:
    if not exists(spark, TRIGGER_SET):
        return []
    df = spark.table(relation(TRIGGER_SET)).orderBy("trigger_job_id")
    return [JobDecision(r.trigger_job_id, r.trigger_job_name, bool(r.should_start), r.reason) for r in df.collect()]
