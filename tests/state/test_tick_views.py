"""The views of the tick log and health record (harness.state.tick_views) are for the operators' dashboard
and alerts: a full build that cannot make them says so and the tick goes on. What they read is
tests/deploy/test_dashboard_queries.py's."""

from __future__ import annotations

import logging

import pytest

from harness.state.tick_views import TICKS
from tests.support import HeartbeatHarness


def test_a_tick_whose_views_cannot_be_made_warns_and_does_its_work(
    heartbeat: HeartbeatHarness, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN an operator's table where the tick log's view would go, in the heartbeat's schema
    heartbeat.given_working_job("j")  # its first tick made the views
    heartbeat.spark.sql(f"drop view {heartbeat.config.table(TICKS)}")
    heartbeat.spark.sql(f"create table {heartbeat.config.table(TICKS)} (note string) using parquet")
    heartbeat.drop_trigger_file("in", "batch1")
    heartbeat.config.layout.models_digest.unlink()  # the next process builds the models again
    heartbeat.restart()

    # WHEN the next tick builds the models and starts the job
    with caplog.at_level(logging.WARNING, logger="harness"):
        report = heartbeat.tick()

    # THEN the view is not made, which the log says, and the tick did its work
    assert report.error is None and report.started == ["j"]
    (warning,) = [r.getMessage() for r in caplog.records if "could not be made" in r.getMessage()]
    assert heartbeat.config.table(TICKS) in warning
    assert heartbeat.spark.table(heartbeat.config.table(TICKS)).columns == ["note"]
