"""One way to find the services, for every command, and one clean error when one cannot be reached.

Resolution order for the broker and the database: an explicit flag (``--broker`` / ``--database``),
then the environment (``ANONSTREAM_BROKER_URL`` / ``ANONSTREAM_DATABASE_URL``), then the state file
``instance.json`` that ``anonstream run`` writes under its data directory (``ANONSTREAM_HOME``,
default ``./var``) while it runs an embedded broker. Without any of them the database is the SQLite
file under the data directory.

A service that cannot be reached raises :class:`ServiceUnreachable`: one line naming it, exit code 3
(see :data:`EXIT_CODES`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.errors import AnonymizationError, ParamsError
from stream.config.settings import Settings

STATE_FILE = "instance.json"
# The command line's exit codes (docs/operations.md).
EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
EXIT_CODES = {EXIT_OK: "ok", EXIT_REJECTED: "rows rejected / verification failed",
              EXIT_USAGE: "usage or input error", EXIT_UNREACHABLE: "a service (broker or database) unreachable"}


class ServiceUnreachable(AnonymizationError):
    """The broker or the database cannot be reached (exit code 3)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="service-unreachable")


# --- the state file -------------------------------------------------------------------------------
def state_path(settings: Settings) -> Path:
    return settings.data_dir.resolve() / STATE_FILE


def write_state(settings: Settings, **values: Any) -> Path:
    """Record where this instance's services are (readable by the owner only: it may hold a DB URL)."""
    path = state_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"pid": os.getpid(), "started_at": datetime.now(UTC).isoformat(), **values}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path


def remove_state(settings: Settings) -> None:
    path = state_path(settings)
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()


def read_state(settings: Settings) -> dict[str, Any] | None:
    try:
        data = json.loads(state_path(settings).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def resolve(settings: Settings, need_broker: bool = False, need_database: bool = False) -> Settings:
    """Settings with the broker and database found the one way (flag > environment > state file).

    ``need_broker``: no broker anywhere, or the recorded one is not running, is a one-line error;
    ``need_database``: a missing embedded SQLite ledger is an error instead of an empty new database.
    """
    updates: dict[str, Any] = {}
    state = read_state(settings)
    if not settings.broker_url and state and state.get("broker_url"):
        if pid_alive(state.get("pid")):
            updates["broker_url"] = state["broker_url"]
        elif need_broker:
            raise ServiceUnreachable(
                f"the embedded broker recorded in {state_path(settings)} is gone (its `anonstream run`, pid "
                f"{state.get('pid')}, has exited): start `anonstream run` again")
    if not settings.database_url and state and state.get("database_url"):
        updates["database_url"] = state["database_url"]
    resolved = settings.with_updates(**updates) if updates else settings
    if need_broker and not resolved.broker_url:  # nothing configured: a usage error (2), not an outage
        raise ParamsError(
            "no broker configured: pass --broker kafka://host:port, set ANONSTREAM_BROKER_URL, or start "
            "`anonstream run` "
            f"(its data directory {settings.data_dir.resolve()} has no running instance; set ANONSTREAM_HOME to "
            "the one `run` uses)", reason="missing-setting")
    if need_database and not resolved.database_url:
        db_file = resolved.data_dir.resolve() / "anonstream.db"
        if not db_file.exists():
            raise ServiceUnreachable(
                f"no ledger at {db_file}: start `anonstream run` (or `anonstream migrate`) with this data directory, "
                "set ANONSTREAM_HOME to the one `run` uses, or pass --database")
    return resolved


# --- reachability -----------------------------------------------------------------------------------
def check_broker(settings: Settings, timeout: float = 5.0) -> None:
    """A TCP connection to at least one bootstrap server, else :class:`ServiceUnreachable`."""
    errors = []
    for hostport in settings.bootstrap_servers():
        host, _, port = hostport.rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as exc:
            errors.append(f"{hostport}: {getattr(exc, 'strerror', None) or exc}")
    raise ServiceUnreachable(f"broker {settings.broker_url} is unreachable ({'; '.join(errors)})")


def safe_url(url: str) -> str:
    """A database URL without its password."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL is shown as its scheme only
        return url.split("://", 1)[0] + "://…"


def check_database(url: str, timeout: float = 5.0) -> None:
    """Connect once and run ``SELECT 1``, else :class:`ServiceUnreachable`."""
    import sqlalchemy as sa

    args = {"connect_timeout": max(1, int(timeout))} if url.startswith("postgresql") else {}
    engine = sa.create_engine(url, connect_args=args, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as exc:
        raise ServiceUnreachable(f"database {safe_url(url)} is unreachable ({_first_line(exc)})") from None
    finally:
        engine.dispose()


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return f"{type(orig).__name__}: {text[0][:160]}" if text else type(orig).__name__


def unreachable_message(exc: BaseException) -> str | None:
    """One line for an exception that means a service is unreachable, else None (a real bug)."""
    name, module = type(exc).__name__, type(exc).__module__
    if module.startswith("sqlalchemy") and name in ("OperationalError", "InterfaceError", "DisconnectionError"):
        return f"the database is unreachable ({_first_line(exc)})"
    if module.startswith(("kafka", "aiokafka")) and name in (
            "NoBrokersAvailable", "KafkaConnectionError", "KafkaTimeoutError", "NodeNotReadyError",
            "RequestTimedOutError", "ConnectionError"):
        return f"the broker is unreachable ({name})"
    if module.startswith(("kafka.errors", "aiokafka.errors")):  # any other broker error: one line, never a traceback
        return f"the broker failed the request ({_first_line(exc)})"
    return None


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True
