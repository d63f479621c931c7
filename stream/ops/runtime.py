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

from stream.config.settings import Settings
from stream.ops.broker import BrokerWatch, EmbeddedBroker, ensure_topics, topic_partitions

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]


def migrate(settings: Settings) -> None:
    import migrations

    migrations.upgrade(settings.db_url())


@contextmanager
def embedded(settings: Settings, run_migrations: bool = True, watch: bool = False) -> Iterator[Settings]:
    """Settings with a reachable broker (embedded if none configured), topics created, DB migrated,
    and every published release the broker lacks re-published from the ledger.

    An embedded broker is recorded in ``<data dir>/instance.json`` (see :mod:`stream.ops.locate`) so
    every other command, from any directory with the same ``ANONSTREAM_HOME``, finds it. ``watch``:
    a :class:`~stream.ops.broker.BrokerWatch` ends the process (exit 3) if the broker loses its data.
    """
    from stream.ops.locate import check_broker, check_database, remove_state, resolve, write_state
    from stream.ops.republish import republish_missing

    broker: EmbeddedBroker | None = None
    watcher: BrokerWatch | None = None
    settings = settings.with_updates(data_dir=settings.data_dir.resolve())
    if settings.fingerprint_key is None:  # create it once here, so every worker gets the same key
        settings = settings.with_updates(fingerprint_key=settings.key_bytes().decode())
    if settings.signing_key is None:  # likewise the manifest signing key (kept in data_dir/signing.key)
        from stream.wire.signing import load_private_key

        load_private_key(None, settings.data_dir, settings.mode == "production")
    if settings.embedded_broker:
        from stream.ops.locate import pid_alive, read_state

        state = read_state(settings)
        if state and state.get("broker_url") and pid_alive(state.get("pid")):  # one instance per data dir
            settings = resolve(settings)
        else:
            broker = EmbeddedBroker(log_file=settings.data_dir / "broker.log").start()
            settings = settings.with_updates(broker_url=broker.url)
            write_state(settings, broker_url=broker.url, broker_pid=broker.proc.pid if broker.proc else None,
                        database_url=settings.db_url(), web=f"http://{settings.web_host}:{settings.web_port}/")
    try:
        check_broker(settings)
        check_database(settings.db_url())
        ensure_topics(settings.bootstrap_servers(), topic_partitions(settings))
        if run_migrations:
            migrate(settings)
        from stream.config.feeds import feeds

        for feed in feeds(settings):
            republish_missing(feed)
        if watch:
            watcher = BrokerWatch(settings, broker).start()
        yield settings
    finally:
        if watcher is not None:
            watcher.stop()
        if broker is not None:
            broker.stop()
            remove_state(settings)


def broker_settings(settings: Settings, check: bool = True) -> Settings:
    """Settings with a broker: flag, environment, else the embedded broker ``run`` started; ``check``:
    a broker that does not accept connections is :class:`~stream.ops.locate.ServiceUnreachable` (exit 3)."""
    from stream.ops.locate import check_broker, resolve

    settings = resolve(settings, need_broker=True)
    if check:
        check_broker(settings)
    return settings


def worker_env(settings: Settings, **env_extra: str) -> dict[str, str]:
    """This process's environment with ``settings`` as ``ANONSTREAM_*`` variables (and no others), and this
    checkout first on ``PYTHONPATH``: what a worker subprocess runs with."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env.update(settings.env())
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def spawn_worker(settings: Settings, log_path: Path | None = None, **env_extra: str) -> subprocess.Popen[bytes]:
    """``anonstream run --no-migrate`` in a subprocess configured through ``ANONSTREAM_*`` variables."""
    env = worker_env(settings, **env_extra)
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
    """Kafka client libraries at WARNING (never DEBUG: it logs payloads), frameworks at WARNING unless -v."""
    from stream.ops.logs import quiet

    quiet(verbose)
