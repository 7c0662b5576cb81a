"""What a sensor module declares, as its `DECLARATION`, beside its sensor: how the sensor is built from the
configuration and, if a job can read its range as data (`harness.consume`), how. The registry
(`harness.sensors`) imports a module only when one of its kinds (`harness.core.vocabulary.KINDS`) is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

from pyspark.sql import DataFrame, SparkSession

from harness.core.config import Config
from harness.core.vocabulary import SensorSource
from harness.sensors.base import Sensor, Upstream, Watermark
from harness.sensors.context import CheckContext


@dataclass(frozen=True)
class RangeRequest:
    """One upstream's change range, as a job reads it (`harness.consume`): the watermark its job's last
    successful run consumed (None: never succeeded) and the one the run was handed."""

    spark: SparkSession
    context: CheckContext
    upstream: Upstream
    start: Watermark | None
    end: Watermark
    config: Config


@dataclass(frozen=True)
class PositionQuery:
    """Where was an upstream at a time (`harness rewind`): the sensor of its kind, the check's context
    (deadline, Spark), the upstream, and the time (aware, UTC)."""

    sensor: Sensor[Any]
    context: CheckContext
    upstream: Upstream
    at: datetime


@dataclass(frozen=True)
class SensorDeclaration:
    """What a sensor module declares (its `DECLARATION`) for the source kinds it reads."""

    build: Callable[[Config, SensorSource], Sensor[Any]]  # the sensor of one kind, from its section of the file
    read_range: Callable[[RangeRequest], DataFrame] | None = None  # the data of a range; None: not readable
    # The watermark a row would have had at a time: everything after it is the range from then
    # (PositionUnavailable when the source no longer holds it); None: no time maps, `--watermark` is asked for
    position_at: Callable[[PositionQuery], Watermark] | None = None
