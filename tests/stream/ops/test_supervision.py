"""Supervision: release processes never outlive their worker (start-up included); a worker whose broker
lost its data says so and exits 3 instead of idling."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import SecretStr

from stream.config.settings import Settings
from stream.ops.broker import BrokerWatch, EmbeddedBroker, ensure_topics, topic_partitions
from stream.ops.kafka_clients import open_client
from stream.ops.locate import pid_alive
from stream.ops.runtime import ROOT, wait_until
from stream.testing.services import start_broker

pytestmark = [pytest.mark.broker]


def test_release_processes_exit_when_their_worker_dies_during_start_up(tmp_path: Path) -> None:
    """The worker dies right after spawning its release processes, while they are still importing:
    they must not take their new parent for their worker."""
    script = textwrap.dedent(f"""
        import os
        from stream.worker.pool import ReleasePool
        from stream.config.settings import Settings
        s = Settings(data_dir={str(tmp_path)!r}, fingerprint_key="k", broker_url="kafka://127.0.0.1:1")
        pool = ReleasePool(s, "w", 2)
        for _ in range(2):
            pool._pool().submit(abs, 1)
        print(list(pool._executor._processes), flush=True)
        os._exit(1)
    """)
    out = tmp_path / "out.txt"
    with out.open("w") as fh:  # a file, not a pipe: orphans holding a pipe would block the test instead
        res = subprocess.run([sys.executable, "-c", script], cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT,
                             timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 1
    pids = json.loads([line for line in out.read_text().splitlines() if line.startswith("[")][-1])
    assert len(pids) == 2, out.read_text()
    assert wait_until(lambda: not any(pid_alive(p) for p in pids), timeout=90), [p for p in pids if pid_alive(p)]


def test_broker_watch_sees_a_broker_that_restarted_without_its_data(tmp_path: Path) -> None:
    from kafka import KafkaProducer

    broker = start_broker()  # its own broker: this test restarts it
    try:
        settings = Settings(data_dir=tmp_path, broker_url=broker.url, fingerprint_key=SecretStr("k"))
        ensure_topics(settings.bootstrap_servers(), topic_partitions(settings))
        producer = open_client(KafkaProducer, bootstrap_servers=settings.bootstrap_servers())
        producer.send(settings.topic_releases, key=b"r-1", value=b"{}").get(timeout=90)
        producer.close()
        lost: list[str] = []
        watch = BrokerWatch(settings, on_lost=lost.append)
        assert watch.check() is None  # healthy: remembers the end offsets
        port = broker.port
        broker.stop()
        assert watch.check() is not None and not lost  # down: not yet lost
        broker = EmbeddedBroker(port=port).start()  # same address, memory-only: nothing on it
        why = watch.check()
        assert why is not None and why.startswith("lost:"), why
        assert settings.topic_releases in why or settings.topic_reports in why
        watch.stop()
    finally:
        broker.stop()


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "cause"), [(signal.SIGKILL, "killed by SIGKILL"),
                                            (signal.SIGTERM, "stopped by SIGTERM")])
def test_run_exits_3_with_one_clear_line_when_its_embedded_broker_dies(tmp_path: Path, sig: signal.Signals,
                                                                        cause: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env.update({"ANONSTREAM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT), "ANONSTREAM_BROKER_WATCH_S": "1"})
    log = tmp_path / "run.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "run", "--web-port", "0"], cwd=tmp_path,
                                env=env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        state_file = Path(tmp_path / "home" / "instance.json")
        assert wait_until(lambda: "next " in log.read_text() or proc.poll() is not None, timeout=120), log.read_text()
        os.kill(json.loads(state_file.read_text())["broker_pid"], sig)
        assert proc.wait(timeout=60) == 3
        text = log.read_text()
        assert f"the embedded broker exited: {cause}" in text and "exiting with code 3" in text  # the real cause
        assert "Traceback" not in text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
