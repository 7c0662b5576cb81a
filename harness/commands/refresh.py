"""`python -m harness refresh ...`: unload a batch, reset a model, print the refresh metrics.

  refresh unload --model M --batch B   the dataset as if batch B had never been loaded (B can be loaded
                                       again later, by a run with the same batch id)
  refresh reset --model M              recompute the dataset from every kept batch, e.g. after a change of
                                       refresh type or parameters
  refresh status [--model M]           per model and batch: records, effective records, status codes,
                                       effective ranges, seconds per phase

Unload and reset run the model's own materialization through dbt (`dbt run --select M` with the var
`heartbeat_refresh`), so the rules live in one place, the macros. `--project-dir` names the dbt project
of the model when it is not the heartbeat's own (a downstream project that installs Heartbeat as a
package); the state folder and schema are those of the configuration. `--vars` passes the project's
other vars (YAML or JSON, as `dbt --vars`), for models whose SQL or hooks need one to compile.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from harness.core.config_source import CONTROLS_FILE
from harness.core.errors import HeartbeatError, StateBusyError
from harness.state.lock import StateLock

if TYPE_CHECKING:
    from harness.core.config import Config


class RefreshError(HeartbeatError):
    """A refresh command cannot do what was asked; the message says why and what to do."""


def project_config(config: Config, project_dir: str | Path | None) -> Config:
    """The configuration with another dbt project (a downstream project that installs Heartbeat)."""
    if project_dir is None:
        return config
    project = Path(project_dir).resolve()
    if not (project / "dbt_project.yml").exists():
        raise RefreshError(f"{project} is not a dbt project (no dbt_project.yml)")
    if project == config.project_dir:
        return config
    return replace(config, project_dir=project, controls_csv=project / "seeds" / CONTROLS_FILE)


def parse_vars(text: str | None) -> dict[str, Any]:
    """`--vars` as dbt takes it: a YAML (or JSON) mapping of the project's vars."""
    if not text:
        return {}
    import yaml

    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RefreshError(f"--vars is not YAML or JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise RefreshError(f"--vars must be a mapping of var names to values, got {json.dumps(parsed)}")
    if "heartbeat_refresh" in parsed:
        raise RefreshError("--vars cannot set heartbeat_refresh: the command sets it")
    return parsed


def run_action(
    config: Config, model: str, action: str, batch: str | None = None, variables: dict[str, Any] | None = None
) -> None:
    """Run the model's refresh materialization with `action` (reset or unload) in-process; `variables`:
    the project's other vars."""
    from harness.refresh.metrics import METRICS_SUFFIX

    request: dict[str, Any] = {"action": action, "model": model, "batch": batch}
    from harness.refresh.runner import run

    outcome = run(config, ["run", "--select", model], **(variables or {}), heartbeat_refresh=request)
    for warning in outcome.warnings:  # dbt prints them in a user's own run; the in-process run is quiet
        print(f"warning: {warning}", file=sys.stderr)
    if outcome.nodes == 0:
        raise RefreshError(
            f"no model {model} in the dbt project {config.project_dir}; a model of another project (one that "
            "installs Heartbeat as a package) needs --project-dir <that project>"
        )
    from harness.platform.spark import get_spark

    if not get_spark(config).catalog.tableExists(config.table(model + METRICS_SUFFIX)):
        raise RefreshError(f"{model} is not a refresh model (materialized='refresh'): nothing to {action}")


def _with_state(config: Config, action: Callable[[], int]) -> int:
    """Spark's metastore is the state folder's: one process at a time."""
    try:
        lock = StateLock(config.state_dir, holder="harness refresh").acquire()
    except StateBusyError as exc:
        raise RefreshError(f"{exc}; run this between ticks or stop the heartbeat (Ctrl-C) first") from None
    try:
        return action()
    finally:
        lock.release()


def cmd_unload(config: Config, args: argparse.Namespace) -> int:
    return _recompute(config, args, "unload", args.batch)


def cmd_reset(config: Config, args: argparse.Namespace) -> int:
    return _recompute(config, args, "reset", None)


def _recompute(config: Config, args: argparse.Namespace, action: str, batch: str | None) -> int:
    project = project_config(config, args.project_dir)
    variables = parse_vars(args.vars)

    def act() -> int:
        from harness.platform.spark import get_spark
        from harness.refresh import metrics

        spark = get_spark(project)
        run_action(project, args.model, action, batch, variables)
        print(metrics.render_all(spark, project, args.model))
        return 0

    return _with_state(project, act)


def cmd_status(config: Config, args: argparse.Namespace) -> int:
    def act() -> int:
        from harness.platform.spark import get_spark
        from harness.refresh import metrics

        spark = get_spark(config)
        if args.model and not spark.catalog.tableExists(config.table(args.model + metrics.METRICS_SUFFIX)):
            raise RefreshError(
                f"{args.model}: no refresh metrics in {config.catalog}.{config.schema} "
                f"(not a refresh model, or no batch loaded yet)"
            )
        print(metrics.render_all(spark, config, args.model))
        return 0

    return _with_state(config, act)


def register(subparsers: Any) -> None:
    """Add `refresh` and its subcommands to the harness's command line."""
    refresh = subparsers.add_parser(
        "refresh",
        help="unload, reset and status of materialized='refresh' models",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = refresh.add_subparsers(dest="refresh_command", required=True)
    project_help = "the dbt project of the model (default: the heartbeat's own)"
    vars_help = "the project's other vars, as dbt --vars takes them (YAML or JSON)"

    unload = commands.add_parser("unload", help="the dataset as if the batch had never been loaded")
    unload.add_argument("--model", required=True)
    unload.add_argument("--batch", required=True, help="the batch id (see refresh status)")
    unload.add_argument("--project-dir", help=project_help)
    unload.add_argument("--vars", help=vars_help)
    unload.set_defaults(func=cmd_unload)

    reset = commands.add_parser("reset", help="recompute the dataset from every kept batch")
    reset.add_argument("--model", required=True)
    reset.add_argument("--project-dir", help=project_help)
    reset.add_argument("--vars", help=vars_help)
    reset.set_defaults(func=cmd_reset)

    status = commands.add_parser("status", help="records, status codes, ranges and seconds per batch")
    status.add_argument("--model")
    status.set_defaults(func=cmd_status)
