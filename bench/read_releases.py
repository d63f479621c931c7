"""Benchmark: ``read_releases`` on a consumed folder of many releases, in CSV and in Parquet.

Writes ``--releases`` releases (default 100) of ``--rows`` records (default 10,000) with the columns a
crime release has (class id, an age label with its typed bounds, sex, suburb, postcode, reporter,
offence, event date) through the consumer's writers (``stream.analyst.export.write_release``, partitioned by
date as ``consume --partition-by date`` does), then times ``stream.analyst.dataset.read_releases`` on the
folder: wall seconds, rows per second and peak memory of this process. The records are synthetic
(seeded numpy), so the figure is the reader's own cost, not the anonymizer's.

    .venv/bin/python bench/read_releases.py [--releases 100] [--rows 10000]

Writes bench/results/read_releases.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import peak_rss_mb, print_table, write_results
from stream.analyst.dataset import read_releases
from stream.analyst.export import write_release

COLUMNS = ["class_id", "age", "age_lo", "age_hi", "sex", "suburb", "postcode", "reporter", "offence", "event_date"]
SUBURBS = ["Khayelitsha", "Cape Flats", "Mitchells Plain", "Bellville", "*"]
OFFENCES = ["Theft", "Burglary", "Assault", "Fraud", "Robbery"]


def release(i: int, rows: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rng = np.random.default_rng(i)
    lo = rng.integers(0, 8, rows) * 10
    day = f"2024-03-{1 + i % 28:02d}"
    records = [{"release_id": f"r-{i:04d}", "seq": j, "class_id": int(j // 7), "values": {
        "age": f"[{lo[j]}-{lo[j] + 9}]", "age_lo": int(lo[j]), "age_hi": int(lo[j] + 9),
        "sex": "F" if j % 2 else "M", "suburb": SUBURBS[j % 5], "postcode": f"77{j % 90:02d}" if j % 3 else "77**",
        "reporter": "victim", "offence": OFFENCES[int(rng.integers(0, 5))], "event_date": day}}
        for j in range(rows)]
    manifest = {"release_id": f"r-{i:04d}", "records": rows, "columns": COLUMNS,
                "window": {"start": f"{day}T00:00:00+00:00"}}
    return manifest, records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--releases", type=int, default=100)
    ap.add_argument("--rows", type=int, default=10_000)
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="anonstream-read-") as tmp:
        folders = {fmt: Path(tmp) / fmt for fmt in ("csv", "parquet")}
        write_s = dict.fromkeys(folders, 0.0)
        for i in range(args.releases):
            manifest, records = release(i, args.rows)
            for fmt, folder in folders.items():
                t0 = time.perf_counter()
                write_release(folder, manifest, records, fmt, "date")
                write_s[fmt] += time.perf_counter() - t0
        for fmt, folder in folders.items():
            size = sum(p.stat().st_size for p in folder.rglob(f"*.{fmt}"))
            t0 = time.perf_counter()
            df = read_releases(folder)
            seconds = time.perf_counter() - t0
            assert len(df) == args.releases * args.rows and str(df["age_lo"].dtype) == "Int64"
            results.append({"format": fmt, "releases": args.releases, "rows": len(df), "files_mb": round(size / 1e6, 1),
                            "write_s": round(write_s[fmt], 2), "read_s": round(seconds, 2),
                            "rows_per_s": round(len(df) / seconds), "peak_rss_mb": round(peak_rss_mb())})
            del df
    print_table(results, ["format", "releases", "rows", "files_mb", "write_s", "read_s", "rows_per_s", "peak_rss_mb"])
    print(f"results: {write_results('read_releases', {'runs': results})}")


if __name__ == "__main__":
    main()
