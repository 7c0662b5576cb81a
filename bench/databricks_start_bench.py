"""The Databricks backend's share of a busy tick at an estate's size: --starts run requests (one a job,
each with its own idempotency token) sent through databricks-sdk to the Jobs API test server on
127.0.0.1 (tests/jobs_api_server.py), `runs.max_parallel_starts` at a time, as the tick's start step sends
them; then the same requests with the server answering --throttled of the run-now calls with 429 +
Retry-After (the SDK waits and sends the same request again, its wait capped by
databricks.max_retry_wait_seconds); then every request sent a second time (a tick that re-sends starts it
could not confirm). Prints the seconds of each round, the run-now calls the server answered, and the
runs it created: one a request, whatever was throttled or sent again.

    .venv/bin/python bench/databricks_start_bench.py --starts 2500
    .venv/bin/python bench/databricks_start_bench.py --starts 2500 --parallel 32 --throttled 0.5 --retry-after 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.backends.base import RunRequest  # noqa: E402
from harness.backends.databricks import DatabricksBackend  # noqa: E402
from harness.core.config import config_from_mapping  # noqa: E402
from tests.jobs_api_server import JobsApiServer  # noqa: E402

FIRST_JOB = 100_000


def requests(starts: int, round_name: str) -> list[RunRequest]:
    """One run request a job, each with its own token, carrying a change range of one upstream."""
    out = []
    for j in range(starts):
        job_id, token = str(FIRST_JOB + j), f"hb-{round_name}-{j:08d}"
        change_range = {"job_id": job_id, "run_context_id": token, "upstreams": [{"sensor_id": f"up{j:05d}"}]}
        out.append(RunRequest(job_id, f"bench job {j}", token, change_range))
    return out


def send(backend: DatabricksBackend, batch: list[RunRequest], parallel: int) -> tuple[float, dict[str, str]]:
    """The requests, `parallel` at a time (as harness.tick.triggering.start_jobs sends them): the seconds,
    and each token's run id (or the error that left it unconfirmed)."""
    started = time.monotonic()

    def one(request: RunRequest) -> tuple[str, str]:
        try:
            return request.idempotency_token, backend.start(request)
        except Exception as exc:  # noqa: BLE001 - counted: an unconfirmed start is re-sent next tick
            return request.idempotency_token, f"error: {exc}"

    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="start") as pool:
        answers = dict(pool.map(one, batch))
    return time.monotonic() - started, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=2500)
    parser.add_argument("--parallel", type=int, default=8, help="runs.max_parallel_starts")
    parser.add_argument(
        "--throttled", type=float, default=0.5, help="share of run-now calls answered 429 (0.5: every other one)"
    )
    parser.add_argument("--retry-after", type=int, default=1, help="the 429's Retry-After, in seconds")
    parser.add_argument("--max-retry-wait", type=float, default=10.0, help="databricks.max_retry_wait_seconds")
    args = parser.parse_args()

    server = JobsApiServer().start()
    os.environ["DATABRICKS_HOST"], os.environ["DATABRICKS_TOKEN"] = server.url, server.token
    for j in range(args.starts):
        server.add_job(FIRST_JOB + j)
    state = Path(tempfile.mkdtemp(prefix="databricks-start-bench-"))
    config = config_from_mapping(
        {
            "state_dir": str(state),
            "backend": "databricks",
            "catalog": "main",
            "databricks": {"max_retry_wait_seconds": args.max_retry_wait},
        },
        base=state,
    )
    backend = DatabricksBackend(config)
    try:
        print(f"{args.starts:,} starts, {args.parallel} at a time, on the Jobs API test server ({server.url})")
        for name, throttled in (("plain", 0), ("throttled", round(args.starts * args.throttled))):
            batch = requests(args.starts, name)
            calls_before, runs_before = len(server.calls("/run-now")), len(server.runs)
            if throttled:  # spread over the round: the first call of every `every`
                every = max(1, round(1 / args.throttled))
                server.fail(
                    "/run-now",
                    429,
                    times=throttled,
                    every=every,
                    retry_after=args.retry_after,
                    error_code="TOO_MANY_REQUESTS",
                )
            seconds, answers = send(backend, batch, args.parallel)
            unconfirmed = sum(1 for a in answers.values() if a.startswith("error"))
            calls = len(server.calls("/run-now")) - calls_before
            runs = len(server.runs) - runs_before
            print(
                f"  {name:<10} {seconds:6.2f} s  {calls:,} run-now calls ({throttled:,} answered 429 + Retry-After: "
                f"{args.retry_after}), {runs:,} runs created, {unconfirmed:,} unconfirmed"
            )
            resent_seconds, again = send(backend, batch, args.parallel)
            same = sum(1 for token, run_id in again.items() if answers[token] == run_id and not run_id.startswith("e"))
            extra = len(server.runs) - runs_before - runs
            print(
                f"  {'sent again':<10} {resent_seconds:6.2f} s  {same:,} of {len(batch):,} answered with the run of "
                f"their first answer, {extra:,} runs created (for requests unconfirmed the first time)"
            )
            tokens = [r.token for r in server.runs.values() if r.token and r.token.startswith(f"hb-{name}-")]
            if len(tokens) != len(set(tokens)) or len(set(tokens)) != args.starts:
                raise SystemExit(f"bench: {name}: {len(set(tokens))} tokens with runs, {len(tokens)} runs")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
