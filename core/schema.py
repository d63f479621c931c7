"""Dataset spec: which columns are identifiers, quasi-identifiers, sensitive or passed through.

A spec is plain data (parsed from TOML by ``stream.io.specs``) validated here with pydantic. Every
validation problem becomes a :class:`core.errors.SpecError` whose one-line message names the field
and the allowed values. The format, with examples, is documented in docs/spec.md.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.contract import DateFormat, check_date_format, check_encoding
from core.dp_spec import DPSpec
from core.errors import SpecError


class QIType(StrEnum):
    NUMERIC = "numeric"
    CATEGORICAL = "categorical"
    DATE = "date"
    MASKED = "masked"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_LEVEL_NAME = r"^[A-Za-z][A-Za-z0-9_]*$"
LevelNames = tuple[Annotated[str, Field(pattern=_LEVEL_NAME, max_length=40)], ...] | None


class TableHierarchySpec(_Strict):
    """ARX-style table: one row per leaf, ``leaf;level1;...;*``. ``csv`` is resolved by the loader.

    ``level_names`` names the levels above the leaves, finest first (the top ``*`` excluded): the
    release gets one ancestor column per level, ``<qi>_<name>`` (``<qi>_l<level>`` when unnamed)."""

    kind: Literal["table"] = "table"
    csv: str | None = None
    rows: tuple[tuple[str, ...], ...] | None = None
    level_names: LevelNames = None

    @model_validator(mode="after")
    def _one_source(self) -> TableHierarchySpec:
        if self.csv is None and self.rows is None:
            raise ValueError("a table hierarchy needs 'csv' (a file) or 'rows' (inline)")
        return self


class TreeHierarchySpec(_Strict):
    """Categorical taxonomy as nested tables; leaves are lists. The root is ``*``."""

    kind: Literal["tree"] = "tree"
    tree: dict[str, Any]
    level_names: LevelNames = None  # as for tables, e.g. ["region"] gives the column suburb_region


class IntervalHierarchySpec(_Strict):
    """Numeric bands. ``widths``: nested equal-width bands; ``edges``: explicit cut points per level;
    ``auto``: number of automatically chosen levels (widths doubling from a data-driven base)."""

    kind: Literal["intervals"] = "intervals"
    widths: tuple[float, ...] | None = None
    edges: tuple[tuple[float, ...], ...] | None = None
    auto: int | None = Field(default=None, ge=1, le=12)
    domain: tuple[float, float] | None = None
    integer: bool = False  # true: values must be whole numbers (34.5 is refused, not banded)

    @model_validator(mode="after")
    def _one_rule(self) -> IntervalHierarchySpec:
        given = [n for n in ("widths", "edges", "auto") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of 'widths', 'edges' or 'auto' (got {given or 'none'})")
        if self.widths is not None:
            if any(w <= 0 for w in self.widths):
                raise ValueError("'widths' must be positive")
            for a, b in zip(self.widths, self.widths[1:], strict=False):
                if b <= a or abs(b / a - round(b / a)) > 1e-9:
                    raise ValueError("each width in 'widths' must be a larger multiple of the one before")
        if self.domain is not None and not self.domain[0] < self.domain[1]:
            raise ValueError("'domain' must be [low, high] with low < high")
        return self


class DateHierarchySpec(_Strict):
    """Dates generalize day -> month -> year -> ``*``; ``levels`` picks a suffix of that chain."""

    kind: Literal["dates"] = "dates"
    levels: tuple[Literal["day", "month", "year"], ...] = ("day", "month", "year")
    domain: tuple[str, str] | None = None
    # "iso", "us" (MM/DD/YYYY), "day-first" (DD/MM/YYYY), each with an optional time of day, or a
    # strptime pattern such as "%d.%m.%Y"; or a list of them, e.g. ["us", "%Y/%m/%d %H:%M:%S"].
    # None accepts ISO 8601 and slash dates whose day and month cannot be swapped (core/contract.py)
    format: DateFormat | None = None

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: DateFormat | None) -> DateFormat | None:
        return v if v is None else check_date_format(v)


class MaskHierarchySpec(_Strict):
    """Right-masking of codes: ``80015`` -> ``8001*`` -> ... -> ``*****``."""

    kind: Literal["mask"] = "mask"
    mask: int | None = Field(default=None, ge=1, le=64)
    char: str = Field(default="*", min_length=1, max_length=1)


HierarchySpec = Annotated[
    TableHierarchySpec | TreeHierarchySpec | IntervalHierarchySpec | DateHierarchySpec | MaskHierarchySpec,
    Field(discriminator="kind"),
]

_ALLOWED_KINDS: dict[QIType, tuple[str, ...]] = {
    QIType.CATEGORICAL: ("table", "tree"),
    QIType.MASKED: ("mask", "table"),
    QIType.NUMERIC: ("intervals", "table"),
    QIType.DATE: ("dates",),
}
_KIND_KEYS = {"csv": "table", "rows": "table", "tree": "tree", "widths": "intervals", "edges": "intervals",
              "auto": "intervals", "levels": "dates", "mask": "mask"}
_DEFAULT_KIND = {QIType.DATE: "dates", QIType.MASKED: "mask", QIType.NUMERIC: "intervals"}


class QISpec(_Strict):
    name: str = Field(min_length=1)
    type: QIType
    weight: float = Field(default=1.0, gt=0)
    hierarchy: HierarchySpec

    @model_validator(mode="before")
    @classmethod
    def _infer_kind(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        h = data.get("hierarchy")
        try:
            qtype = QIType(data.get("type"))
        except ValueError:
            return data
        if h is None:
            if qtype in _DEFAULT_KIND:
                h = {"kind": _DEFAULT_KIND[qtype]}
                if qtype == QIType.NUMERIC:
                    h["auto"] = 4
            else:
                raise ValueError("a categorical QI needs a hierarchy: { csv = ... }, { rows = ... } or { tree = ... }")
        if isinstance(h, dict) and "kind" not in h:
            kinds = {_KIND_KEYS[k] for k in h if k in _KIND_KEYS}
            if len(kinds) == 1:
                h = {**h, "kind": kinds.pop()}
            elif qtype in _DEFAULT_KIND:
                h = {**h, "kind": _DEFAULT_KIND[qtype]}
        data["hierarchy"] = h
        return data

    @model_validator(mode="after")
    def _kind_fits_type(self) -> QISpec:
        allowed = _ALLOWED_KINDS[self.type]
        if self.hierarchy.kind not in allowed:
            raise ValueError(
                f"a {self.type.value} QI cannot use a '{self.hierarchy.kind}' hierarchy; allowed: {', '.join(allowed)}"
            )
        return self


class SensitiveSpec(_Strict):
    name: str = Field(min_length=1)
    severity: dict[str, float] | None = None
    default_severity: float | None = Field(default=None, gt=0)

    @field_validator("severity")
    @classmethod
    def _positive(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        if bad := [k for k, s in (v or {}).items() if not s > 0]:
            raise ValueError(f"severities must be positive; not positive for {bad[:5]}")
        return v


class InputFormat(_Strict):
    """How to read a file of this dataset (used by the CLI readers, not by the core)."""

    columns: tuple[str, ...] | None = None  # names for a file without a header row
    separator: str | None = None
    missing: tuple[str, ...] = ()  # values that mean "missing" (besides empty cells and JSON null)
    drop_missing: bool = False  # legacy spelling of on_missing = "drop"
    # what a missing value in a used column means, in batch and stream alike (core/contract.py):
    # "error" refuses the row, "drop" drops it and counts it, "leaf" makes it the missing_label leaf
    on_missing: Literal["error", "drop", "leaf"] = "error"
    missing_label: str = Field(default="(missing)", min_length=1)
    # formats of date columns that are not date QIs (the time column, a date of birth ...): a value
    # that does not parse is refused even if the column is dropped later, e.g. { dob = "iso" }
    dates: dict[str, DateFormat] = Field(default_factory=dict)
    # the file's text encoding ("utf-8", "cp1252", "latin-1" ...); None: detected (stream/io/text.py)
    encoding: Annotated[str, AfterValidator(check_encoding)] | None = None

    @field_validator("dates")
    @classmethod
    def _known_formats(cls, v: dict[str, DateFormat]) -> dict[str, DateFormat]:
        return {col: check_date_format(fmt) for col, fmt in v.items()}

    @property
    def missing_policy(self) -> str:
        return "drop" if self.drop_missing and self.on_missing == "error" else self.on_missing


class UtilitySpec(_Strict):  # the utility report's two-way table (core/metrics/utility.py); None: a default
    crosstab: tuple[str, str] | None = None  # each a QI ("name" or "name:level"), the sensitive or a pass-through


class DatasetSpec(_Strict):
    name: str = "dataset"
    input: InputFormat = InputFormat()
    identifiers: tuple[str, ...] = ()
    qi: tuple[QISpec, ...] = Field(min_length=1)
    sensitive: SensitiveSpec | None = None
    passthrough: tuple[str, ...] = ()
    unknown: Literal["error", "top"] = "error"
    station_column: str | None = None  # stream: routes a report to its station (default station_id)
    time_column: str | None = None  # stream: event time that picks the window (default event_time)
    id_column: str | None = None  # stream: report id, fingerprinted then dropped (default report_id)
    id_scope: Literal["station", "global"] = "station"  # stream: ids unique per station, or department-wide
    station_map: dict[str, str] = Field(default_factory=dict)  # stream: station column value -> id (docs/spec.md)
    # stream: window context published as record columns (docs/stream.md "Release columns"), also in the manifest
    publish_context: tuple[Literal["event_date", "station_id"], ...] = ("event_date", "station_id")
    utility: UtilitySpec = UtilitySpec()
    dp: DPSpec | None = None  # differentially private count tables (core/dp_spec.py); off when absent

    @model_validator(mode="after")
    def _distinct_roles(self) -> DatasetSpec:
        seen: dict[str, str] = {}
        roles = [("identifier", c) for c in self.identifiers] + [("qi", q.name) for q in self.qi]
        roles += [("passthrough", c) for c in self.passthrough] + [("sensitive", s.name) for s in [self.sensitive] if s]
        for role, col in roles:
            if col in seen:
                raise ValueError(f"column '{col}' is both {seen[col]} and {role}; a column has one role")
            seen[col] = role
        if bad := [c for c in self.utility.crosstab or () if seen.get(c.partition(":")[0], "") not in
                   (("qi",) if ":" in c else ("qi", "sensitive", "passthrough"))]:
            raise ValueError(f"utility.crosstab: {bad[0]!r} is not a QI (name[:level]), the sensitive or pass-through")
        return self

    @property
    def qi_names(self) -> list[str]:
        return [q.name for q in self.qi]

    @property
    def weights(self) -> list[float]:
        return [q.weight for q in self.qi]

    def date_format(self, column: str) -> DateFormat | None:
        """The declared format of a date column (a date QI, or ``[input] dates``), None if undeclared."""
        for q in self.qi:
            if q.name == column and isinstance(q.hierarchy, DateHierarchySpec):
                return q.hierarchy.format
        return self.input.dates.get(column)

    def qi_spec(self, name: str) -> QISpec:
        for q in self.qi:
            if q.name == name:
                return q
        raise SpecError(f"no quasi-identifier named '{name}'; QIs are: {', '.join(self.qi_names)}")

    def used_columns(self) -> list[str]:
        cols = list(self.qi_names)
        if self.sensitive:
            cols.append(self.sensitive.name)
        return cols + list(self.passthrough)

    def with_qis(self, names: list[str]) -> DatasetSpec:
        """A copy restricted to the named QIs, in that order (used by benchmarks and PBG-EA)."""
        return self.model_copy(update={"qi": tuple(self.qi_spec(n) for n in names)})


def _format_loc(loc: tuple[Any, ...], raw: Any) -> str:
    parts: list[str] = []
    node = raw
    for item in loc:
        if isinstance(item, int) and isinstance(node, list | tuple) and item < len(node):
            node = node[item]
            name = node.get("name") if isinstance(node, dict) else None
            parts[-1:] = [f"{parts[-1] if parts else ''}[{name or item}]"]
            continue
        if item in {"table", "tree", "intervals", "dates", "mask"} and parts and parts[-1] == "hierarchy":
            continue
        parts.append(str(item))
        node = node.get(item) if isinstance(node, dict) else None
    return ".".join(parts) or "spec"


def parse_spec(data: dict[str, Any]) -> DatasetSpec:
    """Validate a spec mapping; raise :class:`SpecError` with a one-line message naming the field."""
    try:
        return DatasetSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = _format_loc(tuple(err["loc"]), data)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif (err["type"] == "enum" and "expected" in err.get("ctx", {})) or err["type"] == "literal_error":
            msg = f"must be one of {err['ctx']['expected']}"
        elif err["type"] == "union_tag_invalid":
            msg = f"unknown hierarchy kind; allowed: {err['ctx']['expected_tags']}"
        raise SpecError(f"spec field '{where}': {msg}") from None
