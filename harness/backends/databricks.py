"""The Databricks job backend: starts runs with the Jobs API through databricks-sdk, polls them, and
finds a run started by hand that succeeded after a failure.

Authentication is the SDK's own (unified auth): `DATABRICKS_HOST` + `DATABRICKS_TOKEN` (or OAuth
client credentials) in the environment, a profile of `~/.databrickscfg`, or the notebook context when
the heartbeat runs as a Databricks job. The `databricks:` section of heartbeat.yml may name `host`,
`profile` and `token_env` (the NAME of the variable holding a token; never the token itself).

Every call is bounded: `http_timeout_seconds` per HTTP attempt, `retry_timeout_seconds` for the SDK's
retries (429/503 and connection errors), and `max_retry_wait_seconds` caps a single `Retry-After`
sleep (the SDK would otherwise sleep as long as the server asks). After a call runs out of its retry
budget, the workspace counts as unreachable for `unreachable_cooldown_seconds`: later calls fail at
once instead of each waiting out its own budget, so a tick against a dead host costs one budget.

Each run receives two job parameters by default (names configurable per job, or none at all):
  heartbeat_run_context_id  the run's idempotency token, also its run-context id
  heartbeat_change_range    JSON: per upstream, from the watermark of the job's last successful run
                            to the watermark now (see harness.tick.triggering.change_range)
"""

from __future__ import annotations

import logging
import re
import shlex
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import requests
from databricks.sdk import WorkspaceClient
from databricks.sdk.clock import RealClock
from databricks.sdk.config import Config as SdkConfig
from databricks.sdk.errors import (
    BadRequest,
    DatabricksError,
    NotFound,
    PermissionDenied,
    ResourceConflict,
    Unauthenticated,
)
from databricks.sdk.service.jobs import (
    BaseRun,
    Run,
    RunLifeCycleState,
    RunLifecycleStateV2State,
    RunResultState,
    TerminationCodeCode,
    TerminationTypeType,
)

from harness.backends.base import (
    JobBackend,
    LaterSuccess,
    RunRequest,
    RunState,
    RunStatus,
    StartRefused,
    StartUncertain,
)
from harness.core.config import Config, JobParameterNames, env_secret
from harness.core.errors import BackendError, ConfigError
from harness.core.redact import redact, register_secret
from harness.core.state_layout import StateLayout
from harness.core.vocabulary import dumps
from harness.refresh.change_range import RANGE_FILE_KEY
from harness.state.files import write_atomic

log = logging.getLogger(__name__)

T = TypeVar("T")

# Databricks limits a task's parameters to 10,000 bytes (their JSON): a longer change range is handed by
# reference, leaving room for the task's other parameters.
PARAMETER_LIMIT_BYTES = 10_000
RANGE_INLINE_LIMIT_BYTES = 8_000

# 4xx answers: the service looked at the request and did not start a run.
_REFUSALS: tuple[type[DatabricksError], ...] = (
    BadRequest,
    Unauthenticated,
    PermissionDenied,
    NotFound,
    ResourceConflict,
)

_ACTIVE = {
    RunLifeCycleState.QUEUED,
    RunLifeCycleState.PENDING,
    RunLifeCycleState.RUNNING,
    RunLifeCycleState.TERMINATING,
    RunLifeCycleState.BLOCKED,
    RunLifeCycleState.WAITING_FOR_RETRY,
}
_SUCCESS = {RunResultState.SUCCESS, RunResultState.SUCCESS_WITH_FAILURES}
_SUCCESS_CODES = {TerminationCodeCode.SUCCESS, TerminationCodeCode.SUCCESS_WITH_FAILURES}
# The run was never run: skipped because a run of the job was going (max_concurrent_runs, started by
# hand or by another trigger), the job's queue or the workspace's limit of active runs was full.
_SKIPPED_CODES = {
    TerminationCodeCode.SKIPPED,
    TerminationCodeCode.MAX_CONCURRENT_RUNS_EXCEEDED,
    TerminationCodeCode.MAX_JOB_QUEUE_SIZE_EXCEEDED,
    TerminationCodeCode.WORKSPACE_RUN_LIMIT_EXCEEDED,
}


def parameter_values(
    names: JobParameterNames, request: RunRequest, state_dir: Path | None = None
) -> dict[str, str] | None:
    """The job parameters a run request carries under the job's configured names. A change range longer
    than RANGE_INLINE_LIMIT_BYTES is written whole to the state folder (by rename, so a reader sees all
    of it or nothing; the same request writes the same file) and handed by reference."""
    params: dict[str, str] = {}
    if names.run_context_id:
        params[names.run_context_id] = request.idempotency_token
    if names.change_range:
        text = dumps(request.change_range)
        if len(text.encode()) > RANGE_INLINE_LIMIT_BYTES and state_dir is not None:
            path = StateLayout(state_dir).range_file(request.idempotency_token)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
            text = dumps(
                {"job_id": request.job_id, "run_context_id": request.idempotency_token, RANGE_FILE_KEY: str(path)}
            )
        params[names.change_range] = text
    return params or None


class _BoundedClock(RealClock):
    """The SDK's clock with each retry sleep capped, and never past the current call's deadline:
    a `Retry-After: 3600` cannot stall a tick, and a call ends within its retry budget."""

    def __init__(self, max_sleep_seconds: float) -> None:
        self.max_sleep_seconds = max_sleep_seconds
        self.deadline = float("inf")  # wall-clock time; set by DatabricksBackend._call for each call

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self.max_sleep_seconds, self.deadline - time.time())))


class _Unreachable(Exception):
    """The workspace did not answer within the retry budget (or did within the cooldown: `sent` False)."""

    def __init__(self, message: str, sent: bool = True) -> None:
        super().__init__(message)
        self.sent = sent


def _numeric(value: str, what: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"Databricks {what} ids are numbers, got {value!r}") from None


_URL_QUERY = re.compile(r"\?[^\s)'\"]*")
# what the SDK appends to an authentication error: `. Config: host=..., auth_type=pat, ... Env: DATABRICKS_...`
_SDK_CONFIG_TAIL = re.compile(r"[.;]?\s*Config: host=.*$", re.S)


def job_id_refusal(job_id: str) -> str | None:
    """Why no run of `job_id` can be started (`validate` says it of each row), or None."""
    try:
        _numeric(job_id, "job")
    except ValueError as exc:
        return (
            f"{exc}; set trigger_job_id in the controls CSV to the job's numeric id (Workflows > the job > Job details)"
        )
    return None


def _deleted_token(exc: DatabricksError) -> bool:
    """run-now refused the idempotency token because the run it belongs to was deleted."""
    text = str(exc).lower()
    return "idempotency" in text and "delete" in text


def _describe(exc: BaseException) -> str:
    """One line for an SDK/HTTP error: its type and message (without the SDK's description of its own
    configuration, which it adds to authentication errors), and the root cause of an exhausted retry."""
    text = f"{type(exc).__name__}: {_SDK_CONFIG_TAIL.sub('', str(exc))}".strip()
    cause = exc.__cause__
    if isinstance(exc, TimeoutError) and cause is not None:
        text += f" (last error: {type(cause).__name__}: {str(cause)[:300]})"
    return redact(text) or text


class DatabricksBackend(JobBackend):
    name = "databricks"

    def __init__(self, config: Config, client: WorkspaceClient | None = None) -> None:
        self.config = config
        self.settings = config.settings.databricks
        self._client = client
        self._lock = threading.Lock()
        self._unreachable_until = 0.0
        self._unreachable = ""  # what the call that found the workspace unreachable said
        self._clock = _BoundedClock(self.settings.max_retry_wait_seconds)

    # --- the client ------------------------------------------------------------------------------
    def client(self) -> WorkspaceClient:
        """Created on first use, so a bad auth setup becomes an error event, never a failed tick start."""
        with self._lock:
            if self._client is None:
                self._client = WorkspaceClient(config=self._sdk_config())
            return self._client

    def _sdk_config(self) -> SdkConfig:
        s = self.settings
        try:
            token = env_secret(s.token_env, "databricks.token_env")
        except ConfigError as exc:  # cron's environment lacks it: each call says so, the tick goes on
            raise BackendError(
                f"Databricks authentication is not configured: {exc} in the heartbeat's environment (cron "
                "starts it with its own: set the variable there, or name a profile with databricks.profile)"
            ) from None
        kwargs: dict[str, Any] = {
            "host": s.host,
            "profile": s.profile,
            "token": token,
            "http_timeout_seconds": s.http_timeout_seconds,
            "retry_timeout_seconds": s.retry_timeout_seconds,
            "clock": self._clock,
            "product": "heartbeat",
            "product_version": "0.1.0",
        }
        try:
            sdk_config = SdkConfig(**{k: v for k, v in kwargs.items() if v is not None})
        except ValueError as exc:
            raise BackendError(
                "Databricks authentication is not configured: set DATABRICKS_HOST and DATABRICKS_TOKEN (or "
                "OAuth client credentials) in the environment, name a profile with databricks.profile, or run "
                f"inside a Databricks job; the SDK said: {redact(str(exc))}"
            ) from None
        for attr in SdkConfig.attributes():
            if attr.sensitive:
                register_secret(getattr(sdk_config, attr.name, None))
        return sdk_config

    def _call(self, action: Callable[[WorkspaceClient], T]) -> T:
        """One SDK call within the retry budget; an exhausted budget marks the workspace unreachable."""
        if time.monotonic() < self._unreachable_until:
            # not sent; said as the call that found the workspace down said it, so a run polled in the
            # cooldown and after it has one failure to record (a poll error is recorded when it changes)
            raise _Unreachable(self._unreachable, sent=False)
        client = self.client()
        self._clock.deadline = time.time() + self.settings.retry_timeout_seconds
        try:
            return action(client)
        except (TimeoutError, requests.RequestException) as exc:
            self._unreachable_until = time.monotonic() + self.settings.unreachable_cooldown_seconds
            self._unreachable = (
                f"no answer from {client.config.host} within databricks.retry_timeout_seconds="
                f"{self.settings.retry_timeout_seconds} (http_timeout_seconds={self.settings.http_timeout_seconds:g}): "
                f"{_URL_QUERY.sub('', _describe(exc))}; calls wait databricks.unreachable_cooldown_seconds before "
                "trying again"
            )  # without the call's query (`?run_id=...`): every call in the cooldown says it
            raise _Unreachable(self._unreachable) from None

    def _where(self) -> str:
        host = self._client.config.host if self._client is not None else None
        return f" in {host}" if host else ""

    # --- JobBackend ------------------------------------------------------------------------------
    def start(self, request: RunRequest) -> str:
        job = f"Databricks job {request.job_id}" + (f" ({request.job_name})" if request.job_name else "")
        refusal = job_id_refusal(request.job_id)
        if refusal:
            raise StartRefused(f"{job}: {refusal}")
        job_id = int(request.job_id.strip())
        try:
            parameters = parameter_values(self.settings.parameters_for(request.job_id), request, self.config.state_dir)
        except OSError as exc:  # nothing was sent
            raise StartRefused(
                f"{job}: its change range is too large for a job parameter and cannot be written to "
                f"the state folder {self.config.state_dir}: {exc}"
            ) from None
        try:
            waiter = self._call(
                lambda c: c.jobs.run_now(
                    job_id=job_id, idempotency_token=request.idempotency_token, job_parameters=parameters
                )
            )
            return str(waiter.run_id)
        except BackendError as exc:  # authentication not configured: nothing was sent
            raise StartRefused(f"{job}: {exc}") from None
        except _Unreachable as exc:
            raise StartUncertain(f"{job}: {exc}") from None
        except _REFUSALS as exc:
            raise StartRefused(f"{job}: {self._refusal_advice(exc, request, parameters)}") from None
        except DatabricksError as exc:
            raise StartUncertain(f"{job}: the Jobs API answered {_describe(exc)}") from None
        except (KeyError, ValueError) as exc:
            raise StartUncertain(f"{job}: unexpected answer from the Jobs API: {_describe(exc)}") from None

    def _refusal_advice(self, exc: DatabricksError, request: RunRequest, parameters: dict[str, str] | None) -> str:
        said = _describe(exc)
        if _deleted_token(exc):
            return (
                f"the run Databricks started for this request (idempotency token {request.idempotency_token}) "
                f"was deleted in the workspace, and a deleted run's token is never reused ({said}); the rows go "
                "back to their status and the next start of the job sends a new token"
            )
        if isinstance(exc, NotFound) or "does not exist" in str(exc):
            return (
                f"does not exist{self._where()} ({said}); check trigger_job_id in the controls CSV "
                "against the job's id in the workspace"
            )
        if isinstance(exc, Unauthenticated):
            return (
                f"the workspace refused the credentials ({said}); renew "
                f"{self.settings.token_env or 'DATABRICKS_TOKEN'} or fix the profile / OAuth client of the heartbeat"
            )
        if isinstance(exc, PermissionDenied):
            return f"the heartbeat's identity may not run it ({said}); grant it CAN MANAGE RUN on the job"
        if parameters:
            names = ", ".join(sorted(parameters))
            return (
                f"the run request was refused ({said}); if the job declares no job parameters "
                f'{names}, declare them on the job or set databricks.jobs."{request.job_id}".job_parameters: '
                "false (or map them to the job's own parameter names) in heartbeat.yml"
            )
        return f"the run request was refused ({said})"

    def poll(self, job_id: str, run_id: str) -> RunStatus:
        try:
            run = self._call(lambda c: c.jobs.get_run(_numeric(run_id, "run")))
        except ValueError as exc:
            raise BackendError(f"Databricks job {job_id}: run {run_id}: {exc}") from None
        except NotFound as exc:
            raise BackendError(
                f"Databricks job {job_id}: run {run_id} not found{self._where()} ({_describe(exc)}); if it was "
                f"deleted, close it with `python -m harness complete --job-id {shlex.quote(job_id)}` or `retry`"
            ) from None
        except _Unreachable as exc:
            raise BackendError(f"Databricks job {job_id}: cannot read run {run_id}: {exc}") from None
        except DatabricksError as exc:
            raise BackendError(f"Databricks job {job_id}: cannot read run {run_id}: {_describe(exc)}") from None
        return run_status(run)

    def successful_run_after(
        self, job_id: str, since: datetime, failed_run_id: str | None = None
    ) -> LaterSuccess | None:
        """The failed run itself when it was repaired in the workspace (it keeps its start time, taken
        by the workspace's clock: not compared with `since`, the heartbeat's), else a run started by
        hand that succeeded, started at `since` or after."""
        try:
            numeric = _numeric(job_id, "job")
        except ValueError as exc:
            raise BackendError(f"Databricks job {job_id}: {exc}") from None
        since_ms = int(since.astimezone(UTC).timestamp() * 1000)

        def find(c: WorkspaceClient) -> LaterSuccess | None:
            if failed_run_id is not None and failed_run_id.strip().isdigit():
                try:
                    repaired = c.jobs.get_run(int(failed_run_id))
                    if succeeded(repaired):
                        return LaterSuccess(failed_run_id, _end_time(repaired))
                except NotFound:
                    pass  # deleted: a run by hand may still have succeeded
            for run in c.jobs.list_runs(job_id=numeric, completed_only=True, start_time_from=since_ms):
                if succeeded(run) and (run.start_time or 0) >= since_ms:
                    return LaterSuccess(str(run.run_id), _end_time(run))
            return None

        try:
            return self._call(find)
        except _Unreachable as exc:  # logged, never recorded: it may say what was not sent
            if not exc.sent:
                raise BackendError(f"Databricks job {job_id}: its runs not listed (not sent: {exc})") from None
            raise BackendError(f"Databricks job {job_id}: cannot list its runs: {exc}") from None
        except DatabricksError as exc:
            raise BackendError(f"Databricks job {job_id}: cannot list its runs: {_describe(exc)}") from None


def run_status(run: Run) -> RunStatus:
    """Map a run to ours: from `status` (life cycle v2 and termination details), or from the deprecated
    `state` where a workspace answers only that."""
    status = run.status
    if status is None or status.state is None:
        return _from_state(run)
    if status.state is not RunLifecycleStateV2State.TERMINATED:
        queued = status.queue_details.message if status.queue_details else None
        return RunStatus(RunState.RUNNING, (queued or "").strip())
    details = status.termination_details
    if details is None or details.code is None:
        return _from_state(run)  # terminated without details: the older field may still say how
    ended = _ended(run)
    message = (details.message or "").strip()
    if details.code in _SUCCESS_CODES:
        note = (
            "succeeded with failures in non-leaf tasks"
            if details.code is TerminationCodeCode.SUCCESS_WITH_FAILURES
            else ""
        )
        return RunStatus(RunState.SUCCEEDED, "; ".join(p for p in (details.code.value, note, message) if p), ended)
    if details.code in _SKIPPED_CODES:
        return RunStatus(
            RunState.SKIPPED,
            redact(f"{details.code.value}: {message}" if message else details.code.value) or details.code.value,
            ended,
        )
    kind = details.type
    label = details.code.value + (
        f" ({kind.value})" if kind is not None and kind is not TerminationTypeType.SUCCESS else ""
    )
    return RunStatus(RunState.FAILED, redact(f"{label}: {message}" if message else label) or label, ended)


def succeeded(run: Run | BaseRun) -> bool:
    """The run ended successfully (from `status`, else from `state`)."""
    status = run.status
    if status is not None and status.termination_details is not None and status.termination_details.code:
        return status.termination_details.code in _SUCCESS_CODES
    return run.state is not None and run.state.result_state in _SUCCESS


def _ended(run: Run) -> datetime:
    return _end_time(run) or datetime.now(UTC)


def _end_time(run: Run | BaseRun) -> datetime | None:
    """When the run ended, by the workspace's clock; None when the workspace does not say."""
    return datetime.fromtimestamp(run.end_time / 1000, tz=UTC) if run.end_time else None


def _from_state(run: Run) -> RunStatus:
    state = run.state
    life = state.life_cycle_state if state else None
    result = state.result_state if state else None
    message = (state.state_message or "").strip() if state else ""
    if life is None or life in _ACTIVE:
        return RunStatus(RunState.RUNNING, message)
    if life is RunLifeCycleState.SKIPPED:
        return RunStatus(
            RunState.SKIPPED, redact(f"SKIPPED: {message}" if message else "SKIPPED") or "SKIPPED", _ended(run)
        )
    if result in _SUCCESS:
        note = "succeeded with failures in non-leaf tasks" if result is RunResultState.SUCCESS_WITH_FAILURES else ""
        return RunStatus(RunState.SUCCEEDED, "; ".join(p for p in (result.value, note, message) if p), _ended(run))
    label = result.value if result is not None else life.value
    if life is not RunLifeCycleState.TERMINATED and result is not None:
        label = f"{life.value}/{result.value}"
    return RunStatus(RunState.FAILED, redact(f"{label}: {message}" if message else label) or label, _ended(run))
