"""Sensors, one module per source kind, behind `harness.sensors.base.Sensor`.

`build_registry` is where each sensor gets its own section of heartbeat.yml, parsed and resolved at
the start (secrets read from the environment, connection settings checked): a bad section stops the
start with a ConfigError naming its key, instead of failing every check of its rows later.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from harness.config import Config
from harness.errors import ConfigError
from harness.sensors.base import Sensor
from harness.vocabulary import SensorSource

Registry = dict[SensorSource, Sensor[Any]]


def build_registry(config: Config, kinds: Iterable[SensorSource] | None = None) -> Registry:
    """One sensor per source kind (of `kinds`, default all), each built from its own settings; every
    problem of every section reported at once. A sensor's module is imported only when it is built:
    a cold tick imports the clients of the kinds its rows read, not all of them."""
    builders = _builders(config)
    wanted = dict.fromkeys(builders[kind] for kind in kinds) if kinds is not None else dict.fromkeys(builders.values())
    registry: Registry = {}
    problems: list[str] = []
    for build in wanted:
        try:
            sensor = build()
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        registry.update({source: sensor for source in sensor.sources})
    if problems:
        where = str(config.config_path or "heartbeat.yml")
        raise ConfigError(f"{where}: refused:\n  " + "\n  ".join(problems))
    return registry


def _builders(config: Config) -> dict[SensorSource, Callable[[], Sensor[Any]]]:
    """How each source kind's sensor is built (kinds read by one sensor share its builder)."""

    def trigger_file() -> Sensor[Any]:
        from harness.sensors.trigger_file import TriggerFileSensor

        return TriggerFileSensor(config.trigger_root)

    def delta() -> Sensor[Any]:
        from harness.sensors.delta import DeltaSensor

        return DeltaSensor.from_settings(config.delta, delta_on_spark=config.table_format == "delta")

    def kafka() -> Sensor[Any]:
        from harness.sensors.kafka import KafkaSensor

        return KafkaSensor.from_settings(config.kafka)

    def jdbc() -> Sensor[Any]:
        from harness.sensors.jdbc import JdbcSensor

        return JdbcSensor.from_settings(config.jdbc)

    def sap(kind: SensorSource) -> Callable[[], Sensor[Any]]:
        def build() -> Sensor[Any]:
            from harness.sensors.sap import SapChainSensor

            return SapChainSensor.from_settings(kind, config.sap_bw if kind is SensorSource.SAP_BW else config.sap_b4)

        return build

    def upstream_sensor_table() -> Sensor[Any]:
        from harness.sensors.upstream_sensor_table import UpstreamSensorTableSensor

        return UpstreamSensorTableSensor.from_settings(config.upstream_sensor_table)

    def iceberg() -> Sensor[Any]:
        from harness.sensors.iceberg import IcebergSensor

        return IcebergSensor.from_settings(config.iceberg)

    def hive_table() -> Sensor[Any]:
        from harness.sensors.hive_table import HiveTableSensor

        return HiveTableSensor()

    def published() -> Sensor[Any]:
        from harness.sensors.published import PublishedSensor

        return PublishedSensor(config.state_dir)

    return {
        SensorSource.TRIGGER_FILE: trigger_file,
        SensorSource.DELTA_TABLE: delta,
        SensorSource.LMU_DELTA_TABLE: delta,
        SensorSource.KAFKA: kafka,
        SensorSource.JDBC: jdbc,
        SensorSource.SAP_BW: sap(SensorSource.SAP_BW),
        SensorSource.SAP_B4: sap(SensorSource.SAP_B4),
        SensorSource.UPSTREAM_SENSOR_TABLE: upstream_sensor_table,
        SensorSource.ICEBERG_TABLE: iceberg,
        SensorSource.HIVE_TABLE: hive_table,
        SensorSource.PUBLISHED: published,
    }
