"""Running dbt for refresh models: harness.platform.dbt_runner.invoke, with the whole message of each failed node
(a refusal says which rows and why; dbt puts that under a first line that only names the node)."""

from __future__ import annotations

import json
from typing import Any

from harness.core.config import Config
from harness.core.errors import DbtError
from harness.platform import dbt_runner


def run(config: Config, command: list[str], **variables: Any) -> dbt_runner.DbtOutcome:
    """One dbt command on `config`'s project; a failure raises DbtError naming each failed node and its
    full message (from run_results.json)."""
    results = config.dbt_target_path / "run_results.json"
    results.unlink(missing_ok=True)
    try:
        return dbt_runner.invoke(config, command, **variables)
    except DbtError as exc:
        details = failed_nodes(config)
        if not details:
            raise
        raise DbtError(
            f"dbt {command[0]} failed: "
            + "; ".join(
                message if message.startswith(f"{name}: ") else f"{name}: {message}" for name, message in details
            )
        ) from exc


def failed_nodes(config: Config) -> list[tuple[str, str]]:
    """(node name, whole message without dbt's header line and its macro stack) of each failed node of the
    last command (a refusal names its model itself)."""
    path = config.dbt_target_path / "run_results.json"
    if not path.exists():
        return []
    out = []
    for result in json.loads(path.read_text()).get("results", []):
        if str(result.get("status")).lower() not in ("error", "fail", "runtime error"):
            continue
        name = str(result.get("unique_id", "?")).rsplit(".", 1)[-1]
        lines = [line.strip() for line in str(result.get("message") or "").splitlines() if line.strip()]
        lines = [line for line in lines if not line.startswith(("> in macro ", "> called by "))]
        if len(lines) > 1 and lines[0].endswith(")") and " in " in lines[0]:
            lines = lines[1:]  # "Compilation Error in model x (models/x.sql)"
        out.append((name, " ".join(lines)))
    return out
