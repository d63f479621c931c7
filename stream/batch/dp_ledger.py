"""A batch query's privacy budget: the ledger's policy checked, the declared blocks charged, committed.

The order ``anonstream aggregate --ledger`` follows (docs/privacy.md, "Spend, then noise, then output"):

1. the run's terms (block scheme, cap, δ, largest ε per query, feed) are compared with the ledger's
   recorded policy (:mod:`db.dp_policy`; recorded from this run's spec when the ledger has none);
   a disagreement is one line and nothing else happens;
2. the declared blocks are charged in their own transaction, which **commits before any noise is
   drawn**; a block without room refuses the whole query, naming it;
3. only then the caller draws the noise and writes its output atomically.

A kill between 2 and 3 leaves a spend without output (budget lost, nothing revealed), never output
without its spend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import AnonymizationError, ParamsError
from db import Database, budget
from db.dp_policy import PolicyMismatch, PolicyTerms, check_policy, ensure_policy, read_policy


@dataclass(frozen=True)
class Budgeted:
    """What a checked (and, unless a dry run, committed) charge leaves: the least ρ left over its blocks."""

    least_left: float
    cap_rho: float
    blocks: int


def terms_of(dp: Any, feed: str) -> PolicyTerms:
    """The policy terms a query's ``[dp]`` settings stand for."""
    return PolicyTerms(dp.block, float(dp.cap_epsilon), float(dp.cap_rho), float(dp.delta), float(dp.max_epsilon),
                       (feed,))


def refusal(exc: budget.BudgetExceeded, dp: Any) -> str:
    """One line: the block, what is left of it and what this query needed (ρ, with the cap as ε)."""
    return (f"privacy budget of block {exc.block} is exhausted: rho {exc.remaining:.4g} of {exc.cap:.4g} left "
            f"(cap epsilon {dp.cap_epsilon:g} at delta {dp.delta:g}), this query needs rho {exc.asked:.4g} "
            f"(epsilon {dp.epsilon:g}); nothing written")


def charge_declared(db: Database, dp: Any, feed: str, blocks: list[str], purpose: str, *,
                    dry_run: bool = False) -> Budgeted:
    """Check the policy and charge ``dp.rho`` on every declared block, committed on return (a dry run
    checks and charges nothing). Raises one-line errors: a policy mismatch, an exhausted block."""
    rho, asked = dp.rho, terms_of(dp, feed)
    try:
        if dry_run:  # nothing written, not even the policy
            with db.read() as session:
                recorded = read_policy(session)
                if recorded is not None:
                    check_policy(recorded, asked, (feed,))
                cap = recorded.cap_rho if recorded is not None else asked.cap_rho
                budget.check(session, blocks, rho, cap)
                state = budget.remaining(session, blocks)
        else:
            with db.unit() as session:
                cap = ensure_policy(session, asked, (feed,), actor=f"aggregate:{feed}").cap_rho
                budget.charge(session, blocks, rho, cap, purpose=purpose[:200])
                state = budget.remaining(session, blocks)
    except PolicyMismatch as exc:
        raise ParamsError(f"ledger: {exc}", reason="dp-policy") from None
    except budget.BudgetExceeded as exc:
        raise AnonymizationError(refusal(exc, dp), reason="budget-exceeded") from None
    untouched = cap - (0.0 if dry_run else rho)  # a declared block never charged before
    lefts = [min(c, cap) - spent for c, spent in state.values()] + ([untouched] if len(state) < len(blocks) else [])
    return Budgeted(min(lefts), cap, len(blocks))
