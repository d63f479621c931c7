"""The independent verifier: re-derives the privacy of a release from its output rows alone.

It never trusts engine internals (class ids, levels, diagnostics). See :func:`verify_release`.
"""

from core.verify.classes import VerificationReport, verify_classes, verify_release

__all__ = ["VerificationReport", "verify_classes", "verify_release"]
