"""A page in a real headless Chromium, driven through the DevTools protocol over a pipe
(`--remote-debugging-pipe`: messages of JSON ended by a NUL byte on file descriptors 3 and 4), so that a
test types into a page's search box, clicks, and reads what the page shows, with nothing but the standard
library. scripts/setup.sh installs Chromium.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable


def chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


class BrowserError(Exception):
    pass


class Page:
    """One tab of a headless Chromium started for it; `with Page() as page: page.open(url)`."""

    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        browser = chromium()
        if browser is None:
            raise BrowserError("no Chromium (scripts/setup.sh installs it)")
        self._profile = tempfile.mkdtemp(prefix="heartbeat-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def descriptors() -> None:  # in the child: the browser reads commands on 3 and writes answers on 4
            high_r, high_w = os.dup2(to_browser_r, 100), os.dup2(from_browser_w, 101)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self._process = subprocess.Popen(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=descriptors,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.console: list[str] = []  # the page's console messages and uncaught errors
        try:
            target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page.enable", "Runtime.enable"):
                self._call(domain, session=True)
        except BaseException:
            self.close()
            raise

    # --- the protocol ---------------------------------------------------------------------------------
    def _send(self, method: str, params: dict[str, Any] | None, session: bool) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _read(self, timeout: float) -> dict[str, Any]:
        import select

        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise BrowserError(f"Chromium said nothing for {timeout} s")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed its pipe")
            self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(text)
        self._note(message)
        return message

    def _note(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if method == "Runtime.consoleAPICalled":
            self.console.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails") or {}
            self.console.append(str((details.get("exception") or {}).get("description") or details.get("text")))

    def _call(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = False, timeout: float = 60
    ) -> dict[str, Any]:
        wanted = self._send(method, params, session)
        while True:
            message = self._read(timeout)
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result") or {}

    # --- what a test does -------------------------------------------------------------------------------
    def open(self, url: str, ready: str = "document.readyState === 'complete'", timeout: float = 60) -> None:
        """Load the page and wait until `ready` (a script's expression) holds."""
        self._call("Page.navigate", {"url": url}, session=True)
        self.wait_for(ready, timeout)

    def evaluate(self, expression: str) -> Any:
        """The value of a script's expression in the page (JSON-able values)."""
        result = self._call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=True,
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('exception', result)}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        """Until the expression is true-ish in the page (checked every 0.1 s), its value; an error after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except BrowserError as exc:  # the page is still loading: its document has no body yet, ...
                value, error = None, exc
            else:
                error = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"still not true after {timeout} s: {expression}" + (f" ({error})" if error else ""))
            time.sleep(0.1)

    def type_into(self, selector: str, text: str) -> None:
        """Focus the field and type `text` as a person's keyboard would (its `input` events fire)."""
        self.evaluate(f"(function(){{var e=document.querySelector({json.dumps(selector)});e.focus();e.select();}})()")
        self._call("Input.insertText", {"text": text}, session=True)

    def click(self, selector: str) -> None:
        """Click the first element the selector finds (at its centre, with the mouse)."""
        box = self.evaluate(
            f"(function(){{var e=document.querySelector({json.dumps(selector)});if(!e)return null;"
            "e.scrollIntoView({block:'center',inline:'center'});var r=e.getBoundingClientRect();"
            "return [r.left+r.width/2, r.top+r.height/2];})()"
        )
        if box is None:
            raise BrowserError(f"nothing on the page matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self._call(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1},
                session=True,
            )

    def text(self, selector: str) -> str:
        return str(self.evaluate(f"(document.querySelector({json.dumps(selector)})||{{}}).innerText||''"))

    def screenshot(self, path: Path) -> Path:
        import base64

        data = self._call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self._call("Browser.close", timeout=10)
        except (BrowserError, OSError):
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> "Page":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def until(check: Callable[[], Any], timeout: float = 30, every: float = 0.2) -> Any:
    """The first true-ish value of `check()`, tried every `every` seconds; an error after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise BrowserError(f"not true after {timeout} s")
        time.sleep(every)
