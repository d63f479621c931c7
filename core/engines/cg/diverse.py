"""``cg-diverse``: severity-weighted distinct l-diversity by local recoding (CG-Diverse).

PAPER: "Automated data anonymization: CG-Kanon and CG-Diverse"
(../shared/papers/cg-kanon-cg-diverse-severity-weighted-crime-data.txt), section 3.4, eqs. 8-10.

GUARANTEE: every released class has at least k_min = max(k, smallest severity) rows (eq. 4) and at
least ``l`` (l_min, default 3) distinct offences. Rows that cannot be placed in such a class are
generalized to the top of every hierarchy (``*``) and merged into one top class, which itself has
k_min rows and l_min distinct offences; nothing is suppressed.

OBJECTIVE: fitness = 1 / max(P_norm, LM) (our reading of eq. 9), minimised as
max(P_norm, LM) + 0.01 (P_norm + LM):

* LM as for CG-Kanon (eqs. 1-3, weights normalised, in [0, 1]);
* the paper's "ASD,i" cannot be the batch constant of eq. 8, so the privacy term is the
  severity-weighted frequency of each tuple's own offence inside its class,
  P = sum_d S_d * freq(offence_d in e_d) / sum_d S_d, measured against the diversity target
  l_target = clip(ASD, l_min, distinct offences in the batch) set from the average severity ASD
  (eq. 8): P_norm = (P - 1/l_target) / (1 - 1/l_target), clipped at 0 (target met). Severe tuples
  weigh most, so classes holding severe offences are pushed to be the most diverse.

DEGRADATION (not in the paper; ``degrade=True``, the default): when even random classes of ``cap``
rows could not reach l_target (one dominant offence, few QIs), chasing it would push most rows into
the top class. The engine then keeps k_min and distinct l_min as constraints, minimises LM, lets
the cap grow to the largest class of Mondrian's partition (at most ``degraded_cap_factor`` * k_min)
and also segments Mondrian's class order (``diagnostics["degraded"]``; docs/engines/cg-diverse.md).

NESTING (issue 39): a nested release is compared per QI with the free release of the same rows and
seed; ``diagnostics["nesting_fallback"]`` names each QI above 1.25x its free loss and why (kept nested).

``ase_rule=True`` adds the paper's per-class test (eq. 10): a class also needs at least
min(ceil(ASe), floor(l_target)) distinct offences, ASe being its average severity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from core.encoding import EncodedBatch
from core.engines.base import Engine, Progress, Release, no_progress
from core.engines.cg.params import CGDiverseParams
from core.engines.cg.runner import anonymize_cg
from core.engines.cg.state import DIVERSE
from core.engines.nesting import with_nesting_report


class CGDiverseEngine(Engine[CGDiverseParams]):
    name = "cg-diverse"
    summary = "severity-weighted distinct l-diversity: local recoding, severe classes most diverse (anytime)"
    paper = "CG-Diverse, severity-weighted l-diversity for crime data (section 3.4, eqs. 8-10)"
    Params = CGDiverseParams
    models = ("k", "l")
    work_budgets: ClassVar[Mapping[str, int]] = {"max_iterations": 1}
    needs = ("sensitive", "severity")

    def anonymize(self, batch: EncodedBatch, params: CGDiverseParams, rng: np.random.Generator,
                  progress: Progress = no_progress) -> Release:
        return with_nesting_report(self.name, batch, params, rng,  # each QI over 1.25x: where, why (issue 39)
                                   lambda p, r, prog: anonymize_cg(self, DIVERSE, batch, p, r, prog), progress)
