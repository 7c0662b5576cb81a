"""The one small interface every source kind implements.

A check is two steps, so that an upstream read by many rows is read once per tick:
  1. `read_position(context, upstream)`: one cheap metadata read of where the upstream is now, as the
     sensor's own position type (a folder listing, a topic's offsets, a table's version and commits);
  2. `detect(upstream, position, since)`: for one row's watermark, either `NewData` (the watermark
     after, and what changed) or `NothingNew` (why). A pure comparison: no I/O, no context.
`new_data_frame` exposes the rows beyond a watermark as a DataFrame, for `preprocess_query`, which runs
over `new_data_pages` (one page unless the source's new data is read into memory in bounded pages).

`check_upstream(upstream)` is what `read_position` finds wrong before it reads anything (a sensor_id its
kind cannot read, a connection heartbeat.yml does not define): `validate` asks it of every row.

A sensor is built once, from its own section of heartbeat.yml (see `harness.sensors.build_registry`),
and holds nothing else: what a check needs beyond its settings (Spark, the deadline) is in its
`CheckContext`.

Each sensor module also declares how its sensor is built and how a job reads its range
(`harness.sensors.declaration`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Generator, Generic, Mapping, Protocol, Sequence, TypeVar

from pyspark.sql import DataFrame

from harness.core.errors import SensorError
from harness.core.vocabulary import SensorSource, upstream_label
from harness.sensors.context import CheckContext

Watermark = Mapping[str, Any]


@dataclass(frozen=True)
class Upstream:
    """What is read: rows sharing these fields share one read per tick."""

    kind: SensorSource  # the row's sensor_source
    sensor_id: str
    upstream_key: str | None = None

    @property
    def label(self) -> str:
        return upstream_label(self.kind.value, self.sensor_id)


class Position(Protocol):
    """Where an upstream is now, from one metadata read: each sensor declares its own type, holding the
    facts its `detect` compares; every one of them knows the watermark a row would move to."""

    @property
    def watermark(self) -> Watermark: ...


@dataclass(frozen=True)
class NewData:
    watermark: Watermark  # the row's watermark after this detection
    changes: Mapping[str, Any] = field(default_factory=dict)  # what changed, for the event's details
    # The watermark after each step of the change (a file, a version), oldest first, the last being `watermark`:
    # where a run handed part of the range may end (max_range). Empty: the detection is one step.
    # Called only for rows with a max_range (a burst of files makes many watermarks).
    steps: Callable[[], Sequence[Watermark]] = field(default=lambda: ())


@dataclass(frozen=True)
class NothingNew:
    reason: str


Detection = NewData | NothingNew

P = TypeVar("P", bound=Position)


class Sensor(ABC, Generic[P]):
    """A sensor for one or more source kinds, with its position type `P`. Instances hold their parsed
    settings only, no state: checks of different upstreams run concurrently on one instance."""

    # Whether a position found names its data for good (a table version, a topic's offsets): the same
    # watermark and position, the same new data. Not so for a table read by its key's max, whose rows
    # within the range can change without the max moving: a preprocess_query over them runs every time.
    position_names_data: ClassVar[bool] = False

    def check_upstream(self, upstream: Upstream) -> None:
        """Raise SensorError, naming the upstream and what to change, when no check of it can succeed with
        this sensor's settings: a sensor_id its kind cannot read, a connection, catalog or section
        heartbeat.yml does not define. Reads nothing (no network, no Spark, no file): it is the first part
        of `read_position`, which meets the same error with the same message, and `python -m harness
        validate` asks it of every row. Here: nothing to check."""

    def doubt(self, upstream: Upstream) -> str | None:
        """What `validate` notes of an upstream this sensor serves but that is likely not what its row
        meant (a misspelt name that falls back to a default), without the upstream's label; reads
        nothing. Here: nothing."""
        return None

    @abstractmethod
    def read_position(self, context: CheckContext, upstream: Upstream) -> P:
        """One metadata read of the upstream. Raise SensorError naming the upstream on failure."""

    @abstractmethod
    def detect(self, upstream: Upstream, position: P, since: Watermark | None) -> Detection:
        """Compare the position with one row's watermark (None: never sensed, any data is new)."""

    def new_data_frame(
        self, context: CheckContext, upstream: Upstream, position: P, since: Watermark | None
    ) -> DataFrame:
        """The data beyond `since` up to `position` as a DataFrame on `context.spark` (the view
        `sensor_new_data` of preprocess_query)."""
        raise SensorError(f"{upstream.label}: preprocess_query is not supported for {upstream.kind.value}")

    def new_data_pages(
        self, context: CheckContext, upstream: Upstream, position: P, since: Watermark | None
    ) -> Generator[DataFrame, None, None]:
        """The data beyond `since` in pages, oldest first: preprocess_query runs over each until one returns
        a row, so no new data goes unread. One page (new_data_frame) unless the sensor reads it into memory."""
        yield self.new_data_frame(context, upstream, position, since)
