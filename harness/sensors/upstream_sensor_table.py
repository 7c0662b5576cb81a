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

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

from pyspark.sql import DataFrame

from harness.core.config import Config, UpstreamSensorTableSettings
from harness.core.errors import ConfigError, SensorError
from harness.core.preprocess import quote_identifier
from harness.core.vocabulary import SensorSource
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.context import CheckContext
from harness.sensors.declaration import SensorDeclaration
from harness.sensors.spark_sql import quoted_table_name, spark_error_text

COMPLETED_STATUSES = ("COMPLETED", "PROCESSED_NEW_DATA")
DEFAULT_MATCH_COLUMN = "sensor_id"


@dataclass(frozen=True)
class SensorTable:
    """A table to follow, quoted for Spark SQL: its name and the column matched against the upstream id."""

    table: str
    match_column: str


@dataclass(frozen=True)
class CompletedLoads:
    """The position of an upstream id: the newest completed load's timestamp (None: none yet)."""

    newest: datetime | None

    @property
    def watermark(self) -> Watermark:
        return {"status_change_timestamp": self.newest.isoformat() if self.newest is not None else None}


class UpstreamSensorTableSensor(Sensor[CompletedLoads]):
    def __init__(self, aliases: Mapping[str, SensorTable]) -> None:
        self.aliases = dict(aliases)

    @classmethod
    def from_settings(cls, section: UpstreamSensorTableSettings) -> UpstreamSensorTableSensor:
        """The aliases of `upstream_sensor_table.tables`, their names checked and quoted."""
        aliases = {}
        for alias, spec in section.tables.items():
            where = f"upstream_sensor_table.tables.{alias}.table"
            try:
                aliases[alias] = SensorTable(quoted_table_name(where, spec.table), quote_identifier(spec.match_column))
            except SensorError as exc:
                raise ConfigError(str(exc)) from None
        return cls(aliases)

    def _target(self, upstream: Upstream) -> tuple[SensorTable, str]:
        """(the table, the upstream id)."""
        table, sep, upstream_id = upstream.sensor_id.partition(":")
        table, upstream_id = table.strip(), upstream_id.strip()
        if not sep or not table or not upstream_id:
            raise SensorError(
                f"{upstream.label}: sensor_id must look like '<table>: <upstream sensor_id>', "
                "e.g. 'main.sales_prod.heartbeat_control_table: orders'"
            )
        if table in self.aliases:
            return self.aliases[table], upstream_id
        try:
            quoted = quoted_table_name(upstream.label, table)
        except SensorError as exc:
            aliases = ", ".join(sorted(self.aliases)) or "none"
            raise SensorError(
                f"{exc}, nor an alias of upstream_sensor_table.tables in heartbeat.yml (configured: {aliases})"
            ) from None
        return SensorTable(quoted, quote_identifier(DEFAULT_MATCH_COLUMN)), upstream_id

    def check_upstream(self, upstream: Upstream) -> None:
        self._target(upstream)

    def _completed(self, upstream: Upstream) -> tuple[str, dict[str, Any]]:
        """FROM ... WHERE for the upstream's completed loads, and its parameters."""
        target, upstream_id = self._target(upstream)
        statuses = ", ".join(f"'{s}'" for s in COMPLETED_STATUSES)
        return (
            f"FROM {target.table} WHERE {target.match_column} = :upstream_id AND status IN ({statuses})",
            {"upstream_id": upstream_id},
        )

    def read_position(self, context: CheckContext, upstream: Upstream) -> CompletedLoads:
        where, args = self._completed(upstream)
        try:
            with context.spark_until_deadline(upstream.label) as spark:
                newest = spark.sql(f"SELECT max(status_change_timestamp) AS newest {where}", args=args).collect()[0][0]
        except SensorError:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark analysis errors name the missing table or column
            if context.expired:
                raise context.timed_out(upstream.label) from exc
            raise SensorError(
                f"{upstream.label}: cannot read the upstream sensor table: {spark_error_text(exc)}"
            ) from exc
        if newest is not None and not isinstance(newest, datetime):
            raise SensorError(
                f"{upstream.label}: status_change_timestamp is {type(newest).__name__}, expected a timestamp column"
            )
        return CompletedLoads(newest)

    def detect(self, upstream: Upstream, position: CompletedLoads, since: Watermark | None) -> Detection:
        previous = since.get("status_change_timestamp") if since else None
        if position.newest is None:
            return NothingNew("no completed load of it yet")
        if previous is not None and position.newest <= datetime.fromisoformat(previous):
            return NothingNew(f"no load completed after {previous}")
        return NewData(
            watermark=position.watermark,
            changes={
                "upstream_id": self._target(upstream)[1],
                "completed_from": previous,
                "completed_to": position.watermark["status_change_timestamp"],
            },
        )

    def new_data_frame(
        self, context: CheckContext, upstream: Upstream, position: CompletedLoads, since: Watermark | None
    ) -> DataFrame:
        """The upstream's completed-load rows beyond the watermark."""
        where, args = self._completed(upstream)
        query = f"SELECT * {where} AND status_change_timestamp <= :upper"
        args["upper"] = position.newest
        previous = since.get("status_change_timestamp") if since else None
        if previous is not None:
            query += " AND status_change_timestamp > :lower"
            args["lower"] = datetime.fromisoformat(previous)
        return context.session(upstream.label).sql(query, args=args)


def build(config: Config, source: SensorSource) -> UpstreamSensorTableSensor:
    return UpstreamSensorTableSensor.from_settings(config.sources.upstream_sensor_table)


DECLARATION = SensorDeclaration(build=build)
