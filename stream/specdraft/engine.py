"""The engine a drafted spec runs with, and a trial run of an engine on a sample of the checked rows.

``spec draft`` picks an engine its own spec can run and says why in the spec (a ``# engine:`` comment
line that ``spec check`` reads, with the ``anonymize`` options it runs with): ``cg-diverse`` at
distinct l 2, the stream's default, when the spec has a sensitive attribute with a severity table;
else ``mondrian``, which needs neither (the CG engines refuse a spec without one). ``spec check``
then runs that engine (or ``--engine``) on a seeded sample of at most :data:`TRIAL_ROWS` usable rows
with those parameters (:func:`params_for`), verifies the result independently
(:func:`core.verify.verify_release`) and says whether it releases. Rules in docs/spec.md ("How spec
draft decides", rule 13).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from core.errors import AnonymizationError

if TYPE_CHECKING:
    from core.encoding import Schema
    from stream.specdraft.model import Draft

TRIAL_ROWS = 300
WITH_SEVERITY = "cg-diverse"
WITHOUT_SEVERITY = "mondrian"
ENGINE_LINE = re.compile(r"^# engine: ([a-z0-9-]+)\b", re.M)


def choose_engine(draft: Draft) -> tuple[str, str]:
    """The engine the drafted spec runs with, and why."""
    sens = draft.role("sensitive")
    if sens and draft.severity:
        return WITH_SEVERITY, (f"'{sens[0].name}' has a severity table: cg-diverse at distinct l 2, the stream's "
                               "default (no released class whose members all share one value)")
    what = "no sensitive attribute" if not sens else f"no severity table for '{sens[0].name}'"
    return WITHOUT_SEVERITY, (f"{what}: cg-kanon and cg-diverse cannot run this spec; mondrian needs none. "
                              "For the stream set engine = \"mondrian\" and privacy.l = 1 (its default l 2 needs a "
                              "sensitive attribute)")


def params_for(engine: str, k: int, max_suppression: float) -> dict[str, float | int]:
    """The privacy parameters a drafted engine runs with: k and the suppression limit of the check, and the
    stream's distinct l 2 for ``cg-diverse`` (whose batch default is l 3), those the engine accepts."""
    from core.engines.registry import accepted_fields, get_engine

    fields = accepted_fields(get_engine(engine))
    values: dict[str, float | int] = {"k": k, "l": 2, "max_suppression": max_suppression}
    if engine != WITH_SEVERITY:
        values.pop("l")
    return {f: v for f, v in values.items() if f in fields}


def cli_args(values: dict[str, float | int]) -> str:
    """The ``anonymize`` options that give ``values`` (``-k 5 -l 2 --max-suppression 0.05``)."""
    flags = {"k": "-k", "l": "-l", "max_suppression": "--max-suppression"}
    return " ".join(f"{flags[f]} {v:g}" for f, v in values.items() if f in flags)


def drafted_engine(text: str) -> str | None:
    """The engine a drafted spec names in its ``# engine:`` line, if any."""
    hit = ENGINE_LINE.search(text)
    return hit.group(1) if hit else None


@dataclass(frozen=True)
class Trial:
    engine: str
    rows: int
    releases: bool
    text: str


def trial(rows: pd.DataFrame, schema: Schema, engine: str, k: int, max_suppression: float,
          n: int = TRIAL_ROWS, seed: int = 0) -> Trial:
    """Run ``engine`` on a seeded sample of at most ``n`` of ``rows`` (rows the spec accepts, missing values
    as the contract reads them) with k, the stream's l for ``cg-diverse``, and verify what it releases."""
    from core.encoding import encode
    from core.engines.registry import get_engine, make_params
    from core.verify import verify_release

    if len(rows) > n:
        pick = np.sort(np.random.default_rng(seed).choice(len(rows), size=n, replace=False))
        rows = rows.iloc[pick]
    if len(rows) < k:
        return Trial(engine, len(rows), False, f"{engine}: only {len(rows)} usable row(s), fewer than k={k}")
    try:
        eng = get_engine(engine)
        params = make_params(eng, params_for(engine, k, max_suppression))
        quiet = logging.getLogger("core.engines")  # a trial's diagnostics are not the user's news
        level, quiet.level = quiet.level, logging.ERROR
        try:
            release = eng.anonymize(encode(rows, schema), params, np.random.default_rng(seed))
        finally:
            quiet.setLevel(level)
        report = verify_release(rows, release, schema)
    except AnonymizationError as exc:
        return Trial(engine, len(rows), False, f"{engine} on {len(rows)} sampled rows: refused: {exc.message}")
    if not report.ok or release.released == 0:
        why = "; ".join(report.failures[:2]) or "nothing released"
        return Trial(engine, len(rows), False, f"{engine} on {len(rows)} sampled rows: does not release ({why})")
    return Trial(engine, len(rows), True,
                 f"{engine} on {len(rows)} sampled rows: releases {release.released}, suppresses "
                 f"{len(release.suppressed)}, verified k={report.k}"
                 + (f", l={report.l_distinct}" if report.l_distinct is not None else ""))
