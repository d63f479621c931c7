"""A minimal W3C WebDriver client for chromedriver (no selenium dependency) and the Chromium set-up.

Chromium and chromedriver come from Debian's packages; :func:`ensure_chromium` installs them with
apt-get when they are missing (as root), else skips the test.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from stream.ops.broker import free_port
from stream.testing.debian import apt_install

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", "--window-size=1280,1800"]


def ensure_chromium() -> tuple[str, str]:
    """Paths of chromium and chromedriver, installed from Debian's packages if missing."""
    def find() -> tuple[str | None, str | None]:
        return shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")

    apt_install(["chromium", "chromium-driver"], lambda: all(find()))
    chromium, driver = find()
    if not (chromium and driver):
        pytest.skip("chromium / chromedriver not installed and could not be installed with apt-get")
    return chromium, driver


class WebDriver:
    """chromedriver on a free loopback port and one headless Chromium session."""

    def __init__(self, chromium: str, driver: str) -> None:
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="anonstream-chromium-")
        self.proc = subprocess.Popen([driver, f"--port={self.port}", "--allowed-ips=127.0.0.1"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if self._call("GET", "/status").get("ready"):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromedriver did not become ready")
            time.sleep(0.2)
        caps = {"browserName": "chrome", "goog:chromeOptions": {
            "binary": chromium, "args": [*CHROME_ARGS, f"--user-data-dir={self.profile}"]}}
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else (b"{}" if method == "POST" else None)
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return json.loads(resp.read()).get("value")
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"webdriver {method} {path}: {exc.read().decode()[:300]}") from None

    def cmd(self, method: str, path: str, body: Any = None) -> Any:
        return self._call(method, f"/session/{self.session}{path}", body)

    def get(self, url: str) -> None:
        self.cmd("POST", "/url", {"url": url})

    def find_all(self, css: str) -> list[str]:
        return [e[ELEMENT] for e in self.cmd("POST", "/elements", {"using": "css selector", "value": css})]

    def click(self, element: str) -> None:
        self.cmd("POST", f"/element/{element}/click")

    def text(self, element: str) -> str:
        return str(self.cmd("GET", f"/element/{element}/text"))

    def script(self, source: str, *args: Any) -> Any:
        return self.cmd("POST", "/execute/sync", {"script": source, "args": list(args)})

    def title(self) -> str:
        return str(self.cmd("GET", "/title"))

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.cmd("GET", "/screenshot")))

    def close(self) -> None:
        try:
            if getattr(self, "session", None):
                self.cmd("DELETE", "")
        except (OSError, RuntimeError):
            pass
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)
