"""A page in headless Chromium, driven over the DevTools protocol (for the report's browser tests).

:func:`chromium` is Debian's ``/usr/bin/chromium`` (or ``$CKPT_CHROMIUM``), None when absent. :class:`Page`
starts it on a fresh profile with remote debugging on 127.0.0.1, opens a file, records every console error,
uncaught exception and log error (a Content-Security-Policy refusal among them), evaluates expressions and
takes screenshots.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--hide-scrollbars",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0"]


def chromium() -> str | None:
    """The Chromium binary, or None."""
    found = os.environ.get("CKPT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    return found if found and os.access(found, os.X_OK) else None


class Page:
    """``with Page() as page: page.open(path); page.eval("...")``; ``page.errors`` what the console reported."""

    def __init__(self, width: int = 1100, height: int = 900) -> None:
        self.size = (width, height)
        self.errors: list[str] = []
        self._id = 0

    def __enter__(self) -> Page:
        import websocket  # websocket-client, the test extra

        binary = chromium()
        assert binary is not None
        self.profile = tempfile.mkdtemp(prefix="ckpt-chromium-")
        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self.profile}",
                                      f"--window-size={self.size[0]},{self.size[1]}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = self._port()
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        return self

    def _port(self) -> int:
        deadline = time.monotonic() + 30
        assert self.proc.stderr is not None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if "DevTools listening on ws://" in line:
                return int(line.split("ws://127.0.0.1:", 1)[1].split("/", 1)[0])
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError("chromium did not start its DevTools endpoint")

    def __exit__(self, *exc: object) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.kill()
            self.proc.wait(timeout=30)
            shutil.rmtree(self.profile, ignore_errors=True)

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            self.errors.append(params["exceptionDetails"].get("text", "exception"))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(params["entry"]["text"])

    def call(self, method: str, wait_for: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command; return its result (after the event ``wait_for`` when given)."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        result: dict[str, Any] | None = None
        seen = wait_for is None
        while result is None or not seen:
            message = json.loads(self.ws.recv())
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result = message["result"]
            elif "method" in message:
                self._event(message)
                seen = seen or message["method"] == wait_for
        return result

    def open(self, path: Path) -> None:
        """Load a file and wait for its load event (then for pending console messages)."""
        self.call("Page.navigate", wait_for="Page.loadEventFired", url=path.resolve().as_uri())
        self.eval("1")

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        found = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in found:
            raise RuntimeError(f"{expression}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def screenshot(self, out: Path, height: int | None = None) -> None:
        """The viewport as a PNG (with ``height``, the page's top ``height`` pixels, beyond the viewport)."""
        clip = {"x": 0, "y": 0, "width": self.size[0], "height": height, "scale": 1} if height else None
        extra = {"clip": clip, "captureBeyondViewport": True} if clip else {}
        data = self.call("Page.captureScreenshot", format="png", **extra)["data"]
        out.write_bytes(base64.b64decode(data))
