"""The canonical form of a raw value: what a report's content fingerprint is computed over.

Two exports of one report may write the same value differently: ``06/17/2020`` and ``6/17/2020``,
``030`` and ``30``, ``M`` and ``m``, `` Theft `` and ``Theft``. A fingerprint over the raw text would
take them for two reports, and the second extract would be released again (docs/privacy.md, "Content
fingerprint"). :func:`canonical_value` reads a value the way its column's hierarchy reads it:

- a **date** (date hierarchy) is its day, ``YYYY-MM-DD`` in UTC, parsed by the column's declared
  format with the input contract's own parser (:func:`core.contract.parse_date`);
- a **number** (interval hierarchy, a table hierarchy of a numeric QI, or a column without a
  hierarchy that holds a plain decimal number) is its numeric value: ``030``, ``30`` and ``30.0``
  are ``30``;
- **text** is trimmed, inner whitespace collapsed, and case-folded unless the column's hierarchy
  tells apart two leaves that differ only in case or layout (a table listing both ``M`` and ``m``):
  then the text stays as written, as the hierarchy matches it.

A value that does not parse (which the contract refuses anyway) is its trimmed text. Pure: no I/O.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache

from core import contract
from core.hierarchies.base import Hierarchy
from core.hierarchies.dates import DateHierarchy
from core.hierarchies.intervals import IntervalHierarchy, fmt_number
from core.hierarchies.table import TableHierarchy

__all__ = ["canonical_number", "canonical_value", "folds_case"]

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def _text(value: object) -> str:
    return " ".join(str(value).split())


def canonical_number(text: str) -> str | None:
    """A plain decimal number as its value (``030`` -> ``30``, ``30.50`` -> ``30.5``), else None.

    Whole numbers written without a point keep every digit (long codes never round); others go
    through a float, as an interval hierarchy reads them."""
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        return None
    if _INTEGER.fullmatch(text):
        return str(int(text))
    number = float(text)
    return fmt_number(number + 0.0) if number == number and abs(number) != float("inf") else None


def _fold(text: str) -> str:
    number = canonical_number(text)
    return number if number is not None else text.casefold()


@lru_cache(maxsize=256)
def folds_case(hierarchy: Hierarchy | None) -> bool:
    """Whether values of this hierarchy may be compared case-folded (and numbers by value).

    True unless it is a table (or tree) hierarchy listing two leaves that fold to the same value (``M``
    and ``m``, ``01`` and ``1``): such a hierarchy tells them apart, so the canonical value must too.
    """
    if not isinstance(hierarchy, TableHierarchy):
        return True
    leaves = [_text(v) for v in hierarchy.leaf_index]
    return len({_fold(v) for v in leaves}) == len(set(leaves))


def canonical_value(hierarchy: Hierarchy | None, value: object) -> str:
    """The canonical text of one raw value of a column whose hierarchy is ``hierarchy`` (None: a column
    without one, such as the sensitive attribute or a pass-through column). See the module docstring."""
    text = _text(value)
    if isinstance(hierarchy, DateHierarchy):
        when = contract.parse_date(text, hierarchy.format)
        return when.astimezone(UTC).date().isoformat() if isinstance(when, datetime) else text
    if isinstance(hierarchy, IntervalHierarchy):
        number = canonical_number(text)
        if number is None:
            return text
        return fmt_number(float(number) + 0.0)  # the hierarchy reads every value as a float
    if isinstance(hierarchy, TableHierarchy) and not folds_case(hierarchy):
        return text
    return _fold(text)
