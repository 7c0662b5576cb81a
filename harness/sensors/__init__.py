"""Sensors, one module per source kind, behind `harness.sensors.base.Sensor`.

`build_registry` is where each sensor gets its own section of heartbeat.yml, parsed and resolved at
the start (secrets read from the environment, connection settings checked): a bad section stops the
start with a ConfigError naming its key, instead of failing every check of its rows later.
"""

from __future__ import annotations

from typing import Any, Callable

from harness.config import Config
from harness.errors import ConfigError
from harness.model import SensorSource
from harness.sensors.base import Sensor
from harness.sensors.delta import DeltaSensor
from harness.sensors.hive_table import HiveTableSensor
from harness.sensors.iceberg import IcebergSensor
from harness.sensors.jdbc import JdbcSensor
from harness.sensors.kafka import KafkaSensor
from harness.sensors.published import PublishedSensor
from harness.sensors.sap import SapChainSensor
from harness.sensors.trigger_file import TriggerFileSensor
from harness.sensors.upstream_sensor_table import UpstreamSensorTableSensor

Registry = dict[SensorSource, Sensor[Any]]


def build_registry(config: Config) -> Registry:
    """One sensor per source kind, each built from its own settings; every problem of every section
    reported at once."""
    builders: list[Callable[[], Sensor[Any]]] = [
        lambda: TriggerFileSensor(config.trigger_root),
        lambda: DeltaSensor.from_settings(config.delta, delta_on_spark=config.table_format == "delta"),
        lambda: KafkaSensor.from_settings(config.kafka),
        lambda: JdbcSensor.from_settings(config.jdbc),
        lambda: SapChainSensor.from_settings(SensorSource.SAP_BW, config.sap_bw),
        lambda: SapChainSensor.from_settings(SensorSource.SAP_B4, config.sap_b4),
        lambda: UpstreamSensorTableSensor.from_settings(config.upstream_sensor_table),
        lambda: IcebergSensor.from_settings(config.iceberg),
        HiveTableSensor,
        lambda: PublishedSensor(config.state_dir),
    ]
    registry: Registry = {}
    problems: list[str] = []
    for build in builders:
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
