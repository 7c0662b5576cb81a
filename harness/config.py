"""Configuration: `heartbeat.yml` plus environment variables. Secrets come only from the environment.

Lookup order for the file: `--config`, then `HEARTBEAT_CONFIG`, then `./heartbeat.yml`. Paths in the
file are relative to the file's folder. Environment variables override the file:
`HEARTBEAT_STATE_DIR`, `HEARTBEAT_TRIGGER_ROOT`, `HEARTBEAT_BACKEND`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from harness.errors import ConfigError
from harness.redact import register_secret

PROJECT_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class LocalJob:
    """A job of the local runner: a shell command run as a subprocess."""

    job_id: str
    name: str
    command: str
    timeout_seconds: float | None = None


@dataclass(frozen=True)
class SensingConfig:
    check_timeout_seconds: float = 60.0
    max_parallel_checks: int = 8


@dataclass(frozen=True)
class RunsConfig:
    stuck_after_seconds: float = 6 * 3600.0


@dataclass(frozen=True)
class Config:
    config_path: Path | None
    project_dir: Path
    state_dir: Path
    backend: str = "local"
    dbt_target: str = "local"
    controls_csv: Path = PROJECT_DIR / "seeds" / "heartbeat_controls.csv"
    trigger_root: Path | None = None
    sensing: SensingConfig = SensingConfig()
    runs: RunsConfig = RunsConfig()
    local_jobs: Mapping[str, LocalJob] = field(default_factory=dict)
    dbt_target_dir: Path | None = None  # dbt's target/ (manifest, compiled SQL); default <state>/dbt_target
    # Source- and backend-specific sections, read by the module that needs them.
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> Mapping[str, Any]:
        return self.sections.get(name) or {}

    @property
    def warehouse_dir(self) -> Path:
        return self.state_dir / "warehouse"

    @property
    def dbt_target_path(self) -> Path:
        return self.dbt_target_dir or self.state_dir / "dbt_target"

    @property
    def metastore_dir(self) -> Path:
        return self.state_dir / "metastore_db"


def secret_from_env(section: Mapping[str, Any], key: str, what: str) -> str | None:
    """Read a secret named by `<key>_env` in the config (the file holds the variable's name, never the value)."""
    var = section.get(f"{key}_env")
    if not var:
        return None
    value = os.environ.get(str(var))
    if value is None:
        raise ConfigError(f"{what}: environment variable {var} is not set (named by {key}_env in the config)")
    register_secret(value)
    return value


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Load the configuration; a missing default file means all defaults (the embedded demo)."""
    explicit = path or os.environ.get("HEARTBEAT_CONFIG")
    config_path = Path(explicit) if explicit else Path.cwd() / "heartbeat.yml"
    raw: dict[str, Any] = {}
    if config_path.exists():
        try:
            loaded = yaml.safe_load(config_path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{config_path}: not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{config_path}: expected a mapping at the top level")
        raw = loaded
    elif explicit:
        raise ConfigError(f"config file {config_path} does not exist")
    base = config_path.parent.resolve() if config_path.exists() else Path.cwd()
    return _build(raw, base, config_path if config_path.exists() else None)


def _path(value: Any, base: Path) -> Path:
    p = Path(os.path.expandvars(str(value))).expanduser()
    return p if p.is_absolute() else (base / p).resolve()


def _build(raw: dict[str, Any], base: Path, config_path: Path | None) -> Config:
    state_dir = _path(os.environ.get("HEARTBEAT_STATE_DIR") or raw.get("state_dir", "state"), base)
    trigger_raw = os.environ.get("HEARTBEAT_TRIGGER_ROOT") or (raw.get("trigger_file") or {}).get("root")
    backend = os.environ.get("HEARTBEAT_BACKEND") or raw.get("backend", "local")
    if backend not in ("local", "databricks"):
        raise ConfigError(f"backend must be 'local' or 'databricks', got {backend!r}")
    sensing_raw = raw.get("sensing") or {}
    runs_raw = raw.get("runs") or {}
    try:
        sensing = SensingConfig(
            check_timeout_seconds=float(sensing_raw.get("check_timeout_seconds", 60)),
            max_parallel_checks=int(sensing_raw.get("max_parallel_checks", 8)),
        )
        runs = RunsConfig(stuck_after_seconds=float(runs_raw.get("stuck_after_seconds", 6 * 3600)))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"sensing/runs: expected numbers: {exc}") from exc
    controls_csv = _path(raw.get("controls_csv", PROJECT_DIR / "seeds" / "heartbeat_controls.csv"), base)
    project_dir = _path(raw.get("project_dir", PROJECT_DIR), base)
    if controls_csv.name != "heartbeat_controls.csv" or project_dir not in controls_csv.parents:
        raise ConfigError(
            f"controls_csv must be a file named heartbeat_controls.csv inside the dbt project {project_dir} "
            f"(it is dbt's seed), got {controls_csv}"
        )
    return Config(
        config_path=config_path,
        project_dir=project_dir,
        state_dir=state_dir,
        backend=backend,
        dbt_target=str(raw.get("dbt_target", "databricks" if backend == "databricks" else "local")),
        controls_csv=controls_csv,
        trigger_root=_path(trigger_raw, base) if trigger_raw else None,
        sensing=sensing,
        runs=runs,
        local_jobs=_local_jobs(raw.get("local_runner") or {}),
        sections={k: v for k, v in raw.items() if isinstance(v, dict)},
    )


def _local_jobs(section: Mapping[str, Any]) -> dict[str, LocalJob]:
    jobs: dict[str, LocalJob] = {}
    for job_id, spec in (section.get("jobs") or {}).items():
        if not isinstance(spec, dict) or not spec.get("command"):
            raise ConfigError(f"local_runner.jobs.{job_id}: needs a 'command'")
        timeout = spec.get("timeout_seconds")
        jobs[str(job_id)] = LocalJob(
            job_id=str(job_id),
            name=str(spec.get("name", job_id)),
            command=str(spec["command"]),
            timeout_seconds=float(timeout) if timeout is not None else None,
        )
    return jobs
