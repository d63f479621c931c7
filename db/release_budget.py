"""The privacy-budget part of the release transaction (:meth:`db.releases.ReleaseRepository.store`).

A release with differentially private counts charges the budget blocks its windows declare (their
key and days, never read from the reports: :mod:`stream.worker.dpcounts`) with :func:`db.budget.charge`,
in the same transaction that stores the release, so a spend never exists
without its release nor a release (with its noisy counts) without its spend. The manifest, signed
before the transaction, states each block's spend after this charge: the transaction checks that the
ledger held exactly the spend the manifest assumed, and otherwise refuses (another release charged the
block meanwhile; the window is recomputed, its noise drawn afresh and the discarded noise never
published). A release whose counts were refused for lack of budget (all of its blocks, or some) is counted
(``dp-refused``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from db.budget import BudgetExceeded, charge, remaining
from db.models import Window

REFUSED_KIND = "dp-refused"  # the ledger counter of releases whose counts a block's cap refused
REFUSED_REASON = "budget-cap"


class BudgetConflict(Exception):
    """A block's spend is not the one the release's manifest was built on, or its cap would be exceeded."""


@dataclass(frozen=True)
class BudgetCharge:
    """What a release spends: ``rho`` on every block of ``blocks`` (each capped at ``cap_rho``), with the
    spend of each block before it as read when the manifest was built (``seen``). ``refused`` set: some
    or all of the declared blocks had no budget left (``refused`` is the station the refusal is counted
    for); ``blocks`` are then the ones charged, if any."""

    blocks: list[str]
    rho: float
    cap_rho: float
    seen: dict[str, float] = field(default_factory=dict)
    refused: str | None = None


def apply_budget(s: Session, budget: BudgetCharge | None, release_id: str, now: datetime,
                 feed: str = "default") -> None:
    """Charge ``budget`` for ``release_id`` in the caller's transaction (raises :class:`BudgetConflict`,
    before anything is written, when the ledger moved since the manifest was built)."""
    if budget is None:
        return
    if budget.refused is not None:
        from db.ledger import _bump

        _bump(s, budget.refused, REFUSED_KIND, REFUSED_REASON, 1, now, feed)
    if budget.rho <= 0 or not budget.blocks:
        return
    try:
        charge(s, budget.blocks, budget.rho, budget.cap_rho, purpose="release", release_id=release_id, now=now)
    except BudgetExceeded as exc:
        raise BudgetConflict(str(exc)) from exc
    after = remaining(s, budget.blocks)
    for block in budget.blocks:
        _cap, spent = after[block]
        expected = budget.seen.get(block, 0.0) + budget.rho
        if not math.isclose(float(spent), expected, rel_tol=1e-9, abs_tol=1e-12):
            raise BudgetConflict(f"the privacy budget of block {block} was charged by another release meanwhile")


def declared_periods(s: Session, window_id: str) -> list[tuple[datetime, datetime]]:
    """The periods ``[start, end)`` a release of ``window_id`` declares: its own and those of the windows
    its push merged into it (:mod:`db.batches`). Windows, not reports: what the budget blocks come from."""
    rows = s.execute(select(Window.start, Window.end).where(or_(
        Window.id == window_id, (Window.state == "merged") & (Window.hold_reason == f"merged into {window_id}"))))
    return sorted((start, end) for start, end in rows.tuples())
