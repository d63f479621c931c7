"""What a verification found (:class:`VerificationReport`) and the risk check both verifiers share."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from core.errors import VerificationError
from core.privacy.requirement import PrivacyRequirement


@dataclass
class VerificationReport:
    ok: bool
    mode: str
    k: int = 0
    l_distinct: int | None = None
    l_entropy: float | None = None
    l_recursive: int | None = None
    t: float | None = None
    max_risk: float | None = None
    avg_risk: float | None = None
    released: int = 0
    suppressed: int = 0
    failures: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def raise_if_failed(self) -> None:
        if not self.ok:
            raise VerificationError("release failed verification: " + "; ".join(self.failures[:5]))


def check_risk(rep: VerificationReport, req: PrivacyRequirement, avg: float, failures: list[str]) -> None:
    """Prosecutor risk of the released records: highest 1 / rep.k, average ``avg``."""
    if not rep.k:
        return
    rep.max_risk = 1.0 / rep.k
    rep.avg_risk = avg
    if req.max_risk is not None and rep.max_risk > req.max_risk + 1e-12:
        failures.append(f"highest prosecutor risk is {rep.max_risk:.4f} (a class of {rep.k} rows), "
                        f"requirement max_risk={req.max_risk}")
    if req.avg_risk is not None and avg > req.avg_risk + 1e-9:
        failures.append(f"average prosecutor risk is {avg:.4f}, requirement avg_risk={req.avg_risk}")
