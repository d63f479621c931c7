"""Shared entry point of both CG engines: checks, setup of the normalised objective, search, release."""

from __future__ import annotations

import math
import time

import numpy as np

from core.encoding import EncodedBatch
from core.engines.base import Engine, Progress, Release, require_models
from core.engines.cg.params import (
    CGDiverseParams,
    CGParams,
    cap_of,
    effective_weights,
    k_min_of,
    require_batch,
    severities,
)
from core.engines.cg.problem import build_problem
from core.engines.cg.release import build_release
from core.engines.cg.search import run_search
from core.engines.cg.state import DIVERSE, KANON, Setup
from core.engines.mondrian.engine import mondrian_parts
from core.errors import InfeasibleError
from core.privacy import PrivacyRequirement
from core.privacy.requirement import suppression_budget

EPS = 0.01  # weight of the tie-breaking sum in max(pr, lm) + EPS * (pr + lm)
SKIP_FORBIDDEN = 1e3  # CG-Kanon: suppressing a row is only chosen when no segmentation exists


def make_setup(mode: int, n: int, row_sev: np.ndarray, sens: np.ndarray, m: int, kmin: int, cap: int,
               params: CGParams, seed_largest: int = 0) -> tuple[Setup, dict[str, float | bool]]:
    """Bounds and the normalisation of both terms (``seed_largest``: largest class of the seed partition)."""
    total = float(row_sev.sum())
    info: dict[str, float | bool] = {}
    if mode == KANON:
        span = total * (1.0 / kmin - 1.0 / cap)
        pr_scale = 1.0 / span if span > 0 else 0.0
        pr_offset, lmin, ltarget = 0.0, 1, 1.0
        skip = np.full(n, SKIP_FORBIDDEN)
        skip_lm = skip_pr = skip
    else:
        assert isinstance(params, CGDiverseParams) and params.l is not None  # cg-diverse always has an l
        lmin = params.l
        asd = total / n
        present = len(np.unique(sens))
        ltarget = float(min(max(asd, lmin + 1), present))
        f_lo = 1.0 / ltarget
        f_hi = 1.0 / lmin if ltarget > lmin else 1.0
        pr_scale = 1.0 / (total * (f_hi - f_lo))
        pr_offset = f_lo / (f_hi - f_lo)
        freq = np.bincount(sens, minlength=m) / n
        # the severity-weighted own-offence frequency a random class of ``cap`` rows would have
        floor = float((row_sev * (1.0 / cap + (cap - 1.0) / cap * freq[sens])).sum() / total)
        reachable = f_lo >= floor
        if not reachable and params.degrade:
            # Graceful degradation: the target cannot be reached even by random classes of the largest
            # size, and chasing it only pushes rows into the top class. Enforce k_min and distinct
            # l_min as constraints and minimise loss (the frequency term is dropped).
            pr_scale, pr_offset = 0.0, 0.0
            # neighbouring classes may merge: up to the largest class Mondrian needed, within the factor
            cap = max(cap, min(seed_largest, cap_of(kmin, params.degraded_cap_factor)))
        skip_lm = np.full(n, 1.0 / n)
        skip_pr = row_sev * freq[sens] * pr_scale
        info = {"asd": asd, "l_target": ltarget, "distinct_offences": present, "frequency_floor": floor,
                "target_reachable": reachable, "degraded": bool(not reachable and params.degrade)}
    setup = Setup(mode=mode, kmin=kmin, cap=cap, lmin=lmin, ase_rule=bool(getattr(params, "ase_rule", False)),
                  ltarget=float(math.floor(ltarget)), lm_scale=1.0 / n, pr_scale=pr_scale, pr_offset=pr_offset,
                  eps=EPS, skip_lm=skip_lm, skip_pr=skip_pr)
    return setup, info


def mondrian_seed(batch: EncodedBatch, kmin: int, lmin: int | None, nested: bool = False) -> np.ndarray | None:
    """Class id per row of Mondrian's partition under (k_min, distinct l_min), classes numbered in
    Mondrian's (locality-preserving) order; None when Mondrian finds no partition. ``nested``: cut on
    hierarchy nodes."""
    try:
        parts = mondrian_parts(batch, PrivacyRequirement(k=kmin, l=lmin, l_kind="distinct"), nested=nested)
    except InfeasibleError:
        return None
    cls = np.empty(batch.n, np.int64)
    for i, rows in enumerate(parts):
        cls[rows] = i
    return cls


def anonymize_cg(engine: Engine, mode: int, batch: EncodedBatch, params: CGParams, rng: np.random.Generator,
                 progress: Progress) -> Release:
    started = time.perf_counter()
    require_models(engine, params)
    row_sev = severities(batch, engine.name)
    kmin, smin = k_min_of(params.k, row_sev)
    require_batch(batch, kmin, params.k, smin)
    cap = cap_of(kmin, params.cap_factor)
    sens = np.asarray(batch.sensitive_codes, np.int64)
    lmin = params.l if mode == DIVERSE else None
    if lmin is not None:  # DIVERSE: CGDiverseParams.l is an int >= 2
        present = len(np.unique(sens))
        if present < lmin:
            raise InfeasibleError(f"batch has {present} distinct offence(s) but l={lmin}; no class can be "
                                  f"{lmin}-diverse", reason="infeasible")
    weights = effective_weights(batch, params.weights)
    problem = build_problem(batch, weights, row_sev, nested=params.bands == "nested")
    setup, info = make_setup(mode, batch.n, row_sev, sens, problem.m, kmin, cap, params)
    nested = params.bands == "nested"  # nested: Mondrian's node-aligned classes are a third ordering
    seed = mondrian_seed(batch, kmin, lmin, nested) if info.get("degraded") or nested else None
    if seed is not None and info.get("degraded"):
        setup, info = make_setup(mode, batch.n, row_sev, sens, problem.m, kmin, cap, params,
                                 int(np.bincount(seed).max()))
    cap = setup.cap
    progress(0.05, f"k_min={kmin}, cap={cap}")
    result = run_search(problem, setup, params, rng, started, progress, seed)
    state = result.state
    allowed = suppression_budget(params.max_suppression, batch.n)
    if state.suppressed > allowed:
        raise InfeasibleError(
            f"class-size cap {cap} cannot hold every row in classes of {kmin}..{cap}: {state.suppressed} rows "
            f"would be suppressed but max_suppression={params.max_suppression} allows {allowed}; raise "
            "cap_factor (>= 2 never suppresses) or max_suppression", reason="infeasible")
    requirement = PrivacyRequirement(k=kmin, l=lmin, l_kind="distinct", max_suppression=params.max_suppression)
    curve = result.curve
    diagnostics = {
        "k_cons": params.k, "k_min": kmin, "min_severity": smin, "cap": cap, "l_min": lmin,
        "weights": dict(zip(batch.schema.qi_names, [float(w) for w in weights], strict=True)),
        "loss_curve": [(c[0], c[1]) for c in curve],
        "curve": [list(c) for c in curve],
        "start_objective": curve[0][1], "final_objective": curve[-1][1],
        "reduction_from_start": 1.0 - curve[-1][1] / curve[0][1] if curve[0][1] > 0 else 0.0,
        "regular_classes": state.C, "top_class_size": state.top_size, "suppressed": state.suppressed,
        **info, **result.info,
    }
    progress(1.0, f"objective {state.objective():.4f}")
    return build_release(engine.name, batch, problem, state, params, requirement, weights, started, diagnostics)
