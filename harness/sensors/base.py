"""The one small interface every source kind implements.

A check is two steps, so that an upstream read by many rows is read once per tick:
  1. `read_position(upstream)`: one cheap metadata read of where the upstream is now;
  2. `detect(upstream, position, since)`: for one row's watermark, either `NewData` (the watermark
     after, and what changed) or `NothingNew` (why). Pure comparison where the source allows it.
`new_data_frame` exposes the rows beyond a watermark as a DataFrame, for `preprocess_query`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from pyspark.sql import DataFrame, SparkSession

from harness.config import Config
from harness.errors import SensorError
from harness.model import SensorSource, upstream_label

Watermark = Mapping[str, Any]


@dataclass(frozen=True)
class Upstream:
    """What is read: rows sharing these fields share one read per tick."""

    source: SensorSource
    sensor_id: str
    upstream_key: str | None = None

    @property
    def label(self) -> str:
        return upstream_label(self.source.value, self.sensor_id)


@dataclass(frozen=True)
class Position:
    """The upstream's current position, from one metadata read."""

    watermark: Watermark
    observed: Any = None  # source-specific facts `detect` needs (file listing, commit history, ...)


@dataclass(frozen=True)
class NewData:
    watermark: Watermark  # the row's watermark after this detection
    changes: Mapping[str, Any] = field(default_factory=dict)  # what changed, for the event's details


@dataclass(frozen=True)
class NothingNew:
    reason: str


Detection = NewData | NothingNew


class Sensor(ABC):
    """A sensor for one or more source kinds. Instances hold configuration only, no state."""

    sources: ClassVar[tuple[SensorSource, ...]]

    def __init__(self, config: Config) -> None:
        self.config = config

    @abstractmethod
    def read_position(self, upstream: Upstream) -> Position:
        """One metadata read of the upstream. Raise SensorError naming the upstream on failure."""

    @abstractmethod
    def detect(self, upstream: Upstream, position: Position, since: Watermark | None) -> Detection:
        """Compare the position with one row's watermark (None: never sensed, any data is new)."""

    def new_data_frame(
        self, spark: SparkSession, upstream: Upstream, position: Position, since: Watermark | None
    ) -> DataFrame:
        """The data beyond `since` as a DataFrame (the view `sensor_new_data` of preprocess_query)."""
        raise SensorError(f"{upstream.label}: preprocess_query is not supported for {upstream.source.value}")
