"""Two views in the heartbeat's schema over the files every tick already leaves in the state folder, so
that SQL (the bundle's dashboard and alerts, docs/production.md) reads a tick's health and seconds per
step from the very files `status` and `report` read, and a tick writes nothing more for it:

  - `heartbeat_tick_health`: the health record (`health.json`), one row once a tick has run: the last
    tick (its error and step, a refused controls CSV, its failed checks), the last successful tick, the
    failures in a row;
  - `heartbeat_ticks`: the tick log (`ticks.jsonl`), one row a tick kept there: when it started, its
    seconds and seconds per step, its error, the jobs it started and those whose start was refused.

A view stores its query, not data: the files are read when the view is queried (on Databricks, from the
state volume; its readers need READ VOLUME on it). The views are made at every full build of the models
(harness.tick.fold), the first tick's among them, before that tick has written its line and its health
record. A view's path must match a file when it is made: the tick log is then made empty (a log of no
tick), and the health record is read with a glob that matches the tick log too, whose lines are no
health record (they have no `last_tick`) and are left out. The health record itself is never written
but by a tick: a health record without a tick in it would be one no reader expects.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from harness.core.config import Config
from harness.state.files import write_atomic

TICK_HEALTH = "heartbeat_tick_health"
TICKS = "heartbeat_ticks"
TICK_VIEWS = (TICK_HEALTH, TICKS)

_LAST_TICK = (
    "tick_id STRING, started_at STRING, ended_at STRING, seconds DOUBLE, error STRING, step STRING, "
    "controls_error STRING, refused ARRAY<STRING>, check_errors INT, failed_checks ARRAY<STRING>, "
    "failed_check_count INT"
)
HEALTH_SCHEMA = (
    f"last_tick STRUCT<{_LAST_TICK}>, last_success_at STRING, failures_in_a_row INT, first_failure_at STRING"
)
TICK_SCHEMA = (
    "tick_id STRING, started_at STRING, seconds DOUBLE, steps MAP<STRING, DOUBLE>, error STRING, "
    "started ARRAY<STRING>, refused ARRAY<STRING>"
)


def _path(path: str) -> str:
    return "`" + path.replace("`", "``") + "`"


def health_sql(config: Config) -> str:
    """The health record as one row (none before a tick has run), its times as timestamps."""
    return f"""
select
  h.last_tick.tick_id as tick_id,
  cast(h.last_tick.started_at as timestamp) as started_at,
  cast(h.last_tick.ended_at as timestamp) as ended_at,
  h.last_tick.seconds as seconds,
  h.last_tick.error as error,
  h.last_tick.step as step,
  h.last_tick.controls_error as controls_error,
  h.last_tick.refused as refused,
  h.last_tick.check_errors as check_errors,
  h.last_tick.failed_checks as failed_checks,
  h.last_tick.failed_check_count as failed_check_count,
  cast(h.last_success_at as timestamp) as last_success_at,
  coalesce(h.failures_in_a_row, 0) as failures_in_a_row,
  cast(h.first_failure_at as timestamp) as first_failure_at
from (select from_json(value, '{HEALTH_SCHEMA}') as h from text.{_path(_health_glob(config))})
where h.last_tick is not null"""


def _health_glob(config: Config) -> str:
    """The health record, and the tick log beside it (which exists once the views are made)."""
    layout = config.layout
    return str(layout.root / f"{{{layout.health.name},{layout.ticks.name}}}")


def ticks_sql(config: Config) -> str:
    """The tick log, a row a tick (a line cut short by a kill is left out, as harness.state.status_files
    read_ticks leaves it)."""
    return f"""
select
  t.tick_id as tick_id,
  cast(t.started_at as timestamp) as started_at,
  t.seconds as seconds,
  t.steps as steps,
  t.error as error,
  t.started as started,
  t.refused as refused
from (select from_json(value, '{TICK_SCHEMA}') as t from text.{_path(str(config.layout.ticks))})
where t.tick_id is not null and t.started_at is not null"""


def create(spark: SparkSession, config: Config) -> None:
    """(Re)make both views; the tick log is made empty first if no tick has written it yet."""
    if not config.layout.ticks.exists():
        write_atomic(config.layout.ticks, "")
    for name, sql in ((TICK_HEALTH, health_sql(config)), (TICKS, ticks_sql(config))):
        spark.sql(f"create or replace view {config.table(name)} as {sql}")
