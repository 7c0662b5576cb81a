"""dbt, invoked in-process on the harness's SparkSession (dbt-spark `method: session`).

`dbt_args` is the one place the configuration reaches dbt: its flags and the vars profiles.yml and the
models read. While an invocation runs, the harness's Config is registered here, so the `heartbeat`
adapter uses it (from the command line, the adapter loads heartbeat.yml itself).

One invocation at a time. `dbtRunner.invoke` returns rather than raises: success, the exception and
each failed node are checked and turned into one DbtError whose message names what failed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from harness.core.config import Config
from harness.core.controls import MISSING, file_version
from harness.core.errors import DbtError
from harness.core.vocabulary import dumps

if TYPE_CHECKING:
    from dbt.cli.main import dbtRunnerResult
    from dbt.contracts.graph.manifest import Manifest

log = logging.getLogger(__name__)

_active: Config | None = None
_manifests: dict[str, Manifest] = {}
_invocation = threading.Lock()


AS_IF_CONTROL_TABLE = "heartbeat_as_if_control_table"  # the temporary view heartbeat_trigger_set_as_if reads
# Passed while the controls CSV is missing or cannot be read: the staging model then reads the seed's
# table as last loaded (macros/controls_seed.sql), since dbt has no seed without its file.
CONTROLS_MISSING_VAR = "heartbeat_controls_missing"
NO_SEEDS_FOLDER = ".no-seeds-while-the-controls-csv-is-unreadable"  # inside the seeds folder, never made


@dataclass(frozen=True)
class DbtOutcome:
    seconds: float
    nodes: int
    warnings: tuple[str, ...] = ()  # what the command warned of (a model's `exceptions.warn`, dbt's own)


def active_config() -> Config | None:
    """The Config of the harness invocation running now, if any (read by the `heartbeat` adapter)."""
    return _active


def dbt_vars(config: Config, **extra: Any) -> dict[str, Any]:
    """The vars profiles.yml, dbt_project.yml and the models read."""
    seeds_dir = str(config.controls_csv.parent.relative_to(config.project_dir))
    missing = file_version(config.controls_csv) == MISSING
    return {
        "heartbeat_catalog": config.catalog,
        "heartbeat_schema": config.schema,
        "heartbeat_databricks_http_path": config.settings.databricks.dbt_http_path,
        # Relative to the project: dbt writes each seed's SQL to target/run/<project>/<seed path>, which
        # an absolute seed path would turn into the CSV itself. dbt reads every seed file as it parses, so
        # while the CSV cannot be read (a link to nothing, no read permission) it is given a folder with
        # no seed, and the models read the seed's table as the last valid file loaded it.
        "heartbeat_seeds_dir": f"{seeds_dir}/{NO_SEEDS_FOLDER}" if missing else seeds_dir,
        "heartbeat_open_run_days": config.settings.runs.track_days,
        "heartbeat_refused_start_retry_seconds": config.settings.runs.refused_start_retry_seconds,
        "heartbeat_refused_start_retry_max_seconds": config.settings.runs.refused_start_retry_max_seconds,
        "heartbeat_as_if_control_table": AS_IF_CONTROL_TABLE,
        "heartbeat_start_from": config.settings.controls.start_from,
        **({CONTROLS_MISSING_VAR: True} if missing else {}),
        **extra,
    }


def dbt_args(config: Config, command: list[str], **extra_vars: Any) -> list[str]:
    """The whole dbt command line for `command` (e.g. ["build", "--select", ...]) under `config`."""
    return [
        *command,
        "--project-dir",
        str(config.project_dir),
        "--profiles-dir",
        str(config.project_dir),
        "--target",
        config.dbt_target,
        "--target-path",
        str(config.dbt_target_path),
        "--log-path",
        str(config.dbt_log_path),
        "--vars",
        json.dumps(dbt_vars(config, **extra_vars)),
    ]


@contextmanager
def _registered(config: Config) -> Iterator[None]:
    global _active
    with _invocation:
        _active = config
        try:
            yield
        finally:
            _active = None


def invoke(config: Config, command: list[str], *, quiet: bool = True, **extra_vars: Any) -> DbtOutcome:
    """Run one dbt command; raise DbtError with the failing nodes' messages when it does not succeed."""
    if config.dbt_target == "databricks":
        from harness.platform import databricks_target  # databricks-sdk: imported only where it is used

        databricks_target.prepare(config)
    full = dbt_args(config, command, **extra_vars)
    if quiet:
        # Nothing on the console, its errors included (`--quiet` still prints them, as text among the
        # heartbeat's JSON log lines): a failure is the DbtError below, which the caller reports; dbt's
        # own log keeps everything (<dbt_log_path>/dbt.log).
        full = ["--log-level", "none", "--no-use-colors", "--no-send-anonymous-usage-stats", *full]
    if config.dbt_target == "local":
        # One thread (profiles.yml): dbt runs its nodes in the calling thread rather than in a pool made
        # anew for every command. Spark serves each Python thread on a JVM thread of its own, whose first
        # metastore call sets up a metastore client for it: about 0.1 s of every fold (docs/performance-notes.md).
        full = ["--single-threaded", *full]
    from dbt.cli.main import dbtRunner  # 3 s of imports: paid only by a process that runs dbt

    started = time.monotonic()
    warned: list[str] = []

    def on_event(event: Any) -> None:  # called for every event, whatever the log level
        if event.info.level == "warn":
            warned.append(event.info.msg)

    with _registered(config):
        runner = dbtRunner(manifest=_manifest(config, extra_vars), callbacks=[on_event])
        result: dbtRunnerResult = runner.invoke(full)
    seconds = time.monotonic() - started
    failures = _failures(result)
    if not result.success or result.exception is not None:
        detail = "; ".join(failures) or headed(str(result.exception or "")) or f"see {config.dbt_log_path / 'dbt.log'}"
        raise DbtError(f"dbt {' '.join(command[:1])} failed: {detail}")
    nodes = len(result.result) if result.result is not None and hasattr(result.result, "__len__") else 0
    return DbtOutcome(seconds=seconds, nodes=nodes, warnings=tuple(warned))


def import_in_background(config: Config | None = None) -> threading.Thread | None:
    """Import dbt (about 3 s) in a thread of its own while the caller starts Spark, whose JVM the main
    thread only waits for: a cold process's first fold then finds dbt loaded. With `config` (a tick
    process, which folds at almost every hand-over), the thread also parses the project for the folds
    (about 2 s) on the local target, where a parse reads only the project's files. The caller joins the
    thread before it imports anything else, so that no module is imported by both threads at once.
    None when dbt is loaded already."""
    import sys

    if "dbt.cli.main" in sys.modules:
        return None

    def prepare() -> None:
        __import__("dbt.cli.main")
        if config is not None and config.dbt_target == "local":
            try:
                with _registered(config):
                    _manifest(config, {})
            except Exception:  # noqa: BLE001 - the fold parses again and reports what is wrong
                log.debug("dbt: parsing ahead failed; the fold parses the project itself", exc_info=True)

    thread = threading.Thread(target=prepare, name="dbt-import", daemon=True)
    thread.start()
    return thread


MANIFESTS_KEPT = 8  # a seed load's vars, the folds' vars, and refresh models with parameters of their own
FOLD_SINCE_VAR = "heartbeat_fold_since"  # the time of the earliest event not folded yet (harness.tick.fold)
# Vars the harness passes that only a model's run reads (the refresh materialization's action and its
# retention, where a fold starts reading the log), never dbt's parse: a project parsed without them
# serves every value of them.
RUN_ONLY_VARS = ("heartbeat_refresh", "heartbeat_refresh_keep_batches", FOLD_SINCE_VAR)


def _manifest(config: Config, extra_vars: dict[str, Any]) -> Manifest | None:
    """The project parsed under this configuration and vars, once per process: a `run` loop's folds (and a
    test session's) skip dbt's parse, which costs more than building the control table. Kept by what it
    is parsed from (the project's files, the target, the vars), so a changed project is parsed again;
    None (dbt parses as usual) when the parse fails, so that the command itself reports why."""
    from dbt.cli.main import dbtRunner

    extra_vars = {name: value for name, value in extra_vars.items() if name not in RUN_ONLY_VARS}
    key = f"{project_digest(config)}:{dumps(extra_vars)}"
    if key in _manifests:
        _manifests[key] = _manifests.pop(key)  # the newest used last
        return _manifests[key]
    # Silent whatever `quiet` says: when this parse fails (a project whose parse reads a run-only var),
    # the command parses again with every var and reports what is wrong itself.
    command = dbt_args(config, ["parse"], **extra_vars)
    result = dbtRunner().invoke(["--log-level", "none", "--no-use-colors", "--no-send-anonymous-usage-stats", *command])
    from dbt.contracts.graph.manifest import Manifest

    if not result.success or not isinstance(result.result, Manifest):
        return None
    _manifests[key] = result.result
    while len(_manifests) > MANIFESTS_KEPT:
        _manifests.pop(next(iter(_manifests)))
    return result.result


def project_digest(config: Config) -> str:
    """What dbt's parse of the project depends on: its files (models, macros, the heartbeat adapter's
    macros, dbt_project.yml, profiles.yml), the target and the vars."""
    roots = [config.project_dir / "models", config.project_dir / "macros", *_adapter_macros()]
    files = [
        config.project_dir / "dbt_project.yml",
        config.project_dir / "profiles.yml",
        *sorted(f for root in roots for f in root.rglob("*") if f.is_file() and f.suffix in (".sql", ".yml")),
    ]
    digest = hashlib.sha256(dumps([config.dbt_target, dbt_vars(config)]).encode())
    for f in files:
        digest.update(f.name.encode() + f.read_bytes())
    return digest.hexdigest()


def _adapter_macros() -> list[Path]:
    """The macros of the `heartbeat` dbt adapter (adapter/: the local target's), where it is installed. The
    wheel the bundle deploys does not carry it: the databricks target does not use it."""
    try:
        from dbt.include import heartbeat as heartbeat_adapter_macros
    except ImportError:
        return []
    return [Path(heartbeat_adapter_macros.PACKAGE_PATH)]


def headed(message: str) -> str:
    """dbt's error with its first line naming the problem: dbt heads it with its kind alone
    ("Compilation Error", then `dbt found two seeds with the name ...` on the next line), and a
    one-line report (the health record's, `status`'s) keeps only the first line."""
    lines = message.strip().splitlines()
    rest = [i for i, line in enumerate(lines[1:], 1) if line.strip()]
    if not rest or not lines[0].strip().endswith("Error"):
        return message.strip()
    first = rest[0]
    return "\n".join([f"{lines[0].strip()}: {lines[first].strip()}", *lines[first + 1 :]])


def _failures(result: dbtRunnerResult) -> list[str]:
    out: list[str] = []
    for node_result in getattr(result.result, "results", None) or []:
        status = str(getattr(node_result, "status", "")).lower()
        if status in ("error", "fail", "runtime error"):
            name = getattr(getattr(node_result, "node", None), "name", "?")
            message = (getattr(node_result, "message", None) or "").strip()
            out.append(f"{name}: {message or status}")
    return out
