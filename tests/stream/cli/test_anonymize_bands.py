"""``anonymize --bands``: nested bands by default, free ranges on request, refused by engines without them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from core.hierarchies.intervals import parse_interval
from tests.stream.cli.test_anonymize import assert_one_line_error, cli, tiny  # noqa: F401 (fixture)


def _ages(tiny: tuple[Path, Path], tmp_path: Path, *extra: str) -> set[str]:  # noqa: F811
    spec, data = tiny
    out = tmp_path / "out.csv"
    proc = cli("anonymize", str(data), "--spec", str(spec), "--engine", "mondrian", "-k", "3", "--out", str(out),
               *extra)
    assert proc.returncode == 0, proc.stderr
    return set(pd.read_csv(out, dtype=str)["age"])


NODES = {"*", *map(str, range(20, 50)), *(f"[{lo}, {lo + 10})" for lo in range(0, 100, 10)),
         *(f"[{lo}, {lo + 20})" for lo in range(0, 100, 20))}  # values, 10- and 20-year bands


def test_nested_by_default_free_on_request(tiny: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    nested = _ages(tiny, tmp_path, "--param", "nesting_fallback=false")  # every QI nested, no per-QI fallback
    assert nested <= NODES
    free = _ages(tiny, tmp_path, "--bands", "free")
    assert any(lab.endswith("]") for lab in free)  # the classes' own closed ranges
    bounds = [parse_interval(lab) for lab in free if lab != "*"]
    assert all(b is not None for b in bounds)


def test_a_qi_over_the_nesting_target_is_released_free_and_reported(
        tiny: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    """Issue 39: a QI whose nested loss exceeds 1.25x the free one falls back to free ranges; the report's
    diagnostics and utility say where and why, and one warning line says so."""
    spec, data = tiny
    out, report = tmp_path / "out.csv", tmp_path / "report.json"
    proc = cli("anonymize", str(data), "--spec", str(spec), "--engine", "mondrian", "-k", "3", "--out", str(out),
               "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(report.read_text())
    fallback = summary["diagnostics"]["nesting_fallback"]
    assert summary["utility"].get("nesting_fallback") == (fallback or None)
    ages = set(pd.read_csv(out, dtype=str)["age"])
    if fallback.get("age", {}).get("released_as") == "free":
        assert not ages <= NODES and all(parse_interval(a) or a.isdigit() for a in ages if a != "*")
        assert fallback["age"]["nested_loss"] > 1.25 * fallback["age"]["free_loss"] and fallback["age"]["why"]
        warnings = [line for line in proc.stderr.splitlines() if "nesting_fallback" in line]
        assert len(warnings) == 1 and "age" in warnings[0]
    else:
        assert ages <= NODES


def test_free_bands_refused_by_an_engine_that_only_nests(tiny: tuple[Path, Path]) -> None:  # noqa: F811
    spec, data = tiny
    proc = cli("anonymize", str(data), "--spec", str(spec), "--engine", "optimal", "-k", "3", "--bands", "free")
    assert_one_line_error(proc, "releases hierarchy nodes only")
    assert "mondrian" in proc.stderr
    ok = cli("anonymize", str(data), "--spec", str(spec), "--engine", "local-recode", "-k", "3", "--bands", "nested")
    assert ok.returncode == 0, ok.stderr  # full-domain and local-recode releases are nested already
