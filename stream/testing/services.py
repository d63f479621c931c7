"""Real services for the tests and benchmarks: a throwaway PostgreSQL cluster and the bundled broker.

Both are started at most once per test process (module-level singletons, stopped at exit), so
tests/db and tests/stream share them. Under pytest-xdist every worker is its own process with its
own cluster (own temporary folder, own port) and broker; tests name their databases, topics and
consumer groups uniquely anyway (:class:`stream.testing.scenario.Scenario`). A port comes from
``free_port()``, which releases it before the server binds it, so another process (another worker,
another engineer's tests, any client's ephemeral port) can take it in between: start-up retries on
a fresh port when the server cannot bind, and a broker only counts as started when the listener on
its port is its own. PostgreSQL binaries come from ``pg_config --bindir`` or
/usr/lib/postgresql/*/bin; if missing, ``apt-get install -y postgresql`` is tried (root only).
initdb refuses to run as root, so as root the cluster runs as the ``postgres`` system user.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from core.errors import ParamsError
from stream.ops.broker import EmbeddedBroker, free_port
from stream.testing.debian import apt_install

START_ATTEMPTS = 5  # fresh ports tried when a server cannot bind its port (taken by someone else)

_PG: PostgresServer | None = None
_BROKER: EmbeddedBroker | None = None


def _pg_bindir() -> Path | None:
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        if (Path(out) / "initdb").exists():
            return Path(out)
    except (OSError, subprocess.CalledProcessError):
        pass
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _install_postgres() -> Path | None:
    apt_install(["postgresql"], lambda: _pg_bindir() is not None)
    return _pg_bindir()


class PostgresServer:
    def __init__(self) -> None:
        bindir = _pg_bindir() or _install_postgres()
        if bindir is None:
            # The ledger tests are the point: a machine without PostgreSQL fails them, loudly.
            raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found and `apt-get install "
                               "postgresql` failed; install Debian's postgresql package")
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="anonstream-pg-"))
        self.data = self.root / "data"
        self.as_user = os.geteuid() == 0
        if self.as_user:
            shutil.chown(self.root, "postgres", "postgres")
        try:
            self._run(["initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                       "--no-sync"])
            self.port = self._start()
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def _start(self) -> int:
        """Start the cluster on a free port, on a fresh one while the port turns out to be taken."""
        log = self.root / "log"
        for attempt in range(1, START_ATTEMPTS + 1):
            port = free_port()
            opts = (f"-p {port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100")
            try:
                self._run(["pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(log), "-w", "start"])
                return port
            except subprocess.CalledProcessError:
                text = log.read_text(errors="replace") if log.exists() else ""
                if "already in use" not in text or attempt == START_ATTEMPTS:
                    raise RuntimeError(f"PostgreSQL did not start on port {port}: {text[-2000:]}") from None
                log.unlink()  # the next attempt's log starts empty
        raise AssertionError("unreachable")

    def _run(self, cmd: list[str]) -> None:
        cmd = [str(self.bindir / cmd[0]), *cmd[1:]]
        if self.as_user:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A fresh, empty database; returns its URL."""
        import sqlalchemy as sa

        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        engine = sa.create_engine(self.url(), isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        engine.dispose()
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run(["pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop"])
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def postgres() -> PostgresServer:
    global _PG
    if _PG is None:
        _PG = PostgresServer()
        atexit.register(_PG.stop)
    return _PG


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself holds a listening TCP socket on ``port`` (Linux: /proc).

    A broker that could not bind its port exits, but a connection to the port can still succeed
    before it does, through whoever took the port: this tells the two apart."""
    try:
        inodes = _socket_inodes(pid)
        lines = [ln.split() for name in ("tcp", "tcp6") for ln in
                 Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]]
    except OSError:
        return False
    # fields: sl local_address rem_address st ... inode; st 0A = LISTEN
    return any(f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port and f[9] in inodes for f in lines)


def start_broker() -> EmbeddedBroker:
    """An :class:`EmbeddedBroker` on a free port that is really its own, retrying on a fresh port."""
    for attempt in range(1, START_ATTEMPTS + 1):
        kafka = EmbeddedBroker()
        try:
            kafka.start()
        except ParamsError:  # it never accepted connections: it could not bind, most likely
            if attempt == START_ATTEMPTS:
                raise
            continue
        if not sys.platform.startswith("linux"):
            return kafka
        assert kafka.proc is not None
        # tansu may not have bound yet when something else answered on the port: give it a moment
        for _ in range(50):
            if kafka.proc.poll() is not None or listens_on(kafka.proc.pid, kafka.port):
                break
            time.sleep(0.1)
        if kafka.proc.poll() is None and listens_on(kafka.proc.pid, kafka.port):
            return kafka
        kafka.stop()
    raise RuntimeError(f"the embedded broker could not get a port of its own in {START_ATTEMPTS} attempts")


def broker() -> EmbeddedBroker:
    global _BROKER
    if _BROKER is None or _BROKER.proc is None or _BROKER.proc.poll() is not None:
        _BROKER = start_broker()
        atexit.register(_BROKER.stop)
    return _BROKER
