"""The local runner: one run per token, outcomes read from disk by any later process."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from harness.backends.base import RunRequest, RunState, StartRefused
from harness.backends.local import LocalBackend
from harness.backends.local_supervisor import LAUNCHED, META, RESULT, supervise
from harness.core.config import PROJECT_DIR, Config, LocalJob

pytestmark = pytest.mark.scenario  # the local runner starts each run as a process


def backend(tmp_path: Path, **jobs: tuple[str, float | None]) -> LocalBackend:
    config = Config(
        config_path=None,
        project_dir=PROJECT_DIR,
        state_dir=tmp_path / "state",
        local_jobs={k: LocalJob(name=k, command=cmd, timeout_seconds=timeout) for k, (cmd, timeout) in jobs.items()},
    )
    return LocalBackend(config)


def wait_until_ended(b: LocalBackend, job: str, run_id: str) -> RunState:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = b.poll(job, run_id)
        if status.state is not RunState.RUNNING:
            return status.state
        time.sleep(0.05)
    raise AssertionError("run did not end")


def test_same_token_returns_the_same_run_and_runs_the_command_once(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    b = backend(tmp_path, j=(f"echo x >> {counter}", None))
    request = RunRequest("j", "j", "hb-token-1", {"upstreams": []})
    first = b.start(request)
    second = b.start(request)
    assert first == second
    assert wait_until_ended(b, "j", first) is RunState.SUCCEEDED
    assert counter.read_text() == "x\n"


def test_a_later_process_reads_how_the_run_ended(tmp_path: Path) -> None:
    b = backend(tmp_path, j=("echo 'bad input' >&2; exit 3", None))
    run_id = b.start(RunRequest("j", "j", "hb-token-2"))
    wait_until_ended(b, "j", run_id)
    status = backend(tmp_path, j=("true", None)).poll("j", run_id)  # a fresh backend, as in a new process
    assert status.state is RunState.FAILED
    assert status.message == "exit code 3: bad input"


def test_run_receives_its_change_range_in_the_environment(tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    b = backend(tmp_path, j=(f"python3 -c \"import os,json; json.dump(dict(os.environ), open('{out}','w'))\"", None))
    change_range = {"job_id": "j", "run_context_id": "hb-token-3", "upstreams": [{"from": None, "to": {"v": 2}}]}
    run_id = b.start(RunRequest("j", "j", "hb-token-3", change_range))
    wait_until_ended(b, "j", run_id)
    env = json.loads(out.read_text())
    assert json.loads(env["HEARTBEAT_CHANGE_RANGE"]) == change_range
    assert env["HEARTBEAT_RUN_CONTEXT_ID"] == "hb-token-3" and env["HEARTBEAT_RUN_ID"] == run_id


def test_a_job_named_nowhere_runs_with_an_empty_job_name(tmp_path: Path) -> None:
    # GIVEN a job with no name in local_runner.jobs and none in the controls CSV (trigger_job_name empty)
    out = tmp_path / "name"
    config = Config(
        config_path=None,
        project_dir=PROJECT_DIR,
        state_dir=tmp_path / "state",
        local_jobs={"j": LocalJob(command=f"printf '[%s]' \"$HEARTBEAT_JOB_NAME\" > {out}")},
    )
    b = LocalBackend(config)
    # WHEN it starts
    run_id = b.start(RunRequest("j", None, "hb-token-nameless"))
    # THEN it runs and succeeds, its job name empty
    assert wait_until_ended(b, "j", run_id) is RunState.SUCCEEDED
    assert out.read_text() == "[]"


def test_a_supervisor_that_cannot_run_the_command_says_why_in_the_runs_result(tmp_path: Path) -> None:
    # GIVEN a run whose start wrote an environment the command cannot be given (a value that is no text)
    run_dir = tmp_path / "local-1"
    run_dir.mkdir()
    meta = {"command": "true", "cwd": str(tmp_path), "timeout_seconds": None, "env": {"HEARTBEAT_JOB_NAME": None}}
    (run_dir / META).write_text(json.dumps(meta))
    # WHEN its supervisor runs it
    supervise(run_dir)
    # THEN the run has a result: failed, naming the cause (not "the supervisor died without a result")
    result = json.loads((run_dir / RESULT).read_text())
    assert result["exit_code"] != 0
    assert result["message"].startswith("the local runner could not run the command: TypeError")


def test_run_past_its_timeout_is_killed_and_failed(tmp_path: Path) -> None:
    b = backend(tmp_path, j=("sleep 30", 0.5))
    run_id = b.start(RunRequest("j", "j", "hb-token-4"))
    assert wait_until_ended(b, "j", run_id) is RunState.FAILED
    assert "timed out after 0.5s" in b.poll("j", run_id).message


def test_missing_command_fails_the_run_with_the_shells_message(tmp_path: Path) -> None:
    b = backend(tmp_path, j=("no-such-command-for-heartbeat --now", None))
    run_id = b.start(RunRequest("j", "j", "hb-token-5"))
    assert wait_until_ended(b, "j", run_id) is RunState.FAILED
    message = b.poll("j", run_id).message
    assert message.startswith("exit code 127") and "no-such-command-for-heartbeat: command not found" in message


def test_job_missing_from_the_config_is_refused_naming_the_defined_jobs(tmp_path: Path) -> None:
    b = backend(tmp_path, known=("true", None))
    with pytest.raises(StartRefused, match="job ghost is not defined in local_runner.jobs .* defined jobs: known"):
        b.start(RunRequest("ghost", None, "hb-token-6"))


def test_a_run_whose_launch_never_happened_is_launched_by_the_next_start_with_its_token(tmp_path: Path) -> None:
    # GIVEN a heartbeat that recorded a run's token and stopped before launching its process
    counter = tmp_path / "count"
    b = backend(tmp_path, j=(f"echo x >> {counter}", None))
    request = RunRequest("j", "j", "hb-token-7")
    never_launched = LocalBackend(b.config)
    never_launched._launch = lambda run_dir: None  # type: ignore[method-assign]  # the kill, right here
    run_id = never_launched.start(request)
    assert not (b.run_dir(run_id) / "launched").exists()

    # WHEN the next heartbeat re-sends the request with the same token
    again = backend(tmp_path, j=(f"echo x >> {counter}", None))

    # THEN it is the same run, launched now, and it runs once
    assert again.start(request) == run_id
    assert wait_until_ended(again, "j", run_id) is RunState.SUCCEEDED
    assert counter.read_text() == "x\n"


def test_a_never_launched_run_found_by_a_poll_is_launched_and_two_launches_run_it_once(tmp_path: Path) -> None:
    # GIVEN a run recorded but never launched
    counter = tmp_path / "count"
    b = backend(tmp_path, j=(f"sleep 0.3; echo x >> {counter}", None))
    quiet = LocalBackend(b.config)
    quiet._launch = lambda run_dir: None  # type: ignore[method-assign]
    run_id = quiet.start(RunRequest("j", "j", "hb-token-8"))

    # WHEN it is polled while a second launch races the first (two supervisors of one run)
    b._launch(b.run_dir(run_id))
    assert b.poll("j", run_id).state is RunState.RUNNING

    # THEN exactly one of them ran the command
    assert wait_until_ended(b, "j", run_id) is RunState.SUCCEEDED
    assert counter.read_text() == "x\n"


def test_a_run_polled_while_its_supervisor_claims_it_is_running_not_dead(tmp_path: Path) -> None:
    # GIVEN a run whose supervisor created its claim and has not written its pid into it yet
    b = backend(tmp_path, j=("true", None))
    run_dir = b.run_dir("local-claiming")
    run_dir.mkdir(parents=True)
    (run_dir / LAUNCHED).write_text("")
    # THEN a poll in between sees it running, not a supervisor that died without a result
    assert b.poll("j", "local-claiming").state is RunState.RUNNING


def test_runs_go_on_after_the_launcher_is_killed_and_the_next_start_gets_a_new_one(tmp_path: Path) -> None:
    # GIVEN a run going, launched by the backend's launcher process
    b = backend(tmp_path, slow=("sleep 1", None), quick=("true", None))
    slow = b.start(RunRequest("slow", "slow", "hb-token-9"))
    claim = b.run_dir(slow) / LAUNCHED
    deadline = time.monotonic() + 10
    while not (claim.exists() and claim.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    supervisor = claim.read_text().strip()
    first = b._launcher
    assert first is not None
    # WHEN the launcher is killed (SIGKILL)
    first.kill()
    first.wait()
    # THEN the run it launched goes on to its end, and the next start is launched by a new launcher
    quick = b.start(RunRequest("quick", "quick", "hb-token-10"))
    assert b._launcher is not first
    assert wait_until_ended(b, "quick", quick) is RunState.SUCCEEDED
    assert wait_until_ended(b, "slow", slow) is RunState.SUCCEEDED
    assert claim.read_text().strip() == supervisor, "the run was launched again"


def test_a_supervisor_left_a_zombie_by_a_parent_that_never_reaps_it_is_dead(tmp_path: Path) -> None:
    # GIVEN a claim whose process ended without a result and stays a zombie (its parent, `sleep`, never
    # reaps it: as under an init that does not reap)
    parent = subprocess.Popen(["bash", "-c", "true & echo $!; exec sleep 10"], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        zombie = parent.stdout.readline().strip()
        b = backend(tmp_path, j=("true", None))
        run_dir = b.run_dir("local-zombie")
        run_dir.mkdir(parents=True)
        (run_dir / LAUNCHED).write_text(zombie)
        deadline = time.monotonic() + 5
        while b.poll("j", "local-zombie").state is RunState.RUNNING and time.monotonic() < deadline:
            time.sleep(0.05)  # until `true` has ended
        # THEN the run is failed, not running for ever
        status = b.poll("j", "local-zombie")
        assert status.state is RunState.FAILED and "died without a result" in status.message
    finally:
        parent.kill()
        parent.wait()
