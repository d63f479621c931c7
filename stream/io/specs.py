"""Load dataset specs from TOML files, resolving hierarchy CSV paths relative to the spec file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from core.encoding import Schema
from core.errors import SpecError
from core.hierarchies import parse_arx_csv
from core.schema import DatasetSpec, parse_spec

SPEC_DIR = Path(__file__).resolve().parent.parent / "specs"


def resolve_spec_path(name_or_path: str | Path) -> Path:
    """A path to a spec file, or the name of a bundled spec (``adult``, ``crime``, ``nypd`` ...)."""
    p = Path(name_or_path)
    if p.exists():
        return p
    bundled = SPEC_DIR / f"{name_or_path}.toml"
    if bundled.exists():
        return bundled
    names = ", ".join(sorted(f.stem for f in SPEC_DIR.glob("*.toml")))
    raise SpecError(f"spec '{name_or_path}' not found: not a file and not a bundled spec ({names})",
                    reason="spec-not-found")


def _inline_csvs(data: dict[str, Any], base: Path) -> dict[str, Any]:
    qis = []
    for qi in data.get("qi", []):
        h = qi.get("hierarchy") if isinstance(qi, dict) else None
        if isinstance(h, dict) and "csv" in h and "rows" not in h:
            path = (base / h["csv"]).resolve()
            if not path.exists():
                raise SpecError(f"spec field 'qi[{qi.get('name')}].hierarchy.csv': file not found: {path}")
            h = {**h, "rows": parse_arx_csv(path.read_text(encoding="utf-8"), h.get("sep", ";"))}
            h.pop("sep", None)
            qi = {**qi, "hierarchy": h}
        qis.append(qi)
    return {**data, "qi": qis}


def load_spec_data(path: str | Path) -> DatasetSpec:
    p = resolve_spec_path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec {p.name} is not valid TOML: {exc}") from None
    return parse_spec(_inline_csvs(data, p.parent))


def load_schema(path: str | Path) -> Schema:
    """Read, validate and bind a spec file (the only place hierarchy files are read)."""
    return Schema.from_spec(load_spec_data(path))


def crime_spec_without_dp(folder: Path) -> str:
    """Write the bundled crime spec minus its ``[dp]`` tables into ``folder``; returns the file's path (a
    spec ref). Delay mode refuses differentially private counts (stream/worker/delay.py), so its demo
    (``anonstream demo --window-by delay``) and tests run on this copy."""
    text = (SPEC_DIR / "crime.toml").read_text(encoding="utf-8")
    cut = text.index("\n[dp]")
    path = folder / "crime-no-dp.toml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(text[:cut] + "\n", encoding="utf-8")
    return str(path)
