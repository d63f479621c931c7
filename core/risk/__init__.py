"""Re-identification and attribute disclosure risk of a table or a release (docs/risk.md).

Pure and vectorised so it can run on every release:

- :mod:`core.risk.classes`: equivalence classes of rows by their quasi-identifier values;
- :mod:`core.risk.reidentification`: prosecutor, journalist and marketer risk, sample uniques;
- :mod:`core.risk.population`: population uniqueness (Pitman, Zayatz, SNB, Dankar's rule);
- :mod:`core.risk.attribute`: homogeneous classes, delta-disclosure, severe offences;
- :mod:`core.risk.profile`: :func:`risk_profile`, one typed, JSON-serialisable result.

The CG paper's severity metrics (severity penalty, offence frequency in classes) stay in
:mod:`core.metrics.risk`; ``max_risk`` / ``avg_risk`` as requirements are in
:mod:`core.privacy.requirement`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RiskProfile", "risk_profile"]


def __getattr__(name: str) -> Any:
    """Import :mod:`core.risk.profile` (and scipy) on first use, not with the package."""
    if name in __all__:
        from core.risk import profile

        return getattr(profile, name)
    raise AttributeError(name)
