"""Hierarchies proposed by ``anonstream spec draft`` for one quasi-identifier (rules in docs/spec.md)."""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from stream.specdraft.geo import state_rows
from stream.specdraft.profile import QI_PATTERNS, Profile, functional, match, norm

MISSING_LABEL = "(missing)"
GROUP_NAME = re.compile(r"division|region|borough|district|group|category|area|zone|sector|patrol|class")


def nice(x: float) -> float:
    """The smallest of 1, 2, 5 x 10^k that is >= x."""
    x = max(x, 1e-9)
    exp = 10 ** math.floor(math.log10(x))
    return next(m * exp for m in (1, 2, 5, 10) if m * exp >= x - 1e-12)


def interval_hierarchy(p: Profile) -> tuple[dict[str, Any], str]:
    x = pd.to_numeric(p.values).astype(float)
    lo, hi = float(x.min()), float(x.max())
    q1, q3 = float(x.quantile(0.25)), float(x.quantile(0.75))
    spread = (q3 - q1) or (hi - lo) / 4 or 1.0
    base = nice(spread / 2)
    if p.integer:
        base = max(base, 1.0)
    widths = [base]
    while widths[-1] * 2 < (hi - lo) and len(widths) < 5:
        widths.append(widths[-1] * 2)
    top = widths[-1]
    d_lo = math.floor(lo / top) * top
    d_hi = max(math.ceil(hi / top) * top, d_lo + top)
    if d_hi <= hi:
        d_hi += top
    h: dict[str, Any] = {"widths": [_num(w) for w in widths], "domain": [_num(d_lo), _num(d_hi)]}
    if p.integer:
        h["integer"] = True
    how = (f"range {_num(lo)}..{_num(hi)}, quartiles {_num(q1)}/{_num(q3)}: bands of half the interquartile range "
           f"rounded to 1-2-5 ({_num(base)}), doubling up to the range")
    return h, how


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(float(x), 6)


def taxonomy(frame: pd.DataFrame, p: Profile, candidates: list[str]) -> tuple[dict[str, list[str]], str] | None:
    """A two-level tree when another column groups this one's values (each value in exactly one group)."""
    n = p.distinct
    if n < 3:
        return None
    fits = []
    for g in candidates:
        if g == p.name:
            continue
        k = int(frame[g].nunique())
        if 2 <= k < n and functional(frame, p.name, g):
            fits.append((bool(GROUP_NAME.search(norm(g))), k, g))
    if not fits:
        return None
    _, _, g = max(fits)
    pairs = frame[[p.name, g]].dropna().drop_duplicates()
    tree: dict[str, list[str]] = {}
    for v, grp in sorted(zip(pairs[p.name], pairs[g]), key=lambda t: (str(t[1]), str(t[0]))):
        tree.setdefault(str(grp), []).append(str(v))
    return tree, f"each value lies in one '{g}' group: value -> {g} -> *"


def block_rows(p: Profile) -> tuple[list[list[str]], str] | None:
    """Numeric codes (precincts, districts) in blocks of about sqrt(n) consecutive codes."""
    if p.kind != "numeric":
        return None
    uniq = sorted(set(p.values), key=float)
    n = len(uniq)
    if n <= 6:
        return None
    size = math.ceil(math.sqrt(n))
    rows = []
    for i in range(0, n, size):
        block = uniq[i:i + size]
        label = f"{block[0]}-{block[-1]}" if len(block) > 1 else block[0]
        rows += [[v, label, "*"] for v in block]
    return rows, (f"numeric codes without a grouping column: blocks of {size} consecutive codes, then * "
                  f"(a code's digits are not masked: a precinct or beat number is not a postcode)")


def frequency_rows(p: Profile) -> tuple[list[list[str]], str]:
    counts = p.values.value_counts()
    rare_below = max(5, math.ceil(0.01 * p.n_rows))
    rare = set(counts[counts < rare_below].index)
    if not rare or len(rare) == len(counts):
        return [[str(v), "*"] for v in sorted(counts.index)], "no natural grouping: value -> *"
    label = "Other"
    while label in counts.index:
        label += "*"
    rows = [[str(v), label if v in rare else str(v), "*"] for v in sorted(counts.index)]
    return rows, (f"no natural grouping: the {len(rare)} value(s) seen fewer than {rare_below} times are grouped "
                  f"as '{label}', then *")


def with_missing_leaf(qi: dict[str, Any]) -> None:
    h = qi["hierarchy"]
    if "tree" in h:
        h["tree"][MISSING_LABEL] = [MISSING_LABEL]
    elif "rows" in h:
        width = len(h["rows"][0])
        h["rows"].append([MISSING_LABEL] * (width - 1) + ["*"])


STATE_NAME = re.compile(r"state|(^|_)st($|_)|fips")
POSTCODE_NAME = re.compile(r"zip|post_?code|postal|geoid")


def mask_width(p: Profile) -> int | None:
    """The mask for a postal code whose digits nest geographically (ZIP, postcode, GEOID): every
    value the same length, at least 3 characters, letters and digits only; None otherwise."""
    if not POSTCODE_NAME.search(norm(p.name)) or p.values.empty:
        return None
    lengths = p.values.str.len()
    if lengths.nunique() != 1 or int(lengths.iloc[0]) < 3 or not p.values.str.fullmatch(r"[0-9A-Za-z]+").all():
        return None
    return int(lengths.iloc[0])


def hierarchy_for(clean: pd.DataFrame, p: Profile, group_cols: list[str]) -> tuple[dict[str, Any], str]:
    """A quasi-identifier's type and hierarchy, and why (docs/spec.md, rule 7)."""
    if p.kind == "date":
        h: dict[str, Any] = {"levels": ["day", "month", "year"], "format": p.date_format}
        return {"type": "date", "hierarchy": h}, (p.date_note or f"dates parse as {p.date_format!r}") + \
            ": day -> month -> year -> *"
    states = state_rows(p.values) if STATE_NAME.search(norm(p.name)) else None
    if states is not None:
        return ({"type": "categorical", "hierarchy": {"rows": states}},
                "US states: state -> Census division -> Census region -> * (codes are not geography in their digits)")
    width = mask_width(p)
    if width is not None:
        return ({"type": "masked", "hierarchy": {"mask": width}},
                f"a postal code of {width} characters: masked from the right one character per level")
    if p.kind == "numeric" and not match(p.name, QI_PATTERNS[1:5]):  # sex, race, codes, areas: not quantities
        h, how = interval_hierarchy(p)
        return {"type": "numeric", "hierarchy": h}, how
    tax = taxonomy(clean, p, group_cols)
    if tax is not None:
        return {"type": "categorical", "hierarchy": {"tree": tax[0]}}, tax[1]
    rows, how = block_rows(p) or frequency_rows(p)
    return {"type": "categorical", "hierarchy": {"rows": rows}}, how
