"""`python -m harness serve`: the report as a live page, served read-only on localhost by the standard
library's http.server (a page, a version and a text: no framework earns its place).

It reads what `status`, `why` and `report` read (the snapshot, the health record, the ticks, the event
log's files), never Spark or a JVM, and answers:

  GET /             the report's page (harness.views.report), drawn again only when the state changed;
  GET /version      {"version": ...}: the state's version (the state files' sizes and times), which the
                    page asks for every few seconds (harness.views.live) to redraw itself when it changed;
  GET /why?job=ID   what `python -m harness why --job ID` prints (operator.why_text, the same code).

Any other method is refused (405): the page writes nothing. Bound to 127.0.0.1 unless --host says
otherwise; a request naming another host than the loopback's is refused there (a web page elsewhere cannot
reach it through a name that points at 127.0.0.1).
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import logging
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import parse_qs, urlsplit

from harness.core.errors import HeartbeatError
from harness.core.state_layout import StateLayout

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

    from harness.core.config import Config

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
READ_ONLY = "the live page is read-only: change the state with the commands (complete, retry, publish, seed)\n"

log = logging.getLogger("harness.serve")


def state_version(state_dir: Path) -> str:
    """The version of what the page shows: each state file the operator's commands read, by size and time
    of its last change. A tick writes the snapshot (or, where nothing changed, the tick file naming it) and
    the health record and appends to the ticks, so every tick that lands is a new version; a page between
    two ticks is the same."""
    layout = StateLayout(state_dir)
    parts = []
    for path in (layout.snapshot, layout.snapshot_tick, layout.health, layout.waiting, layout.ticks):
        try:
            stat = path.stat()
            parts.append(f"{path.name}:{stat.st_mtime_ns}:{stat.st_size}")
        except FileNotFoundError:
            parts.append(f"{path.name}:-")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


STALE = "-stale"


def _last_written(layout: StateLayout) -> float | None:
    """When a tick last wrote the snapshot, or the tick file that says it found the state as the snapshot
    shows it (a tick with nothing new writes only that)."""
    times = [path.stat().st_mtime for path in (layout.snapshot, layout.snapshot_tick) if path.exists()]
    return max(times) if times else None


class LivePage:
    """The page of the state's current version, drawn once per version (one drawing at a time). A state no
    tick has written for long (harness.views.report.stale_after) is a version of its own: the page redraws
    once more, and says so, when the heartbeat stops."""

    def __init__(self, config: Config, since: str) -> None:
        self.config, self.since = config, since
        self._lock = threading.Lock()
        self._drawn: tuple[str, bytes] | None = None
        self._stale_at: float | None = None  # when the drawn state becomes stale (by `clock`)
        self.clock: Callable[[], float] = time.time

    def version(self) -> str:
        files = state_version(self.config.state_dir)
        drawn = self._drawn
        if drawn is not None and drawn[0].removesuffix(STALE) == files and self._stale_at is not None:
            return files + (STALE if self.clock() >= self._stale_at else "")
        return files

    def page(self) -> bytes:
        from harness.commands.operator import report_page
        from harness.state.event_reader import parse_since
        from harness.state.status_files import read_ticks
        from harness.views.report import stale_after

        with self._lock:
            version = self.version()  # before reading: a tick landing meanwhile is the next version
            if self._drawn is None or self._drawn[0] != version:
                self._drawn = (version, report_page(self.config, self.since, live_version=version).encode())
                ticks = read_ticks(self.config.state_dir, parse_since(self.since))
                written = _last_written(StateLayout(self.config.state_dir))
                self._stale_at = written + stale_after(ticks) if written is not None else None
            return self._drawn[1]

    def why(self, job_id: str) -> str:
        from harness.commands.operator import why_text

        return why_text(self.config, job_id)[0]


def handler_class(live: LivePage, loopback_only: bool) -> type:
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        server_version = "heartbeat-serve"

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._answer(with_body=True)

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(with_body=False)

        def _refuse(self) -> None:
            self._send(405, "text/plain; charset=utf-8", READ_ONLY.encode(), True, {"Allow": "GET, HEAD"})

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # noqa: N815

        def _answer(self, with_body: bool) -> None:
            if loopback_only and _host_name(self.headers.get("Host", "")) not in LOOPBACK:
                body = b"this page answers requests to localhost only (start serve with --host to change it)\n"
                return self._send(403, "text/plain; charset=utf-8", body, with_body)
            url = urlsplit(self.path)
            try:
                if url.path in ("/", "/index.html"):
                    return self._send(200, "text/html; charset=utf-8", live.page(), with_body)
                if url.path == "/version":
                    body = json.dumps({"version": live.version()}).encode()
                    return self._send(200, "application/json", body, with_body)
                if url.path == "/why":
                    job = (parse_qs(url.query).get("job") or [""])[0]
                    if not job:
                        return self._send(400, "text/plain; charset=utf-8", b"ask /why?job=JOB_ID\n", with_body)
                    return self._send(200, "text/plain; charset=utf-8", live.why(job).encode(), with_body)
            except HeartbeatError as exc:  # a state file cut short, ...: said, and the page keeps its state
                return self._send(503, "text/plain; charset=utf-8", f"{exc}\n".encode(), with_body)
            self._send(404, "text/plain; charset=utf-8", b"not here: / (the page), /version, /why?job=ID\n", with_body)

        def _send(
            self, code: int, kind: str, body: bytes, with_body: bool, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(code)
            for name, value in {
                "Content-Type": kind,
                "Content-Length": str(len(body)),
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
                **(headers or {}),
            }.items():
                self.send_header(name, value)
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
            log.debug("%s %s", self.address_string(), format % args)

    return Handler


def _host_name(host: str) -> str:
    """A request's Host header without its port: `localhost:8765` -> `localhost`, `[::1]:8765` -> `::1`."""
    try:
        return (urlsplit(f"//{host}").hostname or "").lower()
    except ValueError:
        return ""


def make_server(
    config: Config, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, since: str = "2d"
) -> ThreadingHTTPServer:
    """The server, listening (port 0: any free port); `serve_forever()` answers."""
    from http.server import ThreadingHTTPServer

    if not config.state_dir.is_dir():
        raise HeartbeatError(
            f"the state folder {config.state_dir} does not exist: serve reads what the ticks leave there. Run "
            "`python -m harness tick` first, or point state_dir (heartbeat.yml, HEARTBEAT_STATE_DIR or "
            "--set state_dir=...) at the heartbeat's state folder"
        )
    from harness.state.event_reader import parse_since

    parse_since(since)  # a window that cannot be read is refused now, not at the first request
    server_class = ThreadingHTTPServer
    if ":" in host:  # an IPv6 address (::1)

        class ServerV6(ThreadingHTTPServer):
            address_family = socket.AF_INET6

        server_class = ServerV6
    try:
        server = server_class((host, port), handler_class(LivePage(config, since), host in LOOPBACK))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise HeartbeatError(
                f"port {port} on {host} is in use (another `serve`, or another program): choose another with --port"
            ) from None
        raise HeartbeatError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): check --host and --port"
        ) from None
    server.daemon_threads = True
    return server


def cmd_serve(config: Config, args: argparse.Namespace) -> int:
    server = make_server(config, args.host, args.port, args.since)
    host, port = server.server_address[:2]
    print(
        f"serving the live report of {config.state_dir} at http://{_url_host(str(host))}:{port}/ (read-only; Ctrl-C stops)"
    )
    if args.host not in LOOPBACK:
        print(
            f"warning: listening on {args.host}: anyone who reaches this port reads the page, with no password; "
            'an SSH tunnel to 127.0.0.1 is safer (docs/operations.md, "The live page")',
            file=sys.stderr,
        )
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535, got {text!r}")
    return value


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "serve",
        help="serve the report as a live page on localhost (read-only, no Spark)",
        description="Serve the report as a live page that redraws itself when a tick lands, each job's `why` "
        "one click away. Read-only; no Spark, no JVM.",
    )
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})")
    p.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"the address to listen on (default {DEFAULT_HOST}: this machine only; from elsewhere, an SSH tunnel)",
    )
    p.add_argument("--since", default="2d", help="the timelines' window (30m, 2h, 7d, or an ISO time; default 2d)")
    p.set_defaults(func=cmd_serve)
