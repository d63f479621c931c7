"""The release ledger: SQLAlchemy 2 models, a unit of work, and the pool / release repositories.

The database (PostgreSQL in production, SQLite embedded) is the source of truth of the service; the
broker is at-least-once and keeps no durable state that matters.

The names below are loaded on first use (PEP 562), so importing one light module of the package
(``db.url``, which the settings need) does not import SQLAlchemy and every model: a command that
never opens the ledger (``keys``, ``push``, ``consume``, ``stop``) starts about 0.45 s sooner. ``db.metadata``
(and ``db.Base``) load every module that declares tables first, so the metadata is complete;
``db.models.metadata`` alone holds only the tables of the modules imported so far.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from db.budget import BudgetExceeded
    from db.castle_states import CastleLedger
    from db.deployment import deployment_id
    from db.dp_policy import DPPolicyRow
    from db.ledger import IncomingReport, IngestResult, PoolRepository, Rejection, WindowPolicy, due_windows
    from db.models import Base, metadata
    from db.releases import Candidate, LostClaim, ReleaseConflict, ReleaseRepository, StoredRelease
    from db.session import Database, make_engine

TABLE_MODULES = ("db.models", "db.budget", "db.castle_states", "db.deployment", "db.dp_policy")
"""Every module that declares tables (tests/db/test_lazy_package.py checks the list is whole)."""

_HOME = {
    "BudgetExceeded": "db.budget", "CastleLedger": "db.castle_states", "deployment_id": "db.deployment",
    "DPPolicyRow": "db.dp_policy", "IncomingReport": "db.ledger", "IngestResult": "db.ledger",
    "PoolRepository": "db.ledger", "Rejection": "db.ledger", "WindowPolicy": "db.ledger", "due_windows": "db.ledger",
    "Base": "db.models", "metadata": "db.models", "Candidate": "db.releases", "LostClaim": "db.releases",
    "ReleaseConflict": "db.releases", "ReleaseRepository": "db.releases", "StoredRelease": "db.releases",
    "Database": "db.session", "make_engine": "db.session",
}

__all__ = ["Base", "BudgetExceeded", "Candidate", "CastleLedger", "DPPolicyRow", "Database", "IncomingReport",
           "IngestResult", "LostClaim", "PoolRepository", "Rejection", "ReleaseConflict", "ReleaseRepository",
           "StoredRelease", "WindowPolicy", "deployment_id", "due_windows", "make_engine", "metadata"]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'db' has no attribute {name!r}")
    for module in TABLE_MODULES:  # whatever is asked, the metadata it may reach is whole
        importlib.import_module(module)
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
