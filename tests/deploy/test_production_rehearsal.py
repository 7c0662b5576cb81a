"""Production rehearsal: the wheel the bundle ships, installed alone, runs the bundle's own task command
lines the way a Databricks job runs them.

Layer: process — its point is separate processes: the wheel built by `python -m build`, a fresh
virtualenv with only that wheel installed (the machine's installed dependencies are reused through a
plain path line in a `.pth` file, so neither the source tree nor its editable install can be imported),
a Spark Connect server process standing in for serverless compute (its clients have no Spark context and
no JVM), the Jobs API test server, and each task command run as its own process with its working folder
outside the repository.

The command lines are the bundle's, resolved per target as the Databricks CLI resolves them
(tests.bundle_resolution), with three substitutions for what cannot exist here, each said where it is
made: `${workspace.file_path}` is a copy of the synced files, `/Volumes/` a local folder, and dbt runs on
the Connect session (`--set dbt_target=local`) since there is no SQL warehouse to reach.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from harness.core.config import PROJECT_DIR
from tests.bundle_resolution import ResolvedBundle, load, resolve
from tests.jobs_api_server import JobsApiServer
from tests.support import control_row, write_controls_csv
from tests.wheel_build import build_distributions

pytestmark = pytest.mark.process

COMMAND_TIMEOUT_SECONDS = 900  # one tick on a busy 2-core machine: dbt's first build on Spark Connect
SERVER_START_SECONDS = 300
JOB = 4242
VARIABLES = {
    "catalog": "spark_catalog",
    "warehouse_id": "rehearsal",
    "heartbeat_identity": "rehearsal-principal",
    "alert_destination_id": "rehearsal-destination",
}
CONNECT_TOKEN = "rehearsal-connect-token"
HIVE_TABLE = "upstream.events_by_day"


# --- the wheel, installed alone -------------------------------------------------------------------
@dataclass(frozen=True)
class Installed:
    venv: Path
    wheel: Path
    build_seconds: float

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def entry_point(self, name: str) -> Path:
        return self.venv / "bin" / name


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    dists = build_distributions()
    venv = tmp_path_factory.mktemp("rehearsal") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site,) = (venv / "lib").glob("python3*/site-packages")
    # The installed dependencies, as a plain path line: appended to sys.path, the .pth files in that
    # folder (the editable install's among them) are not processed, so the source tree stays unreachable.
    shared = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site / "shared_dependencies.pth").write_text("".join(f"{p}\n" for p in shared))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            "--disable-pip-version-check",
            str(dists.wheel),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return Installed(venv, dists.wheel, dists.seconds)


# --- the Connect server standing in for serverless compute ----------------------------------------
class ConnectServer:
    def __init__(self, root: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.log = root / "connect-server.log"
        env = {**os.environ, "SPARK_CONNECT_AUTHENTICATE_TOKEN": CONNECT_TOKEN, "SPARK_LOCAL_IP": "127.0.0.1"}
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    str(PROJECT_DIR / "tests" / "connect_server.py"),
                    str(self.port),
                    str(root / "server"),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=env,
                start_new_session=True,
            )
        self._expect("READY", SERVER_START_SECONDS)

    @property
    def url(self) -> str:
        return f"sc://localhost:{self.port}"

    def _expect(self, word: str, timeout: float) -> None:
        answer: list[str] = []
        reader = threading.Thread(target=lambda: answer.append(self.process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        line = answer[0].strip() if answer else ""
        assert line.startswith(word), f"Connect server said {line!r}; its log:\n{self.log.read_text()[-3000:]}"

    def sql(self, statement: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(statement.replace("\n", " ") + "\n")
        self.process.stdin.flush()
        self._expect("OK", 300)

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    server = ConnectServer(tmp_path_factory.mktemp("connect"))
    yield server
    server.stop()


# --- the workspace and the job runs ---------------------------------------------------------------
@dataclass
class Workspace:
    """What a deploy leaves in the workspace, on this machine: the synced files and the volumes."""

    root: Path
    bundle: ResolvedBundle
    installed: Installed
    server: ConnectServer
    jobs_api: JobsApiServer

    @property
    def files(self) -> Path:
        return self.root / "files"

    @property
    def volumes(self) -> Path:
        return self.root / "Volumes"

    def sync(self) -> None:
        """The files the bundle syncs (`sync.include`) as they land under ${workspace.file_path}."""
        bundle, _ = load()
        for pattern in bundle["sync"]["include"]:
            for source in PROJECT_DIR.glob(pattern + "/*" if pattern.endswith("**") else pattern):
                if source.is_file():
                    target = self.files / source.relative_to(PROJECT_DIR)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, target)

    def localize(self, parameter: str) -> str:
        return parameter.replace(self.bundle.workspace["file_path"], str(self.files)).replace(
            "/Volumes/", f"{self.volumes}/"
        )

    def command(self, job: str, task_key: str, **dynamic: str) -> list[str]:
        """The wheel task's command line: its entry point from the installed wheel, its parameters as the
        bundle resolves them, `{{job.id}}`-style references as Databricks fills them at run time."""
        task = self.bundle.task(job, task_key)["python_wheel_task"]
        assert task["package_name"] == "heartbeat"
        parameters = [self.localize(p) for p in task["parameters"]]
        for name, value in dynamic.items():
            parameters = [p.replace("{{" + name + "}}", value) for p in parameters]
        # No SQL warehouse here: dbt folds on the Connect session (the only deviation from the task)
        return [str(self.installed.entry_point(task["entry_point"])), "--set", "dbt_target=local", *parameters]

    def env(self) -> dict[str, str]:
        """A job's environment on serverless compute: the runtime's marker and its Spark Connect session,
        databricks-sdk's authentication (here: the Jobs API test server), no project paths."""
        home = self.root / "home"
        home.mkdir(exist_ok=True)
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "DATABRICKS_RUNTIME_VERSION": "client.rehearsal",
            "SPARK_REMOTE": self.server.url,
            "SPARK_CONNECT_AUTHENTICATE_TOKEN": CONNECT_TOKEN,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "DATABRICKS_HOST": self.jobs_api.url,
            "DATABRICKS_TOKEN": self.jobs_api.token,
            "DATABRICKS_CONFIG_FILE": str(home / ".databrickscfg"),
            "HEARTBEAT_TRIGGER_ROOT": str(self.root / "triggers"),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "NO_PROXY": "127.0.0.1,localhost",
        }

    def run(self, command: list[str]) -> str:
        done = subprocess.run(
            command, cwd=self.root, env=self.env(), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{output[-6000:]}"
        return output

    def python(self, code: str, *args: str) -> str:
        return self.run([str(self.installed.python), "-c", code, *args])


CONSUME = """
import json, sys
from pyspark.sql import SparkSession
from harness.core.config import load_config
from harness.consume import read_upstream
from harness.refresh.change_range import parse
config = load_config(sys.argv[1], dict(a.split("=", 1) for a in sys.argv[3:]))
spark = SparkSession.builder.getOrCreate()
counts = {u.label: read_upstream(spark, u, config=config).count()
          for u in parse(sys.argv[2]).upstreams if u.sensor_source != "hive_table"}
print("COUNTS " + json.dumps({"counts": counts, "session": type(spark).__module__}))
"""


def test_the_shipped_wheel_runs_the_bundles_tasks_on_spark_connect(
    installed: Installed, connect_server: ConnectServer, jobs_api: JobsApiServer, tmp_path: Path
) -> None:
    started = time.monotonic()
    # GIVEN the wheel installed alone: `harness` comes from the new virtualenv, never from the source tree
    root = tmp_path
    ws = Workspace(root, resolve("prod", VARIABLES, user="ci@example.com"), installed, connect_server, jobs_api)
    where = ws.python("import harness, sys; print(harness.__file__)")
    assert where.strip().startswith(str(installed.venv)), where
    assert not where.strip().startswith(str(PROJECT_DIR))
    ws.python(
        "import importlib, pkgutil, harness\n"
        "[importlib.import_module(m.name) for m in pkgutil.walk_packages(harness.__path__, 'harness.')\n"
        " if not m.name.endswith('__main__')]"
    )
    assert "tick" in ws.run([str(installed.entry_point("heartbeat")), "--help"])

    # ... the bundle's files synced, a controls CSV of three upstreams of one downstream job, all hard:
    # a trigger folder, a Delta table (written with delta-rs) and a Hive-partitioned table of the metastore
    ws.sync()
    delta = root / "lake" / "orders"
    write_deltalake(delta, pa.table({"order_id": [1, 2], "amount": [10.0, 20.0]}))
    (root / "triggers" / "orders").mkdir(parents=True)
    (root / "triggers" / "orders" / "batch-1.done").write_text("1")
    connect_server.sql("CREATE DATABASE IF NOT EXISTS upstream")
    connect_server.sql(f"DROP TABLE IF EXISTS {HIVE_TABLE}")
    connect_server.sql(f"CREATE TABLE {HIVE_TABLE} (id BIGINT, ds STRING) USING parquet PARTITIONED BY (ds)")
    connect_server.sql(f"INSERT INTO {HIVE_TABLE} PARTITION (ds = '2026-01-04') VALUES (1), (2)")
    write_controls_csv(
        ws.files / "seeds" / "heartbeat_controls.csv",
        [
            control_row("trigger_file", "orders", str(JOB)),
            control_row("delta_table", str(delta), str(JOB)),
            control_row("hive_table", HIVE_TABLE, str(JOB)),
        ],
    )
    jobs_api.add_job(JOB, "example-downstream", parameters=["heartbeat_run_context_id", "heartbeat_change_range"])
    tick = ws.command("heartbeat", "tick")
    state = ws.volumes / "spark_catalog" / "heartbeat" / "state"
    assert f"state_dir={state}" in tick and "schema=heartbeat" in tick

    # WHEN the heartbeat job's task runs
    first_output = ws.run(tick)

    # THEN it ran on the Spark Connect session (no Spark of its own was started: no spark.log) and started
    # the downstream job once, with all three ranges
    assert "tick" in first_output and not (state / "spark.log").exists()
    (first,) = jobs_api.runs_of(JOB)
    first_range = {u["sensor_source"]: u for u in jobs_api.change_range(first)["upstreams"]}
    assert set(first_range) == {"trigger_file", "delta_table", "hive_table"}
    assert first_range["hive_table"]["events"][0]["partition_values"] == [{"ds": "2026-01-04"}]
    assert (state / "status.json").is_file()

    # WHEN the downstream job runs: it reads its range with harness.consume from the same wheel, on its
    # own Spark Connect session, and its last task reports its end to the heartbeat
    consumed = ws.python(
        CONSUME,
        str(ws.files / "deploy" / "heartbeat.yml"),
        first.job_parameters["heartbeat_change_range"],
        "dbt_target=local",
        "catalog=spark_catalog",
        f"state_dir={state}",
    )
    report = json.loads(consumed.split("COUNTS ", 1)[1].splitlines()[0])
    jobs_api.end_run(first.run_id, "SUCCESS")
    ws.run(ws.command("example_downstream", "report_to_heartbeat", **{"job.id": str(JOB)}))

    # THEN it read every row of the range, through Spark Connect
    assert report["counts"] == {"trigger_file:orders": 1, f"delta_table:{delta}": 2}
    assert report["session"].startswith("pyspark.sql.connect")

    # WHEN every upstream changes again and the next tick runs
    (root / "triggers" / "orders" / "batch-2.done").write_text("2")
    write_deltalake(delta, pa.table({"order_id": [3], "amount": [30.0]}), mode="append")
    connect_server.sql(f"INSERT INTO {HIVE_TABLE} PARTITION (ds = '2026-01-05') VALUES (3)")
    ws.run(tick)

    # THEN a second run covers exactly what changed since the first one
    runs = jobs_api.runs_of(JOB)
    assert len(runs) == 2
    second_range = {u["sensor_source"]: u for u in jobs_api.change_range(runs[1])["upstreams"]}
    for source, upstream in second_range.items():
        assert upstream["from"] == first_range[source]["to"], source
    assert second_range["delta_table"]["to"]["version"] == 1
    assert [e["partition_values"] for e in second_range["hive_table"]["events"]] == [[{"ds": "2026-01-05"}]]
    print(f"rehearsal: wheel built in {installed.build_seconds:.1f} s, scenario {time.monotonic() - started:.1f} s")


def test_the_dev_targets_task_runs_on_its_own_schema_and_volume(installed: Installed) -> None:
    # GIVEN the bundle resolved for a developer's dev target
    dev = resolve("dev", VARIABLES, user="ann@example.com")
    parameters: list[Any] = dev.task("heartbeat", "tick")["python_wheel_task"]["parameters"]
    # THEN the command the dev job runs names the dev schema and its volume, never production's
    assert "schema=dev_ann_heartbeat" in parameters
    assert "state_dir=/Volumes/spark_catalog/dev_ann_heartbeat/state" in parameters
