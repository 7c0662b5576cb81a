"""`status`, `why` and `events` answer in a blink: they import nothing heavy (no Spark, dbt, sensors,
pandas, Kafka, the event writer, pydantic, and no pyarrow when the event index holds the log's files). What a
process imports is only seen in a fresh interpreter, so this is a `process` test: one `python -c` that
runs the three commands and prints what is loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness.core.config import PROJECT_DIR
from harness.state.event_reader import refresh_index
from tests.support import control_row, write_controls_csv

HEAVY = (
    "pyarrow",
    "pyspark",
    "py4j",
    "dbt",
    "pandas",
    "pyiceberg",
    "deltalake",
    "sqlglot",
    "confluent_kafka",
    "harness.sensors",
    "harness.state.event_log",
    "harness.tick.triggering",
    "harness.state.tables",
    "harness.tick.runtime",
    "pydantic",  # they take the state folder from harness.core.config_source, not the validated configuration
    "harness.core.config",
)

SCRIPT = """
import contextlib, io, json, sys
from harness.commands.cli import main
answers = io.StringIO()
with contextlib.redirect_stdout(answers):
    for argv in (["status"], ["why", "--job", "j"], ["events", "--since", "1h"],
                 ["events", "--job", "j", "--type", "RUN_STARTED", "--upstream", "trigger_file:u"]):
        main(["--config", sys.argv[1], *argv])
print(answers.getvalue())
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {h.split(".")[0] for h in %r}
                        and any(m == h or m.startswith(h + ".") for h in %r))))
""" % (HEAVY, HEAVY)


@pytest.mark.process
def test_status_why_and_events_import_no_spark_dbt_sensors_or_pandas(tmp_path: Path) -> None:
    """A process of its own: the modules a command imports are only visible in a fresh interpreter."""
    # GIVEN a state folder with a snapshot, a health record and an event log of one file, indexed as a
    # tick leaves it
    state = tmp_path / "state"
    state.mkdir()
    write_event_file(tmp_path / "events")
    (state / "events.location").write_text(str(tmp_path / "events"))
    assert refresh_index(state, datetime.now(timezone.utc).date()) is not None
    (state / "status.json").write_text(
        json.dumps({"written_at": "2026-11-22T12:00:00+00:00", "tick_id": "t1", "jobs": [], "rows": []})
    )
    (state / "health.json").write_text(json.dumps({"last_tick": {"ended_at": "2026-11-22T12:00:00+00:00"}}))
    config = tmp_path / "heartbeat.yml"
    config.write_text(f"state_dir: {state}\n")
    # WHEN status, why and events run in one fresh interpreter
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(config)],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_DIR,
    ).stdout
    # THEN the events were read and none of the heavy modules was imported
    assert "RUN_STARTED" in out
    assert json.loads(out.splitlines()[-1]) == []


def write_event_file(folder: Path) -> None:
    """One event as Spark writes it: a UTC timestamp, in a day folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    day = folder / f"event_date={datetime.now(timezone.utc).date()}"
    day.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "event_time": pa.array([datetime.now(timezone.utc)], pa.timestamp("us", tz="UTC")),
                "event_type": ["RUN_STARTED"],
                "sensor_source": ["trigger_file"],
                "sensor_id": ["u"],
                "trigger_job_id": ["j"],
                "message": ["started"],
                "details": ["{}"],
            }
        ),
        day / "part-0.parquet",
    )


@pytest.mark.process
def test_building_every_sensor_imports_no_iceberg_client_until_a_table_is_read(tmp_path: Path) -> None:
    """A full tick builds every kind's sensor (its settings checked at the start); pyiceberg (0.25 s to import)
    comes only with an Iceberg table's first read."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from harness.core.config import PROJECT_DIR, Config\n"
        "from harness.sensors import build_registry\n"
        "build_registry(Config(config_path=None, project_dir=PROJECT_DIR, state_dir=Path(sys.argv[1])))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyiceberg'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "state")], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.process
def test_a_cron_tick_loads_the_sql_parser_only_to_check_a_preprocess_query(tmp_path: Path) -> None:
    """A cron tick imports the tick's modules; sqlglot (0.05 s of a 0.4 s tick with nothing new) comes only
    when a controls CSV with a preprocess_query is read."""
    # GIVEN a controls CSV with a preprocess_query on its row
    csv_path = tmp_path / "heartbeat_controls.csv"
    write_controls_csv(
        csv_path, [control_row("kafka", "orders", "job", preprocess_query="select * from sensor_new_data")]
    )
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "import harness.commands.cli, harness.tick.run\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sqlglot'))\n"
        "from harness.core.controls import read_controls\n"
        "read_controls(Path(sys.argv[1]))\n"
        "print('sqlglot' in sys.modules)\n"
    )
    # WHEN a fresh interpreter imports what a cron tick imports, then reads the CSV
    out = subprocess.run([sys.executable, "-c", script, str(csv_path)], capture_output=True, text=True, check=True)
    # THEN the parser came with the query's check, not before
    assert out.stdout.splitlines() == ["[]", "True"]
