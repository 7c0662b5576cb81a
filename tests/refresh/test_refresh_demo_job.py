"""End to end with the heartbeat: the demo's refresh job (demo/downstream/refresh_job.py). A trigger file
names a customers extract; the heartbeat starts the job with its change range; the job loads the
extracts of the trigger files in that range as one batch of the downstream project's key refresh model
`customers` (a dbt project that installs Heartbeat as a package, in a process and metastore of its own)
and prints the batch's status codes and the dataset. A run that fails after its build is retried over
the range since the last success: its records come back unchanged (U), not twice."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from harness.core.config import PROJECT_DIR
from tests.support import HeartbeatHarness, control_row

JOB = "customers_job"
JOB_SECONDS = 300  # a run starts its own Spark and dbt


def printed_table(output: str, title: str) -> list[list[str]]:
    """The rows (without the header) of the table Spark's show() printed after the line `title`."""
    lines = output.split(title, 1)[1].strip().splitlines()
    table = itertools.takewhile(lambda line: line.startswith(("|", "+")), lines)
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table if line.startswith("|")][1:]


def batch_id(output: str) -> str:
    """The batch id the job printed first (`batch ID: trigger files ...`)."""
    return output.split("batch ", 1)[1].split(":", 1)[0]


def run_outputs(heartbeat: HeartbeatHarness) -> list[str]:
    folders = sorted((heartbeat.config.state_dir / "local_runs").glob("local-*"))
    return [(folder / "output.log").read_text() for folder in folders]


def test_a_trigger_file_loads_its_extract_as_a_keyed_batch_and_a_failed_run_is_healed_without_duplicates(
    heartbeat: HeartbeatHarness, tmp_path: Path
) -> None:
    # GIVEN the demo's customers job, fed by a trigger folder whose files name extracts, whose first run
    # fails after its build (as a later task of a real job might)
    downstream_state = tmp_path / "downstream"
    downstream_state.mkdir()
    triggers = heartbeat.config.trigger_root / "customers"  # type: ignore[operator]
    triggers.mkdir()
    heartbeat.write_controls([control_row("trigger_file", "customers", JOB)])
    heartbeat.define_jobs(
        JOB,
        timeout=JOB_SECONDS,
        command=(
            f"{sys.executable} {PROJECT_DIR / 'demo/downstream/refresh_job.py'} --triggers {triggers} "
            f"--state-dir {downstream_state}"
        ),
    )
    (downstream_state / "DEMO_FAIL_AFTER_BUILD").touch()

    # WHEN a trigger file naming customers_001.csv lands and the run ends
    (triggers / "customers_001.ready").write_text("customers_001.csv\n")
    heartbeat.tick_until_settled(JOB_SECONDS)

    # THEN the run loaded its three customers as new (N), then failed
    assert heartbeat.job_status(JOB) == {"FAILED"}
    (failed,) = run_outputs(heartbeat)
    assert "trigger files ['customers_001.ready'] -> extracts ['customers_001.csv']" in failed
    codes = printed_table(failed, "the batch's records and their status codes:")
    assert [(r[0], r[1], r[-1]) for r in codes] == [("1", "Anna", "N"), ("2", "Marc", "N"), ("3", "Sofia", "N")]

    # WHEN the job is retried (`python -m harness retry`)
    heartbeat.request("retry", JOB)
    heartbeat.tick_until_settled(JOB_SECONDS)

    # THEN the retry was handed the same range, loaded the same records again as unchanged (U), and the
    # dataset still holds each customer once, from the first load
    assert heartbeat.job_status(JOB) == {"COMPLETED"}
    _, healed = run_outputs(heartbeat)
    assert "trigger files ['customers_001.ready'] -> extracts ['customers_001.csv']" in healed
    codes = printed_table(healed, "the batch's records and their status codes:")
    assert [(r[0], r[-1]) for r in codes] == [("1", "U"), ("2", "U"), ("3", "U")]
    dataset = printed_table(healed, "the dataset:")
    assert [(r[0], r[1], r[2]) for r in dataset] == [
        ("1", "Anna", "Berlin"),
        ("2", "Marc", "Paris"),
        ("3", "Sofia", "Madrid"),
    ]
    assert {r[-1] for r in dataset} == {batch_id(failed)} and batch_id(healed) != batch_id(failed)
