"""The explicit engine registry: name -> engine class, plus helpers to validate params and run.

Importing this module is cheap (standard library and the error classes only): engine modules,
numpy, pandas and numba load when an engine is first asked for.
"""

from __future__ import annotations

import importlib
import json
import time
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from core.errors import ParamsError, UnknownEngineError

if TYPE_CHECKING:
    import pandas as pd

    from core.encoding import Schema
    from core.engines.base import Engine, EngineParams, Progress, Release

# name -> "module:Class". One line per engine; the module is imported on first use.
_ENGINES: dict[str, str] = {
    "optimal": "core.engines.fulldomain.optimal:OptimalEngine",
    "exhaustive": "core.engines.fulldomain.exhaustive:ExhaustiveEngine",
    "datafly": "core.engines.fulldomain.datafly:DataflyEngine",
    "random": "core.engines.fulldomain.random_search:RandomSearchEngine",
    "kgen": "core.engines.kgen.engine:KgenEngine",
    "mondrian": "core.engines.mondrian.engine:MondrianEngine",
    "kmember": "core.engines.hetero.kmember:KMemberEngine",
    "lgreedy": "core.engines.hetero.lgreedy:LGreedyEngine",
    "ils": "core.engines.hetero.ils:ILSEngine",
    "pbg-ea": "core.engines.pbg.engine:PBGEAEngine",
    "cg-kanon": "core.engines.cg.kanon:CGKanonEngine",
    "cg-diverse": "core.engines.cg.diverse:CGDiverseEngine",
    "local-recode": "core.engines.fulldomain.local_recode:LocalRecodeEngine",
    "castle": "core.engines.castle.engine:CastleEngine",
}

def engine_names() -> list[str]:
    return list(_ENGINES)


def privacy_defaults() -> dict[str, dict[str, Any]]:
    """Each engine's privacy defaults that differ from PrivacyRequirement's (k 5, max_suppression 0, no l,
    t or risk bound), read from its Params' ``privacy_defaults``; engines without any are left out.
    docs/operations.md's table "Privacy defaults by engine" is generated from it."""
    out = {name: dict(get_engine(name).Params.privacy_defaults) for name in _ENGINES}
    return {name: values for name, values in out.items() if values}


def engine_module(name: str) -> str:
    """The module that defines engine ``name``, without importing it."""
    if name not in _ENGINES:
        raise UnknownEngineError(f"unknown engine '{name}'; valid engines: {', '.join(_ENGINES)}")
    return _ENGINES[name].split(":")[0]


def get_engine(name: str) -> Engine:
    module, cls = engine_module(name), _ENGINES[name].split(":")[1]
    return getattr(importlib.import_module(module), cls)()


def make_params(engine: Engine | str, values: Mapping[str, Any] | None = None, requirement: Any = None) -> EngineParams:
    """An engine's parameters, validated: the one place they are built (the stream, the batch commands,
    the benchmarks and the tests all come here); errors name the parameter and its constraint.

    ``requirement`` gives the privacy fields (those of :class:`~core.privacy.PrivacyRequirement`: ``k``,
    ``l``, ..., ``max_suppression``, ``max_risk``, ``avg_risk``) from a requirement, the stream's privacy
    settings, parsed command-line options or a mapping; ``values`` (any parameter of the engine) win over
    it. A parameter left out or None takes the engine's default (its Params' ``privacy_defaults``, else the
    field's).
    """
    from pydantic import ValidationError

    from core.engines.base import require_models
    from core.privacy.requirement import PrivacyRequirement

    eng = get_engine(engine) if isinstance(engine, str) else engine
    merged: dict[str, Any] = {}
    if requirement is not None:
        get = requirement.get if isinstance(requirement, Mapping) else (lambda n: getattr(requirement, n, None))
        merged = {name: get(name) for name in PrivacyRequirement.model_fields}
    merged.update(values or {})
    try:
        params = eng.Params.model_validate({k: v for k, v in merged.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "params"
        msg = "unknown parameter" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        raise ParamsError(f"engine '{eng.name}' parameter '{field}': {msg}") from None
    require_models(eng, params)  # refuse privacy models the engine cannot guarantee, before any work
    return params


# Parameters that only mean something for a privacy model; hidden for engines that refuse the model.
_MODEL_PARAMS = {"l": ("l", "l_kind", "c"), "t": ("t", "t_distance"), "max_risk": ("max_risk",),
                 "avg_risk": ("avg_risk",)}


def accepted_fields(engine: Engine) -> list[str]:
    """The parameter names an engine accepts (those of privacy models it refuses are left out)."""
    refused = {f for model, fields in _MODEL_PARAMS.items() if model not in engine.models for f in fields}
    return [name for name in engine.Params.model_fields if name not in refused]


def type_text(annotation: Any) -> str:
    """A parameter type as a user reads it: ``a | b`` for allowed values, ``list of float``, ``int``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(str(a) for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        inner = [type_text(a) for a in args if a is not type(None)]
        return " | ".join(inner) + (" (optional)" if len(inner) < len(args) else "")
    if origin in (tuple, list, set, frozenset):
        return "list of " + (type_text(args[0]) if args else "values")
    if origin is dict:
        return "table of " + (type_text(args[1]) if len(args) == 2 else "values")
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def value_text(value: Any) -> str:
    """A default as it would be typed after ``--param NAME=`` (JSON for lists and tables)."""
    if value is None:
        return "(unset)"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list | dict | set | frozenset):
        return json.dumps(list(value) if isinstance(value, tuple | set | frozenset) else value)
    return str(value)


def bounds_text(metadata: list[Any]) -> str:
    """Numeric constraints (``>= 1``, ``<= 1``) from a pydantic field's metadata."""
    parts = []
    for item in metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            bound = getattr(item, attr, None)
            if bound is not None:
                parts.append(f"{sign} {bound}")
    return ", ".join(parts)


def describe(engine: Engine) -> list[dict[str, Any]]:
    """Each parameter the engine accepts: name, type (allowed values), typeable default, bounds, description."""
    out = []
    for name in accepted_fields(engine):
        f = engine.Params.model_fields[name]
        default = value_text(engine.Params.default_of(name))
        out.append({"name": name, "type": type_text(f.annotation), "default": default,
                    "bounds": bounds_text(list(f.metadata)), "description": f.description or ""})
    return out


def run(engine: str, frame: pd.DataFrame, schema: Schema, params: dict[str, Any] | EngineParams | None = None,
        seed: int = 0, progress: Progress | None = None) -> Release:
    """Encode ``frame`` and anonymize it with the named engine (not yet verified)."""
    import numpy as np

    from core.encoding import encode
    from core.engines.base import EngineParams, no_progress

    eng = get_engine(engine)
    p = params if isinstance(params, EngineParams) else make_params(eng, params)
    batch = encode(frame, schema)
    started = time.perf_counter()
    release = eng.anonymize(batch, p, np.random.default_rng(seed), progress or no_progress)
    object.__setattr__(release, "runtime_s", time.perf_counter() - started)
    return release
