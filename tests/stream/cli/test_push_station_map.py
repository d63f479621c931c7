"""`anonstream push` keys rows by the spec's ``station_map`` (issue 41): an area name and the station id it
maps to are one station, for ``--station`` and for report ids repeated in the file; ``spec check`` agrees.

The oracle is the generated file: each row's station through the map, then (station, report id) first seen.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pandas as pd
import pytest

from core.canonical import canonical_id
from stream.cli.main import main
from stream.ops.broker import EmbeddedBroker

SPEC = """\
name = "mapped"
id_column = "case"
time_column = "when"
station_column = "station"
identifiers = ["case"]

[station_map]
"Queens North" = "queens-north"
"Bronx 4" = "bronx-4"

[[qi]]
name = "age"
type = "numeric"
hierarchy = { widths = [10, 20], domain = [0, 120], integer = true }

[[qi]]
name = "when"
type = "date"
hierarchy = { levels = ["day", "month", "year"], format = "iso" }

[sensitive]
name = "offence"
severity = { "Theft" = 1, "Assault" = 3 }
"""
MAP = {"Queens North": "queens-north", "Bronx 4": "bronx-4"}
SPELLINGS = ["Queens North", " Queens North ", "queens-north", "Bronx 4", "bronx-4"]


def _export(tmp_path: Path, seed: int, n: int = 60) -> tuple[Path, Path, list[dict[str, str]]]:
    rnd = random.Random(seed)
    rows = [{"case": str(rnd.randint(1, 25)), "station": rnd.choice(SPELLINGS),
             "when": f"2026-05-{rnd.randint(1, 28):02d}", "age": str(rnd.randint(18, 90)),
             "offence": rnd.choice(["Theft", "Assault"])} for _ in range(n)]
    spec, src = tmp_path / "mapped.toml", tmp_path / "export.csv"
    spec.write_text(SPEC, encoding="utf-8")
    pd.DataFrame(rows).to_csv(src, index=False)
    return spec, src, rows


def _oracle(rows: list[dict[str, str]], station: str | None) -> tuple[int, int, int]:
    """(accepted, station-mismatch, duplicate-id) as the worker keys stations: through the map."""
    keyed = [MAP.get(r["station"].strip(), r["station"].strip()) for r in rows]
    wanted = MAP.get(station, station) if station else None
    mismatch = [wanted is not None and k != wanted for k in keyed]
    seen: set[tuple[str, str]] = set()
    dupes = 0
    for r, k, bad in zip(rows, keyed, mismatch, strict=True):
        key = (wanted or k, canonical_id(r["case"]))
        if key in seen and not bad:
            dupes += 1
        seen.add(key)
    return len(rows) - sum(mismatch) - dupes, sum(mismatch), dupes


@pytest.mark.parametrize("station", [None, "queens-north", "Queens North"])
def test_spec_check_keys_area_names_by_their_mapped_station(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            station: str | None) -> None:
    spec, src, rows = _export(tmp_path, seed=11)
    accepted, mismatch, dupes = _oracle(rows, station)
    assert dupes > 0 and (station is None or mismatch > 0)  # the file exercises both rules
    main(["spec", "check", str(src), "--spec", str(spec), "-k", "1", *(["--station", station] if station else [])])
    out = capsys.readouterr().out
    assert f"push: {accepted} of {len(rows)} rows pass push's checks" in out, out
    assert (f"push would reject {mismatch} x station-mismatch" in out) == bool(mismatch)


@pytest.mark.broker
@pytest.mark.parametrize("station", [None, "Queens North"])
def test_push_keys_area_names_by_their_mapped_station(kafka: EmbeddedBroker, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str], station: str | None) -> None:
    from stream.ops.broker import ensure_topics

    topic = f"t{uuid.uuid4().hex[:8]}.reports"
    ensure_topics(kafka.bootstrap, {topic: 1})
    spec, src, rows = _export(tmp_path, seed=5)
    accepted, mismatch, dupes = _oracle(rows, station)
    code = main(["push", str(src), "--broker", kafka.url, "--topic", topic, "--spec", str(spec),
                 *(["--station", station] if station else [])])
    out = capsys.readouterr().out
    assert code == 1 and f"push: sent {accepted} report(s), rejected {mismatch + dupes}" in out, out
    assert "duplicate-id" in out and ("station-mismatch" in out) == bool(mismatch)
