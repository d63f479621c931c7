"""The cost of nested bands per QI, read from released labels, and the per-QI fallback report (issue 39).

A local-recoding engine releases, by default, the smallest hierarchy node covering each class's
values (``bands = "nested"``); with ``bands = "free"`` the class's own range or set. Both are
measured here the same way, from the labels alone (:func:`label_qi_loss`): per row and QI the share
of the QI's domain the label covers, (hi - lo) / domain span for numbers and days, (values covered
- 1) / (leaves - 1) for categories (a set's members or a node's leaves), 1 for ``*`` and for
suppressed rows.

Target: each QI's nested loss at most :data:`TARGET` times the engine's free loss on the same rows,
seed and parameters. A QI above it is released as free ranges / sets where the engine can
(:func:`fallback_entry`, ``diagnostics["nesting_fallback"]``), and one warning line is logged.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from core.encoding import EncodedBatch
from core.engines.base import Progress, Release
from core.hierarchies import TOP
from core.hierarchies.intervals import parse_interval, split_interval
from core.parallel import beside

TARGET = 1.25
"""Most nested loss per QI, as a multiple of the free loss (issue 39)."""
NOISE = 1e-4
"""Absolute loss below which a QI's excess is not reported (a few rows of one value on 10,000)."""

log = logging.getLogger(__name__)


def _days(text: str) -> float:
    return float(pd.Timestamp(text).value / 86400e9)


def ordered_width(label: str, kind: str) -> float:
    """Width of an ordered label (numbers, or days for dates): hi - lo of its interval."""
    if kind == "date":
        parts = split_interval(label)
        if parts is not None:
            return _days(parts[1]) - _days(parts[0]) + (0 if parts[2] else -1)
        if len(label) == 10:
            return 0.0
        start = pd.Timestamp(label + ("-01-01" if len(label) == 4 else "-01"))
        end = start + (pd.DateOffset(years=1) if len(label) == 4 else pd.DateOffset(months=1))
        return (end - start).days - 1.0
    parsed = parse_interval(label)
    if parsed is None:  # a single value
        return 0.0
    return parsed[1] - parsed[0]


def _nominal_costs(q: Any, labels: pd.Index) -> dict[str, float]:
    under: dict[str, int] = {}
    for lvl in range(q.height + 1):
        for lab, u in zip(q.labels[lvl], q.leaves_under[lvl], strict=True):
            under[str(lab)] = min(under.get(str(lab), q.n_leaves), int(u))
    den = max(q.n_leaves - 1, 1)

    def members(lab: str) -> int:
        if lab.startswith("{") and lab.endswith("}"):
            return len(lab[1:-1].split(","))
        return under.get(lab, 1)

    return {lab: 1.0 if lab == TOP else (members(lab) - 1) / den for lab in labels}


def label_qi_loss(batch: EncodedBatch, rows: pd.DataFrame, suppressed: int = 0) -> dict[str, float]:
    """Per QI, the mean over released and ``suppressed`` rows (which cost 1) of the share of the QI's
    domain each label of ``rows`` covers (module docstring)."""
    n = len(rows) + suppressed
    out = {}
    for q in batch.qis:
        counts = rows[q.name].astype(str).value_counts()
        if q.kind in ("numeric", "date") and q.domain is not None:
            span = max(q.domain[1] - q.domain[0], 1e-12)
            cost = {lab: 1.0 if lab == TOP else min(ordered_width(lab, q.kind) / span, 1.0) for lab in counts.index}
        else:
            cost = _nominal_costs(q, counts.index)
        total = suppressed + float(sum(cost[lab] * c for lab, c in counts.items()))
        out[q.name] = total / n if n else 0.0
    return out


def over_target(nested: Mapping[str, float], free: Mapping[str, float], target: float = TARGET) -> list[str]:
    """QIs whose nested loss exceeds ``target`` times their free loss (by more than :data:`NOISE`)."""
    return [q for q, v in nested.items() if v > target * free[q] and v - free[q] > NOISE]


def fallback_entry(q: str, nested: float, free: float, released: float, why: str) -> dict[str, Any]:
    """One QI's record in ``diagnostics["nesting_fallback"]``: its nested loss, the engine's free loss,
    their ratio, the loss of what was released, why, and ``released_as`` ("free": the fallback)."""
    ratio = nested / free if free > 0 else None
    return {"nested_loss": round(nested, 6), "free_loss": round(free, 6), "released_loss": round(released, 6),
            "ratio": None if ratio is None else round(ratio, 3), "released_as": "free", "why": why}


def top_rows(rows: pd.DataFrame, q: str) -> int:
    """Rows whose label of QI ``q`` is the hierarchy's top ``*``."""
    return int((rows[q].astype(str) == TOP).sum())


def warn_fallback(engine: str, fallback: Mapping[str, Mapping[str, Any]]) -> None:
    """The one warning line of a release with QIs above the target."""
    if fallback:
        parts = [f"{q} {e['nested_loss']:.4f} vs free {e['free_loss']:.4f}" for q, e in fallback.items()]
        log.warning("%s: nested bands cost more than %.2fx the free ranges for %s; see diagnostics "
                    "nesting_fallback", engine, TARGET, "; ".join(parts))


def nesting_report(engine: str, batch: EncodedBatch, release: Release, free: Release,
                   relabel: Callable[[frozenset[str]], Release] | None = None,
                   can_free: Callable[[str], bool] = lambda q: False) -> Release:
    """``release`` (nested) with ``diagnostics["nesting_fallback"]`` against ``free`` (the engine's free
    release of the same rows and seed), for engines that keep their classes: each QI over the target
    that ``can_free`` accepts is relabelled free on the same classes by ``relabel`` (released_as
    "free"), the others are reported with their cause and kept nested."""
    free_loss = label_qi_loss(batch, free.rows, len(free.suppressed))
    loss = label_qi_loss(batch, release.rows, len(release.suppressed))
    over = over_target(loss, free_loss)
    to_free = frozenset(q for q in over if can_free(q)) if relabel is not None else frozenset()
    out = relabel(to_free) if to_free and relabel is not None else release
    final = label_qi_loss(batch, out.rows, len(out.suppressed)) if to_free else loss
    fallback = {}
    for q in over:
        ratio = f"{loss[q] / free_loss[q]:.2f}x" if free_loss[q] > 0 else "free loss 0"
        seen = (f"nested labels cost {ratio} the free ones (> {TARGET}x): {top_rows(release.rows, q)} rows at "
                f"'*' nested, {top_rows(free.rows, q)} free")
        why = (f"{seen}; released as each class's range [min, max]" if q in to_free else
               f"{seen}; the classes differ (the nested cuts fall between hierarchy nodes) and this QI's labels "
               "are hierarchy nodes in both modes, so there is no free form to fall back to: kept nested")
        fallback[q] = {**fallback_entry(q, loss[q], free_loss[q], final[q], why),
                       "released_as": "free" if q in to_free else "nested"}
    warn_fallback(engine, fallback)
    return dataclasses.replace(out, diagnostics={**out.diagnostics, "nesting_fallback": fallback})


def with_nesting_report(engine: str, batch: EncodedBatch, params: Any, rng: np.random.Generator,
                        run: Callable[[Any, np.random.Generator, Progress], Release], progress: Progress) -> Release:
    """``run`` as asked; with nested bands and ``nesting_fallback``, also its free release on a copy of
    ``rng`` (what ``bands = "free"`` with the same seed gives) and :func:`nesting_report` without relabelling.

    The free run goes to core's second thread while the process allows it and a core is spare
    (core/parallel.py; the CG kernels release the GIL): the two runs share no mutable input (the batch
    is only read, each has its own generator) and their budgets count work, so the release is the
    same on one thread or two (``tests/core/engines/test_nesting_threads.py``)."""
    if params.bands != "nested" or not params.nesting_fallback:
        return run(params, rng, progress)
    free_params, free_rng = params.model_copy(update={"bands": "free"}), copy.deepcopy(rng)
    release, free = beside(lambda: run(params, rng, progress), lambda stop: run(free_params, free_rng, stop))
    return nesting_report(engine, batch, release, free())


def utility_with_nesting(utility: dict[str, Any], release: Release) -> dict[str, Any]:
    """The utility report (batch ``--report``, stream manifest) with the release's ``nesting_fallback``
    when a QI went over the target: where nested bands gave way to free ranges, or why they did not."""
    fallback = release.diagnostics.get("nesting_fallback")
    return {**utility, "nesting_fallback": fallback} if fallback else utility
