"""The privacy-budget accountant: budget blocks with lifetime caps, and every spend on them.

Differentially private count tables (``core/dp``) spend privacy budget, measured in ρ of zero-
concentrated DP (ρ adds up over queries). Following Sage's block composition, the budget is kept per
*block* (a station-day, a feed-day or a whole data set; ``core/dp/blocks.py`` names them), each with
a lifetime cap; a query charges every block its rows fall in.

:func:`charge` runs in the caller's transaction, so a release and its spend commit together or not
at all: SIGKILL before the commit leaves neither, after it both. It locks the block rows first
(``SELECT ... FOR UPDATE`` on PostgreSQL, in block order so two chargers never deadlock; SQLite write
units hold the database lock from ``BEGIN IMMEDIATE``), so two workers racing for a block see each
other's spends and never overspend. A charge that would take any block past its cap raises
:class:`BudgetExceeded` before anything is written (and before the caller draws any noise).

Tables: ``dp_blocks`` (block, cap_rho, spent_rho, updated_at) and ``dp_spends`` (one row per block and
charge: rho, purpose, release_id, at).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import BigInteger, Float, Integer, String, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.models import Base, UTCDateTime, utcnow
from db.session import insert_ignore

# A charge fits when spent + rho <= cap * (1 + TOLERANCE): ten spends of 0.1 fit a cap of 1.0 although
# their floating-point sum is 1.0000000000000002. The excess this allows is below 1e-9 of the cap.
TOLERANCE = 1e-9


class BudgetBlock(Base):
    """One budget block: its lifetime cap and what has been spent on it (ρ, zCDP)."""

    __tablename__ = "dp_blocks"

    block: Mapped[str] = mapped_column(String(200), primary_key=True)
    cap_rho: Mapped[float] = mapped_column(Float)
    spent_rho: Mapped[float] = mapped_column(Float, default=0.0)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class BudgetSpend(Base):
    """One charge on one block, with the release (or batch query) it paid for."""

    __tablename__ = "dp_spends"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    block: Mapped[str] = mapped_column(String(200), index=True)
    rho: Mapped[float] = mapped_column(Float)
    purpose: Mapped[str] = mapped_column(String(200))
    release_id: Mapped[str | None] = mapped_column(String(64), index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class BudgetExceeded(Exception):
    """A charge would take ``block`` past its cap; nothing was written."""

    def __init__(self, block: str, cap: float, spent: float, asked: float) -> None:
        self.block, self.cap, self.spent, self.asked = block, cap, spent, asked
        super().__init__(f"privacy budget of block {block} would be exceeded: cap rho {cap:.6g}, spent {spent:.6g}, "
                         f"remaining {self.remaining:.6g}, this query needs {asked:.6g}")

    @property
    def remaining(self) -> float:
        return max(self.cap - self.spent, 0.0)


def _locked(session: Session, blocks: Sequence[str]) -> list[BudgetBlock]:
    stmt = (select(BudgetBlock).where(BudgetBlock.block.in_(blocks)).order_by(BudgetBlock.block)
            .with_for_update().execution_options(populate_existing=True))
    return list(session.execute(stmt).scalars())


def _first_over(rows: Iterable[BudgetBlock], rho: float, cap_rho: float) -> BudgetExceeded | None:
    for row in rows:
        cap = min(row.cap_rho, cap_rho)
        if row.spent_rho + rho > cap * (1 + TOLERANCE):
            return BudgetExceeded(row.block, cap, row.spent_rho, rho)
    return None


def check(session: Session, blocks: Iterable[str], rho: float, cap_rho: float) -> None:
    """Raise :class:`BudgetExceeded` if charging ``rho`` would exceed a block's cap (writes nothing).

    A pre-flight for callers that want to refuse before any work; :func:`charge` checks again under
    its locks, which is the check that counts."""
    keys = sorted(set(blocks))
    if rho > cap_rho * (1 + TOLERANCE) and keys:
        raise BudgetExceeded(keys[0], cap_rho, 0.0, rho)
    rows = list(session.execute(select(BudgetBlock).where(BudgetBlock.block.in_(keys))
                                .order_by(BudgetBlock.block)).scalars())
    over = _first_over(rows, rho, cap_rho)
    if over is not None:
        raise over


def charge(session: Session, blocks: Iterable[str], rho: float, cap_rho: float, *, purpose: str,
           release_id: str | None = None, now: datetime | None = None) -> None:
    """Spend ``rho`` on every block, in the caller's transaction; :class:`BudgetExceeded` if any would overflow.

    A block's cap is set by its first charge; a later charge with a smaller ``cap_rho`` lowers it (a
    larger one never raises it: :func:`set_cap` does, deliberately)."""
    if not rho > 0:
        raise ValueError(f"rho must be positive (got {rho})")
    keys = sorted(set(blocks))
    if not keys:
        return
    now = now or utcnow()
    if rho > cap_rho * (1 + TOLERANCE):
        raise BudgetExceeded(keys[0], cap_rho, 0.0, rho)
    insert_ignore(session, BudgetBlock.__table__,
                  [{"block": b, "cap_rho": cap_rho, "spent_rho": 0.0, "updated_at": now} for b in keys], ["block"])
    rows = _locked(session, keys)
    over = _first_over(rows, rho, cap_rho)
    if over is not None:
        raise over
    for row in rows:
        row.cap_rho = min(row.cap_rho, cap_rho)
        row.spent_rho = row.spent_rho + rho
        row.updated_at = now
    session.add_all([BudgetSpend(block=b, rho=rho, purpose=purpose[:200], release_id=release_id, at=now)
                     for b in keys])
    session.flush()


def set_cap(session: Session, block: str, cap_rho: float, now: datetime | None = None) -> None:
    """Set a block's lifetime cap (an operator's decision; raising a cap weakens the block's guarantee)."""
    now = now or utcnow()
    insert_ignore(session, BudgetBlock.__table__,
                  [{"block": block, "cap_rho": cap_rho, "spent_rho": 0.0, "updated_at": now}], ["block"])
    row = _locked(session, [block])[0]
    row.cap_rho, row.updated_at = cap_rho, now
    session.flush()


def remaining(session: Session, blocks: Iterable[str]) -> dict[str, tuple[float, float]]:
    """``{block: (cap_rho, spent_rho)}`` for the given blocks that have been charged (others are absent)."""
    rows = session.execute(select(BudgetBlock).where(BudgetBlock.block.in_(sorted(set(blocks))))).scalars()
    return {r.block: (r.cap_rho, r.spent_rho) for r in rows}


def all_blocks(session: Session) -> list[BudgetBlock]:
    """Every block, by name (console, metrics)."""
    return list(session.execute(select(BudgetBlock).order_by(BudgetBlock.block)).scalars())


def spends(session: Session, *, release_id: str | None = None) -> list[BudgetSpend]:
    """Every spend (of one release, if given), oldest first."""
    stmt = select(BudgetSpend).order_by(BudgetSpend.id)
    if release_id is not None:
        stmt = stmt.where(BudgetSpend.release_id == release_id)
    return list(session.execute(stmt).scalars())


def spent_by_block(session: Session) -> dict[str, float]:
    """Σ of the recorded spends per block (equals ``dp_blocks.spent_rho``; recovery checks use it)."""
    rows = session.execute(select(BudgetSpend.block, func.sum(BudgetSpend.rho)).group_by(BudgetSpend.block))
    return {block: float(total) for block, total in rows}
