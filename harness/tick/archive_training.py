"""The training of the JVM's class archive (harness.platform.jvm_options.make_archive runs this module as a
process of its own, whose JVM writes the archive as it exits): a session's statements, then the ticks a
cron process runs once it hands over to Spark.

`python -m harness.tick.archive_training STATE_DIR`
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from harness.core.config import PROJECT_DIR, Config, LocalJob
from harness.core.config_source import CONTROLS_FILE
from harness.core.controls import USER_COLUMNS
from harness.platform.jvm_options import train
from harness.tick.run import run_tick
from harness.tick.runtime import Runtime

# One trigger folder feeding one local job (the controls' columns: harness.core.controls.USER_COLUMNS).
TRAINING_ROW = {
    "sensor_source": "trigger_file",
    "sensor_id": "landed",
    "sensor_read_type": "batch",
    "asset_description": "training",
    "trigger_job_id": "training_job",
    "trigger_job_name": "training",
    "job_state": "UNPAUSED",
    "dependency_flag": "TRUE",
}
TRAINING_CONTROLS = f"{','.join(USER_COLUMNS)}\n{','.join(TRAINING_ROW.get(c, '') for c in USER_COLUMNS)}\n"


def train_ticks(state_dir: Path) -> None:
    """The ticks a cron process runs once it hands over to Spark, on a heartbeat of one trigger folder
    feeding one local job: the first tick (dbt builds every model), a file landed (the as-if decisions,
    the start, a fold, the snapshot's readings through Arrow), the run ended (recorded, folded). A cold
    tick loaded about 1,800 classes from the jars that a session's statements alone do not load: the code
    generator's compiler, Arrow, more of Catalyst (docs/performance-notes.md). Where the project folder is
    not writable (dbt reads the controls seed inside it), the archive holds the statements' classes only."""
    seeds = PROJECT_DIR / "state" / f"archive-training-{os.getpid()}"
    try:
        seeds.mkdir(parents=True)
        (seeds / CONTROLS_FILE).write_text(TRAINING_CONTROLS)
    except OSError:
        return
    try:
        triggers = state_dir / "triggers"
        (triggers / "landed").mkdir(parents=True)
        config = Config(
            config_path=None,
            project_dir=PROJECT_DIR,
            state_dir=state_dir,
            controls_csv=seeds / CONTROLS_FILE,
            trigger_root=triggers,
            local_jobs={"training_job": LocalJob(name="training", command="true")},
        )
        runtime = Runtime.open(config)
        run_tick(runtime)
        (triggers / "landed" / "batch-1.done").write_text("1")
        run_tick(runtime)
        time.sleep(1.0)  # the job (`true`) ends
        run_tick(runtime)
    finally:
        shutil.rmtree(seeds, ignore_errors=True)


if __name__ == "__main__":
    train(Path(sys.argv[1]), then=train_ticks)
