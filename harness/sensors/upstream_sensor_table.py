"""upstream_sensor_table: another data product's Heartbeat control table or lakehouse-engine sensor
table shows a completed load newer than the watermark. How products chain without write access to
each other: the upstream product's table is only read.

sensor_id is `<table>: <upstream id>`. `<table>` is a Spark table name (`db.table`,
`catalog.db.table`) or an alias under `upstream_sensor_table.tables` in heartbeat.yml (with `table`
and optionally `match_column`). `<upstream id>` is matched against the table's `sensor_id` column
(or the alias's `match_column`, e.g. `trigger_job_id` to follow another product's job). A completed
load is a row with `status` `COMPLETED` (Heartbeat) or `PROCESSED_NEW_DATA` (lakehouse-engine); the
watermark is the newest such row's `status_change_timestamp`, the upstream's own clock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from harness.config import UpstreamTableAlias
from harness.errors import SensorError
from harness.model import SensorSource
from harness.preprocess import quote_identifier
from harness.sensors.base import Detection, NewData, NothingNew, Position, Sensor, Upstream, Watermark
from harness.sensors.spark_access import harness_spark, quoted_table_name, spark_error_text

COMPLETED_STATUSES = ("COMPLETED", "PROCESSED_NEW_DATA")


class UpstreamSensorTableSensor(Sensor):
    sources = (SensorSource.UPSTREAM_SENSOR_TABLE,)

    def _target(self, upstream: Upstream) -> tuple[str, str, str]:
        """(quoted table name, quoted match column, upstream id)."""
        table, sep, upstream_id = upstream.sensor_id.partition(":")
        table, upstream_id = table.strip(), upstream_id.strip()
        if not sep or not table or not upstream_id:
            raise SensorError(f"{upstream.label}: sensor_id must look like '<table>: <upstream sensor_id>', "
                              "e.g. 'sales_prod.heartbeat_control_table: orders'")
        spec = self.config.upstream_sensor_table.tables.get(table, UpstreamTableAlias(table=table))
        return quoted_table_name(upstream.label, spec.table), quote_identifier(spec.match_column), upstream_id

    def _completed(self, upstream: Upstream) -> tuple[str, dict[str, Any]]:
        """FROM ... WHERE for the upstream's completed loads, and its parameters."""
        table, column, upstream_id = self._target(upstream)
        statuses = ", ".join(f"'{s}'" for s in COMPLETED_STATUSES)
        return (f"FROM {table} WHERE {column} = :upstream_id AND status IN ({statuses})",
                {"upstream_id": upstream_id})

    def read_position(self, upstream: Upstream) -> Position:
        spark = harness_spark(upstream.label)
        where, args = self._completed(upstream)
        try:
            newest = spark.sql(f"SELECT max(status_change_timestamp) AS newest {where}", args=args).collect()[0][0]
        except Exception as exc:  # noqa: BLE001 - Spark analysis errors name the missing table or column
            raise SensorError(f"{upstream.label}: cannot read the upstream sensor table: "
                              f"{spark_error_text(exc)}") from exc
        if newest is not None and not isinstance(newest, datetime):
            raise SensorError(f"{upstream.label}: status_change_timestamp is {type(newest).__name__}, "
                              "expected a timestamp column")
        stamp = newest.isoformat() if newest is not None else None
        return Position(watermark={"status_change_timestamp": stamp}, observed=newest)

    def detect(self, upstream: Upstream, position: Position, since: Watermark | None) -> Detection:
        newest: datetime | None = position.observed
        previous = since.get("status_change_timestamp") if since else None
        if newest is None:
            return NothingNew("no completed load of it yet")
        if previous is not None and newest <= datetime.fromisoformat(previous):
            return NothingNew(f"no load completed after {previous}")
        return NewData(watermark=position.watermark, changes={
            "upstream_id": self._target(upstream)[2],
            "completed_from": previous,
            "completed_to": position.watermark["status_change_timestamp"],
        })

    def new_data_frame(self, spark: SparkSession, upstream: Upstream, position: Position,
                       since: Watermark | None) -> DataFrame:
        """The upstream's completed-load rows beyond the watermark."""
        where, args = self._completed(upstream)
        query = f"SELECT * {where} AND status_change_timestamp <= :upper"
        args["upper"] = position.observed
        previous = since.get("status_change_timestamp") if since else None
        if previous is not None:
            query += " AND status_change_timestamp > :lower"
            args["lower"] = datetime.fromisoformat(previous)
        return spark.sql(query, args=args)
