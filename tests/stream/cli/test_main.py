"""The CLI imports only what a command uses, and ``engines`` explains each engine in typeable terms."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from core.engines.registry import engine_names, get_engine, make_params
from core.engines.warmup import tiny_batch, warm_params, warm_up

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("numpy", "pandas", "numba", "pydantic", "scipy")


def _run(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})


def test_help_imports_no_command_module_and_no_heavy_library() -> None:
    proc = _run("import sys\nfrom stream.cli.main import build_parser\ntext = build_parser().format_help()\n"
                f"print([m for m in {HEAVY!r} if m in sys.modules], 'anonymize' in text, 'warmup' in text)")
    assert proc.stdout.split() == ["[]", "True", "True"]


def _engines(cache: Path) -> subprocess.CompletedProcess:
    code = ("import sys\nfrom stream.cli.main import main\nrc = main(['engines'])\n"
            f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules], rc)")
    return _run(code, {"ANONSTREAM_CACHE_DIR": str(cache)})


def test_engines_listing_is_typeable_and_cached(tmp_path: Path) -> None:
    first = _engines(tmp_path)
    text = first.stdout.split("HEAVY")[0]
    assert "Literal" not in text and "typing" not in text and "('k'" not in text
    assert "--param objective=lm" in text and "lm | precision" in text
    assert '--param objectives=["k", "GLM"]' in text  # a list default, as JSON one can type
    sections = {block.split(":", 1)[0]: block for block in text.split("\n\n") if block.strip()}
    assert set(sections) == set(engine_names())
    for name, block in sections.items():
        models = get_engine(name).models
        assert ("--param l=" in block) == ("l" in models), name
        assert ("--param t=" in block) == ("t" in models), name
        assert ("--param avg_risk=" in block) == ("avg_risk" in models), name
    second = _engines(tmp_path)
    assert second.stdout.split("HEAVY")[0] == text
    assert second.stdout.rsplit("HEAVY", 1)[1].split() == ["[]", "0"]  # served from the cache


def test_warm_params_cut_every_work_budget_and_lift_the_wall_clock_cap() -> None:
    for name in engine_names():
        budgets = get_engine(name).work_budgets  # declared on the engine class
        params = warm_params(make_params(name, {}), budgets)
        for field, cap in budgets.items():
            assert field in type(params).model_fields, (name, field)  # a misspelt budget would cut nothing
            value = getattr(params, field)
            assert value is not None and 0 < value <= cap, (name, field, value)
        if "time_limit" in type(params).model_fields:  # bounded by work alone: a cold compile cannot cut it short
            assert params.model_dump()["time_limit"] == 0 and budgets, name


def test_warm_up_runs_on_a_slice_and_leaves_results_unchanged() -> None:
    batch = tiny_batch()
    eng = get_engine("optimal")
    params = make_params(eng, {"k": 2})
    before = eng.anonymize(batch, params, np.random.default_rng(0))
    assert warm_up(eng, batch, params) >= 0
    after = eng.anonymize(batch, params, np.random.default_rng(0))
    assert after.rows.equals(before.rows)
