"""Headless Chromium driven over the Chrome DevTools protocol, standard library only.

The browser talks CDP over two pipes (``--remote-debugging-pipe``: it reads commands on file
descriptor 3 and writes replies and events on 4, each message JSON ended by a NUL byte), so
no port is opened and no websocket library is needed. :class:`Browser` loads pages and
reports what a reader would meet: console errors, uncaught exceptions, failed loads (a
missing image or script logs ``Failed to load resource``) and images that did not render.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _waits import HANG_CAP

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe", "--hide-scrollbars"]
# images present in the page that did not load, or loaded empty
BROKEN_IMAGES = ("Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
                 ".map(i => i.getAttribute('src'))")


def chromium() -> str | None:
    """The Chromium executable (Debian's package installs ``chromium``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageReport:
    url: str
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads
    broken_images: list[str] = field(default_factory=list)


class Browser:
    """One headless Chromium with a fresh profile; ``with Browser() as b: b.load(path)``."""

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = HANG_CAP):
        exe = chromium()
        if exe is None:
            raise RuntimeError("chromium is not installed (apt-get install chromium)")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="dpbandits-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        def wire():  # in the child: our pipes become its fds 3 (commands) and 4 (replies)
            commands, replies = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(commands, 3)
            os.dup2(replies, 4)

        self._proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self._profile}", f"--window-size={width},{height}",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=wire)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target,
                                  flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width,
                  height=height, deviceScaleFactor=1, mobile=False)

    # -- protocol ------------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_browser, data):]

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, session: bool = False, **params) -> dict:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def _wait_for(self, event: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == event for e in self._events):
            self._events.append(self._receive(deadline))

    # -- what a reader sees ----------------------------------------------------------------
    def load(self, page: str | Path, ready: str | None = None) -> PageReport:
        """Open ``page`` (a file, or a URL with a query) and report its errors once it has
        loaded, the tasks its scripts queued by then have run, and the JavaScript condition
        ``ready`` (if given) holds: each waited on as an event, never for a fixed time."""
        url = page if isinstance(page, str) and "://" in page else Path(page).resolve().as_uri()
        self._events.clear()
        self.call("Page.navigate", session=True, url=url)
        self._wait_for("Page.loadEventFired")
        if ready is not None:
            self.wait_until(ready, f"{ready} on {url}")
        # one round trip through the page's task queue: what its scripts queued has run, and
        # the events it raised have arrived before this reply
        self.call("Runtime.evaluate", session=True, awaitPromise=True,
                  expression="new Promise(done => setTimeout(done, 0))")
        report = PageReport(url)
        for event in self._events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error",
                                                                              "assert"):
                args = " ".join(str(a.get("value", a.get("description", "")))
                                for a in params.get("args", []))
                report.errors.append(f"console.{params['type']}: {args}")
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text")
                report.errors.append(f"uncaught: {text}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                entry = params["entry"]
                report.errors.append(f"{entry.get('source')}: {entry['text']} "
                                     f"{entry.get('url', '')}".rstrip())
        report.broken_images = self.evaluate(BROKEN_IMAGES)
        return report

    def wait_until(self, expression: str, what: str) -> None:
        """Poll the JavaScript ``expression`` until it is true (a hang fails after the
        browser's ``timeout``, naming ``what``)."""
        deadline = time.monotonic() + self.timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {self.timeout:.0f} s for {what}")
            time.sleep(0.02)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the current page."""
        result = self.call("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: str | Path, full_page: bool = False) -> Path:
        """A PNG of the current page (the viewport, or the whole page)."""
        params = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            w, h = self.evaluate("[document.documentElement.scrollWidth,"
                                 " document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self) -> None:
        try:
            self._send({"id": 0, "method": "Browser.close"})
        except OSError:
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
