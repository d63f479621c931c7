"""Helpers for the delay mode's tests and demo: the bundled crime spec without its ``[dp]`` tables (delay
mode refuses differentially private counts, stream/worker/delay.py)."""

from __future__ import annotations

from pathlib import Path

from stream.io.specs import SPEC_DIR


def crime_spec_without_dp(folder: Path) -> str:
    """Write the crime spec minus its ``[dp]`` tables into ``folder``; returns the file's path (a spec ref)."""
    text = (SPEC_DIR / "crime.toml").read_text(encoding="utf-8")
    cut = text.index("\n[dp]")
    path = folder / "crime-no-dp.toml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(text[:cut] + "\n", encoding="utf-8")
    return str(path)
