"""What a heartbeat process holds while it owns the state folder: Spark, the event log, the tables dbt
builds, the backend, the sensors. Opened once per process, after the state lock is taken."""

from __future__ import annotations

import gc
from dataclasses import dataclass

from pyspark.sql import SparkSession

from harness.backends.base import JobBackend
from harness.core.config import Config
from harness.core.vocabulary import SensorSource
from harness.platform import dbt_runner
from harness.platform.spark import get_spark
from harness.sensors import build_registry
from harness.sensors.base import Sensor
from harness.state.event_log import EventLog
from harness.state.status_files import SnapshotWritten
from harness.state.tables import Tables


def build_backend(config: Config) -> JobBackend:
    if config.backend == "databricks":
        from harness.backends.databricks import DatabricksBackend

        return DatabricksBackend(config)
    from harness.backends.local import LocalBackend

    return LocalBackend(config)


@dataclass
class Runtime:
    config: Config
    spark: SparkSession
    events: EventLog
    tables: Tables
    backend: JobBackend
    sensors: dict[SensorSource, Sensor]
    views_built: bool = False  # the process's first dbt build (re)creates every view
    indexed_version: int | None = None  # the event log's version the event index was last refreshed at
    # the readings the status snapshot was last written from (Tables.readings_shown), and the snapshot
    snapshot_written: tuple[tuple[object, ...], SnapshotWritten] | None = None

    @classmethod
    def open(cls, config: Config, *, parse_ahead: bool = False, for_life: bool = False) -> "Runtime":
        """Spark, the event log and the rest; `parse_ahead`: dbt's parse of the project for the folds
        while Spark starts (for a process that will fold). `for_life`: the process's one runtime, held
        until it ends (a `tick` or `run` process): what the process holds then (the modules, dbt's parsed
        project, Spark's client: about 280,000 objects) leaves the collector's full passes, which walked
        it all about once a tick, 0.18 s of a `run` loop's tick at 10,000 rows (docs/performance-notes.md).
        Objects made later are collected as before. A process that opens runtimes again and again (the
        test suite) would keep each one's leftovers for good instead."""
        importing = dbt_runner.import_in_background(config if parse_ahead else None)
        spark = get_spark(config)
        events = EventLog(spark, config)
        if importing is not None:
            importing.join()
        tables = Tables(spark, config, events)
        runtime = cls(config, spark, events, tables, build_backend(config), build_registry(config))
        if for_life:
            gc.freeze()
        return runtime
