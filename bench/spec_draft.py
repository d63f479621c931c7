"""Benchmark: does a station's export go through ``spec draft`` -> ``spec check`` -> ``anonymize``
with the draft as written (no edits)?

For every CSV under ../shared/data, raw UCI Adult given a header row, and the NYPD arrests rewritten
as other records systems write them (stream/testing/exports.py: dates with a time part or two
layouts, headers that say nothing, an outcome named like a station), it runs

    anonstream spec draft FILE --out SPEC
    anonstream spec check FILE --spec SPEC
    anonstream anonymize FILE --spec SPEC --engine cg-kanon -k 5 --out OUT

and prints each exit code with the first ``error:`` line, the draft's sensitive attribute, time column
and station column. ``--code DIR`` runs the commands from another checkout (e.g. the main branch, for
a before/after table); the exports are built by this checkout.

    .venv/bin/python bench/spec_draft.py [--rows 2000] [--code /path/to/checkout] [--only nypd]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import DATA, ROOT, print_table, write_results
from stream.testing.exports import nypd_variants

ADULT_UCI = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
             "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
             "salary"]
NYPD = DATA / "nypd-arrests-queens-2021" / "nypd_arrests_queens_2021.csv"


def exports(work: Path, rows: int | None) -> list[Path]:
    """The files to try: every CSV under the data folder (cut to ``rows``), Adult with a header, the variants."""
    out = []
    for src in sorted(DATA.rglob("*.csv")):
        if rows is None:
            out.append(src)
            continue
        dst = work / f"{src.stem}.csv"
        with src.open(encoding="utf-8") as fh:
            dst.write_text("".join(line for _, line in zip(range(rows + 1), fh, strict=False)), encoding="utf-8")
        out.append(dst)
    adult = pd.read_csv(DATA / "adult-uci" / "adult.data", header=None, names=ADULT_UCI, dtype=str,
                        skipinitialspace=True, keep_default_na=False, nrows=rows)
    adult.to_csv(work / "adult-uci.csv", index=False)
    out.append(work / "adult-uci.csv")
    nypd = pd.read_csv(NYPD, dtype=str, keep_default_na=False, nrows=rows)
    for name, frame in nypd_variants(nypd).items():
        frame.to_csv(work / f"nypd-{name}.csv", index=False)
        out.append(work / f"nypd-{name}.csv")
    return out


def run(code: Path, *args: str) -> tuple[int, str, float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "stream.cli.main", *args], cwd=code, env=env,
                          capture_output=True, text=True, timeout=3600)
    lines = (done.stderr + done.stdout).splitlines()
    error = next((ln for ln in lines if ln.startswith("error:") or ln.startswith("  - ")), "")
    if not error and done.returncode and lines:
        error = lines[-1]
    return done.returncode, error[:140], time.perf_counter() - start


def try_export(code: Path, src: Path, work: Path) -> dict[str, Any]:
    spec, out = work / f"{src.stem}.toml", work / f"{src.stem}.released.csv"
    row: dict[str, Any] = {"file": src.stem, "draft": "", "check": "", "cg-kanon": "", "why": ""}
    row["draft"], why, t = run(code, "spec", "draft", str(src), "--out", str(spec))
    seconds = t
    if row["draft"] == 0:
        data = tomllib.loads(spec.read_text(encoding="utf-8"))
        row["sensitive"] = data.get("sensitive", {}).get("name", "")
        row["time"], row["station"] = data.get("time_column", ""), data.get("station_column", "")
        row["check"], why_check, t = run(code, "spec", "check", str(src), "--spec", str(spec))
        seconds += t
        row["cg-kanon"], why_anon, t = run(code, "anonymize", str(src), "--spec", str(spec), "--engine", "cg-kanon",
                                           "-k", "5", "--out", str(out))
        seconds += t
        why = why_check or why_anon
    row["why"], row["seconds"] = why, round(seconds, 1)
    row["through"] = row["draft"] == 0 and row["check"] == 0 and row["cg-kanon"] == 0
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=None, help="use the first N rows of each file (default: all)")
    ap.add_argument("--code", type=Path, default=ROOT, help="checkout whose commands run (default: this one)")
    ap.add_argument("--only", default=None, help="only files whose name contains this")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for src in exports(work, args.rows):
            if args.only and args.only not in src.stem:
                continue
            rows.append(try_export(args.code.resolve(), src, work))
            print(f"{rows[-1]['file']}: through={rows[-1]['through']}", file=sys.stderr, flush=True)
    print_table(rows, ["file", "draft", "check", "cg-kanon", "sensitive", "time", "station", "seconds", "why"])
    through = sum(r["through"] for r in rows)
    print(f"\n{through} of {len(rows)} exports go through draft -> check -> anonymize --engine cg-kanon unedited")
    suffix = "" if args.code.resolve() == ROOT else "-other-checkout"
    path = write_results(f"spec_draft{suffix}", {"code": str(args.code), "rows": args.rows, "results": rows})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
