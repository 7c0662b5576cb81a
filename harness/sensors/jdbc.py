"""jdbc: any database table over Spark's JDBC reader; new data when max(upstream_key) grew.

sensor_id is `[connection:] [schema.]table`, e.g. `sales_db: public.orders` or `public.orders` (the
connection named `default`). Connections come from the `jdbc:` section of heartbeat.yml (a single
connection given directly, or several under `connections:`), resolved when the sensor is built:
passwords are read from the environment then, so a missing variable stops the start, naming its key.
Every query is pushed down through the JDBC `query` option: the check reads one value, the
preprocess view reads only the rows beyond the watermark. Names are quoted as identifiers and
watermark values as literals, so neither sensor_id nor upstream_key can change a query's meaning.
Each query's `queryTimeout` is the time left until the check's deadline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from pyspark.sql import DataFrame, Row

from harness.core.config import Config, JdbcConnectionSettings, JdbcSettings, env_secret
from harness.core.errors import ConfigError, PositionUnavailable, SensorError
from harness.core.vocabulary import SensorSource
from harness.sensors import key_values
from harness.sensors.base import Detection, NewData, NothingNew, Sensor, Upstream, Watermark
from harness.sensors.context import CheckContext
from harness.sensors.declaration import PositionQuery, RangeRequest, SensorDeclaration
from harness.sensors.spark_sql import spark_error_text

DEFAULT_CONNECTION = "default"
QUERY_TIMEOUT = "queryTimeout"  # Spark's JDBC reader option, in whole seconds (0: none)


@dataclass(frozen=True)
class JdbcConnection:
    """One database, as named in a config section. `password` is registered for redaction."""

    name: str
    url: str
    driver: str
    where: str  # the heartbeat.yml key it comes from, e.g. `jdbc.connections.crm`
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    identifier_quote: str = '"'
    backslash_escapes: bool = False
    properties: Mapping[str, str] = field(default_factory=dict)

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

    @property
    def query_timeout_cap(self) -> float | None:
        """A `queryTimeout` given under `properties`: a cap on the time left, never a longer wait."""
        configured = float(self.properties.get(QUERY_TIMEOUT, 0))
        return configured if configured > 0 else None

    def reader_options(self, query_timeout_seconds: float) -> dict[str, str]:
        """Spark's JDBC reader options; the query timeout rounded up, so it never ends a query before
        the deadline it was derived from."""
        options = {
            **self.properties,
            "url": self.url,
            "driver": self.driver,
            QUERY_TIMEOUT: str(max(1, math.ceil(query_timeout_seconds))),
        }
        if self.user:
            options["user"] = self.user
        if self.password is not None:
            options["password"] = self.password
        return options


def connection_from(name: str, spec: JdbcConnectionSettings, where: str) -> JdbcConnection:
    """A connection of a config section, with its secrets read from the environment."""
    if not spec.url.startswith("jdbc:"):
        raise ConfigError(f"{where}.url: a JDBC URL starts with 'jdbc:' (e.g. jdbc:postgresql://host:5432/db)")
    if QUERY_TIMEOUT in spec.properties:
        try:
            float(spec.properties[QUERY_TIMEOUT])
        except ValueError:
            raise ConfigError(
                f"{where}.properties.{QUERY_TIMEOUT}: a number of seconds, got {spec.properties[QUERY_TIMEOUT]!r}"
            ) from None
    user = env_secret(spec.user_env, f"{where}.user_env") if spec.user_env else spec.user
    return JdbcConnection(
        name=name,
        url=spec.url,
        driver=spec.driver,
        where=where,
        user=user,
        password=env_secret(spec.password_env, f"{where}.password_env"),
        identifier_quote=spec.identifier_quote,
        backslash_escapes=spec.backslash_escapes,
        properties=spec.properties,
    )


def split_connection(upstream: Upstream) -> tuple[str, str]:
    """`conn: rest` -> (conn, rest); a sensor_id without a prefix uses the `default` connection."""
    prefix, sep, rest = upstream.sensor_id.partition(":")
    if not sep:
        return DEFAULT_CONNECTION, prefix.strip()
    if not prefix.strip() or not rest.strip():
        raise SensorError(f"{upstream.label}: sensor_id must look like 'connection: name'")
    return prefix.strip(), rest.strip()


def unknown_connection(upstream: Upstream, name: str, section_name: str, known: Mapping[str, object]) -> SensorError:
    """A sensor_id naming a connection the kind's own section of heartbeat.yml does not define: what to add
    there, or which configured connection to name in sensor_id instead."""
    if not known:
        where = (
            f"a {section_name}: section with url, driver, user, password_env (one connection given directly "
            "is the connection `default`)"
            if name == DEFAULT_CONNECTION
            else f"{section_name}.connections.{name} with url, driver, user, password_env"
        )
        return SensorError(
            f"{upstream.label}: heartbeat.yml defines no {section_name} connection (a {section_name} row reads "
            f"only those of the {section_name}: section); add {where}"
        )
    configured = ", ".join(sorted(known))
    _, rest = split_connection(upstream)
    return SensorError(
        f"{upstream.label}: no connection {name!r} in the {section_name}: section of heartbeat.yml "
        f"(configured: {configured}); add {section_name}.connections.{name} with url, driver, user, password_env, "
        f"or name a configured one in sensor_id ('{min(known)}: {rest}')"
    )


def jdbc_frame(context: CheckContext, connection: JdbcConnection, query: str, label: str) -> DataFrame:
    """A DataFrame over one pushed-down query (the JDBC `query` option: never a full table read), on the
    check's session, with the time left until the check's deadline as its query timeout."""
    spark = context.session(label)
    timeout = context.time_left(label, connection.query_timeout_cap)
    try:
        return spark.read.format("jdbc").options(**connection.reader_options(timeout)).option("query", query).load()
    except Exception as exc:  # noqa: BLE001 - py4j/JDBC errors vary by driver; reported with their cause
        if context.expired:
            raise context.timed_out(label) from exc
        raise SensorError(
            f"{label}: cannot query {connection.name} ({connection.url}, heartbeat.yml's {connection.where}): "
            f"{spark_error_text(exc)}"
        ) from exc


def jdbc_rows(context: CheckContext, connection: JdbcConnection, query: str, label: str) -> list[Row]:
    frame = jdbc_frame(context, connection, query, label)
    try:
        with context.spark_until_deadline(label):
            return frame.collect()
    except Exception as exc:  # noqa: BLE001 - as above
        if context.expired:
            raise context.timed_out(label) from exc
        raise SensorError(f"{label}: query on {connection.name} failed: {spark_error_text(exc)}") from exc


def table_parts(upstream: Upstream, name: str) -> tuple[str, ...]:
    parts = tuple(p.strip() for p in name.split("."))
    if not 1 <= len(parts) <= 3 or not all(parts):
        raise SensorError(f"{upstream.label}: expected a table as [catalog.][schema.]table, got {name!r}")
    return parts


@dataclass(frozen=True)
class KeyMax:
    """The position of a keyed table: max(upstream_key) now (None: the table is empty)."""

    key: str
    value: key_values.KeyValue | None
    watermark: Watermark = field(init=False)

    def __post_init__(self) -> None:  # encoded once, so a value of an unsupported type fails the read
        encoded = key_values.encode(self.value) if self.value is not None else None
        object.__setattr__(self, "watermark", {"key": self.key, "max": encoded})


class JdbcSensor(Sensor[KeyMax]):
    def __init__(self, connections: Mapping[str, JdbcConnection]) -> None:
        self.connections = dict(connections)

    @classmethod
    def from_settings(cls, section: JdbcSettings) -> JdbcSensor:
        """The `jdbc:` section resolved: URLs checked, secrets read from the environment."""
        connections = {}
        for name, spec in section.connections.items():
            where = f"jdbc.connections.{name}"
            for key in ("schema_", "log_table"):
                if getattr(spec, key) is not None:
                    raise ConfigError(
                        f"{where}.{key.rstrip('_')}: only sap_bw and sap_b4 connections have a "
                        "chain log table; a jdbc row names its table in sensor_id"
                    )
            connections[name] = connection_from(name, spec, where)
        return cls(connections)

    def _target(self, upstream: Upstream) -> tuple[JdbcConnection, str, str]:
        """(connection, quoted table, quoted key column)."""
        if not upstream.upstream_key:
            raise SensorError(
                f"{upstream.label}: jdbc rows need an upstream_key (the column whose max "
                "value is the watermark, e.g. an id or an updated_at column)"
            )
        name, rest = split_connection(upstream)
        if name not in self.connections:
            raise unknown_connection(upstream, name, "jdbc", self.connections)
        connection = self.connections[name]
        table = connection.quote_path(table_parts(upstream, rest))
        return connection, table, connection.quote(upstream.upstream_key)

    def check_upstream(self, upstream: Upstream) -> None:
        self._target(upstream)

    def read_position(self, context: CheckContext, upstream: Upstream) -> KeyMax:
        connection, table, key = self._target(upstream)
        query = f"SELECT MAX({key}) AS max_value FROM {table}"
        rows = jdbc_rows(context, connection, query, upstream.label)
        return KeyMax(str(upstream.upstream_key), rows[0]["max_value"] if rows else None)

    def detect(self, upstream: Upstream, position: KeyMax, since: Watermark | None) -> Detection:
        previous = key_values.stored_max(since, upstream.upstream_key)
        if position.value is None:
            return NothingNew(f"table is empty (no {upstream.upstream_key} value)")
        if not key_values.is_beyond(position.value, previous):
            assert previous is not None  # any value is beyond none
            return NothingNew(_not_beyond(str(upstream.upstream_key), position.value, key_values.decode(previous)))
        changes: dict[str, Any] = {
            "upstream_key": upstream.upstream_key,
            "key_from": previous["value"] if previous else None,
            "key_to": position.watermark["max"]["value"],
        }
        changed = key_values.type_change(position.value, previous)
        if changed:
            changes["note"] = _type_changed(upstream, changed)
        return NewData(watermark=position.watermark, changes=changes)

    def new_data_frame(
        self, context: CheckContext, upstream: Upstream, position: KeyMax, since: Watermark | None
    ) -> DataFrame:
        connection, table, key = self._target(upstream)
        if position.value is None:
            raise SensorError(f"{upstream.label}: the table is empty: there are no new rows to read")
        previous = key_values.stored_max(since, upstream.upstream_key)
        changed = key_values.type_change(position.value, previous)
        if changed:
            raise SensorError(f"{upstream.label}: {_type_changed(upstream, changed)}")
        bounds = [f"{key} <= {connection.literal(position.value)}"]
        if previous is not None:
            bounds.insert(0, f"{key} > {connection.literal(key_values.decode(previous))}")
        query = f"SELECT * FROM {table} WHERE {' AND '.join(bounds)}"
        return jdbc_frame(context, connection, query, upstream.label)


def _not_beyond(key: str, current: key_values.KeyValue, handed: key_values.KeyValue) -> str:
    if current == handed:
        return f"max({key}) is still {handed}"
    return (
        f"max({key}) is {current}, behind the {handed} already handed (rows deleted): rows written again at or "
        f"below {handed} are not handed, only those beyond it"
    )


def _type_changed(upstream: Upstream, changed: str) -> str:
    return (
        f"{upstream.upstream_key}'s values changed type ({changed}): a range from one type to the other cannot "
        "be read (no query compares them); read its new rows by hand and `complete` the job's run, or name a "
        "column of one type in upstream_key (the row then starts over from it)"
    )


# --- a job reading its range (harness.consume) ------------------------------------------------------
def read_range(request: RangeRequest) -> DataFrame:
    """`key > from AND key <= to`, run by the database."""
    end = request.end
    position = KeyMax(str(end.get("key")), key_values.decode(end["max"]) if end.get("max") else None)
    sensor = build(request.config, request.upstream.kind)
    return sensor.new_data_frame(request.context, request.upstream, position, request.start)


def build(config: Config, source: SensorSource) -> JdbcSensor:
    return JdbcSensor.from_settings(config.sources.jdbc)


def position_at(query: PositionQuery) -> Watermark:
    """max(upstream_key) as it would have been at the time, when the key is a timestamp or a date
    (`key_values.value_at`); no time maps to another key's values."""
    now = query.sensor.read_position(query.context, query.upstream)
    try:
        return KeyMax(now.key, key_values.value_at(now.value, query.at)).watermark
    except ValueError as exc:
        raise PositionUnavailable(
            f"{query.upstream.label}: upstream_key {now.key!r}: {exc}; give the position with --watermark "
            f'\'{query.upstream.label}={{"key": "{now.key}", "max": {{"type": "int", "value": N}}}}\' '
            "(rows whose key is beyond it are the range)"
        ) from exc


DECLARATION = SensorDeclaration(build=build, read_range=read_range, position_at=position_at)
