"""A release's risk warnings, each sorted into "expected for this engine and these settings" or "act".

The risk profile (core/risk/profile.py) warns on what it measures, whatever the engine promised. Some
warnings follow from the engine and the settings and recur on every release until the settings change
(docs/risk.md, "Expected warnings"); they say why once. The others need an operator's action, and say
which. Used by the worker (its log: an expected warning at INFO, marked so; the metric
``anonstream_last_release_risk_warnings{kind="expected"|"unexpected"}``), and through
:mod:`stream.console.release_warnings` by the console (release page, releases list, sign-off report)
and the CLI.
"""

from __future__ import annotations

import math
from typing import Any

CG_ENGINES = ("cg-kanon", "cg-diverse")
EXPECTED, ACT = "expected", "act"
MARKER = "expected for this engine and these settings"


def _manifest_parts(manifest: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    privacy = manifest.get("privacy") or {}
    return (str(manifest.get("engine") or ""), manifest.get("params") or {}, privacy.get("risk") or {},
            manifest.get("diagnostics") or {})


def _severity(engine: str, params: dict[str, Any], diag: dict[str, Any]) -> tuple[str, str]:
    if engine in CG_ENGINES and diag.get("cap") is not None:
        cap, k = diag["cap"], diag.get("k_min") or params.get("k")
        return EXPECTED, (
            f"{engine} caps a class at cap_factor × k = {cap} rows (k = {k}); an offence whose severity is above "
            f"{cap} (in the bundled crime spec, Murder at 25) asks for a larger class than the cap allows, so its "
            "records always sit in classes smaller than their severity. The release still meets k. To remove the "
            "warning raise the engine parameter cap_factor to at least the largest severity ÷ k, at the price of "
            "more information loss.")
    return EXPECTED, (
        f"{engine or 'this engine'} does not size classes by severity (only the CG engines do): severities are "
        "measured and reported, not enforced. The release still meets k. Use cg-kanon if severe offences must sit in "
        "classes at least as large as their severity.")


def _homogeneous(engine: str, params: dict[str, Any], risk: dict[str, Any]) -> tuple[str, str]:
    sens = (risk.get("attribute") or {}).get("sensitive") or "the sensitive attribute"
    l_req = params.get("l")
    if isinstance(l_req, int | float) and l_req >= 2:
        return ACT, (f"ℓ = {l_req:g} was required, yet a class holds a single value of {sens}: the verifier should "
                     "have held this window. Do not hand the release out; re-verify it (`anonstream releases verify "
                     "ID`) and report the case.")
    return EXPECTED, (
        f"no ℓ-diversity was required (ℓ unset; {engine or 'the engine'} enforces k only), so a class may hold one "
        f"value of {sens}: whoever places a person in that class learns the value. Require ℓ ≥ 2 "
        "(ANONSTREAM_L, or the engine cg-diverse) if that must not happen.")


def _prosecutor(params: dict[str, Any], risk: dict[str, Any]) -> tuple[str, str]:
    threshold = float(risk.get("threshold") or 0.2)
    need = math.ceil(1 / threshold - 1e-9) if threshold > 0 else None
    k = params.get("k")
    return ACT, (f"records in classes smaller than {need} have a re-identification risk above {threshold:g}"
                 f" (k = {k}). Raise k to at least {need}, or set max_risk = {threshold:g} so the verifier holds "
                 "such windows instead of releasing them.")


def classify(manifest: dict[str, Any] | None) -> list[dict[str, str]]:
    """Each warning of the manifest's risk profile: ``{"text", "kind": "expected"|"act", "why"}``."""
    if not manifest:
        return []
    engine, params, risk, diag = _manifest_parts(manifest)
    out = []
    for text in risk.get("warnings") or []:
        t = str(text)
        if "smaller than their severity" in t:
            kind, why = _severity(engine, params, diag)
        elif "homogeneous" in t:
            kind, why = _homogeneous(engine, params, risk)
        elif "prosecutor risk" in t:
            kind, why = _prosecutor(params, risk)
        else:
            kind, why = ACT, "a warning this version does not know: review the risk figures before handing it out."
        out.append({"text": t, "kind": kind, "why": why})
    return out


def needs_action(manifest: dict[str, Any] | None) -> bool:
    """Whether any of the release's warnings is an "act" warning."""
    return any(w["kind"] == ACT for w in classify(manifest))


def of_release(engine: str, params: dict[str, Any], diagnostics: dict[str, Any],
               risk: dict[str, Any]) -> list[dict[str, str]]:
    """:func:`classify` of a release before its manifest exists (the worker, as it releases)."""
    return classify({"engine": engine, "params": params, "diagnostics": diagnostics, "privacy": {"risk": risk}})
