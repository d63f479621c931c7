"""Counts per band at a chosen hierarchy level, from released rows: a histogram an analyst can defend.

Released labels are hierarchy nodes at different levels (``[30, 34]``, ``[30, 39]``, ``*`` ...).
:func:`band_counts` rolls each one up to its ancestor at the level asked for, with the grid the
codebook carries (``codebook["qis"][qi]["grid"]``, :mod:`core.columns.rollup`); rows whose label is
coarser than that level (``*``, a wider band) fit no band and are counted apart, never spread over
bands. Rows the engine suppressed are not in the data at all (the manifest counts them).

    >>> from stream.analyst import band_counts, read_codebook, read_releases
    >>> df = read_releases("releases/")
    >>> ages = band_counts(df, "age", "band of width 10", read_codebook("releases/"))
    >>> ages.counts          # rows per decade band, empty bands included
    >>> ages.coarser         # rows released coarser than a decade
    >>> read_utility("releases/").query("qi == 'age'")   # per release and level: share resolved, TVD

When under half the rows resolve at the level asked (``Bands.resolved`` < 0.5), the bars describe the
rows that happened to be released fine, not the population, and their shape can be the reverse of the
truth (age by decade: in 400-report windows a tenth of the rows resolve, mostly the common ages).
:func:`band_counts` then warns (:class:`CoarseBandsWarning`, and ``Bands.warning``) and, given the spec's
``[dp]`` table, names the differentially private count tables that answer the question over every row
(``Bands.dp_tables``, e.g. ``age_band x sex x offence``; read them with ``read_counts``).

Labels of nested-band releases are always hierarchy nodes, so every row lands in exactly one band or
in ``coarser``. Free ranges (engines run with nesting turned off) roll up only when a range happens
to lie inside one band: there the roll-up is best effort, and ``coarser`` counts the rest.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.columns.rollup import level_index, roll_up
from core.hierarchies.intervals import band_label, parse_interval

MIN_RESOLVED = 0.5
"""Below this share of rows resolved at the level asked, :func:`band_counts` warns."""


class CoarseBandsWarning(UserWarning):
    """Under half the rows resolve at the level asked: the histogram is not the population's shape."""


@dataclass(frozen=True)
class Bands:
    """Rows per band of one QI at one level, and the rows released coarser than that level.

    ``warning`` is set (and was issued as a :class:`CoarseBandsWarning`) when under half the rows resolve
    at this level; ``dp_tables`` are the spec's DP count tables over this QI at this level (``a x b``)."""

    qi: str
    level: str
    counts: pd.Series
    coarser: int
    warning: str | None = None
    dp_tables: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return int(self.counts.sum()) + self.coarser

    @property
    def resolved(self) -> float:
        """Share of the rows placed in a band of this level (1.0 for no rows)."""
        return float(self.counts.sum()) / self.total if self.total else 1.0


def read_codebook(path: str | Path) -> dict[str, Any]:
    """The codebook of the releases under ``path`` (a folder written by ``consume``, a codebook JSON or a
    manifest JSON). The grid depends on the spec only, so any release's codebook serves every release
    of the same spec version; releases of several versions are refused (pass one file instead)."""
    root = Path(path)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*codebook.json") if p.is_file())
    books = []
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        books.append(data.get("codebook", data) if isinstance(data, dict) else data)  # a manifest holds one
    if not books or not isinstance(books[0], dict) or "qis" not in books[0]:
        raise ValueError(f"{root}: no codebook found (a folder written by 'anonstream consume', or its codebook JSON)")
    versions = {str((b.get("spec") or {}).get("version")) for b in books}
    if len(versions) > 1:
        raise ValueError(f"{root}: releases of {len(versions)} spec versions; pass one codebook file")
    return books[0]


def read_utility(path: str | Path) -> pd.DataFrame:
    """The utility reports of the releases under ``path`` (their signed manifests' ``utility``) as one
    table: a row per release, QI and level with ``resolved`` (share of the release's rows placed in a
    band of that level), ``coarser`` (rows above it) and ``tvd`` (distance between the original and the
    released distribution at that level, docs/risk.md). Releases made before the report exist are skipped."""
    root = Path(path)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*manifest.json") if p.is_file())
    rows = []
    for file in files:
        manifest = json.loads(file.read_text(encoding="utf-8"))
        for qi, entry in ((manifest.get("utility") or {}).get("qis") or {}).items():
            rows += [{"release_id": manifest.get("release_id"), "qi": qi, "level": lv["level"], "name": lv["name"],
                      "resolved": lv["resolved"], "coarser": lv["coarser"], "tvd": lv["tvd"]}
                     for lv in entry.get("levels") or []]
    columns = ["release_id", "qi", "level", "name", "resolved", "coarser", "tvd"]
    return pd.DataFrame(rows, columns=columns).astype({"resolved": "float64", "tvd": "float64"})


def band_counts(df: pd.DataFrame, qi: str, level: int | str, codebook: dict[str, Any], dp: Any = None) -> Bands:
    """Rows of ``df`` (released rows, e.g. from ``read_releases``) per band of ``qi`` at ``level`` (a
    number, 0 = original values, or a level name from the codebook: ``"band of width 10"``,
    ``"region"``, ``"month"`` ...). Bands are in the hierarchy's order, empty ones included (numeric
    bands between the lowest and the highest one seen; every node of a table level).

    ``dp``: the spec's ``[dp]`` table (``load_schema(spec).spec.dp``, or its dict), to name the count
    tables that answer the question when under half the rows resolve (the warning says which)."""
    entry = (codebook.get("qis") or {}).get(qi)
    if entry is None or "grid" not in entry:
        raise ValueError(f"the codebook has no grid for '{qi}' (QIs: {', '.join(codebook.get('qis') or {})}); "
                         "releases made before the utility report carry none")
    if qi not in df.columns:
        raise ValueError(f"no column '{qi}' in the data")
    grid = entry["grid"]
    lvl = level_index(grid, level)
    placed = _by_columns(df, qi, lvl, entry) if grid["kind"] == "table" and grid.get("rows") is None \
        else roll_up(df[qi], grid, lvl)
    counts = placed.dropna().value_counts()
    order = _band_order(grid, lvl, list(counts.index))
    out = counts.reindex(order, fill_value=0).astype(int).rename("rows")
    out.index.name = qi
    name = str(grid["levels"][lvl])
    bands = Bands(qi=qi, level=name, counts=out, coarser=int(placed.isna().sum()),
                  dp_tables=dp_tables_for(dp, qi, lvl, name))
    if bands.resolved >= MIN_RESOLVED:
        return bands
    text = (f"only {bands.resolved:.0%} of the rows ({int(out.sum())} of {bands.total}) resolve to '{qi}' at "
            f"'{name}'; the other {bands.coarser} were released coarser, so these bars show the rows released "
            "fine, not the population, and their shape can be the reverse of the truth. ")
    text += (f"The spec's DP count table{'s' if len(bands.dp_tables) > 1 else ''} "
             f"{', '.join(bands.dp_tables)} count{'' if len(bands.dp_tables) > 1 else 's'} every row at this "
             "level (stream.analyst.dataset.read_counts)" if bands.dp_tables
             else "Ask at a coarser level (read_utility shows the share resolved per level)")
    warnings.warn(text, CoarseBandsWarning, stacklevel=2)
    return Bands(qi=qi, level=name, counts=out, coarser=bands.coarser, warning=text, dp_tables=bands.dp_tables)


def dp_tables_for(dp: Any, qi: str, level: int, level_name: str) -> tuple[str, ...]:
    """The groupings of a ``[dp]`` table (a DPSpec or its dict; None: none) that count ``qi`` at ``level``
    (its own column at level 0, else a derived column of ``qi`` at that level number or name), as
    ``a x b x c``, fewest columns first."""
    if dp is None:
        return ()
    data = dp.model_dump() if hasattr(dp, "model_dump") else dict(dp)
    columns: Mapping[str, Any] = data.get("columns") or {}
    names = {qi} if level == 0 else set()
    for col, derived in columns.items():
        if derived.get("qi") == qi and str(derived.get("level")) in {str(level), level_name}:
            names.add(col)
    found = [tuple(g) for g in data.get("groupings") or () if names & set(g)]
    return tuple(" x ".join(g) for g in sorted(found, key=len))


def _by_columns(df: pd.DataFrame, qi: str, level: int, entry: dict[str, Any]) -> pd.Series:
    """A large table's roll-up from the typed columns (its grid travels without rows): the label where
    ``<qi>_level`` is 0 for the values, the ancestor column ``<qi>_<level name>`` between, ``*`` at the top."""
    top = len(entry["grid"]["levels"]) - 1
    if level >= top:
        return pd.Series("*", index=df.index, dtype=object)
    if level == 0:
        return df[qi].astype(object).where(df[f"{qi}_level"] == 0, None)
    column = entry["columns"][1 + level]
    return df[column].astype(object).where(df[column].notna(), None)


def _band_order(grid: dict[str, Any], level: int, seen: list[str]) -> list[str]:
    """The bands of a level in hierarchy order: numeric bands by bound (gaps filled), table nodes as listed."""
    kind = grid["kind"]
    if kind == "table" and grid.get("rows") is not None:
        nodes = list(dict.fromkeys(str(row[level]) for row in grid["rows"]))
        return nodes + sorted(set(seen) - set(nodes))
    if kind == "intervals" and seen:
        bounds = sorted((parse_interval(s) or (float("inf"), 0, True))[0] for s in seen)
        if level > 0 and grid.get("widths") and len(bounds) and bounds[-1] != float("inf"):
            w = float(grid["widths"][level - 1])
            steps = round((bounds[-1] - bounds[0]) / w)
            return [band_label(bounds[0] + i * w, bounds[0] + (i + 1) * w, bool(grid.get("integer")))
                    for i in range(steps + 1)]
        return sorted(seen, key=lambda s: (parse_interval(s) or (float("inf"), 0, True))[0])
    return sorted(seen)
