"""``mondrian``: strict multidimensional partitioning with local recoding (LeFevre, DeWitt and
Ramakrishnan 2006, "Mondrian multidimensional k-anonymity").

Guarantee: every released class satisfies the requirement (k, and l / t when asked); nothing is
suppressed. Each partition is split at the median of the QI with the widest normalized range
among those whose split keeps both halves valid (strict partitioning: no value on both sides);
a partition that cannot be split is released as one class. With ``bands = "nested"`` (the
default) cuts fall between hierarchy nodes instead, and a rare tail that no cut between children can
separate is peeled off with about k neighbours (:mod:`core.engines.mondrian.nested`; the diagnostics'
``peeled_cuts`` counts those cuts per QI). A nested release is compared per QI with the free one
(:func:`core.engines.nesting.nesting_report`): a numeric QI above 1.25x its free loss is released as
each class's range instead, and ``nesting_fallback`` says where and why.

Categorical QIs are split on the order of their hierarchy's leaves (siblings are adjacent, so
halves stay close to subtrees). Released labels (``bands = "nested"``, the default): every QI as
the lowest common ancestor of the partition's values in its hierarchy, so labels nest; with
``bands = "free"`` numeric QIs get the closed range ``[min, max]`` of the partition's values
instead. The loss of a numeric range is (max - min) / (domain span), of a hierarchy label
(leaves under - 1) / (leaves - 1) (or its band's width for numbers and dates).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from core.encoding import EncodedBatch
from core.engines.base import (
    BandsParams,
    Engine,
    Progress,
    Release,
    no_progress,
    require_models,
    require_rows,
    require_sensitive,
)
from core.engines.mondrian.nested import nested_split, node_ranks
from core.engines.nesting import nesting_report
from core.errors import InfeasibleError
from core.hierarchies.base import EncodedQI
from core.hierarchies.intervals import range_label
from core.metrics import summarize
from core.privacy import PrivacyRequirement, achieved, class_ok
from core.privacy.check import contingency


def leaf_order(q: EncodedQI) -> np.ndarray:
    """Rank of each leaf when leaves are ordered by value (ordered QIs) or by hierarchy path."""
    if q.leaf_values is not None:  # q.ordered
        ranks = np.argsort(np.argsort(q.leaf_values, kind="stable"), kind="stable")
        return ranks.astype(np.int64)
    keys = [np.arange(q.n_leaves)] + [q.maps[lv] for lv in range(1, q.height + 1)]
    order = np.lexsort(keys)
    ranks = np.empty(q.n_leaves, dtype=np.int64)
    ranks[order] = np.arange(q.n_leaves)
    return ranks


class MondrianEngine(Engine[BandsParams]):
    name = "mondrian"
    summary = "strict multidimensional median partitioning with local recoding (no suppression)"
    paper = "LeFevre, DeWitt, Ramakrishnan 2006 (Mondrian)"
    Params = BandsParams
    models = ("k", "l", "t", "max_risk")  # avg_risk is a global bound; median cuts cannot target it

    def anonymize(self, batch: EncodedBatch, params: BandsParams, rng: np.random.Generator,
                  progress: Progress = no_progress) -> Release:
        started = time.perf_counter()
        require_models(self, params)
        require_rows(batch, params.k)
        require_sensitive(batch, params)
        peeled = [0] * batch.d
        parts = mondrian_parts(batch, params.requirement(), progress, nested=params.bands == "nested",
                               peeled=peeled)
        release = self._release(batch, params, parts, started, peeled)
        if params.bands == "free" or not params.nesting_fallback:
            return release
        free_params = params.model_copy(update={"bands": "free"})  # the reference: Mondrian's free release
        free = self._release(batch, free_params, mondrian_parts(batch, params.requirement()), started, peeled)
        kinds = {q.name: q.kind for q in batch.qis}
        return nesting_report(self.name, batch, release, free,
                              lambda qis: self._release(batch, params, parts, started, peeled, qis),
                              lambda q: kinds[q] == "numeric")

    @staticmethod
    def _split(rows: np.ndarray, sub: np.ndarray, span: np.ndarray, valid: Callable[[np.ndarray], bool],
               stack: list[np.ndarray]) -> bool:
        """Split ``rows`` at the median of the widest QI that allows a valid cut; False if none."""
        width = (sub.max(axis=0) - sub.min(axis=0)) / span
        for a in np.argsort(-width, kind="stable"):
            if width[a] == 0:
                return False
            col = sub[:, a]
            median = np.median(col)
            left = col <= median
            if left.all():  # the median is the maximum: cut just below it instead
                left = col < median
            lrows, rrows = rows[left], rows[~left]
            if len(lrows) and len(rrows) and valid(lrows) and valid(rrows):
                stack.extend([rrows, lrows])
                return True
        return False

    def _release(self, batch: EncodedBatch, params: BandsParams, parts: list[np.ndarray],
                 started: float, peeled: list[int], free_qis: frozenset[str] = frozenset()) -> Release:
        """The release of ``parts``; numeric QIs of ``free_qis`` get free ranges even with nested bands."""
        cls = np.empty(batch.n, dtype=np.int64)
        for i, rows in enumerate(parts):
            cls[rows] = i
        rows_out = batch.frame.copy()
        cost = np.zeros((batch.n, batch.d))
        for a, q in enumerate(batch.qis):
            labels = np.empty(batch.n, dtype=object)
            for rows in parts:
                leaves = q.codes[rows]
                if q.kind == "numeric" and (params.bands == "free" or q.name in free_qis):
                    assert q.leaf_values is not None  # numeric QIs are ordered
                    vals = q.leaf_values[leaves]
                    lo, hi = float(vals.min()), float(vals.max())
                    labels[rows] = range_label(lo, hi)
                    dom = q.domain or (lo, hi)
                    cost[rows, a] = (hi - lo) / (dom[1] - dom[0]) if dom[1] > dom[0] else 0.0
                else:
                    lv = q.lca_level(leaves)
                    code = q.maps[lv][leaves[0]]
                    labels[rows] = q.labels[lv][code]
                    cost[rows, a] = q.cost[lv][code]
            rows_out[q.name] = labels
        sens = batch.sensitive_codes
        level = achieved(cls, sens, c=params.c, t_distance=params.t_distance)
        metrics = summarize(cost, batch.weights, cls, 0, params.k, batch.schema.qi_names,
                            None if batch.severity is None or sens is None else batch.severity[sens])
        sizes = np.bincount(cls)
        diag: dict[str, Any] = {"partitions": len(parts), "largest_class": int(sizes.max()),
                "contingency_classes": int(contingency(cls, sens).shape[0]) if sens is not None else len(parts)}
        if params.bands == "nested":  # cuts that peeled a rare tail off, per QI (core.engines.mondrian.nested)
            diag["peeled_cuts"] = {q.name: n for q, n in zip(batch.qis, peeled, strict=True) if n}
        return Release(
            engine=self.name, params=params.model_dump(), requirement=params.requirement(), rows=rows_out,
            class_ids=cls, suppressed=np.array([], dtype=batch.frame.index.dtype), metrics=metrics,
            privacy=level.as_dict(), diagnostics=diag, runtime_s=time.perf_counter() - started,
        )


def mondrian_parts(batch: EncodedBatch, req: PrivacyRequirement, progress: Progress = no_progress,
                   nested: bool = False, peeled: list[int] | None = None) -> list[np.ndarray]:
    """Mondrian's partition of the batch: row positions per class (InfeasibleError if none exists).

    ``nested``: cut on hierarchy node boundaries (:mod:`core.engines.mondrian.nested`) instead of at
    medians; ``peeled`` (one count per QI) is told how many cuts peeled a rare tail off per QI. Also
    the seed ordering of ``cg-diverse`` (its classes, refined by the CG search)."""
    leaf_ranks = [leaf_order(q) for q in batch.qis]
    nodes = node_ranks(batch, leaf_ranks) if nested else []
    ranks = np.stack([r[q.codes] for q, r in zip(batch.qis, leaf_ranks, strict=True)], axis=1)  # (n, d)
    span = np.maximum(ranks.max(axis=0) - ranks.min(axis=0), 1).astype(float)
    sens, sens_labels = batch.sensitive_codes, batch.sensitive_labels
    n_sens = len(sens_labels) if sens_labels is not None else 0
    overall = np.bincount(sens, minlength=n_sens).astype(float) if sens is not None else None

    def valid(rows: np.ndarray) -> bool:
        if len(rows) < req.k_min:
            return False
        if not req.needs_sensitive:
            return True
        assert sens is not None  # engines needing a sensitive attribute checked the batch has one
        counts = np.bincount(sens[rows], minlength=n_sens)[None, :]
        return bool(class_ok(counts, req, overall)[0])

    all_rows = np.arange(batch.n)
    if not valid(all_rows):
        raise InfeasibleError("the whole batch does not meet the requirement, so no partition can",
                              reason="infeasible")
    final: list[np.ndarray] = []
    stack = [all_rows]
    while stack:
        rows = stack.pop()
        done = nested_split(rows, batch, nodes, valid, stack, req.k_min, peeled) if nested else \
            MondrianEngine._split(rows, ranks[rows], span, valid, stack)
        if not done:
            final.append(rows)
        if len(final) % 200 == 0:
            progress(sum(len(f) for f in final) / batch.n, f"{len(final)} classes")
    return final
