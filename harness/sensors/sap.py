"""sap_bw / sap_b4: a process chain's green run in SAP's chain log table, over JDBC.

sensor_id is `[connection:] CHAIN_ID`, e.g. `bw_prod: ZPC_SALES_DAILY`. The connection comes from the
`sap_bw:` or `sap_b4:` section (same shape as `jdbc:`), with `schema` (default: none) and `log_table`
(default `RSPCLOGCHAIN`) beside the url. New data is a log with `ANALYZED_STATUS = 'G'` whose
`DATUM || ZEIT` (SAP's own date and time, `YYYYMMDDHHMMSS`) is beyond the watermark. The watermark is
that string, read back and compared as text: the harness's clock never enters the comparison.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame, SparkSession

from harness.config import SapSettings
from harness.errors import SensorError
from harness.model import SensorSource
from harness.sensors.base import Detection, NewData, NothingNew, Position, Sensor, Upstream, Watermark
from harness.sensors.jdbc import JdbcConnection, find_connection, jdbc_frame, jdbc_rows, split_connection
from harness.sensors.spark_access import harness_spark

GREEN = "G"
_SAP_TIME = re.compile(r"^\d{14}$")


class SapChainSensor(Sensor):
    sources = (SensorSource.SAP_BW, SensorSource.SAP_B4)

    @property
    def timeout(self) -> float:
        return self.config.sensing.check_timeout_seconds

    def _target(self, upstream: Upstream) -> tuple[JdbcConnection, str, str]:
        """(connection, quoted log table, chain id)."""
        section: SapSettings = getattr(self.config, upstream.source.value)
        connection, chain_id = find_connection(section, upstream.source.value, upstream)
        schema = connection.extra.get("schema", section.schema_)
        log_table = str(connection.extra.get("log_table", section.log_table))
        parts = (str(schema), log_table) if schema else (log_table,)
        return connection, connection.quote_path(parts), chain_id

    def _green_logs(self, connection: JdbcConnection, table: str, chain_id: str) -> tuple[str, str]:
        """(FROM ... WHERE clause for the chain's green logs, the DATUM || ZEIT expression)."""
        q = connection.quote
        sap_time = f"{q('DATUM')} || {q('ZEIT')}"
        where = (f"FROM {table} WHERE {q('CHAIN_ID')} = {connection.literal(chain_id)} "
                 f"AND {q('ANALYZED_STATUS')} = {connection.literal(GREEN)}")
        return where, sap_time

    def read_position(self, upstream: Upstream) -> Position:
        connection, table, chain_id = self._target(upstream)
        green, sap_time = self._green_logs(connection, table, chain_id)
        query = f"SELECT MAX({sap_time}) AS newest, COUNT(*) AS green_logs {green}"
        rows = jdbc_rows(harness_spark(upstream.label), connection, query, self.timeout, upstream.label)
        newest = rows[0]["newest"] if rows else None
        if newest is not None and not _SAP_TIME.match(str(newest)):
            raise SensorError(f"{upstream.label}: DATUM || ZEIT of the newest green log is {newest!r}, expected "
                              "YYYYMMDDHHMMSS; check that log_table points at the chain log (RSPCLOGCHAIN)")
        return Position(watermark={"sap_time": newest}, observed=int(rows[0]["green_logs"]) if rows else 0)

    def detect(self, upstream: Upstream, position: Position, since: Watermark | None) -> Detection:
        newest = position.watermark["sap_time"]
        previous = since.get("sap_time") if since else None
        if newest is None:
            return NothingNew("the chain has no green log")
        if previous is not None and newest <= previous:
            return NothingNew(f"no green log after SAP time {previous}")
        changes = {
            "chain_id": split_connection(upstream)[1],
            "sap_time_from": previous,
            "sap_time_to": newest,
            "datum": newest[:8],
            "zeit": newest[8:],
        }
        return NewData(watermark={"sap_time": newest}, changes=changes)

    def new_data_frame(self, spark: SparkSession, upstream: Upstream, position: Position,
                       since: Watermark | None) -> DataFrame:
        """The chain's green logs beyond the watermark, up to the position read this tick."""
        connection, table, chain_id = self._target(upstream)
        green, sap_time = self._green_logs(connection, table, chain_id)
        query = f"SELECT * {green} AND {sap_time} <= {connection.literal(position.watermark['sap_time'] or '')}"
        previous = since.get("sap_time") if since else None
        if previous is not None:
            query += f" AND {sap_time} > {connection.literal(str(previous))}"
        return jdbc_frame(spark, connection, query, self.timeout, upstream.label)
