"""Benchmark: ``anonstream anonymize`` as a whole fresh process against a pandas round trip (issue 29).

Each case runs two fresh processes, interleaved and paired, ``--repeat`` times:

* ``anonymize``: ``python -m stream.cli.main anonymize FILE --spec ... -k 5 --max-suppression 0
  --out ... --report ...`` (the numba cache is the user's, warm after the first run; ``--cold`` also
  times one run on an empty numba cache first);
* ``round trip``: a Python process that imports pandas, reads the same CSV with ``pd.read_csv(dtype=str)``
  (every value as text, as ``anonymize`` reads it) and writes it back with ``to_csv``: the floor anyone
  has for a CSV in, CSV out job (``--typed-round-trip``: ``read_csv`` guessing the column types, as
  before issue 45).

Each case runs at every ``--suppression`` level (default ``0,0.04``: 0 % and <= 4 %).

Reported per case: the median of the paired wall-time ratios (anonymize / round trip), the same for
CPU time (user + system, less disturbed by other processes on a loaded machine), both medians,
the peak RSS of both (``/usr/bin/time``'s maximum resident set size), their ratio, and anonymize's stage split from its
``--report`` (``stages``: start-up, read, engine warm-up, engine, verify, report, write). The machine
load (``os.getloadavg``) is printed with each case: on a loaded machine both processes slow down, the
ratio much less. Targets (issue 45): ratio <= 2.0 at every size and suppression level, memory ratio
<= 1.5, Adult <= 4 % within 3 s.

    PYTHONPATH=$PWD .venv/bin/python bench/whole_process.py [--repeat 3] [--quick] [--cases 'adult,adult x8'] \
        [--suppression 0,0.04] [--typed-round-trip]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import DATA, ROOT, print_table, write_results

ROUND_TRIP = ("import sys, pandas as pd; "
              "pd.read_csv(sys.argv[1], sep=sys.argv[2], dtype=str).to_csv(sys.argv[3], sep=sys.argv[2], index=False)")
TYPED_ROUND_TRIP = ROUND_TRIP.replace(", dtype=str", "")
IPUMS_TOML = """\
name = "ipums-cps"
passthrough = ["MONTH", "SERIAL", "MISH", "PERNUM", "CPSIDP", "WTFINL"]
[input]
separator = ","
[[qi]]
name = "AGE"
type = "numeric"
hierarchy = { widths = [5, 10, 20, 40], domain = [0, 120] }
[[qi]]
name = "SEX"
type = "categorical"
hierarchy = { rows = [["1", "*"], ["2", "*"]] }
[[qi]]
name = "RACE"
type = "masked"
hierarchy = { mask = 3 }
[[qi]]
name = "STATEFIP"
type = "masked"
hierarchy = { mask = 2 }
[[qi]]
name = "YEAR"
type = "categorical"
hierarchy = { rows = [["2022", "*"], ["2023", "*"]] }
"""


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, str, float]:
    """(wall s, peak RSS MiB, exit code, stderr tail, CPU s) of one fresh child process.

    The peak comes from ``/usr/bin/time`` where it exists: a child forked from this (large) process
    would otherwise count this process's pages in its ``ru_maxrss`` until it execs."""
    rss_file = Path(tempfile.gettempdir()) / f"whole_process_rss_{os.getpid()}"
    timer = Path("/usr/bin/time")
    full = [str(timer), "-f", "%U %S %M", "-o", str(rss_file), *cmd] if timer.exists() else cmd
    t0 = time.perf_counter()
    proc = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    cpu, rss_kib = usage.ru_utime + usage.ru_stime, float(usage.ru_maxrss)
    if timer.exists():
        user, system, rss = rss_file.read_text().split()[-3:]
        cpu, rss_kib = float(user) + float(system), float(rss)
    return wall, rss_kib / 1024.0, code, err.decode(errors="replace")[-300:], cpu


def cases(tmp: Path, quick: bool) -> list[tuple[str, Path, str, str]]:
    """(name, csv, separator, spec) for each case; Adult x8 and the IPUMS slices are written to ``tmp``."""
    import pandas as pd

    adult = DATA / "adult" / "adult.csv"
    frame = pd.read_csv(adult, sep=";", dtype=str)
    x8 = tmp / "adult_x8.csv"
    pd.concat([frame] * 8, ignore_index=True).to_csv(x8, sep=";", index=False)
    spec = tmp / "ipums.toml"
    spec.write_text(IPUMS_TOML)
    ipums = pd.read_csv(DATA / "ipums-cps" / "cps_00421_persons.csv", dtype=str)
    out = [("Adult", adult, ";", "adult"), ("Adult x8", x8, ";", "adult")]
    for size in (25_000, 100_000, len(ipums)):
        path = tmp / f"ipums_{size}.csv"
        ipums.iloc[:size].to_csv(path, index=False)
        out.append((f"IPUMS CPS {size // 1000}k", path, ",", str(spec)))
    return out[:3] if quick else out


def measure(name: str, path: Path, sep: str, spec: str, tmp: Path, repeat: int, env: dict[str, str],
            suppression: str = "0", round_trip: str = ROUND_TRIP) -> dict:
    py = sys.executable
    base = [py, "-c", round_trip, str(path), sep, str(tmp / "rt.csv")]
    report = tmp / "report.json"
    anon = [py, "-m", "stream.cli.main", "anonymize", str(path), "--spec", spec, "--engine", "optimal", "-k", "5",
            "--max-suppression", suppression, "--out", str(tmp / "anon.csv"), "--report", str(report)]
    load_before = load()
    ratios, cpu_ratios, walls, base_walls, rss, base_rss, stages = [], [], [], [], [], [], []
    cpus, base_cpus = [], []
    for i in range(repeat):
        pair = [("base", base), ("anon", anon)] if i % 2 == 0 else [("anon", anon), ("base", base)]
        got = {}
        for kind, cmd in pair:
            got[kind] = run(cmd, env)
            if got[kind][2] != 0:
                raise SystemExit(f"{name}: {kind} exited {got[kind][2]}: {got[kind][3]}")
        ratios.append(got["anon"][0] / got["base"][0])
        cpu_ratios.append(got["anon"][4] / got["base"][4])
        walls.append(got["anon"][0])
        cpus.append(got["anon"][4])
        base_cpus.append(got["base"][4])
        base_walls.append(got["base"][0])
        rss.append(got["anon"][1])
        base_rss.append(got["base"][1])
        r = json.loads(report.read_text())
        stages.append(r.get("stages") or {k: r.get(k) for k in ("warm_up_s", "runtime_s", "total_s")})
    split = {k: round(statistics.median(float(s.get(k) or 0) for s in stages), 3) for k in stages[-1]}
    return {"case": name, "ratio": statistics.median(ratios), "ratio_max": max(ratios),
            "cpu_ratio": statistics.median(cpu_ratios),
            "anonymize_s": statistics.median(walls), "round_trip_s": statistics.median(base_walls),
            "anonymize_cpu_s": statistics.median(cpus), "round_trip_cpu_s": statistics.median(base_cpus),
            "rss_mib": max(rss), "round_trip_rss_mib": max(base_rss), "rss_ratio": max(rss) / max(base_rss),
            "stages": split, "load": f"{load_before} -> {load()}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="Adult, Adult x8 and IPUMS 25k only")
    ap.add_argument("--cases", help="comma-separated case names to keep, any case (e.g. 'Adult x8,IPUMS CPS 202k')")
    ap.add_argument("--cold", action="store_true", help="first run Adult once on an empty numba cache")
    ap.add_argument("--suppression", default="0,0.04", help="comma-separated --max-suppression levels")
    ap.add_argument("--typed-round-trip", action="store_true", help="round trip without dtype=str")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        todo = cases(tmp, args.quick)
        if args.cases:
            keep = {c.strip().casefold() for c in args.cases.split(",")}
            names = [c[0] for c in todo]
            todo = [c for c in todo if c[0].casefold() in keep]
            if not todo:
                ap.error(f"--cases {args.cases!r} names no case; the cases are: {', '.join(names)}")
        if args.cold:
            cold_env = {**env, "NUMBA_CACHE_DIR": str(tmp / "numba-cold")}
            rows.append({**measure("Adult (empty numba cache)", *todo[0][1:], tmp, 1, cold_env)})  # 0 %
        warm = [sys.executable, "-m", "stream.cli.main", "anonymize", str(todo[0][1]), "--spec", todo[0][3],
                "-k", "5", "--out", str(tmp / "warm.csv")]
        run(warm, env)  # untimed: fills the numba cache of a fresh checkout (a first run compiles)
        round_trip = TYPED_ROUND_TRIP if args.typed_round_trip else ROUND_TRIP
        levels = [x.strip() for x in args.suppression.split(",") if x.strip()]
        for (name, path, sep, spec), level in ((case, level) for case in todo for level in levels):
            label = f"{name} {float(level):.0%}"
            rows.append(measure(label, path, sep, spec, tmp, args.repeat, env, level, round_trip))
            print(f"{label}: ratio {rows[-1]['ratio']:.2f}, load {rows[-1]['load']}", flush=True)
    print(f"\n{os.cpu_count()} CPUs; ratio = median over paired runs of anonymize wall / round-trip wall; "
          "cpu_ratio: the same with user + system CPU time, which a loaded machine disturbs less")
    print_table(rows, ["case", "ratio", "ratio_max", "cpu_ratio", "anonymize_s", "round_trip_s", "anonymize_cpu_s",
                       "round_trip_cpu_s", "rss_mib", "round_trip_rss_mib", "rss_ratio", "load"])
    print("\nanonymize stage split (s, medians from --report):")
    for r in rows:
        print(f"  {r['case']}: " + ", ".join(f"{k} {v}" for k, v in r["stages"].items()))
    print(f"\nresults: {write_results('whole_process', {'cases': rows})}")


if __name__ == "__main__":
    main()
