"""What an operator can do about a held window, from where they are (the verdict's advice, :mod:`.verdict`).

A window is held when its release was refused (stream/worker/release.py, stream/worker/risk.py): the
independent verifier failed it (k, l-diversity, t-closeness, a risk bound, suppression, or the release
does not account for its rows), the privacy budget refused it, it kept conflicting with concurrent
releases, or the engine raised. The console cannot change a setting: k, l, the risk bounds, the engine
and its parameters are the worker's settings (its environment, ``ANONSTREAM_PRIVACY__K`` …, or the feed's
tables in a pipelines file), read when the worker starts. So the advice names the setting, where it is
set, and that the worker must be restarted before the console's "release after review" with "retry
now" re-runs the window; a requirement the engine cannot enforce names the engines that can.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

WHERE = ("in the worker's environment (with a pipelines file: the feed's `{key}`), then restart the worker")
RETRY, CARRY = "retry now", "carry into next window"
BOTH = "engine` or `privacy"


@dataclass(frozen=True)
class Advice:
    """What kind of refusal a hold is, what to fix first (naming the setting and where), the release mode then."""

    kind: str
    fix: str
    mode: str


def _setting(name: str, group: str = "privacy") -> str:
    return f"`ANONSTREAM_{group.upper()}__{name.upper()}`" if group else f"`ANONSTREAM_{name.upper()}`"


def _where(key: str = "privacy") -> str:
    return WHERE.format(key=key)


@functools.cache
def enforced_by(model: str) -> tuple[str, ...]:
    """The registered engines that enforce ``model`` (``k``, ``l``, ``t``, ``max_risk``, ``avg_risk``): their
    ``models``. Imports every engine's module once (about a second), only when a held window asks."""
    from core.engines.registry import engine_names, get_engine

    return tuple(sorted(n for n in engine_names() if model in get_engine(n).models))


def _engines(model: str) -> str:
    return ", ".join(enforced_by(model)) or "none registered"


def _number(pattern: str, text: str) -> float | None:
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None


def _risk(reason: str) -> Advice | None:
    """A risk bound the release exceeded (the verifier's ``requirement max_risk=`` / ``avg_risk=``)."""
    avg = _number(r"requirement avg_risk=([0-9.]+)", reason)
    if avg is not None:
        need = math.ceil(1 / avg - 1e-9)
        return Advice("release refused by the average-risk bound (avg_risk), which this engine does not enforce",
                      f"run an engine that enforces avg_risk ({_engines('avg_risk')}: {_setting('engine', '')}), "
                      f"or set {_setting('k')} to at least {need} (classes of k rows or more keep the average risk "
                      f"at most 1/k), or relax {_setting('avg_risk')} (unset: no bound), {_where(BOTH)}", RETRY)
    top = _number(r"requirement max_risk=([0-9.]+)", reason)
    if top is not None:
        need = math.ceil(1 / top - 1e-9)
        return Advice("release refused by the risk bound (max_risk)",
                      f"run an engine that enforces max_risk ({_engines('max_risk')}: {_setting('engine', '')}), "
                      f"or set {_setting('k')} to at least {need} (the highest risk is 1/smallest class), or relax "
                      f"{_setting('max_risk')} if the policy allows, {_where(BOTH)}", RETRY)
    return None


def _verification(reason: str) -> Advice:
    r = reason.lower()
    if "l-diversity" in r:
        return Advice("release failed l-diversity",
                      f"run an engine that enforces l ({_engines('l')}: {_setting('engine', '')}; unset: "
                      f"cg-diverse), or set {_setting('l')} = 1 only if a class whose members share one value may "
                      f"be published, {_where(BOTH)}", RETRY)
    if "t-closeness" in r:
        return Advice("release failed t-closeness",
                      f"run an engine that enforces t ({_engines('t')}: {_setting('engine', '')}), or relax "
                      f"{_setting('t')}, {_where(BOTH)}", RETRY)
    if "max_suppression" in r:
        return Advice("release suppressed more rows than allowed",
                      f"wait for more reports (a larger window suppresses less) or raise "
                      f"{_setting('max_suppression')} {_where()}", CARRY)
    if "smallest class has" in r:
        return Advice("release broke k although the engine enforces it",
                      "do not release it: keep the window's reason and the worker's log for a bug report; carrying "
                      "it re-runs it with more reports", CARRY)
    return Advice("release failed verification (its rows do not account for the window, or a label does not "
                  "generalize its value)",
                  "do not release it: keep the window's reason and the worker's log for a bug report; carrying it "
                  "re-runs it with more reports", CARRY)


def advise(reason: str) -> Advice:
    """The advice for a held window's ``reason`` (as stored in the ledger, stream/worker/release.py)."""
    r = reason.lower()
    if "privacy budget" in r or r.startswith("budget"):
        return Advice("release refused by the privacy budget",
                      "wait for the budget block's next period, or raise its cap (`anonstream budget set-cap`, "
                      "audited)", CARRY)
    if "conflicting" in r:
        return Advice("release kept conflicting with concurrent releases", "nothing to fix", RETRY)
    if r.startswith("verification failed"):
        return _risk(reason) or _verification(reason)
    return Advice("the engine refused the window",
                  f"fix what the reason names: the engine ({_setting('engine', '')}) or its parameters "
                  f"({_setting('engine_params', '')}; `anonstream engines` lists them) {_where('engine')}", RETRY)
