"""Does a file belong to a spec? Its header against the spec's columns, before any row is read or sent.

``push`` and ``anonymize`` call :func:`check_file_header` first: a file lacking columns the spec needs
(the spec's QIs, sensitive attribute and pass-through columns; for ``push`` also the report id, the
event time and, without ``--station``, the station column) is refused in one line, exit 2, naming the
missing columns and the spec whose columns the header holds best: a bundled spec or a spec file given
before on this machine (remembered in ``ANONSTREAM_CACHE_DIR/specs-given``, paths only, each time a
spec file fits a file's header). Without this check a file of another spec was rejected row by row.

A file without a header row (the spec's ``[input] columns``) takes its names from the spec, so there
is nothing to compare. The header is read as the one reader reads it (:mod:`stream.io.rows`).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import InputDataError, SpecError, preview
from stream.io.rows import JSON_SUFFIXES, csv_header, is_reject_column, iter_rows
from stream.io.specs import SPEC_DIR, load_spec_data, resolve_spec_path
from stream.io.text import BINARY_SUFFIXES

if TYPE_CHECKING:
    from core.schema import DatasetSpec

REMEMBERED = 50  # spec files remembered
JSON_ROWS = 100  # JSON-lines objects whose keys make the header (an object may leave out a missing value)
SHOWN = 6  # missing columns named in the error line


def file_columns(path: str | Path, spec: DatasetSpec) -> list[str]:
    """The file's column names as the reader sees them: a file without a header row has the spec's
    ``[input] columns`` (so a spec for such a file without the stream's keys is refused before a push)."""
    fmt = spec.input
    suffix = Path(path).suffix.lower()
    if suffix in BINARY_SUFFIXES or suffix in JSON_SUFFIXES:
        rows = iter_rows(path, fmt.separator, 1_000, fmt.encoding, fmt.columns)
        names: dict[str, None] = {}
        for _line, row in itertools.islice(rows, JSON_ROWS):
            names.update(dict.fromkeys(row))
        return list(names)
    if fmt.columns:
        return list(fmt.columns)
    return [c for c in csv_header(path, fmt.separator, fmt.encoding)[0] if not is_reject_column(c)]


def needed_columns(spec: DatasetSpec, stream: bool = False, station_given: bool = False) -> list[str]:
    """The columns a file of ``spec`` must have: the used ones; for the stream also its keys."""
    cols = spec.used_columns()
    if stream:
        keys = [spec.id_column or "report_id", spec.time_column or "event_time"]
        if not station_given:
            keys.append(spec.station_column or "station_id")
        cols += [c for c in keys if c not in cols]
    return cols


def _state_file() -> Path:
    explicit = os.environ.get("ANONSTREAM_CACHE_DIR")
    base = explicit or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "anonstream")
    return Path(base) / "specs-given"


def given_specs() -> list[Path]:
    """Spec files that fitted a file here before, newest first (the ones that still exist)."""
    try:
        lines = _state_file().read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [Path(s) for s in lines if s.strip() and Path(s).is_file()]


def remember_spec(spec_ref: str | Path) -> None:
    """Remember a spec file (not a bundled name) for the next wrong-file error; never fails a command."""
    try:
        path = resolve_spec_path(spec_ref).resolve()
        if path.parent == SPEC_DIR.resolve():
            return
        kept = [str(path)] + [str(p) for p in given_specs() if p.resolve() != path][: REMEMBERED - 1]
        state = _state_file()
        state.parent.mkdir(parents=True, exist_ok=True)
        tmp = state.with_name(f"{state.name}.{os.getpid()}.tmp")
        tmp.write_text("\n".join(kept) + "\n", encoding="utf-8")
        tmp.replace(state)
    except (OSError, SpecError):
        pass


def closest_spec(header: list[str], stream: bool, station_given: bool,
                 exclude: Path | None = None) -> tuple[str, int, int, list[str]] | None:
    """``(how to name it, columns found, columns needed, needed columns missing)`` of the bundled or
    remembered spec whose needed columns the header holds the largest share of (at least half); None if
    there is none."""
    have = set(header)
    best: tuple[float, int, str, int, int, list[str]] | None = None
    candidates = [(p.stem, p) for p in sorted(SPEC_DIR.glob("*.toml")) if not p.stem.startswith("pipelines")]
    candidates += [(str(p), p) for p in given_specs()]
    for label, path in candidates:
        if exclude is not None and path.resolve() == exclude:
            continue
        try:
            cols = needed_columns(load_spec_data(path), stream, station_given)
        except (SpecError, OSError, InputDataError):
            continue
        found = len(have.intersection(cols))
        score = found / max(len(cols), 1)
        if score >= 0.5 and (best is None or (score, found) > best[:2]):
            best = (score, found, label, found, len(cols), [c for c in cols if c not in have])
    return None if best is None else best[2:]


def check_file_header(path: str | Path, spec_ref: str | Path, spec: DatasetSpec, stream: bool = False,
                      station_given: bool = False) -> None:
    """Refuse, in one line (``InputDataError``, exit 2), a file whose header lacks columns ``spec`` needs."""
    header = file_columns(path, spec)
    need = needed_columns(spec, stream, station_given)
    missing = [c for c in need if c not in header]
    if not missing:
        remember_spec(spec_ref)
        return
    try:
        own: Path | None = resolve_spec_path(spec_ref).resolve()
    except SpecError:
        own = None
    shown = preview(missing, SHOWN)
    none = "none of the spec's columns is there" if len(missing) == len(need) else \
        f"{len(need) - len(missing)} of its {len(need)} columns are there"
    near = closest_spec(header, stream, station_given, own)
    if near is None:
        hint = "; no bundled or earlier spec file matches its header either"
    elif near[1] == near[2]:
        hint = f"; the header looks like spec {near[0]!r} ({near[1]} of its {near[2]} columns): --spec {near[0]}"
    else:  # a partial match would fail the same way: name it and what it lacks too, not as the fix
        hint = (f"; no spec matches its header in full (closest: {near[0]!r}, {near[1]} of its {near[2]} columns; "
                f"it lacks {preview(near[3], SHOWN)})")
    raise InputDataError(f"{Path(path).name} is not a file of spec {spec.name!r}: it lacks column(s) named in the "
                         f"spec: {shown} ({none}){hint}", reason="wrong-spec")
