"""Peak memory of ``anonstream push`` against file size (bounded-memory push, issue 20 item 5).

For each size, writes a CSV of generated crime reports to a temporary folder (deleted afterwards),
starts the embedded broker, runs ``anonstream push`` under ``/usr/bin/time -v`` and records the
maximum resident set size, the wall time and the rows sent. A few rows are made bad on purpose so
the rejection report is exercised too. Writes bench/results/push_memory.json and prints a table.

    .venv/bin/python bench/push_memory.py                 # 64 MB and 1 GB
    .venv/bin/python bench/push_memory.py --sizes 32 128  # quick
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stream.ops.broker import EmbeddedBroker, ensure_topics  # noqa: E402
from stream.station.simulate import generate_day  # noqa: E402


def write_file(path: Path, megabytes: int) -> int:
    base = generate_day(1, 20_000, 7, datetime(2024, 3, 1, tzinfo=UTC))["S1"]
    cols = list(base[0])
    target = megabytes * 1024 * 1024
    rows = 0
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, cols)
        w.writeheader()
        rep = 0
        while fh.tell() < target:
            for i, r in enumerate(base):
                row = {**r, "report_id": f"{r['report_id']}-{rep}"}
                if i == 11 and rep % 50 == 0:
                    row["offence"] = "theft"  # one rejected row in every 50 copies
                w.writerow(row)
                rows += 1
            rep += 1
    return rows


def measure(megabytes: int, tmp: Path, broker: EmbeddedBroker) -> dict[str, object]:
    path = tmp / f"push-{megabytes}mb.csv"
    rows = write_file(path, megabytes)
    size = path.stat().st_size
    topic = f"bench{megabytes}.reports"
    ensure_topics(broker.bootstrap, {topic: 4})
    cmd = ["/usr/bin/time", "-v", str(ROOT / ".venv" / "bin" / "anonstream"), "push", str(path), "--station", "S1",
           "--broker", broker.url, "--topic", topic, "--spec", "crime", "--show", "3",
           "--rejects", str(tmp / "rejects.csv")]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    path.unlink()
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    assert found is not None, f"/usr/bin/time printed no peak memory: {proc.stderr[-500:]}"
    peak_kb = int(found.group(1))
    sent = re.search(r"sent (\d+) report\(s\), rejected (\d+)", proc.stdout)
    return {"file_mb": round(size / 2**20, 1), "rows": rows, "sent": int(sent.group(1)) if sent else None,
            "rejected": int(sent.group(2)) if sent else None, "peak_rss_mb": round(peak_kb / 1024, 1),
            "wall_s": round(wall, 1), "rows_per_s": round(rows / wall), "exit": proc.returncode,
            "command": " ".join(cmd[2:])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 1024], help="file sizes in MB")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="anonstream-push-") as tmp, EmbeddedBroker() as broker:
        for mb in args.sizes:
            results.append(measure(mb, Path(tmp), broker))
            print(results[-1], flush=True)
    load = os.getloadavg()[0]
    out = ROOT / "bench" / "results" / "push_memory.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"load_1min": load, "results": results}, indent=2))
    print(f"\n{'file MB':>8} {'rows':>10} {'sent':>10} {'rejected':>9} {'peak RSS MB':>12} {'wall s':>8} {'rows/s':>8}")
    for r in results:
        print(f"{r['file_mb']:>8} {r['rows']:>10} {r['sent']!s:>10} {r['rejected']!s:>9} {r['peak_rss_mb']:>12} "
              f"{r['wall_s']:>8} {r['rows_per_s']:>8}")
    print(f"load average (1 min) at the end: {load:.1f}; results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
