"""Real services for the tests and benchmarks: a throwaway PostgreSQL cluster and the bundled broker.

Both are started at most once per test process (module-level singletons, stopped at exit), so
tests/db and tests/stream share them. PostgreSQL binaries come from ``pg_config --bindir`` or
/usr/lib/postgresql/*/bin; if missing, ``apt-get install -y postgresql`` is tried (root only).
initdb refuses to run as root, so as root the cluster runs as the ``postgres`` system user.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from stream.ops.broker import EmbeddedBroker, free_port

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
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update"], check=False, capture_output=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "postgresql"], check=False, capture_output=True, env=env)
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
        self.port = free_port()
        self.as_user = os.geteuid() == 0
        if self.as_user:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(["initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                   "--no-sync"])
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100")
        self._run(["pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.root / "log"), "-w", "start"])

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


def broker() -> EmbeddedBroker:
    global _BROKER
    if _BROKER is None or _BROKER.proc is None or _BROKER.proc.poll() is not None:
        _BROKER = EmbeddedBroker().start()
        atexit.register(_BROKER.stop)
    return _BROKER
