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

A value that does not parse (which the contract refuses anyway) is its trimmed text.

Identifiers that key state (station ids, report ids) have their own, simpler rule,
:func:`canonical_id`: surrounding whitespace dropped, and an id of digits only compared as a number
(``08``, ``8`` and `` 8 `` are station ``8``). Every place that stores or matches such an id (ledger,
fingerprints, budget blocks, pools, windows, the station registry, batch markers, receipts, CLI and
console look-ups) uses it, so one station never gets two budgets, pools or window series because two
exports spell it differently. :func:`id_collisions` and :func:`collision_lines` name the spellings
of a file that become one id. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.hierarchies.base import Hierarchy

# Ids (canonical_id, id_collisions) need nothing but the standard library; the value rules read the
# hierarchies and the input contract (numpy, pandas), imported where a value is first read: a command
# that only keys a station (the settings, the station registry) starts without them.

__all__ = ["canonical_id", "canonical_number", "canonical_value", "collision_lines", "folds_case", "id_collisions",
           "station_id"]

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
_DIGITS = re.compile(r"[0-9]+")


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
    from core.hierarchies.intervals import fmt_number

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
    from core.hierarchies.table import TableHierarchy

    if not isinstance(hierarchy, TableHierarchy):
        return True
    leaves = [_text(v) for v in hierarchy.leaf_index]
    return len({_fold(v) for v in leaves}) == len(set(leaves))


def canonical_value(hierarchy: Hierarchy | None, value: object) -> str:
    """The canonical text of one raw value of a column whose hierarchy is ``hierarchy`` (None: a column
    without one, such as the sensitive attribute or a pass-through column). See the module docstring."""
    from core import contract
    from core.hierarchies.dates import DateHierarchy
    from core.hierarchies.intervals import IntervalHierarchy, fmt_number
    from core.hierarchies.table import TableHierarchy

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


def canonical_id(value: object) -> str:
    """The one form in which a station id or report id keys anything: surrounding whitespace dropped,
    and an id of ASCII digits only written as its number without leading zeros (``08`` and `` 8 `` are
    ``8``; ``0`` and ``00`` are ``0``). Any other id is only trimmed: ``S08``, ``8a`` and ``-8`` keep
    their zeros and signs, case stays as written. Idempotent."""
    text = str(value).strip()
    if _DIGITS.fullmatch(text):
        return text.lstrip("0") or "0"
    return text


station_id = canonical_id  # the name the budget-block code uses for a station's id


def id_collisions(values: Iterable[object]) -> dict[str, list[str]]:
    """The ids that two or more different spellings in ``values`` turn into: ``{canonical id: spellings}``
    (each spelling as written, sorted), e.g. ``{"8": ["08", "8"]}``. Missing values (None, blank) are
    skipped."""
    spellings: dict[str, set[str]] = {}
    for value in values:
        if value is None or (text := str(value)).strip() == "":
            continue
        spellings.setdefault(canonical_id(text), set()).add(text)
    return {key: sorted(found) for key, found in sorted(spellings.items()) if len(found) > 1}


def collision_lines(what: str, collisions: dict[str, list[str]], limit: int = 5) -> list[str]:
    """One warning line per canonical id of :func:`id_collisions` (at most ``limit``, then a count), e.g.
    "station ids `08` and `8` are one station after normalisation (leading zeros and spaces are
    ignored)"; ``what`` names the kind of id ("station", "report")."""
    out = []
    for spellings in list(collisions.values())[:limit]:
        shown = [f"`{s}`" for s in spellings]
        names = ", ".join(shown[:-1]) + f" and {shown[-1]}"
        out.append(f"{what} ids {names} are one {what} after normalisation (leading zeros and spaces are ignored)")
    if len(collisions) > limit:
        out.append(f"... and {len(collisions) - limit} more {what} id(s) written in more than one way")
    return out
