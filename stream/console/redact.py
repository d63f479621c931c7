"""Scrubbing of free-text reasons before the console shows them.

DLQ messages and window hold reasons are one-line texts written by the validator, the engines and
the verifier. They are meant to name fields, not values, but an engine error may quote a value
(``value 'xyz' is not in the hierarchy``) and a verifier failure may quote a label. The console
therefore shows them only after :func:`scrub`:

* a quoted token (``'...'`` or ``"..."``) is kept only when it is a known column name (the spec's
  fields) or a known window/station word; any other quoted token becomes ``'…'``;
* ISO dates and times, and runs of five or more digits (report numbers, postcodes in a message),
  become ``…``.

Interpretation: short numbers (counts such as ``3 report(s) < k=5``) stay, they describe the
window, not a person.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_QUOTED = re.compile(r"""(['"])(.*?)\1""")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?")
_DIGITS = re.compile(r"\d{5,}")
REDACTED = "…"


def scrub(text: str | None, allowed: Iterable[str] = ()) -> str | None:
    """``text`` with quoted values, dates and long numbers replaced by ``…`` (see the module doc)."""
    if text is None:
        return None
    keep = set(allowed)

    def quoted(m: re.Match[str]) -> str:
        return m.group(0) if m.group(2) in keep else f"{m.group(1)}{REDACTED}{m.group(1)}"

    out = _QUOTED.sub(quoted, str(text))
    out = _DATE.sub(REDACTED, out)
    out = _DIGITS.sub(REDACTED, out)
    return out[:300]
