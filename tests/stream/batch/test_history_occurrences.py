"""``anonymize --ledger`` counts content in occurrences, over canonical values.

Two overlapping exports of one department (the second writes ``6/17/2020``, ``m`` and ``044`` where the
first wrote ``06/17/2020``, ``M`` and ``44``, under new arrest keys) anonymized in turn with one ledger:
no shared report is released twice, every co-arrest of either export is released, and the first export
sent again is refused whole.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import sqlalchemy as sa

from stream.testing.reports import ARRESTS_SPEC, overlapping_exports
from tests.stream.cli.test_anonymize import assert_one_line_error, cli


def _key(r: dict[str, str]) -> tuple[str, ...]:
    """A report's content as a person reads it, whatever the layout."""
    m, d, y = (int(x) for x in r["arrest_date"].split("/"))
    return r["precinct"], f"{y}-{m:02d}-{d:02d}", str(int(r["age"])), r["sex"].upper(), r["offence"]


def _run(src: Path, spec: Path, ledger: Path, tmp_path: Path) -> tuple[dict, str]:
    rep = tmp_path / f"{src.stem}.json"
    proc = cli("anonymize", str(src), "--spec", str(spec), "--engine", "optimal", "-k", "5",
               "--max-suppression", "0", "--ledger", str(ledger), "--report", str(rep),
               "--out", str(tmp_path / f"{src.stem}-out.csv"))
    assert proc.returncode == 0, proc.stderr
    return json.loads(rep.read_text()), proc.stderr


def test_overlapping_exports_in_two_layouts_release_no_shared_report_twice(tmp_path: Path) -> None:
    spec, ledger = tmp_path / "arrests.toml", tmp_path / "ledger.db"
    spec.write_text(ARRESTS_SPEC)
    a, b, picks = overlapping_exports(seed=11, n=160, co=24, shared=70, fresh=90, days=3,
                                      stations=("101", "102", "103", "104"))
    src_a, src_b = tmp_path / "a.csv", tmp_path / "b.csv"
    pd.DataFrame(a).to_csv(src_a, index=False)
    pd.DataFrame(b).to_csv(src_b, index=False)
    in_a, in_b = Counter(_key(r) for r in a), Counter(_key(r) for r in b)

    first, err = _run(src_a, spec, ledger, tmp_path)
    co_arrests = sum(n - 1 for n in in_a.values())
    assert co_arrests >= 24
    assert first["ledger"]["excluded"] == 0 and first["released"] == len(a)  # co-arrests all released
    assert first["ledger"]["repeated_content_released"] == co_arrests
    assert f"{co_arrests} row(s) repeat the content of another row" in err

    second, err = _run(src_b, spec, ledger, tmp_path)
    shared = sum(min(n, in_a[k]) for k, n in in_b.items())
    assert shared >= len(picks)  # the 70 shared reports, plus any new arrest that repeats one of A by chance
    assert second["ledger"]["excluded"] == shared
    assert second["ledger"]["excluded_by_rule"] == {"content": shared}
    assert "re-send" in second["ledger"]["excluded_why"]["content"]
    assert second["released"] == len(b) - shared
    assert "already released, excluded: content" in err

    engine = sa.create_engine(f"sqlite:///{ledger}")
    with engine.connect() as conn:
        released = Counter(n for _, n in conn.execute(sa.text(
            "SELECT content_fp, COUNT(*) FROM released_fingerprints GROUP BY content_fp")).all())
    engine.dispose()
    assert released == Counter(max(in_a[k], in_b[k]) for k in in_a.keys() | in_b.keys())

    resent = tmp_path / "a-again.csv"  # export A once more, under new arrest keys
    pd.DataFrame([{**r, "arrest_key": f"Z{i}"} for i, r in enumerate(a)]).to_csv(resent, index=False)
    assert_one_line_error(cli("anonymize", str(resent), "--spec", str(spec), "--engine", "optimal", "-k", "5",
                              "--ledger", str(ledger)), f"every one of the {len(a)} row(s) was already released")
