"""Sensors, one module per source kind, behind `harness.sensors.base.Sensor`."""

from __future__ import annotations

from harness.config import Config
from harness.model import SensorSource
from harness.sensors.base import Sensor
from harness.sensors.trigger_file import TriggerFileSensor

SENSOR_CLASSES: tuple[type[Sensor], ...] = (TriggerFileSensor,)


def build_registry(config: Config) -> dict[SensorSource, Sensor]:
    """One sensor instance per source kind this harness supports."""
    registry: dict[SensorSource, Sensor] = {}
    for cls in SENSOR_CLASSES:
        sensor = cls(config)
        for source in cls.sources:
            registry[source] = sensor
    return registry
