"""Load (or, after a fresh install, compile) an engine's numba kernels outside any time budget.

numba compiles a kernel once per argument-type signature and keeps it in its on-disk cache; the
first call in a process still loads it (about 0.1-1 s), and a fresh install or a new data layout
compiles it (several seconds). An anytime engine that meets that inside its budget loses the
budget to the compiler. :func:`warm_up` runs the engine once on a small slice of the very batch
it is about to anonymize, with its budgets cut to a minimum, so every kernel signature the real run
needs is ready before the caller starts the clock. :func:`warm_up_all` does the same for every
engine on a tiny synthetic batch (``anonstream warmup`` after installing).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Mapping

    from core.encoding import EncodedBatch
    from core.engines.base import Engine, EngineParams

log = logging.getLogger(__name__)

_SAMPLE_ROWS = 256


def warm_params(params: EngineParams, caps: Mapping[str, int]) -> EngineParams:
    """``params`` with every work budget cut to its warm-up cap (``caps``: the engine's ``work_budgets``;
    only lowered, never raised; None or 0 means unlimited) and no wall-clock cap.

    A warm-up is bounded by work only: a wall-clock cap stopped a warm-up on a fresh install while it
    was compiling the first kernels, before it reached the others (ILS's 2-opt search was left to
    compile inside the first real run). Every engine with a ``time_limit`` also has a work budget."""
    update: dict[str, float | int] = {}
    for name, cap in caps.items():
        if name in type(params).model_fields:
            current = getattr(params, name)
            if current is None or current == 0 or current > cap:
                update[name] = cap
    if "time_limit" in type(params).model_fields:
        update["time_limit"] = 0
    if "nesting_fallback" in type(params).model_fields:  # the same kernels; no report (or warning) on a sample
        update["nesting_fallback"] = False
    return params.model_copy(update=update)


def warm_up(engine: Engine, batch: EncodedBatch, params: EngineParams, long_lived: bool = False) -> float:
    """Run ``engine`` on the first rows of ``batch`` with cut budgets; returns the seconds spent.

    The result is discarded and nothing about the rows is logged. A warm-up that fails (a sample
    too small for the requirement, say) is ignored: the real run reports its own errors.
    ``long_lived``: a process that will run many searches (a worker) also loads the lattice kernels
    of a lattice engine now; a one-shot command leaves that to the search, which loads them only if
    its work grows past what numpy does as fast (core/lattice/backend.py).
    """
    started = time.perf_counter()
    if long_lived and engine.searches_lattice:
        warm_lattice_kernels()
    rows = np.arange(min(batch.n, max(_SAMPLE_ROWS, 4 * getattr(params, "k", 1))))
    try:
        engine.anonymize(batch.take(rows), warm_params(params, engine.work_budgets), np.random.default_rng(0))
    except Exception as exc:  # any failure only means less was warmed up
        log.debug("warm-up of %s skipped: %s", engine.name, type(exc).__name__)
    return time.perf_counter() - started


def tiny_batch() -> EncodedBatch:
    """A 64-row synthetic batch with a numeric QI, a categorical QI and a sensitive attribute."""
    import pandas as pd

    from core.encoding import Schema, encode
    from core.schema import parse_spec

    spec = parse_spec({
        "name": "warm-up",
        "qi": [{"name": "age", "type": "numeric", "hierarchy": {"widths": [10, 20], "domain": [0, 100]}},
               {"name": "area", "type": "categorical", "hierarchy": {"tree": {"N": ["a", "b"], "S": ["c", "d"]}}}],
        "sensitive": {"name": "offence", "severity": {"x": 1, "y": 2, "z": 3}},
    })
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(0, 100, 64).astype(str), "area": rng.choice(list("abcd"), 64),
                          "offence": rng.choice(list("xyz"), 64)})
    return encode(frame, Schema.from_spec(spec))


def warm_up_all(names: list[str] | None = None) -> dict[str, float]:
    """Warm up the named engines (all by default) on :func:`tiny_batch`; seconds per engine."""
    from core.engines.registry import engine_names, get_engine, make_params

    batch = tiny_batch()
    out: dict[str, float] = {}
    for name in names or engine_names():
        engine = get_engine(name)
        if engine.searches_lattice and "lattice kernels" not in out:
            out["lattice kernels"] = warm_lattice_kernels(batch)
        values: dict[str, object] = {"k": 2}
        if "l" in engine.models and name.startswith("cg-diverse"):
            values["l"] = 2
        out[name] = warm_up(engine, batch, make_params(engine, values))
    return out


def warm_lattice_kernels(batch: EncodedBatch | None = None) -> float:
    """Load (after a fresh install: compile) the lattice's numba kernels; returns the seconds spent.

    A search starts on numpy and moves to the kernels only once they pay (core/lattice/backend.py),
    so a warm-up run of a full-domain engine on a small slice never touches them: this evaluates
    every node of the tiny batch's lattice on the numba backend, with and without a sensitive
    attribute, and splits one roll-up in two (core/lattice/threads.py), so that ``anonstream warmup``
    leaves every kernel in numba's cache.
    """
    from core.lattice import Lattice, NodeEvaluator
    from core.lattice.threads import warm as warm_split
    from core.privacy import PrivacyRequirement

    started = time.perf_counter()
    batch = batch if batch is not None else tiny_batch()
    for req in (PrivacyRequirement(k=4, max_suppression=0.5), PrivacyRequirement(k=2, l=2, max_suppression=0.5)):
        evaluator = NodeEvaluator(batch, req, backend="numba")
        nodes = [tuple(int(v) for v in n) for n in Lattice(batch.heights).all_nodes()]
        for node in sorted(nodes, key=lambda n: -sum(n)):  # most general first, as a search seeds them
            evaluator.prepare_projection(node)
            evaluator.evaluate(node)
        warm_split(evaluator)  # the two-thread roll-up of large tables, which a tiny batch never reaches
    return time.perf_counter() - started
