"""The Pareto front of a PBG-EA release, for the release detail page.

The front is part of the engine's diagnostics (``Release.diagnostics["front"]``). When the ledger
stored it (in the manifest or the metrics) the console uses it as stored. When it did not, the
front is **recomputed** from the release's own input: the reports it sampled (released or
suppressed) are still in the pending pool with their stored values, in pool-id order, which is the
order the orchestrator passed them to the engine; the search is re-run with the stored parameters
and the stored seed (``rng = default_rng([seed, 1])``, as :mod:`stream.worker.release` seeds the engine).
PBG-EA is deterministic per seed, so this reproduces the front. The chosen point is the member the
release's own selection policy picks; the result says ``consistent`` only when that member's k
matches the k stored for the release, so a mismatch is visible instead of being hidden.

Only the front (indices per lattice node) leaves this module, never a record.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)


def recompute_front(schema: Any, sample: list[tuple[int, dict[str, Any]]], engine_name: str,
                    params: dict[str, Any], seed: int, k_stored: int | None) -> dict[str, Any]:
    """Re-run the PBG-EA search of a stored release; returns the front rows and the chosen member."""
    from core.encoding import encode
    from core.engines.pbg.engine import PBGParams, front_rows
    from core.engines.registry import get_engine, make_params

    if not sample:
        return {"front": [], "source": "unavailable",
                "note": "the release's sampled reports are no longer in the pending pool"}
    engine = get_engine(engine_name)
    if not hasattr(engine, "search"):
        return {"front": [], "source": "unavailable", "note": f"engine {engine_name} has no front"}
    p = make_params(engine, params)
    assert isinstance(p, PBGParams)  # an engine with a front is PBG-EA
    frame = pd.DataFrame([d for _i, d in sample], index=pd.Index([i for i, _d in sample]))
    batch = encode(frame, schema)
    front, diag = engine.search(batch, p, np.random.default_rng([seed, 1]))
    chosen: int | None
    try:
        chosen = p.policy().select(front)
    except Exception as exc:  # an infeasible policy on the recomputed front: show it, mark nothing
        log.warning("front recompute: selection failed (%s)", type(exc).__name__)
        chosen = None
    rows = front_rows(front, batch.schema.qi_names, chosen)
    consistent = chosen is not None and k_stored is not None and int(front[chosen].k) == int(k_stored)
    return {"front": rows, "objectives": diag.get("objectives"), "policy": str(p.policy()),
            "source": "recomputed", "consistent": consistent, "nodes_evaluated": diag.get("nodes_evaluated")}


def front_points(front: dict[str, Any] | None) -> dict[str, Any]:
    """x/y of the first two objectives per member, and which member was chosen."""
    rows = (front or {}).get("front") or []
    objectives = list((front or {}).get("objectives") or [])
    if not objectives and rows:
        objectives = [k for k in rows[0] if k not in ("levels", "selected")][:2]
    xs = objectives[0] if objectives else None
    ys = objectives[1] if len(objectives) > 1 else None
    pts = []
    for i, r in enumerate(rows):
        pts.append({"x": r.get(xs) if xs else i, "y": r.get(ys) if ys else (r.get(xs) if xs else None),
                    "selected": bool(r.get("selected")), "levels": r.get("levels")})
    return {"x": xs or "member", "y": ys or (xs or "value"), "points": pts}
