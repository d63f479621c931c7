"""The codebook of a release: what every published column means and how the QIs were generalized.

It goes into the signed manifest (``manifest["codebook"]``) and beside each consumed release as
JSON and Markdown (:mod:`stream.wire.codebook`). Contents:

* ``spec``: the spec's name and version, the SHA-256 of its canonical content (:func:`spec_version`);
* ``columns``: every published column with its type and meaning, in publication order;
* ``qis``: per QI its type, hierarchy kind, level names and the share of released rows at each
  level (shares sum to 1 per QI when rows were released);
* ``label_format``: the interval notation; ``suppressed``: rows the engine suppressed (not published)
  and published rows whose QIs are all ``*``;
* per QI its ``grid`` (:mod:`core.columns.rollup`: what an analyst needs to roll labels up to a level), and
  ``utility``: one paragraph, generated from the release's utility report, on what the release preserves
  and what it distorts (:func:`core.metrics.utility.utility_paragraph`; None when no report was given).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import pandas as pd

from core.codes import Codes, carried
from core.columns.base import label_codes
from core.columns.interpret import Interpreter
from core.columns.rollup import grid_of
from core.columns.typed import CLASS_ID, interpreters, release_columns
from core.encoding import Schema
from core.schema import DatasetSpec

LABEL_FORMAT = ("intervals use standard notation: [a, b] includes both bounds, [a, b) excludes b; bands of "
                "whole-number QIs are written closed ([30, 34] is 30 <= x <= 34); a local-recoding range is the "
                "closed hull [lo, hi] of its values; {a,b} is a set of original values; * is any value")


def spec_version(spec: DatasetSpec) -> str:
    """SHA-256 of the spec's canonical content (sorted JSON; table hierarchies by their rows, not file paths)."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            # a spec without [dp] (or station_map) keeps the version it had before the field existed
            return {k: strip(v) for k, v in node.items() if k != "csv" and not (k == "dp" and v is None)
                    and not (k == "station_map" and not v)}
        if isinstance(node, list | tuple):
            return [strip(v) for v in node]
        return node

    data = spec.model_dump(mode="json")
    if not spec.model_fields_set & {"utility"} or data["utility"] == {"crosstab": None}:
        data.pop("utility")  # a spec without [utility] keeps the version it had before the field existed
    text = json.dumps(strip(data), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def level_shares(interp: Interpreter, labels: pd.Series, coded: Codes | None = None) -> list[dict[str, Any]]:
    """Rows and share of the released rows at each level of one QI (levels with no rows left out);
    ``coded``: the labels' codes, if known (text, none missing)."""
    codes, texts = (coded.codes, list(coded.uniques)) if coded is not None and coded.clean else label_codes(labels)
    counts = np.bincount(codes, minlength=len(texts))
    names = interp.levels()
    tally: dict[Any, int] = {}
    for label, n in zip(texts, counts, strict=True):
        if not n:
            continue
        level = interp.level(label)
        key = "other" if level is None else level
        tally[key] = tally.get(key, 0) + int(n)
    total = sum(tally.values())
    order = sorted(tally, key=lambda k: (not isinstance(k, int), k if isinstance(k, int) else 0, str(k)))
    return [{"level": k, "name": names[k] if isinstance(k, int) and k < len(names) else str(k),
             "rows": tally[k], "share": tally[k] / total} for k in order]


def build_codebook(schema: Schema, published: pd.DataFrame, *, suppressed: int,
                   context: list[str] | tuple[str, ...] = (), with_class_id: bool = True,
                   utility: str | None = None) -> dict[str, Any]:
    """The codebook of a release whose published table (:func:`core.columns.typed.typed_columns`) is ``published``;
    ``utility`` is the paragraph of its utility report."""
    spec = schema.spec
    cols = ([CLASS_ID] if with_class_id else []) + release_columns(schema, context)
    qis = {}
    for interp in interpreters(schema):
        qis[interp.name] = {
            "type": interp.qi.type.value, "hierarchy": interp.qi.hierarchy.kind, "levels": interp.levels(),
            "columns": [interp.name, *(c.name for c in interp.columns())],
            "shares": level_shares(interp, published[interp.name], carried(published, interp.name))
            if len(published) else [],
            "grid": grid_of(interp),
        }
    all_top = int(published["suppressed"].sum()) if "suppressed" in published and len(published) else 0
    return {
        "spec": {"name": spec.name, "version": spec_version(spec)},
        "columns": [c.as_dict() for c in cols],
        "qis": qis,
        "label_format": LABEL_FORMAT,
        "rows": len(published),
        "suppressed": {"not_published": int(suppressed), "published_all_star": all_top},
        "utility": utility,
    }
