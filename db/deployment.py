"""The deployment's id: 32 random hex digits generated once, by the first worker on a new ledger.

Release ids are derived from the window, its seed and this id (:func:`stream.worker.sampling.release_id`),
and every manifest states it, so two deployments never give one release id to different content, even
when they share a signing key (a staging copy of production, say). It lives in the ledger, not in a data
folder, so every worker of one deployment, on any machine, derives the same id for the same window.

Table ``deployment``: one row (``id = 1``), written with INSERT ... ON CONFLICT DO NOTHING, so workers
starting at once on a new ledger all read the one that won.
"""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from db.models import Base, UTCDateTime, utcnow
from db.session import Database, insert_ignore


class DeploymentRow(Base):
    """The ledger's one deployment row."""

    __tablename__ = "deployment"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    deployment_id: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


def deployment_id(db: Database) -> str:
    """The ledger's deployment id, generated and recorded on first use (the same for every caller)."""
    with db.unit() as s:
        row = s.get(DeploymentRow, 1)
        if row is not None:
            return row.deployment_id
        insert_ignore(s, DeploymentRow.__table__, [{"id": 1, "deployment_id": secrets.token_hex(16),
                                                    "created_at": utcnow()}], ["id"])
    with db.unit() as s:
        row = s.get(DeploymentRow, 1)
        if row is None:  # never: inserted above, by this caller or by the one that won
            raise RuntimeError("the ledger's deployment row vanished")
        return row.deployment_id
