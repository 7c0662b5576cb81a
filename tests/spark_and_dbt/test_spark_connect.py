"""The core tick on Spark Connect: a heartbeat process whose session is a Spark Connect client of the
Connect server that ships inside pyspark (`spark_remote: local`), dbt's session connection included.
The classic session runs the same scenarios in the rest of the suite."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from tests.processes import HeartbeatProcess
from tests.support import control_row

pytestmark = pytest.mark.process  # a heartbeat process with its own Spark Connect server

JOB = "connect_job"
# Every statement is a round trip to the Connect server: on a busy machine the first build of every model
# takes minutes, longer than a classic heartbeat's.
CONNECT_PROCESS_TIMEOUT_SECONDS = 600


def test_on_spark_connect_a_job_fed_by_a_trigger_folder_and_a_delta_table_runs_and_completes(tmp_path: Path) -> None:
    # GIVEN a heartbeat process on Spark Connect whose job needs a trigger folder and a Delta table (written
    # with deltalake, read through the session by its preprocess_query), both with news
    table = tmp_path / "lake" / "orders"
    write_deltalake(table, pa.table({"order_id": [1, 2], "amount": [10.0, 0.0]}))
    delta_row = control_row(
        "delta_table", str(table), JOB, preprocess_query="SELECT * FROM sensor_new_data WHERE amount > 5"
    )
    hb = HeartbeatProcess(tmp_path, "local", JOB)
    hb.write_config(delta_row, spark_remote="local")
    hb.drop("batch1")

    # WHEN it runs until idle (sense, fold with dbt, start the job, record its end)
    try:
        code = hb.run("run", "--interval", "1", "--until-idle", timeout=CONNECT_PROCESS_TIMEOUT_SECONDS)
    finally:
        hb.cleanup()
    output = hb.output()

    # THEN it ran on a Spark Connect session ...
    assert code == 0, output
    assert "Spark Connect" in output, output
    # ... the job ran once, handed the ranges of both upstreams ...
    runs = hb.runs()
    assert len(runs) == 1 and runs[0]["done"], runs
    upstreams = {u["sensor_source"]: u for u in runs[0]["range"]["upstreams"]}
    assert set(upstreams) == {"trigger_file", "delta_table"}
    assert upstreams["delta_table"]["to"]["version"] == 0
    # ... and both rows are COMPLETED
    rows = hb.snapshot()["rows"]
    assert {r["upstream_label"]: r["status"] for r in rows} == {
        "trigger_file:orders": "COMPLETED",
        f"delta_table:{table}": "COMPLETED",
    }
