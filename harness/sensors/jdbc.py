"""jdbc: any database table over Spark's JDBC reader; new data when max(upstream_key) grew.

sensor_id is `[connection:] [schema.]table`, e.g. `sales_db: public.orders` or `public.orders` (the
connection named `default`). Connections come from the `jdbc:` section of heartbeat.yml (a single
connection given directly, or several under `connections:`); passwords come from the environment.
Every query is pushed down through the JDBC `query` option: the check reads one value, the
preprocess view reads only the rows beyond the watermark. Names are quoted as identifiers and
watermark values as literals, so neither sensor_id nor upstream_key can change a query's meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from pyspark.sql import DataFrame, Row, SparkSession

from harness.config import JdbcConnectionSettings, JdbcSettings, env_secret
from harness.errors import SensorError
from harness.model import SensorSource
from harness.sensors import key_values
from harness.sensors.base import Detection, NewData, NothingNew, Position, Sensor, Upstream, Watermark
from harness.sensors.spark_access import harness_spark, spark_error_text

DEFAULT_CONNECTION = "default"


@dataclass(frozen=True)
class JdbcConnection:
    """One database, as named in a config section. `password` is registered for redaction."""

    name: str
    url: str
    driver: str
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    identifier_quote: str = '"'
    backslash_escapes: bool = False
    properties: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)  # source-specific keys (SAP: schema, log_table)

    def quote(self, name: str) -> str:
        """A quoted identifier: the quote character doubled inside, so a name never breaks out."""
        if not name or "\x00" in name:
            raise SensorError(f"empty or invalid identifier {name!r}")
        q = self.identifier_quote
        closing = "]" if q == "[" else q
        return q + name.replace(closing, closing * 2) + closing

    def quote_path(self, parts: tuple[str, ...]) -> str:
        return ".".join(self.quote(p) for p in parts)

    def literal(self, value: key_values.KeyValue) -> str:
        return key_values.sql_literal(value, self.backslash_escapes)

    def reader_options(self, timeout_seconds: float) -> dict[str, str]:
        options = {**self.properties, "url": self.url, "driver": self.driver,
                   "queryTimeout": str(max(1, int(timeout_seconds)))}
        if self.user:
            options["user"] = self.user
        if self.password is not None:
            options["password"] = self.password
        return options


def connection_from(name: str, spec: JdbcConnectionSettings, where: str) -> JdbcConnection:
    """A connection of a config section, with its secrets read from the environment."""
    user = env_secret(spec.user_env, f"{where}.user_env") if spec.user_env else spec.user
    return JdbcConnection(
        name=name, url=spec.url, driver=spec.driver,
        user=user,
        password=env_secret(spec.password_env, f"{where}.password_env"),
        identifier_quote=spec.identifier_quote,
        backslash_escapes=spec.backslash_escapes,
        properties=spec.properties,
        extra={k: v for k, v in (("schema", spec.schema_), ("log_table", spec.log_table)) if v is not None},
    )


def split_connection(upstream: Upstream) -> tuple[str, str]:
    """`conn: rest` -> (conn, rest); a sensor_id without a prefix uses the `default` connection."""
    prefix, sep, rest = upstream.sensor_id.partition(":")
    if not sep:
        return DEFAULT_CONNECTION, prefix.strip()
    if not prefix.strip() or not rest.strip():
        raise SensorError(f"{upstream.label}: sensor_id must look like 'connection: name'")
    return prefix.strip(), rest.strip()


def find_connection(section: JdbcSettings, section_name: str, upstream: Upstream) -> tuple[JdbcConnection, str]:
    name, rest = split_connection(upstream)
    if name not in section.connections:
        known = ", ".join(sorted(section.connections)) or "none"
        raise SensorError(
            f"{upstream.label}: no connection {name!r} in the {section_name}: section of heartbeat.yml "
            f"(configured: {known}); add {section_name}.connections.{name} with url, driver, user, password_env"
        )
    spec = section.connections[name]
    return connection_from(name, spec, f"{section_name}.connections.{name}"), rest


def jdbc_frame(spark: SparkSession, connection: JdbcConnection, query: str, timeout: float,
               label: str) -> DataFrame:
    """A DataFrame over one pushed-down query (the JDBC `query` option: never a full table read)."""
    try:
        return spark.read.format("jdbc").options(**connection.reader_options(timeout)).option(
            "query", query).load()
    except Exception as exc:  # noqa: BLE001 - py4j/JDBC errors vary by driver; reported with their cause
        raise SensorError(f"{label}: cannot query {connection.name} ({connection.url}): "
                          f"{spark_error_text(exc)}") from exc


def jdbc_rows(spark: SparkSession, connection: JdbcConnection, query: str, timeout: float,
              label: str) -> list[Row]:
    frame = jdbc_frame(spark, connection, query, timeout, label)
    try:
        return frame.collect()
    except Exception as exc:  # noqa: BLE001 - as above
        raise SensorError(f"{label}: query on {connection.name} failed: {spark_error_text(exc)}") from exc


def table_parts(upstream: Upstream, name: str) -> tuple[str, ...]:
    parts = tuple(p.strip() for p in name.split("."))
    if not 1 <= len(parts) <= 3 or not all(parts):
        raise SensorError(f"{upstream.label}: expected a table as [catalog.][schema.]table, got {name!r}")
    return parts


class JdbcSensor(Sensor):
    sources = (SensorSource.JDBC,)

    @property
    def timeout(self) -> float:
        return self.config.sensing.check_timeout_seconds

    def _target(self, upstream: Upstream) -> tuple[JdbcConnection, str, str]:
        """(connection, quoted table, quoted key column)."""
        if not upstream.upstream_key:
            raise SensorError(f"{upstream.label}: jdbc rows need an upstream_key (the column whose max "
                              "value is the watermark, e.g. an id or an updated_at column)")
        connection, name = find_connection(self.config.jdbc, "jdbc", upstream)
        table = connection.quote_path(table_parts(upstream, name))
        return connection, table, connection.quote(upstream.upstream_key)

    def read_position(self, upstream: Upstream) -> Position:
        connection, table, key = self._target(upstream)
        query = f"SELECT MAX({key}) AS max_value FROM {table}"
        rows = jdbc_rows(harness_spark(upstream.label), connection, query, self.timeout, upstream.label)
        value = rows[0]["max_value"] if rows else None
        encoded = key_values.encode(value) if value is not None else None
        return Position(watermark={"key": upstream.upstream_key, "max": encoded}, observed=value)

    def detect(self, upstream: Upstream, position: Position, since: Watermark | None) -> Detection:
        current = position.observed
        previous = since.get("max") if since else None
        if current is None:
            return NothingNew(f"table is empty (no {upstream.upstream_key} value)")
        if not key_values.is_beyond(current, previous):
            return NothingNew(f"max({upstream.upstream_key}) is still {key_values.decode(previous)}")  # type: ignore[arg-type]
        changes = {
            "upstream_key": upstream.upstream_key,
            "key_from": previous["value"] if previous else None,
            "key_to": position.watermark["max"]["value"],
        }
        return NewData(watermark=position.watermark, changes=changes)

    def new_data_frame(self, spark: SparkSession, upstream: Upstream, position: Position,
                       since: Watermark | None) -> DataFrame:
        connection, table, key = self._target(upstream)
        previous = since.get("max") if since else None
        bounds = [f"{key} <= {connection.literal(position.observed)}"]
        if previous is not None:
            bounds.insert(0, f"{key} > {connection.literal(key_values.decode(previous))}")
        query = f"SELECT * FROM {table} WHERE {' AND '.join(bounds)}"
        return jdbc_frame(spark, connection, query, self.timeout, upstream.label)
