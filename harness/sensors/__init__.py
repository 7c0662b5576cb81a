"""Sensors, one module per source kind, behind `harness.sensors.base.Sensor`."""

from __future__ import annotations

from harness.config import Config
from harness.model import SensorSource
from harness.sensors.base import Sensor
from harness.sensors.delta import DeltaSensor
from harness.sensors.jdbc import JdbcSensor
from harness.sensors.kafka import KafkaSensor
from harness.sensors.sap import SapChainSensor
from harness.sensors.trigger_file import TriggerFileSensor
from harness.sensors.upstream_sensor_table import UpstreamSensorTableSensor

SENSOR_CLASSES: tuple[type[Sensor], ...] = (
    TriggerFileSensor, DeltaSensor, KafkaSensor, JdbcSensor, SapChainSensor, UpstreamSensorTableSensor,
)


def build_registry(config: Config) -> dict[SensorSource, Sensor]:
    """One sensor instance per source kind this harness supports."""
    registry: dict[SensorSource, Sensor] = {}
    for cls in SENSOR_CLASSES:
        sensor = cls(config)
        for source in cls.sources:
            registry[source] = sensor
    return registry
