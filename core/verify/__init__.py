"""The independent verifier: re-derives the privacy of a release from its output rows alone.

It never trusts engine internals (class ids, levels, diagnostics). :func:`verify_release` picks the
check by the release's ``verification_mode``: equivalence classes of identical QI labels
(:mod:`core.verify.classes`) or, for k-regular local recodings whose ranges may overlap, the
matching check of :mod:`core.verify.kregular`. Both fill a :class:`VerificationReport`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.verify.classes import verify_classes
from core.verify.kregular import verify_k_regular
from core.verify.report import VerificationReport

if TYPE_CHECKING:
    import pandas as pd

    from core.encoding import Schema
    from core.engines.base import Release
    from core.privacy.requirement import PrivacyRequirement

__all__ = ["VerificationReport", "verify_classes", "verify_k_regular", "verify_release"]


def verify_release(original: pd.DataFrame, release: Release, schema: Schema,
                   req: PrivacyRequirement | None = None) -> VerificationReport:
    """Verify ``release`` against the ``original`` input rows (identifiers may be present)."""
    if release.verification_mode == "k-regular":
        return verify_k_regular(original, release, schema, req)
    return verify_classes(original, release, schema, req)
