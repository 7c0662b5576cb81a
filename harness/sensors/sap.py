"""sap_bw / sap_b4: a process chain's green run in SAP's chain log table, over JDBC.

sensor_id is `[connection:] CHAIN_ID`, e.g. `bw_prod: ZPC_SALES_DAILY`. The connection comes from the
`sap_bw:` or `sap_b4:` section (same shape as `jdbc:`), with `schema` (default: none) and `log_table`
(default `RSPCLOGCHAIN`) beside the url or on a connection of its own. New data is a log with
`ANALYZED_STATUS = 'G'` whose `DATUM || ZEIT` (SAP's own date and time, `YYYYMMDDHHMMSS`) is beyond
the watermark. The watermark is that string, read back and compared as text: the harness's clock
never enters the comparison.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timezone
from typing import Mapping

from pyspark.sql import DataFrame

from harness.core.config import Config, SapSettings
from harness.core.errors import SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.context import CheckContext
from harness.sensors.declaration import PositionQuery, SensorDeclaration
from harness.sensors.jdbc import (
    JdbcConnection,
    connection_from,
    jdbc_frame,
    jdbc_rows,
    split_connection,
    unknown_connection,
)

GREEN = "G"
_SAP_TIME = re.compile(r"^\d{14}$")


@dataclass(frozen=True)
class ChainLog:
    """One SAP system's chain log: its connection and the quoted `[schema.]log_table`."""

    connection: JdbcConnection
    table: str

    def green_logs(self, chain_id: str) -> tuple[str, str]:
        """(FROM ... WHERE clause for the chain's green logs, the DATUM || ZEIT expression)."""
        q, literal = self.connection.quote, self.connection.literal
        sap_time = f"{q('DATUM')} || {q('ZEIT')}"
        where = (
            f"FROM {self.table} WHERE {q('CHAIN_ID')} = {literal(chain_id)} "
            f"AND {q('ANALYZED_STATUS')} = {literal(GREEN)}"
        )
        return where, sap_time


@dataclass(frozen=True)
class GreenLogs:
    """The position of a chain: the SAP time of its newest green log (None: none yet), and how many."""

    newest: str | None
    count: int

    @property
    def watermark(self) -> Watermark:
        return {"sap_time": self.newest}


class SapChainSensor(Sensor[GreenLogs]):
    """The sensor of one SAP source kind (`sap_bw` or `sap_b4`): each has its own section."""

    def __init__(self, source: SensorSource, logs: Mapping[str, ChainLog]) -> None:
        self.source = source
        self.logs = dict(logs)

    @classmethod
    def from_settings(cls, source: SensorSource, section: SapSettings) -> SapChainSensor:
        """The `sap_bw:` / `sap_b4:` section resolved: URLs checked, secrets read from the environment."""
        logs = {}
        for name, spec in section.connections.items():
            connection = connection_from(name, spec, f"{source.value}.connections.{name}")
            schema = spec.schema_ or section.schema_
            log_table = spec.log_table or section.log_table
            parts = (schema, log_table) if schema else (log_table,)
            logs[name] = ChainLog(connection, connection.quote_path(parts))
        return cls(source, logs)

    def _target(self, upstream: Upstream) -> tuple[ChainLog, str]:
        """(the chain log, the chain id)."""
        name, chain_id = split_connection(upstream)
        if name not in self.logs:
            raise unknown_connection(upstream, name, upstream.kind.value, self.logs)
        return self.logs[name], chain_id

    def check_upstream(self, upstream: Upstream) -> None:
        self._target(upstream)

    def read_position(self, context: CheckContext, upstream: Upstream) -> GreenLogs:
        log, chain_id = self._target(upstream)
        green, sap_time = log.green_logs(chain_id)
        query = f"SELECT MAX({sap_time}) AS newest, COUNT(*) AS green_logs {green}"
        rows = jdbc_rows(context, log.connection, query, upstream.label)
        newest = rows[0]["newest"] if rows else None
        if newest is not None and not _SAP_TIME.match(str(newest)):
            raise SensorError(
                f"{upstream.label}: DATUM || ZEIT of the newest green log is {newest!r}, expected "
                "YYYYMMDDHHMMSS; check that log_table points at the chain log (RSPCLOGCHAIN)"
            )
        return GreenLogs(str(newest) if newest is not None else None, int(rows[0]["green_logs"]) if rows else 0)

    def detect(self, upstream: Upstream, position: GreenLogs, since: Watermark | None) -> Detection:
        newest = position.newest
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
        return NewData(watermark=position.watermark, changes=changes)

    def new_data_frame(
        self, context: CheckContext, upstream: Upstream, position: GreenLogs, since: Watermark | None
    ) -> DataFrame:
        """The chain's green logs beyond the watermark, up to the position read this tick."""
        log, chain_id = self._target(upstream)
        green, sap_time = log.green_logs(chain_id)
        literal = log.connection.literal
        query = f"SELECT * {green} AND {sap_time} <= {literal(position.newest or '')}"
        previous = since.get("sap_time") if since else None
        if previous is not None:
            query += f" AND {sap_time} > {literal(str(previous))}"
        return jdbc_frame(context, log.connection, query, upstream.label)


def build(config: Config, source: SensorSource) -> SapChainSensor:
    """Each kind its own section: `sap_bw:` or `sap_b4:`."""
    return SapChainSensor.from_settings(
        source, config.sources.sap_bw if source is SensorSource.SAP_BW else config.sources.sap_b4
    )


def position_at(query: PositionQuery) -> Watermark:
    """The chain's watermark at the time: SAP's `DATUM || ZEIT` of that time, read as UTC (a chain log
    written in another time zone is given with --watermark '<upstream>={"sap_time": "YYYYMMDDHHMMSS"}')."""
    return {"sap_time": f"{query.at.astimezone(timezone.utc):%Y%m%d%H%M%S}"}


DECLARATION = SensorDeclaration(build=build, position_at=position_at)
