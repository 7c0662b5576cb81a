"""Reading exactly the range a run was handed, for the job's own code: `read_range(spark)` turns the
change range (HEARTBEAT_CHANGE_RANGE, or the job parameter's text) into one DataFrame per upstream.

Each source kind's sensor module says how its range is read (`read_range` in its `DECLARATION`; the
kinds and what each returns are in docs/sources.md): a Delta table's change data feed or the files its
commits added, a topic's messages between the offsets, a JDBC table's key range, the files landed in a
trigger folder, the files an Iceberg table's snapshots added, the changes producers published. Only the
modules of the kinds in the range are imported.

Each read goes to the upstream as it is now: data written after `to` is left out by the range's end
(versions, offsets, key values, times, snapshots), data expired or vacuumed since is gone. A kind whose
module declares no reader is refused by name (docs/sources.md says which, and why).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from harness.core.config import Config, load_config
from harness.core.errors import ConsumeError
from harness.core.vocabulary import SensorSource
from harness.refresh.change_range import ChangeRange, UpstreamRange, from_environment, parse
from harness.sensors import declaration_of
from harness.sensors.base import Upstream
from harness.sensors.context import CheckContext
from harness.sensors.declaration import RangeRequest

DEFAULT_TIMEOUT_SECONDS = 600.0  # one upstream's read (Kafka requests and consumption, JDBC query)


def read_range(
    spark: SparkSession, change_range: ChangeRange | str | None = None, *, config: Config | None = None
) -> dict[str, DataFrame]:
    """Each upstream's data in the range, by its label (`kafka:orders`). `change_range`: the parsed
    range, its JSON text, or None for HEARTBEAT_CHANGE_RANGE. `config`: the heartbeat's (Kafka, JDBC,
    Delta settings; the trigger root), default as `python -m harness` finds it."""
    given = (
        from_environment()
        if change_range is None
        else parse(change_range)
        if isinstance(change_range, str)
        else change_range
    )
    config = config or load_config()
    return {u.label: read_upstream(spark, u, config=config) for u in given.upstreams}


def read_upstream(
    spark: SparkSession, upstream: UpstreamRange, *, config: Config, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
) -> DataFrame:
    """One upstream's data in its range."""
    if upstream.end is None:
        raise ConsumeError(f"{upstream.label}: the range has no end: nothing was detected for it")
    try:
        source = SensorSource(upstream.sensor_source)
    except ValueError:
        raise ConsumeError(f"{upstream.label}: unknown sensor_source") from None
    reader = declaration_of(source).read_range
    if reader is None:
        raise ConsumeError(
            f"{upstream.label}: reading the range of {source.value} is not supported; its range "
            f"is from {dict(upstream.start or {})} to {dict(upstream.end)}"
        )
    key = upstream.end.get("key")
    target = Upstream(source, upstream.sensor_id, str(key) if key else None)
    context = CheckContext.starting_now(spark, timeout_seconds)
    return reader(RangeRequest(spark, context, target, upstream.start, upstream.end, config))
