"""State files other processes write (queued requests and publications, a local run's result) that cannot
be read: each is set aside or reported naming the file and what to do; nothing else stops."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from harness.backends.local import LocalBackend
from harness.backends.local_supervisor import LAUNCHED, RESULT
from harness.core.config import PROJECT_DIR, Config
from harness.core.errors import BackendError
from harness.core.state_layout import StateLayout
from harness.jobs.publish import Publication, enqueue
from harness.tick import inbox, publications

pytestmark = pytest.mark.unit


def test_a_queued_request_that_cannot_be_read_is_set_aside_and_the_others_applied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a request queued by `complete`, one written by hand with an unknown command, one that is not
    # JSON, and the temporary file of a `retry` killed while writing
    good = inbox.submit(tmp_path, inbox.new_request("complete", "j"))
    folder = StateLayout(tmp_path).inbox
    (folder / "20260101T000000000000-hand.json").write_text(
        json.dumps(
            {"request_id": "ab" * 16, "command": "restart", "args": {"job_id": "j"}, "requested_at": "2026-01-01"}
        )
    )
    (folder / "20260101T000000000001-cut.json").write_text('{"request_id": "')
    (folder / ".20260101T000000000002-killed.json.1234").write_text('{"req')

    # WHEN the tick reads the queue
    with caplog.at_level(logging.ERROR):
        pending = inbox.pending(tmp_path)

    # THEN it applies the good request, sets the two bad files aside (kept, not applied) and says so
    assert [r.path for r in pending] == [good]
    assert sorted(p.name for p in folder.glob("*.refused")) == [
        "20260101T000000000000-hand.json.refused",
        "20260101T000000000001-cut.json.refused",
    ]
    assert "unknown request 'restart'" in caplog.text and "python -m harness complete --job-id" in caplog.text
    # AND the next tick reads only the good request (a tick never fails on them again)
    assert [r.path for r in inbox.pending(tmp_path)] == [good]


def test_a_queued_publication_that_cannot_be_read_is_set_aside_and_the_others_applied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a publication queued by `publish`, and one written by hand without its table
    enqueue(tmp_path, Publication("lake.orders", "7"))
    folder = StateLayout(tmp_path).published_inbox
    (folder / "hand.json").write_text(json.dumps({"snapshot_id": "8"}))

    # WHEN the tick reads the queue, THEN the good one is there and the bad one set aside, said
    with caplog.at_level(logging.ERROR):
        queued = publications.queued(tmp_path)
    assert [p.snapshot_id for _, p in queued] == ["7"]
    assert (folder / "hand.json.refused").exists() and "KeyError" in caplog.text and "publish it again" in caplog.text


def test_a_local_runs_result_that_cannot_be_read_is_a_poll_error_naming_the_file(tmp_path: Path) -> None:
    # GIVEN a local run whose result file was damaged, and one whose launch record holds no process id
    backend = LocalBackend(Config(config_path=None, project_dir=PROJECT_DIR, state_dir=tmp_path))
    damaged, garbled = backend.run_dir("local-1"), backend.run_dir("local-2")
    damaged.mkdir(parents=True), garbled.mkdir(parents=True)
    (damaged / RESULT).write_text('{"exit_code": 0')
    (garbled / LAUNCHED).write_text("not a pid")

    # WHEN they are polled, THEN each is a backend error (a poll error, recorded once an hour while the
    # other runs are followed) naming the file and how to close the run, not a failed tick
    with pytest.raises(BackendError, match="result .*cannot be read .*complete --job-id j"):
        backend.poll("j", "local-1")
    with pytest.raises(BackendError, match="not a process id.*complete --job-id j"):
        backend.poll("j", "local-2")
