"""Leaf codes for the delay mode that do not change between micro-batches, nor across restarts.

The batch encoding (:func:`core.encoding.encode`) numbers the leaves of numeric, date and masked QIs by the
values present in each batch, so the same value gets another code in the next batch. A CASTLE stream keeps
codes of tuples and clusters across micro-batches (and in its saved state), so the delay mode codes leaves
itself (:class:`LeafCoder`):

* an **ordered** QI (numeric) needs ``integer = true`` and a declared ``domain``: its leaves are every whole
  number of the domain, in order (so intervals of leaves are intervals of values);
* an **unordered** QI (categorical, masked) numbers its values in order of first arrival, a dictionary kept
  in the saved state: a new value appends a code, an old value keeps its own;
* a date QI is refused at start-up (its leaves would be every day of an unbounded domain).

The :class:`~core.engines.castle.space.Space` is rebuilt from these leaves with the spec's hierarchies; an
unordered QI's costs count the values seen so far (as the batch encoding counts those present).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from core.encoding import EncodedBatch, Schema
from core.engines.castle.space import Space
from core.errors import ParamsError


def ordered_domain(schema: Schema, name: str) -> np.ndarray | None:
    """The whole numbers of a numeric QI's declared domain; None for an unordered QI. Refuses
    (:class:`ParamsError`) a QI the delay mode cannot code stably."""
    q = next(q for q in schema.spec.qi if q.name == name)
    h = schema.hierarchies[name]
    if q.type == "numeric":
        domain, integer = getattr(h, "domain", None), getattr(h, "integer", False)
        if domain is None or not integer:
            raise ParamsError(f"delay mode needs QI '{name}' to declare `integer = true` and a `domain` (its "
                              "leaves must not depend on the reports seen)", reason="invalid-setting")
        return np.arange(math.ceil(float(domain[0])), math.floor(float(domain[1])) + 1, dtype=np.int64)
    if q.type == "date":
        raise ParamsError(f"delay mode cannot code date QI '{name}' stably; generalise it to a numeric or "
                          "categorical QI in the spec", reason="invalid-setting")
    return None


def check_delay(settings: Any, schema: Schema) -> None:
    """Refuse, in one line, what delay mode cannot keep (checked at a worker's start): l other than distinct,
    t-closeness, a QI without stable leaf codes."""
    if (settings.privacy.l or 1) > 1 and settings.privacy.l_kind != "distinct":
        raise ParamsError("delay mode (ANONSTREAM_DELAY__ENABLED) enforces distinct l only: set "
                          "ANONSTREAM_PRIVACY__L_KIND=distinct or release by window", reason="invalid-setting")
    if settings.privacy.t is not None:
        raise ParamsError("delay mode (ANONSTREAM_DELAY__ENABLED) cannot enforce t-closeness: unset "
                          "ANONSTREAM_PRIVACY__T or release by window", reason="invalid-setting")
    LeafCoder(schema)  # a QI that cannot be coded stably is refused here


class LeafCoder:
    """Stable leaf codes per QI; ``values`` (unordered QIs' dictionaries) is what the saved state keeps."""

    def __init__(self, schema: Schema, values: dict[str, list[str]] | None = None) -> None:
        self.schema = schema
        self.names = list(schema.qi_names)
        self.ordered = {n: ordered_domain(schema, n) for n in self.names}
        self.values: dict[str, list[str]] = {n: list((values or {}).get(n, [])) for n in self.names
                                             if self.ordered[n] is None}
        self._index = {n: {v: i for i, v in enumerate(vs)} for n, vs in self.values.items()}
        self._space: Space | None = None

    def codes(self, rows: list[dict[str, Any]]) -> np.ndarray:
        """Leaf codes (n, d) of ``rows`` (report data), adding unseen values of unordered QIs."""
        out = np.zeros((len(rows), len(self.names)), dtype=np.int32)
        for a, name in enumerate(self.names):
            dom = self.ordered[name]
            if dom is not None:
                vals = np.array([int(float(r[name])) for r in rows], dtype=np.int64)
                out[:, a] = np.clip(vals - dom[0], 0, len(dom) - 1)
                continue
            index = self._index[name]
            for i, r in enumerate(rows):
                v = str(r[name]).strip()
                if v not in index:
                    index[v] = len(self.values[name])
                    self.values[name].append(v)
                    self._space = None
                out[i, a] = index[v]
        return out

    def space(self) -> Space:
        """The space over the current leaves (rebuilt when a new value arrived)."""
        if self._space is None:
            self._space = self._build()
        return self._space

    def _build(self) -> Space:
        spec = self.schema.spec
        qis, perms = [], []
        for name in self.names:
            dom = self.ordered[name]
            series = pd.Series(dom) if dom is not None else pd.Series(self.values[name] or ["?"], dtype=object)
            q = self.schema.hierarchies[name].encode(series, spec.unknown)
            qis.append(q)
            perms.append(np.asarray(q.codes, dtype=np.int64))  # our leaf i is the encoder's leaf perms[a][i]
        batch = EncodedBatch(schema=self.schema, frame=pd.DataFrame(), qis=tuple(qis),
                             weights=np.array(spec.weights, dtype=np.float64), sensitive_codes=None,
                             sensitive_labels=None, severity=None)
        space = Space.from_batch(batch)
        width = max(len(p) for p in perms)
        maps = np.zeros((space.maps.shape[0], space.maps.shape[1], width), dtype=space.maps.dtype)
        vals = np.zeros((space.vals.shape[0], width), dtype=space.vals.dtype)
        for a, perm in enumerate(perms):
            maps[a, :, :len(perm)] = space.maps[a][:, perm]
            vals[a, :len(perm)] = space.vals[a][perm]
        return dataclasses.replace(space, maps=maps, vals=vals)
