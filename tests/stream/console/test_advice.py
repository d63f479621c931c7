"""The held-window advice names what the operator can change and where, for each reason a window is held
(stream/worker/release.py: conflict, engine error; stream/worker/risk.py and core/verify: each verifier failure)."""

from __future__ import annotations

import math

import pytest

from core.engines.registry import engine_names, get_engine
from stream.console.advice import advise, enforced_by
from stream.worker.risk import hold_reason

RESTART = "restart the worker"


def test_avg_risk_names_the_engines_that_enforce_it_k_and_the_setting() -> None:
    bound = 0.15
    a = advise(f"verification failed: average prosecutor risk is 0.2500, requirement avg_risk={bound}")
    engines = [n for n in engine_names() if "avg_risk" in get_engine(n).models]
    assert engines and ", ".join(sorted(engines)) in a.fix and "cg-kanon" not in a.fix
    assert f"`ANONSTREAM_PRIVACY__K` to at least {math.ceil(1 / bound)}" in a.fix
    assert "`ANONSTREAM_PRIVACY__AVG_RISK`" in a.fix and RESTART in a.fix and a.mode == "retry now"
    assert "raise k" not in a.fix and enforced_by("avg_risk") == tuple(sorted(engines))


def test_max_risk_names_the_engines_that_enforce_it() -> None:
    a = advise("verification failed: highest prosecutor risk is 0.3333 (a class of 3 rows), requirement max_risk=0.25")
    engines = sorted(n for n in engine_names() if "max_risk" in get_engine(n).models)
    assert ", ".join(engines) in a.fix and "`ANONSTREAM_ENGINE`" in a.fix and "cg-kanon" not in a.fix
    assert "`ANONSTREAM_PRIVACY__K` to at least 4" in a.fix and RESTART in a.fix


@pytest.mark.parametrize(("failure", "setting", "mode"), [
    ("l-diversity: 2 class(es) (9 rows) have fewer than l=2 distinct values of 'offence' (fewest 1), requirement l=2",
     "`ANONSTREAM_PRIVACY__L`", "retry now"),
    ("t-closeness distance 0.4000 exceeds t=0.2", "`ANONSTREAM_PRIVACY__T`", "retry now"),
    ("12 rows suppressed, more than max_suppression=0.05", "`ANONSTREAM_PRIVACY__MAX_SUPPRESSION`",
     "carry into next window"),
])
def test_each_verifier_failure_names_its_setting(failure: str, setting: str, mode: str) -> None:
    a = advise("verification failed: " + failure)
    assert setting in a.fix and RESTART in a.fix and a.mode == mode


def test_the_worker_s_own_hold_reason_is_advised() -> None:
    from stream.config.settings import load_settings

    settings = load_settings()
    reason = hold_reason(["l-diversity: 1 class(es) (5 rows) have fewer than l=2 distinct values of 'offence' "
                          "(fewest 1), requirement l=2"], settings, "cg-kanon")
    assert "cg-diverse" in advise(reason).fix


def test_breaches_the_operator_cannot_fix_are_carried_not_retried() -> None:
    for failure in ("smallest class has 3 rows, requirement k=5", "rows unaccounted for: 10 input, 8 released"):
        a = advise("verification failed: " + failure)
        assert a.mode == "carry into next window" and "bug report" in a.fix


def test_conflict_engine_and_budget() -> None:
    assert advise("kept conflicting with concurrent releases").fix == "nothing to fix"
    a = advise("engine-failed: pbg-ea needs the parameter generations > 0")
    assert "`ANONSTREAM_ENGINE_PARAMS`" in a.fix and RESTART in a.fix
    a = advise("privacy budget of block S1/2026-01-01 would be exceeded: this release needs rho 0.1")
    assert "anonstream budget set-cap" in a.fix and a.mode == "carry into next window"
