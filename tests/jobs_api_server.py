"""A Databricks Jobs API server of the project's own, on 127.0.0.1, that databricks-sdk talks to over HTTP.

It serves what the Databricks backend uses (Jobs API 2.2, the fields databricks-sdk 0.77 sends and reads):
  GET  /.well-known/databricks-config   host metadata (newer SDKs read it; 0.77 does not)
  POST /api/2.2/jobs/run-now            honours idempotency_token: the same token returns the same run,
                                        the token of a deleted run (`delete_run`) is refused
  GET  /api/2.2/jobs/runs/get           a run's `status` (life cycle v2, termination details) and its
                                        deprecated `state`; `run_fields` leaves either out
  GET  /api/2.2/jobs/runs/list          runs of a job, newest first, completed_only, start_time_from, pages
  GET  /api/2.2/jobs/get                a job's settings (name, declared parameters)
  GET  /api/2.0/secrets/get             a secret of `secrets` (scope, key), base64 as the service answers
Every request is recorded (method, path, query, body) so tests can count runs per job. Tests make it
fail on demand (`fail`: status, Retry-After, delay, for the next N matching requests, or every other one), end runs
(`end_run`: SUCCESS / FAILED / CANCELED / TIMEDOUT ...), start runs "by hand" (`run_by_hand`), and
hook a request at a stage (`hooks`) — e.g. to kill the heartbeat process while it waits for run-now.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

API = "/api/2.2/jobs"


@dataclass
class FakeJob:
    job_id: int
    name: str
    parameters: list[str] | None = None  # declared job parameters; None: accepts any


@dataclass
class FakeRun:
    run_id: int
    job_id: int
    token: str | None
    job_parameters: dict[str, str]
    start_time: int  # epoch ms
    by_hand: bool = False
    life_cycle_state: str = "RUNNING"
    result_state: str | None = None
    state_message: str = ""
    end_time: int | None = None

    def as_json(self, number: int, fields: tuple[str, ...] = ("state", "status")) -> dict[str, Any]:
        state: dict[str, Any] = {"life_cycle_state": self.life_cycle_state, "state_message": self.state_message}
        if self.result_state:
            state["result_state"] = self.result_state
            state["user_cancelled_or_timedout"] = self.result_state in ("CANCELED", "TIMEDOUT")
        status: dict[str, Any] = {"state": _LIFECYCLE_V2.get(self.life_cycle_state, self.life_cycle_state)}
        if status["state"] == "TERMINATED":
            code, kind = _TERMINATION.get(
                self.result_state or self.life_cycle_state, ("RUN_EXECUTION_ERROR", "CLIENT_ERROR")
            )
            status["termination_details"] = {"code": code, "type": kind, "message": self.state_message}
        body: dict[str, Any] = {
            "run_id": self.run_id,
            "job_id": self.job_id,
            "number_in_job": number,
            "run_name": f"job-{self.job_id}",
            "run_type": "JOB_RUN",
            "start_time": self.start_time,
            "job_parameters": [{"name": k, "value": v} for k, v in sorted(self.job_parameters.items())],
            "run_page_url": f"http://127.0.0.1/jobs/{self.job_id}/runs/{self.run_id}",
            **{name: part for name, part in (("state", state), ("status", status)) if name in fields},
        }
        if self.end_time is not None:
            body["end_time"] = self.end_time
        return body


# A run's `status` (life cycle v2) from its `state`: the life-cycle state, and for an ended run the
# termination code and type its result state corresponds to.
_LIFECYCLE_V2 = {"SKIPPED": "TERMINATED", "INTERNAL_ERROR": "TERMINATED", "WAITING_FOR_RETRY": "WAITING"}
_TERMINATION = {
    "SUCCESS": ("SUCCESS", "SUCCESS"),
    "SUCCESS_WITH_FAILURES": ("SUCCESS_WITH_FAILURES", "SUCCESS"),
    "FAILED": ("RUN_EXECUTION_ERROR", "CLIENT_ERROR"),
    "TIMEDOUT": ("CANCELED", "CLIENT_ERROR"),
    "CANCELED": ("USER_CANCELED", "SUCCESS"),
    "MAXIMUM_CONCURRENT_RUNS_REACHED": ("MAX_CONCURRENT_RUNS_EXCEEDED", "CLIENT_ERROR"),
    "INTERNAL_ERROR": ("INTERNAL_ERROR", "INTERNAL_ERROR"),
}


@dataclass
class Fault:
    """Answer the next `times` requests whose path ends with `path` this way instead of normally."""

    path: str
    status: int = 500
    times: int = 1
    retry_after: int | None = None
    delay: float = 0.0  # seconds slept before answering (beyond the client's timeout: a timeout)
    error_code: str = "INTERNAL_ERROR"
    message: str = "injected failure"
    then_serve: bool = False  # after the delay, serve the request normally (a slow success)
    job_id: int | None = None  # only requests for this job (run-now body / query job_id)
    every: int = 1  # of the matching requests, the first and every `every`-th after it (2: every other one)
    seen: int = 0  # matching requests so far


class DropRequest(Exception):
    """Raised by a hook: the request is dropped unanswered and has no effect (as if it never arrived)."""


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    body: dict[str, Any]
    authorization: str | None
    at: float


@dataclass
class JobsApiServer:
    token: str = "dapi-test-token-0000"
    jobs: dict[int, FakeJob] = field(default_factory=dict)
    runs: dict[int, FakeRun] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    # Called with the request at "run-now:received" (before any run exists), "run-now:created"
    # (the run exists, the answer is not sent yet) and "runs/get:received". A hook may raise
    # DropRequest to leave the request without effect and unanswered.
    hooks: dict[str, Callable[[RecordedRequest], None]] = field(default_factory=dict)
    # Runs of these jobs end at once with (result_state, message).
    auto_end: dict[int, tuple[str, str]] = field(default_factory=dict)
    # What a run answers with: `status` (life cycle v2) and the deprecated `state`; an older workspace
    # answers only `state`.
    run_fields: tuple[str, ...] = ("state", "status")
    deleted_tokens: set[str] = field(default_factory=set)  # tokens of deleted runs: run-now refuses them
    secrets: dict[tuple[str, str], str] = field(default_factory=dict)  # (scope, key) -> value
    _next_run_id: int = 1000
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _httpd: ThreadingHTTPServer | None = None

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> JobsApiServer:
        server = self

        class Handler(_Handler):
            api = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="jobs-api-server", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # --- arranging -------------------------------------------------------------------------------
    def add_job(self, job_id: int, name: str | None = None, parameters: list[str] | None = None) -> FakeJob:
        job = FakeJob(job_id, name or f"job-{job_id}", parameters)
        with self._lock:
            self.jobs[job_id] = job
        return job

    def fail(self, path: str, status: int = 500, **kwargs: Any) -> Fault:
        fault = Fault(path, status, **kwargs)
        with self._lock:
            self.faults.append(fault)
        return fault

    def end_run(self, run_id: int, result: str, message: str = "", life_cycle_state: str = "TERMINATED") -> None:
        with self._lock:
            run = self.runs[run_id]
            run.life_cycle_state, run.result_state = life_cycle_state, result
            run.state_message = message
            run.end_time = int(time.time() * 1000)

    def run_by_hand(self, job_id: int, result: str = "SUCCESS", message: str = "") -> int:
        """A run someone started in the workspace (no token), already ended."""
        with self._lock:
            run = self._create_run(job_id, None, {}, by_hand=True)
        self.end_run(run.run_id, result, message)
        return run.run_id

    def delete_run(self, run_id: int) -> None:
        """Deleted in the workspace: gone from runs/get and runs/list; run-now refuses its token."""
        with self._lock:
            run = self.runs.pop(run_id)
            if run.token:
                self.deleted_tokens.add(run.token)
                del self.tokens[run.token]

    # --- observing -------------------------------------------------------------------------------
    def runs_of(self, job_id: int) -> list[FakeRun]:
        with self._lock:
            return sorted((r for r in self.runs.values() if r.job_id == job_id), key=lambda r: r.run_id)

    def started_runs(self, job_id: int) -> list[FakeRun]:
        """Runs the heartbeat started (not by hand)."""
        return [r for r in self.runs_of(job_id) if not r.by_hand]

    def calls(self, path_suffix: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith(path_suffix)]

    def change_range(self, run: FakeRun, name: str = "heartbeat_change_range") -> dict[str, Any]:
        return json.loads(run.job_parameters[name])

    # --- serving ---------------------------------------------------------------------------------
    def _create_run(self, job_id: int, token: str | None, params: dict[str, str], by_hand: bool = False) -> FakeRun:
        run = FakeRun(self._next_run_id, job_id, token, params, int(time.time() * 1000), by_hand)
        self._next_run_id += 1
        self.runs[run.run_id] = run
        if token:
            self.tokens[token] = run.run_id
        if job_id in self.auto_end and not by_hand:
            result, message = self.auto_end[job_id]
            run.life_cycle_state, run.result_state, run.state_message = "TERMINATED", result, message
            run.end_time = run.start_time
        return run

    def _take_fault(self, req: RecordedRequest) -> Fault | None:
        job_id = req.body.get("job_id", req.query.get("job_id"))
        with self._lock:
            for fault in self.faults:
                if fault.job_id is not None and str(fault.job_id) != str(job_id):
                    continue
                if fault.times > 0 and req.path.endswith(fault.path):
                    fault.seen += 1
                    if (fault.seen - 1) % fault.every:
                        continue
                    fault.times -= 1
                    return fault
        return None

    def _number(self, run: FakeRun) -> int:
        return sum(1 for r in self.runs.values() if r.job_id == run.job_id and r.run_id <= run.run_id)

    def handle(self, req: RecordedRequest) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self.requests.append(req)
        if req.path == "/.well-known/databricks-config":
            return 200, {"workspace_id": "1234567890123456", "cloud": "aws", "oidc_endpoint": f"{self.url}/oidc"}, {}
        if req.authorization != f"Bearer {self.token}":
            return 401, _error("UNAUTHENTICATED", "Invalid access token."), {}
        fault = self._take_fault(req)
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if not fault.then_serve:
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                return fault.status, _error(fault.error_code, fault.message), headers
        routes: dict[tuple[str, str], Callable[[RecordedRequest], tuple[int, dict[str, Any]]]] = {
            ("POST", f"{API}/run-now"): self._run_now,
            ("GET", f"{API}/runs/get"): self._runs_get,
            ("GET", f"{API}/runs/list"): self._runs_list,
            ("GET", f"{API}/get"): self._jobs_get,
            ("GET", "/api/2.0/secrets/get"): self._secrets_get,
        }
        route = routes.get((req.method, req.path))
        if route is None:
            return 404, _error("ENDPOINT_NOT_FOUND", f"No API found for '{req.method} {req.path}'"), {}
        status, body = route(req)
        return status, body, {}

    def _run_now(self, req: RecordedRequest) -> tuple[int, dict[str, Any]]:
        self._hook("run-now:received", req)
        job_id = req.body.get("job_id")
        token = req.body.get("idempotency_token")
        params = req.body.get("job_parameters") or {}
        with self._lock:
            if token and token in self.deleted_tokens:
                # The service's wording is not documented; what it means is: this token's run was deleted.
                return 400, _error(
                    "INVALID_PARAMETER_VALUE", f"The run with idempotency token {token} has been deleted."
                )
            if token and token in self.tokens:
                run = self.runs[self.tokens[token]]
                return 200, {"run_id": run.run_id, "number_in_job": self._number(run)}
            job = self.jobs.get(job_id) if isinstance(job_id, int) else None
            if job is None:
                return 400, _error("INVALID_PARAMETER_VALUE", f"Job {job_id} does not exist.")
            if job.parameters is not None:
                undeclared = sorted(set(params) - set(job.parameters))
                if undeclared:
                    return 400, _error(
                        "INVALID_PARAMETER_VALUE", f"Job parameters {undeclared} are not defined in job {job_id}."
                    )
            if token is not None and len(token) > 64:
                return 400, _error("INVALID_PARAMETER_VALUE", "idempotency_token is longer than 64 characters.")
            run = self._create_run(job.job_id, token, {str(k): str(v) for k, v in params.items()})
        self._hook("run-now:created", req)
        return 200, {"run_id": run.run_id, "number_in_job": self._number(run)}

    def _runs_get(self, req: RecordedRequest) -> tuple[int, dict[str, Any]]:
        self._hook("runs/get:received", req)
        with self._lock:
            run = self.runs.get(int(req.query.get("run_id", "0")))
            if run is None:
                return 400, _error("INVALID_PARAMETER_VALUE", f"Run {req.query.get('run_id')} does not exist.")
            return 200, run.as_json(self._number(run), self.run_fields)

    def _runs_list(self, req: RecordedRequest) -> tuple[int, dict[str, Any]]:
        q = req.query
        limit = min(int(q.get("limit", "20")) or 25, 25)
        offset = int(q.get("page_token", "0") or 0)
        with self._lock:
            runs = sorted(self.runs.values(), key=lambda r: (r.start_time, r.run_id), reverse=True)
            if "job_id" in q:
                runs = [r for r in runs if r.job_id == int(q["job_id"])]
            if q.get("completed_only") == "true":
                runs = [r for r in runs if r.end_time is not None]
            if q.get("active_only") == "true":
                runs = [r for r in runs if r.end_time is None]
            if "start_time_from" in q:
                runs = [r for r in runs if r.start_time >= int(q["start_time_from"])]
            if "start_time_to" in q:
                runs = [r for r in runs if r.start_time <= int(q["start_time_to"])]
            page = [r.as_json(self._number(r), self.run_fields) for r in runs[offset : offset + limit]]
        body: dict[str, Any] = {"runs": page, "has_more": offset + limit < len(runs)}
        if body["has_more"]:
            body["next_page_token"] = str(offset + limit)
        return 200, body

    def _jobs_get(self, req: RecordedRequest) -> tuple[int, dict[str, Any]]:
        with self._lock:
            job = self.jobs.get(int(req.query.get("job_id", "0")))
            if job is None:
                return 400, _error("INVALID_PARAMETER_VALUE", f"Job {req.query.get('job_id')} does not exist.")
            settings: dict[str, Any] = {"name": job.name, "max_concurrent_runs": 1}
            if job.parameters is not None:
                settings["parameters"] = [{"name": p, "default": ""} for p in job.parameters]
            return 200, {"job_id": job.job_id, "created_time": 0, "settings": settings}

    def _secrets_get(self, req: RecordedRequest) -> tuple[int, dict[str, Any]]:
        scope, key = req.query.get("scope", ""), req.query.get("key", "")
        with self._lock:
            value = self.secrets.get((scope, key))
        if value is None:
            return 404, _error("RESOURCE_DOES_NOT_EXIST", f"Secret does not exist with scope: {scope} and key: {key}")
        return 200, {"key": key, "value": base64.b64encode(value.encode()).decode()}

    def _hook(self, stage: str, req: RecordedRequest) -> None:
        hook = self.hooks.get(stage)
        if hook is not None:
            hook(req)


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error_code": code, "message": message}


class _Handler(BaseHTTPRequestHandler):
    api: JobsApiServer
    protocol_version = "HTTP/1.1"
    # An answer is two writes (its headers, then its body): with Nagle's algorithm the body waited for the
    # client's delayed acknowledgement of the headers, 40 ms an answer on a kept-alive connection
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the server records requests itself."""

    def _serve(self, method: str) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        req = RecordedRequest(
            method,
            url.path,
            {k: v[-1] for k, v in parse_qs(url.query).items()},
            json.loads(raw) if raw else {},
            self.headers.get("Authorization"),
            time.time(),
        )
        try:
            status, body, headers = self.api.handle(req)
        except DropRequest:
            self.close_connection = True
            return
        payload = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            # The client went away (timed out, or the test killed its process): nothing to answer.
            self.close_connection = True

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")


# Databricks client settings that keep tests quick: a 3 s retry budget, 1 s per HTTP attempt.
FAST = {"retry_timeout_seconds": 3, "http_timeout_seconds": 1, "max_retry_wait_seconds": 0.5}


@pytest.fixture
def jobs_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[JobsApiServer]:
    """A Jobs API server on 127.0.0.1, with databricks-sdk's host and token pointed at it."""
    server = JobsApiServer().start()
    monkeypatch.setenv("DATABRICKS_HOST", server.url)
    monkeypatch.setenv("DATABRICKS_TOKEN", server.token)
    yield server
    server.stop()
