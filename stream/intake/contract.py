"""The input contract applied to one report at a time (the stream and ``push``).

The rules themselves live in :mod:`core.contract` and the hierarchies; the batch readers
(:mod:`stream.io.tables`) apply the same rules to whole columns. This module holds the per-report
pieces the validator calls: the event time, the missing-value policy and the wording of a
rejection. Messages name the field and never the value (they go to the dead-letter topic); the
value travels separately in a :class:`stream.io.rejects.RejectDetail` for the station's own screen.
"""

from __future__ import annotations

from datetime import datetime

from core import contract
from core.errors import AnonymizationError
from core.schema import DatasetSpec
from stream.io.rejects import RejectDetail

# One message per reason (a value's reason comes from the error the hierarchy raised).
VALUE_REASONS: dict[str, tuple[str, str]] = {
    "value-not-in-hierarchy": ("value-not-in-hierarchy", "value is not one of the values its hierarchy lists"),
    "invalid-date": ("invalid-value", "value is not a date in the declared format ({fmt})"),
    "ambiguous-date": ("ambiguous-date", "date is ambiguous (day and month could be swapped); "
                                         "the spec must declare the column's format"),
    "not-a-whole-number": ("invalid-value", "value is not a whole number (the hierarchy takes integers)"),
    "invalid-input": ("invalid-value", "value is not a number"),
}


def value_rejection(spec: DatasetSpec, column: str, exc: AnonymizationError) -> tuple[str, str]:
    """``(reason, message)`` for a QI value its hierarchy refused; distinct wording per reason."""
    reason, text = VALUE_REASONS.get(exc.reason, ("invalid-value", "value is refused by its hierarchy"))
    fmt = contract.describe_date_format(spec.date_format(column))
    return reason, f"field '{column}': {text.format(fmt=fmt)}"


def event_time(spec: DatasetSpec, column: str, text: str) -> datetime | tuple[str, str]:
    """The event time of a report as UTC, or ``(reason, message)``.

    With a declared format (the time column is a date QI with ``format``, or is listed in
    ``[input] dates``) the value is parsed by it, as the batch path does, and naive times are UTC. Without one
    the value must be ISO 8601 with a UTC offset.
    """
    fmt = spec.date_format(column)
    if fmt is None:
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            return "invalid-time", f"field '{column}' is not an ISO-8601 time"
        if when.tzinfo is None:
            return "invalid-time", f"field '{column}' has no UTC offset (use ...Z)"
        return when  # aware; converted to UTC by the caller's plausibility check
    parsed = contract.parse_date(text, fmt)
    if not isinstance(parsed, datetime):
        return "invalid-time", f"field '{column}' is not a time in the declared format " \
                               f"({contract.describe_date_format(fmt)})"
    return parsed


def apply_missing(spec: DatasetSpec, obj: dict[str, object], used: list[str]) -> tuple[str, str] | None:
    """Apply the spec's missing-value policy to the used columns of ``obj`` in place.

    Returns ``(reason, message)`` when the report is refused: ``missing-field`` under the
    ``error`` policy, ``missing-value`` (dropped and counted on the dead-letter topic) under
    ``drop``. Under ``leaf`` missing values become the spec's ``missing_label``.
    """
    fmt = spec.input
    missing = [c for c in used if contract.is_missing(obj.get(c), fmt.missing)]
    if not missing:
        return None
    policy = fmt.missing_policy
    if policy == "leaf":
        for c in missing:
            obj[c] = fmt.missing_label
        return None
    if policy == "drop":
        return "missing-value", f"dropped by on_missing = \"drop\": missing {', '.join(missing)}"
    return "missing-field", f"required field(s) missing or empty: {', '.join(missing)}"


def declared_dates(spec: DatasetSpec, obj: dict[str, object], skip: str) -> tuple[str, str, RejectDetail] | None:
    """Check the ``[input] dates`` columns other than ``skip`` (the time column): a present value must
    parse by its declared format (a date of birth ``1990-13-45`` is refused even though it is dropped)."""
    for col, fmt in spec.input.dates.items():
        value = obj.get(col)
        if col == skip or contract.is_missing(value, spec.input.missing):
            continue
        if not isinstance(contract.parse_date(str(value), fmt), datetime):
            return ("invalid-value", f"field '{col}': value is not a date in the declared format "
                                     f"({contract.describe_date_format(fmt)})", RejectDetail(col, str(value)))
    return None
