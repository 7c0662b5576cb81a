"""The demo's refresh job (heartbeat.yml: demo_customers_job). A trigger file landing in
demo/triggers/demo_customers_landed names a new customers extract; the heartbeat starts this job with its
change range. The job loads the extracts named by the trigger files inside the range as one batch of the
keyed model `customers` (`dbt build` in this downstream project, which installs Heartbeat as a package;
the batch id is the run's context id), then prints what the batch did and the model's metrics.

A failed run is healed by the next one: its range starts at the last successful run, so it loads the
same extracts again, and their records come back unchanged (U), not twice.

DEMO_FAIL_AFTER_BUILD (a file in this project's state folder) makes one run fail after its build, as a
later task of a real job might.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # the harness package, when run from anywhere

from harness.core.config import load_config  # noqa: E402
from harness.core.config_source import CONFIG_ENV, ENV_OVERRIDES  # noqa: E402

# This project has its own state folder (own metastore): not the heartbeat's overrides it inherits.
for variable in [CONFIG_ENV, *ENV_OVERRIDES.values()]:
    os.environ.pop(variable, None)

from dbt.cli.main import dbtRunner  # noqa: E402

from harness.commands.refresh import project_config  # noqa: E402
from harness.platform.spark import get_spark  # noqa: E402
from harness.refresh import change_range, metrics  # noqa: E402
from harness.refresh.runner import run  # noqa: E402
from harness.state.lock import StateLock  # noqa: E402

FAIL_FLAG = "DEMO_FAIL_AFTER_BUILD"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--triggers", required=True, help="the trigger folder of the upstream")
    parser.add_argument("--state-dir", help="this project's state folder (default: its heartbeat.yml's)")
    args = parser.parse_args()
    triggers = Path(args.triggers).resolve()

    given = change_range.from_environment()
    upstream = given.upstream(triggers.name)
    files = change_range.trigger_files(triggers, upstream)
    extracts = [str(HERE / "extracts" / f.read_text().strip()) for f in files]
    print(
        f"batch {change_range.batch_id()}: trigger files {[f.name for f in files]} -> extracts "
        f"{[Path(e).name for e in extracts]}",
        flush=True,
    )
    if not extracts:
        print("nothing to load")
        return 0

    config = project_config(load_config(HERE / "heartbeat.yml"), HERE)
    if args.state_dir:
        config = replace(config, state_dir=Path(args.state_dir).resolve())
    with StateLock(config.state_dir, holder="demo refresh job"):
        if not (HERE / "dbt_packages" / "heartbeat").exists():
            deps = dbtRunner().invoke(["--quiet", "deps", "--project-dir", str(HERE), "--profiles-dir", str(HERE)])
            if not deps.success:
                raise SystemExit(f"dbt deps failed: {deps.exception}")
        spark = get_spark(config)
        run(config, ["build", "--select", "customers"], customer_extracts=extracts)
        batch = change_range.batch_id()
        print("\nthe batch's records and their status codes:")
        spark.sql(
            f"select customer_id, name, city, updated_at, s_record_status_code from "
            f"{config.table('customers__batches')} where s_batch_id = '{batch}' order by customer_id"
        ).show()
        print("the dataset:")
        spark.sql(
            f"select customer_id, name, city, updated_at, s_batch_id from {config.table('customers')} "
            "order by customer_id"
        ).show(truncate=False)
        print(metrics.render_all(spark, config, "customers"))
    flag = config.state_dir / FAIL_FLAG
    if flag.exists():
        flag.unlink()
        print(f"\n{FAIL_FLAG}: this run fails after its build")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
