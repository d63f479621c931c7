"""Sign-off for a period: one document for every window of the event-time days ``since`` to ``until``.

A window belongs to the period when its event-time start falls on one of those UTC days (the days the
reports describe, the same days the privacy budget's day blocks are named after), whatever day it was
released on. For each released window: totals, the requirements asked (k, ℓ in the release's parameters)
against what was achieved and what the independent verifier recomputed, the risk (prosecutor, from the
manifest), the utility (information loss, the manifest's utility report in words), and the DP counts: the
ρ it spent on each block (``dp_spends``) and a refusal when a cap refused them. Windows held (a release
refused by the verifier or an engine) and carried are listed with their reasons, scrubbed of record values
like every reason the console shows. Used by ``anonstream releases report --since D --until D`` and the
console's ``/signoff`` page; rendered by :mod:`stream.console.report` (HTML, Markdown) or as JSON.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from db.budget import BudgetBlock, BudgetSpend
from db.models import PendingReport, Release, Window
from stream.console.redact import scrub
from stream.console.release_warnings import classify

TOTALS = ("received", "released", "suppressed", "held_back", "blocked")


def parse_day(text: str, what: str) -> date:
    """A ``YYYY-MM-DD`` day; :class:`ValueError` naming ``what`` otherwise."""
    try:
        return date.fromisoformat(str(text).strip())
    except ValueError:
        raise ValueError(f"{what} must be a day YYYY-MM-DD (got {str(text)[:40]!r})") from None


def _requirements(params: dict[str, Any], k: int | None, l_: int | None, ver: dict[str, Any]) -> dict[str, Any]:
    k_asked, l_asked = params.get("k"), params.get("l")
    k_met = k_asked is None or (k is not None and k >= int(k_asked))
    l_met = l_asked in (None, 0, 1) or (l_ is not None and l_ >= int(l_asked))
    return {"k_asked": k_asked, "k": k, "l_asked": l_asked, "l": l_, "verified": bool(ver.get("ok")),
            "failures": list(ver.get("failures") or []), "met": bool(k_met and l_met and ver.get("ok"))}


def _release_row(r: Release, w: Window, spends: dict[str, float]) -> dict[str, Any]:
    m = r.manifest or {}
    risk = (m.get("privacy") or {}).get("risk") or {}
    pros = risk.get("prosecutor") or {}
    dp = m.get("dp") if isinstance(m.get("dp"), dict) else None
    return {
        "id": r.id, "window": w.id, "key": w.key, "day": w.start.date().isoformat(), "stations": list(r.stations or []),
        "engine": r.engine, "state": r.state, "created_at": r.created_at.isoformat(),
        "published_at": r.published_at.isoformat() if r.published_at else None,
        **{t: int(getattr(r, t) or 0) for t in TOTALS},
        "requirements": _requirements(r.params or {}, r.k_achieved, r.l_achieved, r.verification or {}),
        "risk": {"highest": pros.get("highest"), "average": pros.get("average"),
                 "records_at_risk": pros.get("records_at_risk"), "threshold": risk.get("threshold")},
        "information_loss": r.information_loss, "utility": (m.get("codebook") or {}).get("utility"),
        "warnings": [w_["text"] for w_ in classify(m) if w_["kind"] == "act"],
        "dp": None if dp is None else {"rho": dp.get("rho"), "delta": dp.get("delta"), "spent": spends,
                                       "refused": (dp.get("refused") or {}).get("message")},
    }


def period_data(svc: Any, since: date, until: date, feed: str | None = None) -> dict[str, Any]:
    """Everything the period's sign-off shows, from the ledger (see the module docstring)."""
    if until < since:
        raise ValueError(f"--until {until} is before --since {since}")
    start = datetime(since.year, since.month, since.day, tzinfo=UTC)
    end = datetime(until.year, until.month, until.day, tzinfo=UTC) + timedelta(days=1)
    words = svc.scrub_words()
    with svc._read() as s:
        stmt = select(Window).where(Window.start >= start, Window.start < end).order_by(Window.start, Window.key,
                                                                                        Window.seq)
        windows = list(s.execute(stmt.where(Window.feed == feed) if feed else stmt).scalars())
        rel_ids = [w.release_id for w in windows if w.release_id]
        releases = {r.id: r for r in s.execute(select(Release).where(Release.id.in_(rel_ids))).scalars()}
        spend_rows = s.execute(select(BudgetSpend.release_id, BudgetSpend.block, func.sum(BudgetSpend.rho))
                               .where(BudgetSpend.release_id.in_(rel_ids))
                               .group_by(BudgetSpend.release_id, BudgetSpend.block)).all()
        blocks = {b.block: b for b in s.execute(select(BudgetBlock).where(
            BudgetBlock.block.in_({blk for _r, blk, _n in spend_rows}))).scalars()}
        pending = dict(s.execute(select(PendingReport.window_id, func.count()).where(
            PendingReport.state == "pending", PendingReport.window_id.in_([w.id for w in windows]))
            .group_by(PendingReport.window_id)).all())
        policy = _policy(s)
    by_release: dict[str, dict[str, float]] = {}
    for rid, blk, rho in spend_rows:
        by_release.setdefault(rid, {})[blk] = float(rho)
    rows = [_release_row(releases[w.release_id], w, by_release.get(w.release_id, {}))
            for w in windows if w.release_id in releases]
    held = [{"id": w.id, "key": w.key, "day": w.start.date().isoformat(), "state": w.state, "count": w.count,
             "still_pending": int(pending.get(w.id, 0)), "reason": scrub(w.hold_reason, words),
             "closed_at": w.closed_at.isoformat() if w.closed_at else None}
            for w in windows if w.state in ("held", "carried")]
    spent: dict[str, float] = {}
    for per in by_release.values():
        for blk, rho in per.items():
            spent[blk] = spent.get(blk, 0.0) + rho
    budget = [{"block": blk, "spent_rho": rho, "block_spent_rho": float(blocks[blk].spent_rho),
               "cap_rho": float(blocks[blk].cap_rho)} for blk, rho in sorted(spent.items()) if blk in blocks]
    totals = {t: sum(r[t] for r in rows) for t in TOTALS}
    totals.update(releases=len(rows), requirements_met=sum(r["requirements"]["met"] for r in rows),
                  held_windows=sum(w["state"] == "held" for w in held),
                  held_reports=sum(w["count"] for w in held if w["state"] == "held"),
                  carried_windows=sum(w["state"] == "carried" for w in held),
                  counts_refused=sum(1 for r in rows if r["dp"] and r["dp"]["refused"]),
                  stations=sorted({st for r in rows for st in r["stations"]}),
                  open_windows=sum(w.state in ("open", "closing") for w in windows))
    highest = [r["risk"]["highest"] for r in rows if r["risk"]["highest"] is not None]
    losses = [(r["information_loss"], r["released"]) for r in rows if r["information_loss"] is not None]
    totals["risk_highest"] = max(highest) if highest else None
    totals["information_loss_mean"] = (sum(x * n for x, n in losses) / sum(n for _x, n in losses)
                                       if losses and sum(n for _x, n in losses) else None)
    return {"since": since.isoformat(), "until": until.isoformat(), "feed": feed, "totals": totals, "releases": rows,
            "held": held, "budget": budget,
            "delta": policy if policy is not None else next((r["dp"]["delta"] for r in rows if r["dp"]), None),
            "generated_at": datetime.now(UTC).isoformat()}


def _policy(s: Any) -> float | None:
    """The ledger's δ (for ε beside ρ), None when no DP policy is recorded."""
    from db.dp_policy import read_policy

    p = read_policy(s)
    return p.delta if p else None
