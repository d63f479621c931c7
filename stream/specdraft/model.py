"""What ``spec draft`` decided: each column's role and reason, and the spec around them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Column:
    name: str
    role: str  # identifier | qi | sensitive | passthrough | withheld (in the file, never released)
    why: str
    qi: dict[str, Any] | None = None  # {"type": ..., "hierarchy": {...}}
    how: str = ""  # why this hierarchy


@dataclass
class Draft:
    name: str
    rows: int
    columns: list[Column] = field(default_factory=list)
    severity: dict[str, float] = field(default_factory=dict)
    severity_note: dict[str, str] = field(default_factory=dict)
    severity_how: str = ""
    missing_tokens: list[str] = field(default_factory=list)
    on_missing: str = "error"
    missing_why: str = ""
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)  # id/time/station column, id_scope -> (value, why)
    station_map: dict[str, str] = field(default_factory=dict)  # station column value -> station id (keys.py)
    station_map_why: str = ""
    engine: str = ""  # the engine this spec runs with as drafted (engine.py), and why
    engine_why: str = ""
    engine_args: str = ""  # the anonymize options it runs with (-k 5 -l 2 --max-suppression 0.05)
    dates: dict[str, Any] = field(default_factory=dict)  # formats of date columns that are not date QIs
    notes: list[str] = field(default_factory=list)  # what the draft could not do, for the reviewer
    push_notes: list[str] = field(default_factory=list)  # what push's checks reject on the drafted rows
    class_column: str | None = None  # the felony/misdemeanour column severities come from (never released)
    encoding: str | None = None  # the text encoding the file was read with (frame.attrs)
    input_columns: tuple[str, ...] | None = None  # names of a file without a header row ([input] columns)
    review: list[str] = field(default_factory=list)  # what the station must decide, said first in the spec

    def role(self, role: str) -> list[Column]:
        return [c for c in self.columns if c.role == role]
