"""The one error family of the core.

Every error raised for bad input derives from :class:`AnonymizationError`. Each carries a short
machine-readable ``reason`` (used as the dead-letter reason by the stream) and a one-line message
that names the offending field and, where it helps, the allowed values.
"""

from __future__ import annotations

from collections.abc import Iterable


class AnonymizationError(Exception):
    """Base class for every input or configuration problem detected by the core."""

    reason: str = "invalid"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.reason


class SpecError(AnonymizationError):
    """The dataset spec is invalid (unknown field, wrong type, bad hierarchy definition)."""

    reason = "invalid-spec"


class HierarchyError(AnonymizationError):
    """A value cannot be placed in its generalization hierarchy."""

    reason = "value-not-in-hierarchy"


class InputDataError(AnonymizationError):
    """The input table itself is unusable (missing column, text in a numeric column, empty)."""

    reason = "invalid-input"


class ParamsError(AnonymizationError):
    """Engine parameters are out of range or inconsistent."""

    reason = "invalid-params"


class InfeasibleError(AnonymizationError):
    """The requested privacy model cannot be met on this batch (for example k > rows)."""

    reason = "infeasible"


class UnknownEngineError(AnonymizationError):
    """An engine name that is not in the registry."""

    reason = "unknown-engine"


class VerificationError(AnonymizationError):
    """The independent verifier rejected a release."""

    reason = "verification-failed"


def preview(values: Iterable[object], limit: int = 5) -> str:
    """Render the first ``limit`` items of an iterable for an error message."""
    items = list(values)
    shown = ", ".join(repr(v) for v in items[:limit])
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return f"{shown}{more}"
