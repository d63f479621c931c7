"""The release ledger: SQLAlchemy 2 models, a unit of work, and the pool / release repositories.

The database (PostgreSQL in production, SQLite embedded) is the source of truth of the service; the
broker is at-least-once and keeps no durable state that matters.
"""

from db.budget import BudgetExceeded  # registers dp_blocks and dp_spends in metadata
from db.castle_states import CastleLedger  # noqa: F401  (registers castle_states in metadata)
from db.deployment import deployment_id  # registers deployment in metadata
from db.dp_policy import DPPolicyRow  # registers dp_policy in metadata
from db.ledger import IncomingReport, IngestResult, PoolRepository, Rejection, WindowPolicy, due_windows
from db.models import Base, metadata
from db.releases import Candidate, LostClaim, ReleaseConflict, ReleaseRepository, StoredRelease
from db.session import Database, make_engine

__all__ = ["Base", "BudgetExceeded", "Candidate", "DPPolicyRow", "Database", "IncomingReport", "IngestResult",
           "LostClaim", "PoolRepository", "Rejection", "ReleaseConflict", "ReleaseRepository", "StoredRelease",
           "WindowPolicy", "deployment_id", "due_windows", "make_engine", "metadata"]
