"""The utility report of a release: what anonymization cost, per QI level, for the sensitive attribute
and for one two-way table (docs/risk.md "Utility: what a release still answers").

Definitions (``n`` original rows; released rows carry generalized labels; rows the engine suppressed
are not published and count as ``*``):

* **marginal at a level** of a QI: released labels roll up to their node at that level
  (:func:`core.columns.rollup.roll_up`); a label above the level (``*``, a wider band, a range across
  two nodes) is counted as ``coarser``, a suppressed row as ``suppressed``. ``resolved`` is the share
  of the ``n`` rows placed in a node: how much of the question "how many per node?" the release answers.
* **tvd**: total variation distance ``1/2 * sum |p - q|`` between the original distribution ``p`` over
  the level's nodes and the distribution ``q`` of the resolved released rows (both normalised): how far
  the shape an analyst sees is from the truth, whatever was lost. None when no row resolves.
* **sensitive**: original and published value counts; ``tvd`` as above (only suppression moves it).
* **crosstab** (``[utility] crosstab`` in the spec, two columns, each a QI at a level ``name:level``, the
  sensitive or a pass-through column): cell counts over the rows resolved on both axes; ``max_error``
  is the largest ``|original - released|`` over the cells, with its cell; ``unresolved`` counts rows
  that are in no released cell (coarser on an axis, or suppressed).

``public=True`` gives what may be published beside the data (the manifest): figures over the published
rows only (nothing about suppressed rows beyond their number), original cells under ``k`` withheld, the
sensitive attribute's original counts left out (its ``tvd`` becomes the bound ``tvd_at_most`` =
suppressed / n), and the crosstab's worst cell named only when its original count is at least ``k``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.codes import Codes, carried
from core.columns.rollup import grid_of, level_index, roll_up, rolled_codes
from core.columns.typed import interpreters
from core.encoding import Schema
from core.errors import AnonymizationError, SpecError


def _counts(values: pd.Series) -> dict[str, int]:
    vc = values.value_counts(dropna=True)
    return {str(k): int(v) for k, v in sorted(vc.items(), key=lambda kv: (-kv[1], kv[0]))}


def _distinct(values: pd.Series, coded: Codes | None = None) -> tuple[pd.Series, np.ndarray, int]:
    """A column's distinct labels, the rows holding each, and the rows missing (a column is factorized
    once, or its ``coded`` codes taken; every level then works on its few distinct labels)."""
    if coded is not None and values.dtype == object:  # astype(object) keeps it: the same codes
        codes, uniq = coded.codes, coded.uniques
    else:
        codes, uniq = pd.factorize(values.astype(object))
    return pd.Series(uniq, dtype=object), np.bincount(codes[codes >= 0], minlength=len(uniq)), int((codes < 0).sum())


def _rolled(distinct: tuple[pd.Series, np.ndarray, int], grid: dict[str, Any],
            level: int) -> tuple[dict[str, int], int]:
    """Rows per node at ``level`` (as :func:`_counts` of :func:`roll_up` orders them) and the rows coarser
    than the level, missing ones included."""
    uniq, counts, coarser = distinct
    out: dict[str, int] = {}
    for node, n in zip(roll_up(uniq, grid, level).to_numpy(), counts.tolist()):
        if node is None:
            coarser += n
        else:
            out[str(node)] = out.get(str(node), 0) + n
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))), coarser


def tvd(original: dict[str, int], released: dict[str, int]) -> float | None:
    """Total variation distance between two count tables, each normalised to 1 (None if one is empty)."""
    n, m = sum(original.values()), sum(released.values())
    if not n or not m:
        return None
    keys = sorted(set(original) | set(released))  # a fixed order: the same sum, to the last bit, in every process
    return 0.5 * sum(abs(original.get(c, 0) / n - released.get(c, 0) / m) for c in keys)


def _original_distinct(schema: Schema, name: str, values: pd.Series,
                       coded: Codes | None = None) -> tuple[pd.Series, np.ndarray, int]:
    """:func:`_distinct` of :func:`_original_labels`, straight from the hierarchy's codes (with the column's
    ``coded`` codes, the hierarchy encodes its distinct values only, each counted by its rows)."""
    if coded is not None and not coded.missing:
        enc = schema.hierarchies[name].encode(pd.Series(coded.uniques, dtype=object), unknown="top")
        rows = np.bincount(np.asarray(enc.codes), weights=np.bincount(coded.codes, minlength=coded.size),
                           minlength=len(enc.labels[0]))
        return pd.Series(enc.labels[0], dtype=object), rows.astype(np.int64), 0
    enc = schema.hierarchies[name].encode(values, unknown="top")
    labels = pd.Series(enc.labels[0], dtype=object)
    return labels, np.bincount(np.asarray(enc.codes), minlength=len(labels)), 0


def _original_labels(schema: Schema, name: str, values: pd.Series,
                     coded: Codes | None = None) -> tuple[np.ndarray, list[object]] | pd.Series:
    """The original values of a QI as level-0 labels (numbers and days as the hierarchy writes them); with
    the column's ``coded`` codes, as (each row's code, each code's label) for :func:`roll_up`."""
    if coded is not None and not coded.missing:
        enc = schema.hierarchies[name].encode(pd.Series(coded.uniques, dtype=object), unknown="top")
        return coded.codes, list(enc.labels[0][enc.codes])
    enc = schema.hierarchies[name].encode(values, unknown="top")
    return pd.Series(enc.labels[0][enc.codes], index=values.index, dtype=object)


def _axis(schema: Schema, text: str, grids: dict[str, dict[str, Any]]) -> tuple[str, int | None]:
    name, _, level = text.partition(":")
    if name in grids:
        try:
            return name, level_index(grids[name], level or 0)
        except ValueError as exc:
            raise SpecError(f"spec field 'utility.crosstab': {name}: {exc}") from None
    spec = schema.spec
    if not level and (name == schema.sensitive or name in spec.passthrough):
        return name, None
    raise SpecError(f"spec field 'utility.crosstab': {text!r} is not a QI (name or name:level), the sensitive "
                    "attribute or a pass-through column")


def default_crosstab(schema: Schema) -> list[str]:
    """The two-way table checked when the spec names none: the first QI at its first level above the
    values, against the sensitive attribute (or the second QI's values)."""
    first = schema.qi_names[0]
    other = schema.sensitive or (schema.qi_names[1] if len(schema.qi_names) > 1 else first)
    return [f"{first}:1", other]


def utility_report(schema: Schema, original: pd.DataFrame, released: pd.DataFrame, *, k: int = 1,
                   public: bool = False) -> dict[str, Any]:
    """The utility report of ``released`` (labels, the engine's ``Release.rows`` or the published table)
    against ``original`` (the input the engine saw). ``released``'s index must be a subset of
    ``original``'s: the rows missing from it were suppressed."""
    suppressed = int((~original.index.isin(released.index)).sum())
    base = original.loc[original.index.isin(released.index)] if public else original
    n = len(base)
    whole = base is original  # the input's codes describe its rows (a public report keeps the released ones)
    grids = {i.name: grid_of(i, _values_of(original, i.name), max_rows=None) for i in interpreters(schema)}
    qis: dict[str, Any] = {}
    for name, grid in grids.items():
        orig0 = _original_distinct(schema, name, base[name], carried(original, name) if whole else None)
        rel = _distinct(released[name], carried(released, name))
        levels = []
        for lvl, lname in enumerate(grid["levels"][:-1]):
            o, _ = _rolled(orig0, grid, lvl)
            r, coarser = _rolled(rel, grid, lvl)
            entry: dict[str, Any] = {"level": lvl, "name": lname, "original": o, "released": r,
                                     "coarser": coarser, "suppressed": 0 if public else suppressed,
                                     "resolved": sum(r.values()) / n if n else 0.0, "tvd": tvd(o, r)}
            levels.append(_withhold(entry, k) if public else entry)
        qis[name] = {"levels": levels}
    report: dict[str, Any] = {"rows": len(original), "published": len(released), "suppressed": suppressed,
                              "public": public, "qis": qis}
    if schema.sensitive:
        s = schema.sensitive
        o, r = _counts(original[s]), _counts(released[s])
        report["sensitive"] = ({"name": s, "released": r, "suppressed": suppressed,
                                "tvd_at_most": suppressed / len(original) if len(original) else 0.0}
                               if public else {"name": s, "original": o, "released": r, "suppressed": suppressed,
                                               "tvd": tvd(o, r)})
    report["crosstab"] = crosstab(schema, base, released, grids, k=k, public=public)
    return report


def _values_of(frame: pd.DataFrame, name: str) -> pd.Series:
    """A column's values for :func:`grid_of`, which reads their range and widest text only: its distinct
    values when the frame carries its codes (and none is missing), else the column."""
    got = carried(frame, name)
    return pd.Series(got.uniques, dtype=object) if got is not None and not got.missing else frame[name]


def publishable_utility(schema: Schema, original: pd.DataFrame, released: pd.DataFrame, k: int) -> dict[str, Any]:
    """:func:`utility_report` with ``public=True``, as the worker puts it in a manifest. A report that
    cannot be computed says why (``error``) and never stops the release it describes."""
    try:
        return utility_report(schema, original, released, k=k, public=True)
    except (AnonymizationError, ValueError, KeyError, TypeError) as exc:
        message = exc.message if isinstance(exc, AnonymizationError) else f"{type(exc).__name__}: {exc}"
        return {"public": True, "error": message[:300]}


def _withhold(entry: dict[str, Any], k: int) -> dict[str, Any]:
    """Original cells under ``k`` left out of a published level (their rows summed as ``withheld``)."""
    small = {c: v for c, v in entry["original"].items() if v < k}
    kept = {c: v for c, v in entry["original"].items() if v >= k}
    return {**entry, "original": kept, "withheld": sum(small.values())}


def crosstab(schema: Schema, original: pd.DataFrame, released: pd.DataFrame, grids: dict[str, dict[str, Any]],
             *, k: int = 1, public: bool = False) -> dict[str, Any]:
    """The two-way table of the spec's ``[utility] crosstab`` (or :func:`default_crosstab`)."""
    names = list(schema.spec.utility.crosstab or default_crosstab(schema))
    try:
        axes = [_axis(schema, t, grids) for t in names]
    except SpecError as exc:  # a level the hierarchy lacks: reported, never a reason to hold a release
        return {"columns": names, "error": exc.message, "max_error": None}
    orig, rel = [], []  # per axis: each row's code and each code's value (None: the row is left out)
    for col, lvl in axes:
        if lvl is None:
            orig.append(_text_codes(original[col], carried(original, col)))
            rel.append(_text_codes(released[col], carried(released, col)))
        else:
            labels = _original_labels(schema, col, original[col], carried(original, col))
            codes, uniq = labels if isinstance(labels, tuple) else pd.factorize(labels.astype(object))
            orig.append((codes, rolled_codes(uniq, grids[col], lvl)))
            got = carried(released, col)
            codes, uniq = ((got.codes, list(got.uniques)) if got is not None
                           else pd.factorize(released[col].astype(object)))
            rel.append((codes, rolled_codes(uniq, grids[col], lvl)))
    o, r = pair_counts(*orig), pair_counts(*rel)
    table = pd.concat([o.rename("original"), r.rename("released")], axis=1).fillna(0).astype(int)
    out: dict[str, Any] = {"columns": names, "cells": len(table), "rows": int(o.sum()),
                           "unresolved": len(original) - int(r.sum()), "max_error": None}
    if len(table):
        err = (table["original"] - table["released"]).abs()
        cell = err.sort_values(ascending=False, kind="stable").index[0]
        cell_original = int(table.loc[cell, "original"])
        worst: dict[str, Any] = {"cell": [str(cell[0]), str(cell[1])], "original": cell_original,
                                 "released": int(table.loc[cell, "released"]), "error": int(err[cell])}
        if public and cell_original < k:
            worst = {"cell": None, "original": None, "released": None, "error": worst["error"]}
        out["max_error"] = worst
    return out


def _text_codes(values: pd.Series, got: Codes | None) -> tuple[np.ndarray, np.ndarray]:
    """A column as text (``values.astype(str)``) as each row's code and each code's text."""
    if got is None or not got.clean:  # else the texts are the values, as the column's codes say
        codes, uniques = pd.factorize(values.astype(str))
        got = Codes(codes, np.asarray(uniques, dtype=object))
    return got.codes, np.asarray([*got.uniques, None], dtype=object)


def pair_counts(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> pd.Series:
    """``pd.DataFrame({"a": A, "b": B}).dropna().value_counts()`` of two columns given as (each row's code,
    each code's value; -1 picks the last), counted on integers: no column of values is built per row."""
    ids, kept = [], []
    for codes, values in (a, b):
        labels = sorted({v for v in values.tolist() if v is not None})  # the group keys, sorted as groupby sorts
        at = {v: i for i, v in enumerate(labels)}
        ids.append(np.asarray([-1 if v is None else at[v] for v in values.tolist()], dtype=np.int64)[codes])
        kept.append(np.asarray(labels, dtype=object))
    width = max(len(kept[1]), 1)
    both = (ids[0] >= 0) & (ids[1] >= 0)
    keys, counts = np.unique(ids[0][both] * width + ids[1][both], return_counts=True)
    first, second = np.divmod(keys, width)
    index = pd.MultiIndex.from_arrays([kept[0][first], kept[1][second]], names=["a", "b"])
    return pd.Series(counts.astype(np.int64), index=index, name="count").sort_values(ascending=False)


PRESERVED = 0.9
"""A level is *preserved* when at least this share of the rows resolves at it."""


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def utility_paragraph(report: dict[str, Any]) -> str:
    """One short paragraph from the figures: what the release preserves and what it distorts."""
    if report.get("error"):
        return f"No utility report: {report['error']}"
    keeps, loses = [], []
    for name, qi in report.get("qis", {}).items():
        levels = qi.get("levels") or []
        good = [lv for lv in levels if lv["resolved"] >= PRESERVED]
        if good:
            best = good[0]
            shape = f", TVD {best['tvd']:.2f}" if best.get("tvd") else ""
            where = "exactly" if best["level"] == 0 else f"to {best['name']}"
            keeps.append(f"{name} {where} ({_pct(best['resolved'])} of rows{shape})")
            finer = [lv for lv in levels if lv["level"] < best["level"]]
            if finer:
                lv = finer[-1]
                loses.append(f"{name} at {lv['name']} (only {_pct(lv['resolved'])} of rows resolve)")
        elif levels and not any(lv["resolved"] for lv in levels):
            loses.append(f"{name} entirely (no row below *)")
        elif levels:
            lv = max(levels, key=lambda x: (x["resolved"], -x["level"]))
            loses.append(f"{name} at every level (at most {_pct(lv['resolved'])} of rows resolve, at {lv['name']})")
    text = ("Preserves: " + "; ".join(keeps) + "." if keeps else "Preserves no QI at any level below *.")
    if loses:
        text += " Distorts: " + "; ".join(loses) + "."
    sens = report.get("sensitive")
    if sens:
        bound = sens.get("tvd_at_most", sens.get("tvd")) or 0.0
        text += (f" The sensitive attribute {sens['name']} is published unchanged"
                 + (f" for every published row ({sens['suppressed']} suppressed row(s) not published; TVD at most "
                    f"{bound:.2f})." if sens["suppressed"] else " for every row."))
    ct = report.get("crosstab") or {}
    worst = ct.get("max_error")
    if worst:
        of = f" of {worst['original']}" if worst.get("original") is not None else ""
        cell = f" (cell {' × '.join(worst['cell'])})" if worst.get("cell") else ""
        text += (f" Table {' × '.join(ct['columns'])}: largest cell error {worst['error']}{of}{cell}; "
                 f"{ct['unresolved']} row(s) in no cell.")
    return text
