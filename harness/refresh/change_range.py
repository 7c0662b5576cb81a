"""What a job started by the heartbeat receives: its change range and its run context id (the batch id of
a refresh). Locally they come as the environment variables HEARTBEAT_CHANGE_RANGE and
HEARTBEAT_RUN_CONTEXT_ID; on Databricks as the job parameters heartbeat_change_range and
heartbeat_run_context_id (pass them the same way, e.g. to `parse`).

A range too large for a job parameter (Databricks limits a task's parameters to 10,000 bytes) is handed
by reference: the parameter is `{"job_id": ..., "run_context_id": ..., "range_file": <path>}`, the
path naming the whole range, written as one file in the heartbeat's state folder (its volume on
Databricks) before the run was started. `parse` reads either form.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from harness.core.errors import HeartbeatError
from harness.sensors.trigger_file import files_in_range

CHANGE_RANGE_ENV = "HEARTBEAT_CHANGE_RANGE"
RANGE_FILE_KEY = "range_file"  # the parameter names the file holding the whole range
RUN_CONTEXT_ENV = "HEARTBEAT_RUN_CONTEXT_ID"


class ChangeRangeError(HeartbeatError):
    """The change range a job received is missing or not what the heartbeat sends."""


@dataclass(frozen=True)
class UpstreamRange:
    """One upstream's part of the range: from the watermark of the job's last successful run (None: the
    job never succeeded) to the watermark the run covers (`from` and `to` in its JSON). For a table, its
    change events in the range (`changes`: `events`, oldest first, and `events_complete`)."""

    sensor_source: str
    sensor_id: str
    dependency: str
    start: Mapping[str, Any] | None
    end: Mapping[str, Any] | None
    changes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.sensor_source}:{self.sensor_id}"

    def to_json(self) -> dict[str, Any]:
        return {
            "sensor_source": self.sensor_source,
            "sensor_id": self.sensor_id,
            "dependency": self.dependency,
            "from": self.start,
            "to": self.end,
            **self.changes,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> UpstreamRange:
        known = {"sensor_source", "sensor_id", "dependency", "from", "to"}
        return cls(
            sensor_source=str(raw["sensor_source"]),
            sensor_id=str(raw["sensor_id"]),
            dependency=str(raw.get("dependency", "")),
            start=raw.get("from"),
            end=raw.get("to"),
            changes={k: v for k, v in raw.items() if k not in known},
        )


@dataclass(frozen=True)
class ChangeRange:
    job_id: str
    run_context_id: str
    upstreams: tuple[UpstreamRange, ...]

    def to_json(self) -> dict[str, Any]:
        """What a run is handed (as a job parameter, an environment variable, or a file it names)."""
        return {
            "job_id": self.job_id,
            "run_context_id": self.run_context_id,
            "upstreams": [u.to_json() for u in self.upstreams],
        }

    def upstream(self, sensor_id: str, sensor_source: str = "trigger_file") -> UpstreamRange:
        for upstream in self.upstreams:
            if upstream.sensor_id == sensor_id and upstream.sensor_source == sensor_source:
                return upstream
        known = ", ".join(u.label for u in self.upstreams) or "none"
        raise ChangeRangeError(
            f"the change range of job {self.job_id} has no upstream {sensor_source}:{sensor_id} (it has: {known})"
        )


def _referenced(raw: Any) -> Any:
    """The whole range a reference names (the parameter itself when it is the range)."""
    if not isinstance(raw, dict) or RANGE_FILE_KEY not in raw:
        return raw
    path = Path(str(raw[RANGE_FILE_KEY]))
    try:
        whole = json.loads(path.read_text())
    except OSError as exc:
        raise ChangeRangeError(
            f"the change range of run {raw.get('run_context_id')} was handed by reference to {path}, which "
            f"cannot be read ({exc}); grant the job's identity READ VOLUME on the heartbeat's state volume"
        ) from None
    if whole.get("run_context_id") != raw.get("run_context_id"):
        raise ChangeRangeError(
            f"{path} holds the range of run {whole.get('run_context_id')}, not of {raw.get('run_context_id')}"
        )
    return whole


def parse(text: str) -> ChangeRange:
    """The change range from its JSON text (HEARTBEAT_CHANGE_RANGE, or the job parameter
    heartbeat_change_range), or from the file such a text names (a range handed by reference)."""
    try:
        raw = _referenced(json.loads(text))
        upstreams = tuple(UpstreamRange.from_json(u) for u in raw.get("upstreams", []))
        return ChangeRange(
            job_id=str(raw.get("job_id", "")), run_context_id=str(raw.get("run_context_id", "")), upstreams=upstreams
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ChangeRangeError(f"not a change range the heartbeat sends: {exc}: {text[:200]}") from None


def from_environment(env: Mapping[str, str] | None = None) -> ChangeRange:
    env = os.environ if env is None else env
    text = env.get(CHANGE_RANGE_ENV)
    if not text:
        raise ChangeRangeError(f"{CHANGE_RANGE_ENV} is not set: this job is meant to be started by the heartbeat")
    return parse(text)


def batch_id(env: Mapping[str, str] | None = None) -> str | None:
    """The batch id the refresh materialization uses: the run context id of the heartbeat's run."""
    env = os.environ if env is None else env
    return env.get(RUN_CONTEXT_ENV) or None


def trigger_files(folder: Path, upstream: UpstreamRange) -> list[Path]:
    """The files of a trigger folder inside the range, oldest first (harness.sensors.trigger_file.files_in_range)."""
    return files_in_range(folder, upstream.start, upstream.end) if upstream.end is not None else []
