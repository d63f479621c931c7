"""Verification of class-based releases (full-domain and local recoding).

From the released rows alone it:

1. accounts for every input row exactly once (released or suppressed), and checks the suppression
   budget;
2. checks that the sensitive and pass-through values are unchanged and that every generalized QI
   label is a generalization of the row's original value (hierarchy ``covers``);
3. groups the released rows by their QI labels (not by engine class ids) and recomputes k,
   distinct / entropy / recursive l and t, and the highest and average prosecutor risk
   (1 / smallest class, classes / released rows; docs/risk.md), comparing them with the requirement.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.codes import Codes, carried
from core.encoding import Schema
from core.engines.base import Release
from core.privacy.check import contingency
from core.privacy.models import distinct_l, emd, entropy_l, recursive_cl_ok, recursive_l
from core.privacy.requirement import PrivacyRequirement
from core.risk.classes import class_index
from core.verify.report import VerificationReport, check_risk


def _check_accounting(original: pd.DataFrame, release: Release, req: PrivacyRequirement,
                      failures: list[str]) -> None:
    released = pd.Index(release.rows.index)
    suppressed = pd.Index(release.suppressed)
    both = released.append(suppressed)
    if both.has_duplicates:
        failures.append("a row is both released and suppressed, or released twice")
    if not both.sort_values().equals(pd.Index(original.index).sort_values()):
        failures.append(f"rows unaccounted for: {len(original)} input, {len(released)} released, "
                        f"{len(suppressed)} suppressed")
    if len(suppressed) > req.max_suppressed_rows(len(original)):
        failures.append(f"{len(suppressed)} rows suppressed, more than max_suppression={req.max_suppression}")


def _check_truthful(original: pd.DataFrame, release: Release, schema: Schema, failures: list[str]) -> None:
    rows = release.rows
    if not rows.index.isin(original.index).all():
        return
    where = original.index.get_indexer(rows.index) if original.index.is_unique else None

    def at_rows(col: str) -> pd.Series:  # the original column at the released rows (never the whole frame copied)
        return original[col].iloc[where] if where is not None else original.loc[rows.index, col]

    kept = list(schema.spec.passthrough) + ([schema.sensitive] if schema.sensitive else [])
    for col in kept:
        if not (at_rows(col).astype(str).to_numpy() == rows[col].astype(str).to_numpy()).all():
            failures.append(f"column '{col}' was altered; it must pass through unchanged")
    for name in schema.qi_names:
        hier = schema.hierarchies[name]
        values, labels = carried(original, name), carried(rows, name)
        if values is not None and labels is not None and values.clean and labels.clean and where is not None:
            pairs = _code_pairs(values.codes[where], values.uniques, labels)
        else:
            pairs = _distinct_pairs(at_rows(name), rows[name])
        bad = [(v, g) for v, g in pairs if not hier.covers(g, v)]
        if bad:
            failures.append(f"QI '{name}': {len(bad)} label(s) do not generalize the original value, "
                            f"e.g. {bad[0][1]!r}")


def _distinct_pairs(values: pd.Series, labels: pd.Series) -> list[tuple[str, str]]:
    """The distinct (original value, released label) pairs, as text, in order of first appearance."""
    v_codes, v_uniq = pd.factorize(values.astype(str).to_numpy())
    return _code_pairs(v_codes, v_uniq, Codes.of(labels.astype(str).to_numpy()))


def _code_pairs(v_codes: np.ndarray, v_uniq: np.ndarray, labels: Codes) -> list[tuple[str, str]]:
    """:func:`_distinct_pairs` from each row's code into its distinct original values (``v_uniq``, text)
    and the labels' codes (clean text); any numbering of the values gives the same pairs in the same order."""
    g_uniq, width = labels.uniques, max(labels.size, 1)
    keys = pd.unique(v_codes.astype(np.int64) * width + labels.codes)
    return [(str(v_uniq[k // width]), str(g_uniq[k % width])) for k in keys]


def verify_classes(original: pd.DataFrame, release: Release, schema: Schema,
                   req: PrivacyRequirement | None = None) -> VerificationReport:
    req = req or release.requirement
    failures: list[str] = []
    _check_accounting(original, release, req, failures)
    _check_truthful(original, release, schema, failures)
    rows = release.rows
    rep = VerificationReport(ok=False, mode="classes", released=len(rows), suppressed=len(release.suppressed))
    if len(rows):
        clean = all((c := carried(rows, q)) is not None and c.clean for q in schema.qi_names)  # astype(str): as is
        cls, sizes = class_index(rows if clean else rows[schema.qi_names].astype(str), schema.qi_names)
        rep.k = int(sizes.min())
        if rep.k < req.k:
            failures.append(f"smallest class has {rep.k} rows, requirement k={req.k}")
        check_risk(rep, req, len(sizes) / len(rows), failures)
        if schema.sensitive is not None:
            got = carried(rows, schema.sensitive)
            sens = (got.sorted_codes() if got is not None and got.clean
                    else pd.factorize(rows[schema.sensitive].astype(str), sort=True)[0])
            counts = contingency(cls, sens)
            rep.l_distinct = int(distinct_l(counts).min())
            rep.l_entropy = float(entropy_l(counts).min())
            rep.l_recursive = int(recursive_l(counts, req.c).min())
            rep.t = float(emd(counts, counts.sum(axis=0), req.t_distance).max())
            if req.l is not None and req.l > 1:
                if req.l_kind == "distinct" and rep.l_distinct < req.l:
                    few = distinct_l(counts) < req.l
                    failures.append(f"l-diversity: {int(few.sum())} class(es) ({int(sizes[few].sum())} rows) have "
                                    f"fewer than l={req.l} distinct values of '{schema.sensitive}' (fewest "
                                    f"{rep.l_distinct}), requirement l={req.l}")
                if req.l_kind == "entropy" and rep.l_entropy < req.l - 1e-9:
                    failures.append(f"l-diversity: entropy l is {rep.l_entropy:.3f}, requirement l={req.l}")
                if req.l_kind == "recursive" and not recursive_cl_ok(counts, req.l, req.c).all():
                    failures.append(f"l-diversity: a class is not recursive ({req.c},{req.l})-diverse")
            if req.t is not None and rep.t > req.t + 1e-12:
                failures.append(f"t-closeness distance {rep.t:.4f} exceeds t={req.t}")
        elif req.needs_sensitive:
            failures.append("requirement needs a sensitive attribute but the schema has none")
    elif len(original):
        failures.append("nothing released") if len(release.suppressed) == 0 else None
    rep.failures = failures
    rep.ok = not failures
    return rep


def single_value_classes(rows: pd.DataFrame, qi_names: list[str], sensitive: str) -> pd.DataFrame:
    """The classes (rows with equal released QI labels) whose rows all share one ``sensitive`` value: their
    labels, ``rows`` and that ``value``, largest first. Anyone who places a person in one learns the value."""
    if not len(rows):
        return pd.DataFrame(columns=[*qi_names, "rows", "value"])
    labels = rows[qi_names].astype(str)
    cls, _ = class_index(labels, qi_names)
    sens = rows[sensitive].astype(str).to_numpy()
    frame = pd.DataFrame({"cls": cls, "value": sens})
    stats = frame.groupby("cls").agg(distinct=("value", "nunique"), rows=("value", "size"), value=("value", "first"))
    single = stats[stats["distinct"] == 1]
    first = labels.groupby(cls).first().loc[single.index]
    out = pd.concat([first.reset_index(drop=True), single[["rows", "value"]].reset_index(drop=True)], axis=1)
    return out.sort_values("rows", ascending=False, kind="stable").reset_index(drop=True)
