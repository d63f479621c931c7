"""Start-up steps shared by ``anonstream run``, ``demo``, the tests and the benchmark.

* :func:`embedded` starts the bundled broker when none is configured (SQLite under ``data_dir`` is
  the default database already), creates the topics and runs the migrations;
* :func:`spawn_worker` starts ``anonstream run`` as a subprocess with the settings in its environment
  (used by ``demo`` and by tests that kill and restart workers).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stream.broker import EmbeddedBroker, ensure_topics, topic_partitions
from stream.settings import Settings

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parent.parent


def migrate(settings: Settings) -> None:
    import migrations

    migrations.upgrade(settings.db_url())


@contextmanager
def embedded(settings: Settings, run_migrations: bool = True) -> Iterator[Settings]:
    """Settings with a reachable broker (embedded if none configured), topics created, DB migrated."""
    broker: EmbeddedBroker | None = None
    settings = settings.with_updates(data_dir=settings.data_dir.resolve())
    if settings.fingerprint_key is None:  # create it once here, so every worker gets the same key
        settings = settings.with_updates(fingerprint_key=settings.key_bytes().decode())
    if settings.embedded_broker:
        broker = EmbeddedBroker(log_file=settings.data_dir / "broker.log").start()
        settings = settings.with_updates(broker_url=broker.url)
        (settings.data_dir / "broker.url").write_text(broker.url)  # found by push / consume
    try:
        ensure_topics(settings.bootstrap_servers(), topic_partitions(settings))
        if run_migrations:
            migrate(settings)
        yield settings
    finally:
        if broker is not None:
            broker.stop()
            (settings.data_dir / "broker.url").unlink(missing_ok=True)


def broker_settings(settings: Settings) -> Settings:
    """Settings with a broker: the configured one, else the embedded broker that ``run`` started."""
    if settings.broker_url:
        return settings
    marker = settings.data_dir / "broker.url"
    if marker.exists():
        return settings.with_updates(broker_url=marker.read_text().strip())
    from core.errors import ParamsError

    raise ParamsError("no broker configured: pass --broker kafka://host:port or set ANONSTREAM_BROKER_URL "
                      "(or start `anonstream run` first)", reason="missing-setting")


def spawn_worker(settings: Settings, log_path: Path | None = None, **env_extra: str) -> subprocess.Popen[bytes]:
    """``anonstream run --no-migrate`` in a subprocess configured through ``ANONSTREAM_*`` variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env.update(settings.env())
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        out = log_path.open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "run", "--no-migrate"], env=env,
                            stdout=out or subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if out is not None:
        out.close()
    return proc


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return int(proc.returncode or 0)


def wait_until(predicate, timeout: float, interval: float = 0.25) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def quiet_clients(verbose: bool = False) -> None:
    """Kafka client libraries log every connection at INFO; keep the CLI readable."""
    if not verbose:
        for name in ("kafka", "aiokafka", "faust.transport", "mode", "faust", "alembic"):
            logging.getLogger(name).setLevel(logging.WARNING)
