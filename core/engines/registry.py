"""The explicit engine registry: name -> engine class, plus helpers to validate params and run."""

from __future__ import annotations

import importlib
import time
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from core.encoding import Schema, encode
from core.engines.base import Engine, EngineParams, Progress, Release, no_progress, require_models
from core.errors import ParamsError, UnknownEngineError

# name -> "module:Class". One line per engine; the module is imported on first use.
_ENGINES: dict[str, str] = {
    "optimal": "core.engines.optimal:OptimalEngine",
    "exhaustive": "core.engines.exhaustive:ExhaustiveEngine",
    "datafly": "core.engines.datafly:DataflyEngine",
    "random": "core.engines.random_search:RandomSearchEngine",
    "kgen": "core.engines.kgen:KgenEngine",
    "mondrian": "core.engines.mondrian:MondrianEngine",
    "kmember": "core.engines.kmember:KMemberEngine",
    "lgreedy": "core.engines.lgreedy:LGreedyEngine",
    "ils": "core.engines.ils:ILSEngine",
    "pbg-ea": "core.engines.pbg_ea:PBGEAEngine",
    "cg-kanon": "core.engines.cg_kanon:CGKanonEngine",
    "cg-diverse": "core.engines.cg_diverse:CGDiverseEngine",
}


def engine_names() -> list[str]:
    return list(_ENGINES)


def get_engine(name: str) -> Engine:
    if name not in _ENGINES:
        raise UnknownEngineError(f"unknown engine '{name}'; valid engines: {', '.join(_ENGINES)}")
    module, cls = _ENGINES[name].split(":")
    return getattr(importlib.import_module(module), cls)()


def make_params(engine: Engine | str, values: dict[str, Any] | None = None) -> EngineParams:
    """Validate parameters for an engine; errors name the parameter and its constraint."""
    eng = get_engine(engine) if isinstance(engine, str) else engine
    try:
        params = eng.Params.model_validate({k: v for k, v in (values or {}).items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "params"
        msg = "unknown parameter" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        raise ParamsError(f"engine '{eng.name}' parameter '{field}': {msg}") from None
    require_models(eng, params)  # refuse privacy models the engine cannot guarantee, before any work
    return params


def describe(engine: Engine) -> list[dict[str, Any]]:
    """Each parameter of an engine with its type, default and description."""
    out = []
    for name, f in engine.Params.model_fields.items():
        ann = getattr(f.annotation, "__name__", None) or str(f.annotation).replace("typing.", "")
        out.append({"name": name, "type": ann, "default": f.default, "description": f.description or ""})
    return out


def run(engine: str, frame: pd.DataFrame, schema: Schema, params: dict[str, Any] | EngineParams | None = None,
        seed: int = 0, progress: Progress = no_progress) -> Release:
    """Encode ``frame`` and anonymize it with the named engine (not yet verified)."""
    eng = get_engine(engine)
    p = params if isinstance(params, EngineParams) else make_params(eng, params)
    batch = encode(frame, schema)
    started = time.perf_counter()
    release = eng.anonymize(batch, p, np.random.default_rng(seed), progress)
    object.__setattr__(release, "runtime_s", time.perf_counter() - started)
    return release
