"""Re-identification and attribute disclosure risk of a table or a release (docs/risk.md).

Pure and vectorised so it can run on every release:

- :mod:`core.risk.classes`: equivalence classes of rows by their quasi-identifier values;
- :mod:`core.risk.reidentification`: prosecutor, journalist and marketer risk, sample uniques;
- :mod:`core.risk.population`: population uniqueness (Pitman, Zayatz, SNB, Dankar's rule);
- :mod:`core.risk.attribute`: homogeneous classes, delta-disclosure, severe offences;
- :mod:`core.risk.profile`: :func:`risk_profile`, one typed, JSON-serialisable result.
"""

from core.risk.profile import RiskProfile, risk_profile

__all__ = ["RiskProfile", "risk_profile"]
