"""The station's side of a rejection: the rejects file and the "did you mean" hint.

``push --rejects rejects.csv`` writes every rejected row as it was in the file, preceded by a note
column and ``reject_line``, ``reject_reason``, ``reject_message`` and ``reject_hint`` (the hint shown on
screen: ``did you mean 'Theft'?``); after fixing the values the clerk pushes the same file again (push
ignores the ``reject_`` columns). The note column's header, :data:`NOTE`, says that the file holds
identifiers; a ``.jsonl`` rejects file starts with a ``{"reject_note": ...}`` line instead, then holds
the original objects with the ``reject_`` keys added.

The file is readable by its owner only (0600), written under a temporary name and put in place whole
when push ends (:class:`stream.io.atomic.AtomicFile`): an interrupted push leaves the old rejects file
as it was. CSV cells a spreadsheet would run as formulas
(``=``, ``+``, ``-``, ``@`` ...) get a leading quote, as in every CSV we write
(:mod:`stream.io.csvsafe`); plain numbers such as ``-5`` are left alone, and push removes the quotes
when it reads the file back (:func:`stream.io.rows.iter_rows`). None of this leaves the station's
machine: the dead-letter topic never sees a value.
"""

from __future__ import annotations

import csv
import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from core import contract
from core.checks import allowed_values
from core.encoding import Schema
from core.hierarchies import DateHierarchy, IntervalHierarchy
from stream.io.atomic import AtomicFile
from stream.io.csvsafe import neutralize
from stream.io.rows import REJECT_COLUMNS, is_reject_column

NOTE = ("reject_note: this file holds identifiers (report ids and any names or addresses of the rows); keep it "
        "on this machine and delete it once the rows are pushed again")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class RejectDetail:
    """The field and raw value behind a rejection: shown locally by ``push``, never dead-lettered."""

    column: str
    value: str


@dataclass(frozen=True)
class Rejection:
    """A row ``push`` did not send: its line in the file, the reason and message the dead-letter topic
    would carry, and (for the station's own screen and rejects file only) the field and value behind it."""

    line: int
    reason: str
    message: str
    detail: RejectDetail | None = None


def _cell(value: Any) -> Any:
    """A CSV cell: empty for None, a plain number as it is, other text neutralized."""
    if value is None:
        return ""
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        return value
    return neutralize(value)


class RejectsWriter:
    """Writes rejected rows as they come (CSV with the input's header, or JSON lines), created 0600;
    ``hints`` fills the ``reject_hint`` column."""

    def __init__(self, path: str | Path, header: list[str] | None = None, hints: Hints | None = None,
                 encoding: str = "utf-8") -> None:
        self.path = Path(path)
        self.header = header
        self.hints = hints
        self.encoding = encoding  # the input's, so the fixed file is read back the same way
        self.jsonl = self.path.suffix in {".jsonl", ".ndjson"}
        self.count = 0
        self._fh: TextIO | None = None
        self._csv: Any = None
        self._file: AtomicFile | None = None

    def _open(self) -> TextIO:
        self._file = AtomicFile(self.path, perm=0o600, option="--rejects")  # 0600 from the start
        return open(self._file.tmp, "w", encoding=self.encoding, errors="replace", newline="")  # a hint may not fit

    def write(self, row: dict[str, Any], rejection: Rejection) -> None:
        d = rejection.detail
        hint = self.hints.hint(rejection.reason, d.column, d.value) if (
            self.hints is not None and d is not None and rejection.reason != "duplicate-id") else ""
        meta = {"reject_line": rejection.line, "reject_reason": rejection.reason,
                "reject_message": rejection.message, "reject_hint": hint}
        if self._fh is None:
            self._fh = self._open()
            if self.jsonl:
                self._fh.write(json.dumps({"reject_note": NOTE.removeprefix("reject_note: ")}) + "\n")
            else:
                cols = [c for c in (self.header or list(row)) if not is_reject_column(c)]
                self._csv = csv.DictWriter(self._fh, [NOTE, *REJECT_COLUMNS, *cols], extrasaction="ignore")
                self._csv.writeheader()
        row = {k: v for k, v in row.items() if not is_reject_column(k)}
        if self.jsonl:
            self._fh.write(json.dumps({**meta, **row}, default=str) + "\n")
        else:
            self._csv.writerow({k: _cell(v) for k, v in {**meta, **row}.items()})
        self.count += 1

    def close(self) -> None:
        """Put the file in place (the rows rejected so far), if any row was rejected."""
        if self._fh is not None and self._file is not None:
            self._fh.close()
            self._file.commit()
            self._fh = self._file = None


class Hints:
    """Suggests the closest allowed value for a rejected one (cached per column and value)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._allowed: dict[str, list[str]] = {}
        self._cache: dict[tuple[str, str], str] = {}

    def allowed(self, column: str) -> list[str]:
        if column not in self._allowed:
            spec = self.schema.spec
            if spec.sensitive is not None and column == spec.sensitive.name:
                values = list(spec.sensitive.severity or {})
            elif column in self.schema.hierarchies:
                values = allowed_values(self.schema.hierarchies[column])
            else:
                values = []
            self._allowed[column] = values
        return self._allowed[column]

    def hint(self, reason: str, column: str, value: str) -> str:
        key = (column, value)
        if key not in self._cache:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = self._hint(reason, column, value)
        return self._cache[key]

    def _hint(self, reason: str, column: str, value: str) -> str:
        spec = self.schema.spec
        allowed = self.allowed(column)
        if allowed:
            folded = {a.casefold(): a for a in allowed}
            best = folded.get(value.strip().casefold()) or next(
                iter(difflib.get_close_matches(value, allowed, n=1, cutoff=0.6)), None)
            return f"did you mean '{best}'?" if best else f"allowed values: {', '.join(allowed[:8])}" + (
                " ..." if len(allowed) > 8 else "")
        h = self.schema.hierarchies.get(column)
        if isinstance(h, IntervalHierarchy):
            if reason == "invalid-value" and h.integer:
                return "use a whole number"
            if h.domain is not None:
                return f"allowed range {h.domain[0]:g} to {h.domain[1]:g}"
        fmt = spec.date_format(column)
        if reason == "invalid-time" and fmt is None:
            return "expected an ISO-8601 time with a UTC offset, such as 2024-03-01T10:15:00Z"
        if (reason in {"invalid-value", "ambiguous-date", "invalid-time"} and isinstance(
                h, DateHierarchy)) or reason == "invalid-time":
            return f"expected {contract.describe_date_format(fmt)}"
        return ""


def describe(rejection: Rejection, hints: Hints) -> str:
    """One line for the clerk: line, reason, message, the value and a suggestion."""
    text = f"line {rejection.line}: {rejection.reason}: {rejection.message}"
    d = rejection.detail
    if d is not None:
        text += f" (got '{d.value}'"
        hint = hints.hint(rejection.reason, d.column, d.value) if rejection.reason != "duplicate-id" else ""
        text += f"; {hint})" if hint else ")"
    return text
