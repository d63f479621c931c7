"""A real browser (headless Chromium) on the console while ``anonstream demo`` runs.

The demo starts the embedded broker, a worker and two simulated stations; the console is started
standalone (``anonstream console``) on the demo's database as soon as the demo has migrated it. The
browser waits until a release appears in the list, opens its detail page, checks that every plot
image loaded, and saves screenshots to tests/artifacts/ (git-ignored).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from stream.ops.broker import free_port
from tests.stream.console.webdriver import WebDriver, ensure_chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.broker]
ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "tests" / "artifacts"


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env.update({"PYTHONPATH": str(ROOT), "ANONSTREAM_DATA_DIR": str(data_dir),
                "ANONSTREAM_OPERATOR_TOKEN": "browser-test-token"})
    return env


def _read_until(proc: subprocess.Popen[str], pattern: str, timeout: float) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        m = re.search(pattern, line)
        if m:  # keep draining the pipe so the process never blocks on a full buffer; close it at its end
            threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
            return m
    raise AssertionError(f"did not see {pattern!r}; output:\n{''.join(seen[-30:])}")


def _drain(pipe: IO[str]) -> None:
    with pipe:
        for _ in pipe:
            pass


def _stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM, timeout: float = 30) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.timeout(600)
def test_console_in_chromium_during_the_demo(tmp_path: Path) -> None:
    chromium, driver = ensure_chromium()
    env = _env(tmp_path)
    demo = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "demo", "--stations", "2", "--reports", "300",
                             "--timeout", "400"], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    console = browser = None
    try:
        m = _read_until(demo, r"demo: broker (\S+), database (\S+)", 120)
        broker_url, db_url = m.group(1).rstrip(","), m.group(2)
        port = free_port()
        console = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "console", "--port", str(port),
                                    "--database", db_url, "--broker", broker_url], env=env, cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _read_until(console, r"serving on", 60)
        base = f"http://127.0.0.1:{port}"
        browser = WebDriver(chromium, driver)

        browser.get(f"{base}/releases")
        assert "Releases" in browser.title()
        deadline = time.monotonic() + 300
        links = browser.find_all("a.release-link")
        while not links and time.monotonic() < deadline:
            time.sleep(1.0)
            browser.get(f"{base}/releases")
            links = browser.find_all("a.release-link")
        assert links, "no release appeared in the console within 300 s"
        browser.screenshot(ARTIFACTS / "console-releases.png")
        release_id = browser.text(links[0])
        assert release_id.startswith("r-")
        browser.click(links[0])

        deadline = time.monotonic() + 60
        loaded: list[bool] = []
        while time.monotonic() < deadline:
            loaded = browser.script("return Array.from(document.querySelectorAll('img.plot'))"
                                    ".map(i => i.complete && i.naturalWidth > 0);")
            if len(loaded) >= 3 and all(loaded):
                break
            time.sleep(0.5)
        assert release_id in browser.title()
        assert len(loaded) >= 3 and all(loaded), f"plots not loaded: {loaded}"
        names = browser.script("return Array.from(document.querySelectorAll('img.plot')).map(i => i.alt);")
        assert {"class-sizes plot", "offences plot", "loss plot"} <= set(names)
        browser.screenshot(ARTIFACTS / "console-release.png")
        browser.get(f"{base}/health")
        assert browser.find_all("table.pool")
        browser.screenshot(ARTIFACTS / "console-health.png")
        assert (ARTIFACTS / "console-release.png").stat().st_size > 10_000
    finally:
        if browser is not None:
            browser.close()
        if console is not None:
            _stop(console)
        if demo.poll() is None:  # let it finish its day; SIGINT runs its clean-up (workers, broker)
            try:
                demo.wait(timeout=300)
            except subprocess.TimeoutExpired:
                _stop(demo, signal.SIGINT, timeout=60)
    assert demo.returncode == 0
