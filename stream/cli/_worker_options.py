"""Options shared by ``anonstream run`` and ``anonstream demo``: where the services are and what to run."""

from __future__ import annotations

import argparse
from typing import Any


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {"broker_url": getattr(args, "broker", None), "database_url": getattr(args, "database", None),
            "spec": getattr(args, "spec", None), "engine": getattr(args, "engine", None),
            "k": getattr(args, "k", None), "web_port": getattr(args, "web_port", None),
            "pipelines": getattr(args, "pipelines", None)}


def quiet(args: argparse.Namespace) -> None:
    from stream.ops.runtime import quiet_clients

    quiet_clients(getattr(args, "verbose", False))


def worker_options() -> argparse.ArgumentParser:
    """The parent parser of ``run`` and ``demo``: broker, database, spec, engine and k."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--broker", help="kafka://host:port (default: ANONSTREAM_BROKER_URL, else embedded)")
    common.add_argument("--database", help="SQLAlchemy URL (default: ANONSTREAM_DATABASE_URL, else SQLite)")
    common.add_argument("--spec", help="dataset spec (default: crime)")
    common.add_argument("--engine", help="engine per window (default: cg-kanon when available)")
    common.add_argument("-k", type=int, help="minimum class size (default 5)")
    return common
