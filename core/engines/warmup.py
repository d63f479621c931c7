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

import importlib.abc
import importlib.util
import logging
import sys
import time
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from core.encoding import EncodedBatch
    from core.engines.base import Engine, EngineParams

log = logging.getLogger(__name__)

# Budget-like parameters and the value a warm-up uses (only lowered, never raised; None/0 = unlimited).
_WARM_CAPS: dict[str, float | int] = {"time_limit": 0.2, "max_iterations": 1, "iterations": 1, "passes": 1,
                                      "max_evaluations": 20, "generations": 1}
_SAMPLE_ROWS = 256
_NUMBA_EXTRAS = ("scipy.linalg", "cffi")  # optional numba imports no kernel of ours needs
_NUMBA_PROBES = ("numba.np.arraymath", "numba.core.typing.cffi_utils")  # the numba modules that import them


def warm_params(params: EngineParams) -> EngineParams:
    """``params`` with every budget-like field cut to the warm-up cap."""
    update: dict[str, float | int] = {}
    for name, cap in _WARM_CAPS.items():
        if name in type(params).model_fields:
            current = getattr(params, name)
            if current is None or current == 0 or current > cap:
                update[name] = cap
    return params.model_copy(update=update)


def warm_up(engine: Engine, batch: EncodedBatch, params: EngineParams, *, one_shot: bool = False) -> float:
    """Run ``engine`` on the first rows of ``batch`` with cut budgets; returns the seconds spent.

    The result is discarded and nothing about the rows is logged. A warm-up that fails (a sample
    too small for the requirement, say) is ignored: the real run reports its own errors.

    ``one_shot``: the process runs the engine once and exits (``anonstream anonymize``): numba's
    library is loaded without the optional extras no kernel of ours uses (:func:`load_numba_lean`).
    The sample still runs, so that the engine's ``runtime_s`` stays the engine's own time (skipping
    it saves about 0.05 s on Adult and moves the kernels' loading into ``runtime_s``).
    """
    started = time.perf_counter()
    if one_shot:
        load_numba_lean()
    _run_sample(engine, batch, params)
    return time.perf_counter() - started


def _run_sample(engine: Engine, batch: EncodedBatch, params: EngineParams) -> None:
    rows = np.arange(min(batch.n, max(_SAMPLE_ROWS, 4 * getattr(params, "k", 1))))
    try:
        engine.anonymize(batch.take(rows), warm_params(params), np.random.default_rng(0))
    except Exception as exc:  # any failure only means less was warmed up
        log.debug("warm-up of %s skipped: %s", engine.name, type(exc).__name__)


def load_numba_lean() -> None:
    """From now on in this process, numba loads its library of numpy implementations without the
    optional extras no kernel of ours uses.

    The first kernel call of a process, cached or not, loads that library; it imports
    ``scipy.linalg`` (to check for a BLAS, about 0.2 s) and ``cffi`` with its C parser (0.1 s), for
    ``np.dot``/``np.linalg`` and cffi functions. While numba's two modules that do so run, both are
    hidden (an import of them fails), then visible again; numba then reports no BLAS in this
    process, so this is only for a process that runs our kernels and exits. Nothing is imported
    here: an engine without numba kernels never loads numba."""
    if not any(isinstance(f, _LeanNumbaFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _LeanNumbaFinder())


class _LeanNumbaFinder(importlib.abc.MetaPathFinder):
    """Finds numba's modules that probe the optional extras and runs them with the extras hidden."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _NUMBA_PROBES:
            return None
        sys.meta_path.remove(self)  # find the real module, then put this finder back
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _HidingLoader(spec.loader)
        return spec


class _HidingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        hidden = [name for name in _NUMBA_EXTRAS if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # an import of it fails
        try:
            self.loader.exec_module(module)
        finally:
            for name in hidden:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]


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
        values: dict[str, object] = {"k": 2}
        if "l" in engine.models and name.startswith("cg-diverse"):
            values["l"] = 2
        out[name] = warm_up(engine, batch, make_params(engine, values))
    return out
