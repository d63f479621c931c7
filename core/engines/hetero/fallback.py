"""Nested bands with a per-QI fallback to free ranges / sets (issue 39), for kmember, lgreedy and ils.

A k-member class is a tight group of k rows; the smallest hierarchy node covering it is often much
wider (two neighbouring ages across a band boundary get the 20-year node or ``*``; two races get
``*``). The search already minimises the nested loss (:func:`core.engines.hetero.data.nested_data`),
yet on the bench's tables the nested release still cost 3-7x the engine's free release, so:

1. run the engine with nested bands (the release it has always made), and with free bands on a copy
   of the same random generator (what ``bands = "free"`` with the same seed releases);
2. compare per QI the loss of the labels (:func:`core.engines.nesting.label_qi_loss`); the QI above
   :data:`~core.engines.nesting.TARGET` times its free loss that loses most over it (kmember, lgreedy;
   ILS: every QI above, as each round is a whole search) falls back: the search runs again with that
   QI's free loss in its objective and the release labels it with free ranges / sets, the other QIs
   staying nested;
3. repeat while a nested QI is above the target (at most once per QI), so every QI left nested is
   within it. When every QI falls back, the free release is the release.

``diagnostics["nesting_fallback"]`` names each QI that fell back with its nested loss (the attempt
that went over), its free loss, its released loss and why; it is ``{}`` when all QIs stayed nested.
A free range breaks "bands never partly overlap" for that QI (docs/stream.md, nested bands).
Deterministic per seed: the free run uses a copy of the generator, the attempts continue on it. The
free run of step 1 runs beside the nested one on core's second thread while a core is spare
(core/parallel.py), without reporting progress; the runs share no mutable input, so the release is the
same on one thread or two (``tests/core/engines/test_nesting_threads.py``).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from core.encoding import EncodedBatch
from core.engines.base import BandsParams, Progress, Release, no_progress
from core.engines.nesting import TARGET, fallback_entry, label_qi_loss, over_target, top_rows, warn_fallback
from core.errors import InputDataError
from core.parallel import beside

P = TypeVar("P", bound=BandsParams)
Run = Callable[[P, frozenset[str], np.random.Generator, Progress], Release]
"""One run of an engine: its params (bands nested or free), the QIs released free, the generator, its progress."""


def _why(batch: EncodedBatch, q: str, nested: Release, free: Release, nested_loss: float, free_loss: float) -> str:
    kind = next(x.kind for x in batch.qis if x.name == q)
    form = "ranges" if kind in ("numeric", "date") else "sets"
    ratio = f"{nested_loss / free_loss:.2f}x" if free_loss > 0 else "free loss 0"
    return (f"nested labels cost {ratio} the free {form} (> {TARGET}x): the smallest {q} node over a class of "
            f"close rows is much wider than their {form[:-1]} ({top_rows(nested.rows, q)} rows at '*' nested, "
            f"{top_rows(free.rows, q)} free); released as free {form}")


def nested_with_fallback(engine: str, batch: EncodedBatch, params: P, rng: np.random.Generator,
                         run: Run[P], started: float, progress: Progress = no_progress,
                         one_at_a_time: bool = True) -> Release:
    """The nested release of ``run`` with the per-QI fallback of the module docstring (``started``: the
    engine's start, for the release's run time). ``one_at_a_time``: each round releases free only the QI
    that loses most over its free labels (the others may come within the target once it is free);
    otherwise every QI over the target at once (fewer runs, for a costly search)."""
    free_rng, free_params = copy.deepcopy(rng), params.model_copy(update={"bands": "free"})
    release, free_run = beside(lambda: run(params, frozenset(), rng, progress),
                               lambda stop: run(free_params, frozenset(), free_rng, stop))
    try:
        free = free_run()
    except InputDataError as exc:  # values that cannot be written in a set label: no free reference
        note = {**release.diagnostics, "nesting_fallback": {}, "nesting_check": f"not measured: {exc}"}
        return dataclasses.replace(release, diagnostics=note)
    free_loss = label_qi_loss(batch, free.rows)
    loss = label_qi_loss(batch, release.rows)
    free_qis: frozenset[str] = frozenset()
    went_over: dict[str, tuple[float, str]] = {}
    while over := over_target({q: v for q, v in loss.items() if q not in free_qis}, free_loss):
        if one_at_a_time:  # the QI that loses most over its free labels first
            over = [max(over, key=lambda q: loss[q] - free_loss[q])]
        for q in over:
            went_over[q] = (loss[q], _why(batch, q, release, free, loss[q], free_loss[q]))
        free_qis = free_qis | frozenset(over)
        if len(free_qis) == batch.d:  # every QI free: the free release is the release
            release = dataclasses.replace(free, params=params.model_dump())
        else:
            release = run(params, free_qis, rng, progress)
        loss = label_qi_loss(batch, release.rows)
    fallback = {q: fallback_entry(q, went_over[q][0], free_loss[q], loss[q], went_over[q][1])
                for q in batch.schema.qi_names if q in went_over}
    warn_fallback(engine, fallback)
    diag: dict[str, Any] = {**release.diagnostics, "nesting_fallback": fallback}
    return dataclasses.replace(release, diagnostics=diag, runtime_s=time.perf_counter() - started)
