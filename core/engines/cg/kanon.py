"""``cg-kanon``: severity-weighted k-anonymity by local recoding (CG-Kanon).

PAPER: "Automated data anonymization: CG-Kanon and CG-Diverse" (severity-weighted k-anonymity and
l-diversity for crime data; ../shared/papers/cg-kanon-cg-diverse-severity-weighted-crime-data.txt),
section 3.3, eqs. 1-7.

GUARANTEE: every released class has at least k_min = max(k, smallest severity in the batch) rows
(eq. 4); classes are generalized to the least common generalization of their members (ranges for
numeric QIs, hierarchy ancestors otherwise), so the independent verifier sees exactly these
classes. No row is suppressed unless ``cap_factor`` < 2 makes a partition impossible, and then never
more than ``max_suppression`` (otherwise the engine raises InfeasibleError).

OBJECTIVE: fitness = 1 / max(SP_norm, LM) (eq. 7), minimised as max(SP_norm, LM) + 0.01 (SP_norm + LM):

* LM = sum_d sum_a w_a IL_d(a) / n with the weights normalised to sum 1 (eqs. 1-3), in [0, 1];
* SP_tot = sum_d S_d / |e_d| (eqs. 5-6), normalised min-max over what a valid release can reach:
  SP_norm = (SP_tot - S/cap) / (S/k_min - S/cap), S = total severity: 1 when every class has k_min
  rows, 0 when every class has ``cap`` rows.

Severe offences gain most from large classes (their S_d / |e_d| falls fastest), so the search puts
them into larger classes. The search is anytime (see :mod:`core.engines.cg.search`): a valid
release exists from the first milliseconds, the loss curve is in ``diagnostics["loss_curve"]``.

NESTING (issue 39): a nested release is compared per QI with the free release of the same rows and
seed; ``diagnostics["nesting_fallback"]`` names each QI above 1.25x its free loss and why (kept nested).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from core.encoding import EncodedBatch
from core.engines.base import Engine, Progress, Release, no_progress
from core.engines.cg.params import CGKanonParams
from core.engines.cg.runner import anonymize_cg
from core.engines.cg.state import KANON
from core.engines.nesting import with_nesting_report


class CGKanonEngine(Engine[CGKanonParams]):
    name = "cg-kanon"
    summary = "severity-weighted k-anonymity: local recoding, severe offences in larger classes (anytime)"
    paper = "CG-Kanon, severity-weighted k-anonymization of crime data (section 3.3, eqs. 1-7)"
    Params = CGKanonParams
    models = ("k",)
    work_budgets: ClassVar[Mapping[str, int]] = {"max_iterations": 1}
    needs = ("sensitive", "severity")

    def anonymize(self, batch: EncodedBatch, params: CGKanonParams, rng: np.random.Generator,
                  progress: Progress = no_progress) -> Release:
        return with_nesting_report(self.name, batch, params, rng,  # each QI over 1.25x: where, why (issue 39)
                                   lambda p, r, prog: anonymize_cg(self, KANON, batch, p, r, prog), progress)
