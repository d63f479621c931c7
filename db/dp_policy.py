"""The ledger's differential-privacy policy: block scheme, cap, δ, the largest ε per query, and feeds.

The policy is recorded in the ledger by the first run that uses it for differentially private counts
(a worker's start, or the first ``anonstream aggregate --ledger``), from that run's spec and settings.
From then on the ledger owns it: every run states the terms it would use, and one that disagrees (a
different block scheme, cap, δ or largest ε, or a feed the ledger does not know) is refused with one
line before it reads a row or draws any noise. Changing a term is an operator's explicit, audited
command (``anonstream budget set-cap``, ``anonstream budget add-feed``), never a flag of a query: a
flag that chose the block label or the cap at a query's first charge could re-open an exhausted
budget (a new label is a fresh block).

Table ``dp_policy``: one row (``id = 1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, Integer, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.budget import BudgetBlock
from db.models import AuditEntry, Base, UTCDateTime, utcnow
from db.session import insert_ignore


class DPPolicyRow(Base):
    """The ledger's one DP policy row."""

    __tablename__ = "dp_policy"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    block_by: Mapped[str] = mapped_column(String(16))
    cap_epsilon: Mapped[float] = mapped_column(Float)
    cap_rho: Mapped[float] = mapped_column(Float)
    delta: Mapped[float] = mapped_column(Float)
    max_epsilon: Mapped[float] = mapped_column(Float)
    feeds: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


@dataclass(frozen=True)
class PolicyTerms:
    """What a run would use (or what the ledger recorded): ``cap_rho`` is ``cap_epsilon`` at ``delta`` in ρ."""

    block_by: str
    cap_epsilon: float
    cap_rho: float
    delta: float
    max_epsilon: float
    feeds: tuple[str, ...] = ("default",)

    def describe(self) -> str:
        return (f"blocks {self.block_by}, cap epsilon {self.cap_epsilon:g} (rho {self.cap_rho:.4g}) at delta "
                f"{self.delta:g}, at most epsilon {self.max_epsilon:g} per query, feeds {', '.join(self.feeds)}")


class PolicyMismatch(Exception):
    """A run's terms disagree with the ledger's recorded policy; nothing was read, spent or written."""


def _terms(row: DPPolicyRow) -> PolicyTerms:
    return PolicyTerms(row.block_by, float(row.cap_epsilon), float(row.cap_rho), float(row.delta),
                       float(row.max_epsilon), tuple(row.feeds or ()))


def read_policy(session: Session) -> PolicyTerms | None:
    """The recorded policy, or None when no run has used the ledger for DP counts yet."""
    row = session.get(DPPolicyRow, 1)
    return None if row is None else _terms(row)


def _audit(session: Session, actor: str, action: str, subject: str | None, detail: dict[str, Any],
           now: datetime) -> None:
    session.add(AuditEntry(at=now, actor=actor[:120], action=action, subject=subject, detail=detail))


def _differences(asked: PolicyTerms, recorded: PolicyTerms) -> list[str]:
    out = []
    if asked.block_by != recorded.block_by:
        out.append(f"blocks {asked.block_by} (the ledger's: {recorded.block_by})")
    for name in ("cap_epsilon", "delta", "max_epsilon"):
        a, r = getattr(asked, name), getattr(recorded, name)
        if not math.isclose(a, r, rel_tol=1e-9):
            out.append(f"{name} {a:g} (the ledger's: {r:g})")
    return out


def ensure_policy(session: Session, asked: PolicyTerms, feeds: tuple[str, ...], *, actor: str,
                  now: datetime | None = None) -> PolicyTerms:
    """The ledger's policy, recorded from ``asked`` if the ledger has none; :class:`PolicyMismatch` when
    ``asked`` disagrees with it or names a feed it does not know. Runs in the caller's transaction."""
    now = now or utcnow()
    inserted = insert_ignore(session, DPPolicyRow.__table__, [{
        "id": 1, "block_by": asked.block_by, "cap_epsilon": asked.cap_epsilon, "cap_rho": asked.cap_rho,
        "delta": asked.delta, "max_epsilon": asked.max_epsilon, "feeds": sorted(set(asked.feeds)),
        "created_at": now, "updated_at": now}], ["id"])
    recorded = read_policy(session)
    assert recorded is not None
    if inserted:
        _audit(session, actor, "dp-policy-recorded", None, {"policy": recorded.describe()}, now)
        session.flush()
        return recorded
    check_policy(recorded, asked, feeds)
    return recorded


def check_policy(recorded: PolicyTerms, asked: PolicyTerms, feeds: tuple[str, ...]) -> None:
    """:class:`PolicyMismatch` (one line) when ``asked`` or ``feeds`` disagree with the ``recorded`` policy."""
    diff = _differences(asked, recorded)
    if diff:
        raise PolicyMismatch(f"this run asks {'; '.join(diff)}: the ledger's privacy policy is set once "
                             "(`anonstream budget show`; a cap changes only by `anonstream budget set-cap`)")
    unknown = sorted(set(feeds) - set(recorded.feeds))
    if unknown:
        raise PolicyMismatch(f"feed {', '.join(unknown)} is not in the ledger's privacy policy (feeds "
                             f"{', '.join(recorded.feeds) or 'none'}); add it with `anonstream budget add-feed`")


def _locked_row(session: Session) -> DPPolicyRow:
    row = session.execute(select(DPPolicyRow).where(DPPolicyRow.id == 1).with_for_update()).scalar_one_or_none()
    if row is None:
        raise PolicyMismatch("the ledger has no privacy policy yet: it is recorded by the first run that counts "
                             "with differential privacy")
    return row


def set_cap(session: Session, cap_epsilon: float, cap_rho: float, *, actor: str, block: str | None = None,
            now: datetime | None = None) -> tuple[float, float]:
    """Set the lifetime cap of every block (the policy's) or of one ``block``; audited. Returns the
    (old, new) cap in ρ. Raising a cap weakens the guarantee of the blocks it covers."""
    now = now or utcnow()
    row = _locked_row(session)
    old = float(row.cap_rho)
    if block is None:
        row.cap_epsilon, row.cap_rho, row.updated_at = cap_epsilon, cap_rho, now
        for b in session.execute(select(BudgetBlock).with_for_update()).scalars():
            b.cap_rho, b.updated_at = cap_rho, now
    else:
        one = session.get(BudgetBlock, block, with_for_update=True)
        if one is None:
            insert_ignore(session, BudgetBlock.__table__,
                          [{"block": block, "cap_rho": cap_rho, "spent_rho": 0.0, "updated_at": now}], ["block"])
        else:
            old, one.cap_rho, one.updated_at = float(one.cap_rho), cap_rho, now
    _audit(session, actor, "dp-cap-set", block or "all blocks",
           {"old_cap_rho": old, "cap_rho": cap_rho, "cap_epsilon": cap_epsilon, "delta": float(row.delta)}, now)
    session.flush()
    return old, cap_rho


def add_feed(session: Session, feed: str, *, actor: str, now: datetime | None = None) -> bool:
    """Add ``feed`` to the policy's feeds (audited); False when it was there already."""
    now = now or utcnow()
    row = _locked_row(session)
    if feed in (row.feeds or []):
        return False
    row.feeds, row.updated_at = sorted({*(row.feeds or []), feed}), now
    _audit(session, actor, "dp-feed-added", feed, {"feeds": list(row.feeds)}, now)
    session.flush()
    return True
