"""`python -m harness serve`: the report as a live page on localhost, read-only, from the state files a tick
leaves (written here by the harness's own code: status_files), no Spark. The server answers in a thread of
the test; the page is opened in a real headless Chromium (tests/browser.py) where the test is a process's."""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

from harness.commands import cli, serve
from harness.core.config import PROJECT_DIR, load_config
from harness.core.errors import HeartbeatError
from harness.core.state_layout import StateLayout
from harness.state import status_files
from harness.tick.steps import TickReport
from tests.browser import Page, chromium
from tests.commands.test_operator_truth import row, snapshot


@dataclass
class Served:
    config_file: str
    state: Path
    port: int

    def request(self, method: str, path: str, host: str | None = None) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.putrequest(method, path, skip_host=host is not None)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        return connection.getresponse()

    def get(self, path: str) -> str:
        answer = self.request("GET", path)
        assert answer.status == 200, answer.read()
        return answer.read().decode()

    def tick(self, *rows: dict[str, Any], reason: str = "waiting for hard dependency trigger_file:t") -> None:
        """What a tick leaves: the snapshot of its rows, its line in the health record and the ticks."""
        body = snapshot(*rows, reason=reason) | {"written_at": datetime.now(timezone.utc).isoformat()}
        status_files.write_snapshot_body(self.state, body)
        status_files.record_tick(self.state, TickReport(body["tick_id"]).result(datetime.now(timezone.utc), 0.5))


def _state(tmp_path: Path) -> tuple[str, Path]:
    state = tmp_path / "state"
    state.mkdir()
    (log := tmp_path / "events").mkdir()  # an event log with no event yet
    StateLayout(state).events_location.write_text(log.as_uri() + "\n")
    config = tmp_path / "heartbeat.yml"
    config.write_text(f"state_dir: {state}\n")
    return str(config), state


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """GIVEN a state ticked once (job j waiting) served on a free port of 127.0.0.1."""
    config_file, state = _state(tmp_path)
    server = serve.make_server(load_config(config_file), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    one = Served(config_file, state, server.server_address[1])
    one.tick(row("j"), row("k", "u"))
    yield one
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_serve_listens_on_127_0_0_1_port_8765_unless_told(tmp_path: Path) -> None:
    # GIVEN the command line without --host or --port
    args = cli.parser().parse_args(["serve"])
    assert (args.host, args.port) == ("127.0.0.1", 8765)
    # WHEN its server is made (on a free port: 8765 may be taken on this machine)
    config_file, _ = _state(tmp_path)
    server = serve.make_server(load_config(config_file), args.host, 0)
    try:
        # THEN it listens on the loopback address only
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_requests_that_would_write_are_refused_and_change_nothing(served: Served, method: str) -> None:
    before = {p.name: p.read_bytes() for p in served.state.iterdir() if p.is_file()}
    for path in ("/", "/why?job=j", "/version"):
        answer = served.request(method, path)
        assert (answer.status, answer.getheader("Allow")) == (405, "GET, HEAD")
        assert "read-only" in answer.read().decode()
    assert {p.name: p.read_bytes() for p in served.state.iterdir() if p.is_file()} == before


def test_the_version_is_the_same_between_ticks_and_changes_when_one_lands(served: Served) -> None:
    first = json.loads(served.get("/version"))["version"]
    assert json.loads(served.get("/version"))["version"] == first
    assert f'data-version="{first}"' in served.get("/")
    served.tick(row("j", status="FAILED"), row("k", "u"))
    second = json.loads(served.get("/version"))["version"]
    assert second != first and f'data-version="{second}"' in served.get("/")


def _without_the_clock(text: str) -> str:
    """`why`'s text with the moment its window starts (7 days before the call) masked: two calls a second apart."""
    return re.sub(r"(events (of this job )?since )\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", r"\1<since>", text)


def test_why_of_a_job_is_what_why_job_prints(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    page_why = served.get("/why?job=j")
    assert cli.main(["--config", served.config_file, "why", "--job", "j"]) == 0
    assert _without_the_clock(page_why) == _without_the_clock(capsys.readouterr().out.rstrip("\n"))
    assert page_why.startswith("job j (-): waiting: does not start")


def test_a_state_no_tick_writes_for_long_becomes_a_version_of_its_own(tmp_path: Path) -> None:
    """So that the page open on a stopped heartbeat redraws once, and says the state is stale."""
    # GIVEN the page drawn for a state ticked once
    config_file, state = _state(tmp_path)
    Served(config_file, state, 0).tick(row("j"))
    live = serve.LivePage(load_config(config_file), "2d")
    live.page()
    drawn = live.version()
    assert live.version() == drawn
    # WHEN no tick lands for longer than the stale limit (5 minutes while ticks are a minute apart or less)
    live.clock = lambda: time.time() + 301
    # THEN the version changes, and stays once the page is drawn for it
    assert live.version() == drawn + serve.STALE
    assert f'data-version="{drawn}{serve.STALE}"' in live.page().decode()
    assert live.version() == drawn + serve.STALE


def test_before_the_first_tick_the_page_says_so_and_is_served(tmp_path: Path) -> None:
    # GIVEN a state folder no tick has written yet (no event log, no snapshot)
    config_file = tmp_path / "heartbeat.yml"
    (state := tmp_path / "state").mkdir()
    config_file.write_text(f"state_dir: {state}\n")
    live = serve.LivePage(load_config(str(config_file)), "2d")
    # THEN the page is drawn, saying why it has no timelines, and the why says what to run
    page = live.page().decode()
    assert "The event log could not be read: no event log recorded in" in page and 'id="live-figures"' in page
    assert "no control table yet: run `python -m harness tick` first" in live.why("j")


def test_a_request_naming_another_host_is_refused(served: Served) -> None:
    """A page elsewhere cannot read the state through a name of its own that points at 127.0.0.1."""
    assert served.request("GET", "/", host="attacker.example:8765").status == 403
    assert served.request("GET", "/version", host=f"localhost:{served.port}").status == 200


def test_a_port_in_use_is_refused_naming_the_port_and_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file, _ = _state(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["--config", config_file, "serve", "--port", str(port)]) == 2
    assert f"error: port {port} on 127.0.0.1 is in use" in capsys.readouterr().err
    with pytest.raises(HeartbeatError, match="choose another with --port"):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            serve.make_server(load_config(config_file), port=taken.getsockname()[1])


def test_a_missing_state_folder_is_refused_naming_it_and_what_to_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "heartbeat.yml"
    config.write_text(f"state_dir: {tmp_path / 'nowhere'}\n")
    assert cli.main(["--config", str(config), "serve"]) == 2
    err = capsys.readouterr().err
    assert f"the state folder {tmp_path / 'nowhere'} does not exist" in err
    assert "python -m harness tick" in err and "state_dir" in err


NO_SPARK = """
import json, sys, threading, urllib.request
from harness.commands import cli
from harness.commands.serve import make_server
from harness.core.config import PROJECT_DIR, load_config
server = make_server(load_config(sys.argv[1]), port=0)
threading.Thread(target=server.serve_forever, daemon=True).start()
base = "http://127.0.0.1:%d/" % server.server_address[1]
for path in ("", "version", "why?job=j"):
    assert urllib.request.urlopen(base + path).status == 200
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j", "dbt", "harness")
                        and (m.split(".")[0] != "harness" or m.startswith(("harness.tick.", "harness.platform."))))))
"""


@pytest.mark.process
def test_serve_starts_no_spark_no_jvm_and_no_dbt(tmp_path: Path) -> None:
    """A process of its own: what a process imported is only seen in a fresh interpreter."""
    # GIVEN a ticked state
    config_file, state = _state(tmp_path)
    Served(config_file, state, 0).tick(row("j"))
    # WHEN the page, the version and a job's why are asked of a server in a fresh interpreter
    out = subprocess.run(
        [sys.executable, "-c", NO_SPARK, config_file], capture_output=True, text=True, check=True, cwd=PROJECT_DIR
    ).stdout
    # THEN it answered without importing Spark, py4j, dbt or the tick's modules
    assert json.loads(out.splitlines()[-1]) == []


# --- in a real browser ------------------------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.skipif(chromium() is None, reason="no Chromium (scripts/setup.sh installs it)")
def test_the_live_page_redraws_itself_when_a_tick_lands(served: Served) -> None:
    with Page() as browser:
        # GIVEN the live page open, job j waiting
        browser.open(f"http://127.0.0.1:{served.port}/", "document.body && document.body.dataset.graph")
        assert "2 jobs: 0 ready, 2 waiting" in browser.text("body")
        assert browser.text("#job-list li[data-job=j]").splitlines()[0] == "j"
        browser.type_into("#graph-search", "j")  # what the reader chose stays across a redraw
        browser.evaluate("window.notReloaded = true")
        # WHEN a tick lands in which j's run failed
        served.tick(row("j", status="FAILED"), row("k", "u"))
        # THEN the page redraws itself: j is failed, the summary counts it, the search is kept; no reload
        browser.wait_for("Number(document.body.dataset.redrawn || 0) >= 1")
        assert "2 jobs: 0 ready, 1 waiting, 0 running, 1 failed" in browser.text("body")
        assert browser.text("#job-title").startswith("j failed")
        assert browser.evaluate("document.getElementById('graph-search').value") == "j"
        assert browser.evaluate("window.notReloaded") is True
        assert browser.text("#live-status").startswith("live: redrawn at ")
        assert browser.wait_for("document.querySelectorAll('#live-figures .plotly-graph-div .main-svg').length") >= 3
        # and it draws nothing again while no tick lands: the checks go on, the redraws do not
        checked = browser.wait_for(
            "(s => s.startsWith('live: up to date') && s)(document.getElementById('live-status').textContent)"
        )
        redrawn = browser.evaluate("document.body.dataset.redrawn")
        browser.wait_for(f"document.getElementById('live-status').textContent !== {json.dumps(checked)}")
        assert browser.evaluate("document.body.dataset.redrawn") == redrawn
        assert browser.console == []


@pytest.mark.process
@pytest.mark.skipif(chromium() is None, reason="no Chromium (scripts/setup.sh installs it)")
def test_a_jobs_why_opens_in_one_click_and_is_what_why_job_prints(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    with Page() as browser:
        browser.open(f"http://127.0.0.1:{served.port}/", "document.body && document.body.dataset.graph")
        # WHEN job k is picked in the list and its why clicked
        browser.click("#job-list li[data-job=k]")
        browser.click("#why-button")
        shown = browser.wait_for("document.getElementById('why-text').textContent")
    # THEN the page shows what `why --job k` prints
    assert cli.main(["--config", served.config_file, "why", "--job", "k"]) == 0
    assert _without_the_clock(shown) == _without_the_clock(capsys.readouterr().out.rstrip("\n"))
    assert shown.startswith("job k (-): waiting: does not start")
