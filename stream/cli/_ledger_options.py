"""What the operator commands share: the console service, error mapping and JSON output.

They read the configured ledger database (ANONSTREAM_DATABASE_URL / --database, else SQLite under
./var) and, for lag and re-verification, the configured broker (ANONSTREAM_BROKER_URL / --broker).
Output shows aggregates only: no identifiers, no values of single pending reports.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from core.errors import InputDataError, ParamsError


def console_service(args: argparse.Namespace, need_broker: bool = False) -> Any:
    from stream.config.settings import load_settings
    from stream.console.service import ConsoleService
    from stream.ops.locate import check_database, resolve

    settings = resolve(load_settings(database_url=getattr(args, "database", None),  # flag > env > instance.json
                                     broker_url=getattr(args, "broker", None), spec=getattr(args, "spec", None)),
                       need_database=True, need_broker=need_broker)
    check_database(settings.db_url())  # unreachable: one line, exit 3
    return ConsoleService(settings, broker_timeout_s=getattr(args, "broker_timeout", 8.0))


def guarded(fn: Callable[[], Any]) -> Any:
    """Map console and database errors to the CLI's one-line errors (exit 2)."""
    from sqlalchemy.exc import OperationalError, ProgrammingError

    from stream.console.controls import ControlError

    try:
        return fn()
    except ControlError as exc:
        raise InputDataError(str(exc), reason="console") from None
    except (OperationalError, ProgrammingError) as exc:
        raise ParamsError("the ledger database is unreachable or not migrated (run `anonstream migrate`): "
                          f"{type(exc.orig).__name__}", reason="database") from None


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def ledger_options() -> argparse.ArgumentParser:
    """The parent parser of ``console``, ``releases`` and ``status``: database, broker and spec."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--database", help="SQLAlchemy URL (default: ANONSTREAM_DATABASE_URL, else SQLite)")
    common.add_argument("--broker", help="kafka://host:port for lag and re-verification (ANONSTREAM_BROKER_URL)")
    common.add_argument("--spec", help="dataset spec (default: crime)")
    return common
