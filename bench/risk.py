"""Benchmark: time of the full risk profile (core.risk.risk_profile: prosecutor, journalist, marketer,
sample uniques, Pitman / Zayatz / SNB / Dankar, attribute disclosure, histogram) on an input table and
on its anonymized release, so it can run on every release (targets: < 1 s on Adult, < 5 s on
200,000 IPUMS CPS rows). It also prints the full risk profile of ``optimal`` k=5 at <= 4 %
suppression on Adult (the bundled ``adult`` spec).

Data (read from ../shared/data):

* ``adult`` spec: Adult, 30,162 rows, 9 QIs with ARX hierarchies, no sensitive attribute;
* ``adult-uci`` spec: the same rows, numeric age / hours bands, ``occupation`` sensitive;
* IPUMS CPS (``ipums-cps/cps_00421_persons.csv``): 200,000 rows drawn without replacement (seed 0),
  QIs AGE (numeric, automatic interval hierarchy), SEX, RACE, STATEFIP (flat); MISH (month in sample)
  stands in for a sensitive attribute so the attribute-disclosure path is timed too.

Population: Adult as a 1 % sample (pi = 0.01); CPS as a sample of 330 million people. Release:
``optimal`` k=5, max_suppression 0.04 (0.05 for CPS). Each profile is timed ``--repeat`` times
(median reported); wall-clock on a shared machine, so treat the figures as upper bounds.

    .venv/bin/python bench/risk.py [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import DATA, print_table, write_results
from core.encoding import Schema
from core.engines.registry import run
from core.risk import risk_profile
from core.schema import parse_spec
from core.verify import verify_release
from stream.cli.risk import format_risk
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec

CPS_QI = ["AGE", "SEX", "RACE", "STATEFIP"]
COMMAND = ".venv/bin/python bench/risk.py"


def cps(n: int) -> tuple[pd.DataFrame, Schema]:
    df = pd.read_csv(DATA / "ipums-cps" / "cps_00421_persons.csv", usecols=[*CPS_QI, "MISH"])
    df = df.sample(min(n, len(df)), random_state=0).reset_index(drop=True)
    for col in ("SEX", "RACE", "STATEFIP", "MISH"):
        df[col] = df[col].astype(str)
    qis = [{"name": "AGE", "type": "numeric", "hierarchy": {"auto": 3}}]
    qis += [{"name": c, "type": "categorical", "hierarchy": {"rows": [[v, "*"] for v in sorted(df[c].unique())]}}
            for c in CPS_QI[1:]]
    return df, Schema.from_spec(parse_spec({"name": "cps", "qi": qis, "sensitive": {"name": "MISH"}}))


def timed(repeat: int, **kwargs: Any) -> tuple[float, dict[str, Any]]:
    times, prof = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        prof = risk_profile(**kwargs)
        times.append(time.perf_counter() - t0)
    assert prof is not None
    return statistics.median(times), prof.summary()


def measure(name: str, frame: pd.DataFrame, schema: Schema, supp: float, repeat: int, target: float,
            **population: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    spec = schema.spec
    common = {"qi": schema.qi_names, "sensitive": schema.sensitive,
              "severity": spec.sensitive.severity if spec.sensitive else None, **population}
    t_in, prof_in = timed(repeat, released=frame, **common)
    rel = run("optimal", frame, schema, {"k": 5, "max_suppression": supp})
    assert verify_release(frame, rel, schema).ok
    t_out, prof_out = timed(repeat, released=rel.rows, original=frame, **common)
    rows = []
    for what, t, p in (("input", t_in, prof_in), ("optimal k=5", t_out, prof_out)):
        u = p["population_uniqueness"]
        rows.append({"data": name, "table": what, "records": p["records"], "classes": p["classes"],
                     "profile_s": t, "target_s": target, "ok": t < target,
                     "pros_max": p["prosecutor"]["highest"], "pros_avg": p["prosecutor"]["average"],
                     "at_risk": p["prosecutor"]["records_at_risk"], "jour_max": p["journalist"]["highest"],
                     "marketer": p["marketer"], "uniques": p["sample_uniques"], "pop_uniq": u["dankar"],
                     "model": u["dankar_model"]})
    return rows, prof_out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20,000 CPS rows, one repeat")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    rows: list[dict[str, Any]] = []
    profiles: dict[str, Any] = {}
    for spec_name in ("adult", "adult-uci"):
        schema = load_schema(spec_name)
        frame = read_for_spec(DATA / "adult" / "adult.csv", schema.spec) if spec_name == "adult" else \
            read_for_spec(DATA / "adult-uci" / "adult.data", schema.spec)
        got, prof = measure(spec_name, frame, schema, 0.04, repeat, 1.0, sampling_fraction=0.01)
        rows += got
        profiles[f"{spec_name} optimal k=5 <=4%"] = prof
    frame, schema = cps(20_000 if args.quick else 200_000)
    got, prof = measure(f"ipums-cps {len(frame)}", frame, schema, 0.05, repeat, 5.0, population=330_000_000)
    rows += got
    profiles["ipums-cps optimal k=5 <=5%"] = prof
    print_table(rows, ["data", "table", "records", "classes", "profile_s", "target_s", "ok", "pros_max", "pros_avg",
                       "at_risk", "jour_max", "marketer", "uniques", "pop_uniq", "model"])
    print(f"\nrisk profile of optimal k=5, max_suppression 0.04 on Adult (spec adult, pi = 0.01); reproduce: {COMMAND}")
    print("\n".join(format_risk(profiles["adult optimal k=5 <=4%"])))
    path = write_results("risk", {"command": COMMAND + (" --quick" if args.quick else ""), "repeat": repeat,
                                  "rows": rows, "profiles": profiles})
    print(f"\nwritten {path}")


if __name__ == "__main__":
    main()
