"""Benchmark: a station's first export, drafted and pushed right the first time (issue 41's "Done when").

For each table under ../shared/data (whole files, read in place) and for generated exports with the
issue's cases, it runs what a station runs, with the draft as written:

    anonstream spec draft FILE --out DRAFT                  # the column table: each column's fate
    anonstream spec check FILE --spec DRAFT
    anonstream anonymize FILE --spec DRAFT --engine E ...   # the engine and options the draft names
    anonstream push FILE --spec DRAFT [--station S1]        # to a worker running DRAFT: its receipt

The worker is the embedded one (the bundled broker, SQLite, one instance per file, the drafted engine;
l = 1 when the draft has no sensitive attribute). The station is registered before the push, as an
operator registers a station whose history is pushed in one go (windows.max_backfill_windows). The
generated cases: a header naming a column twice, outcome columns with a unique key, a station column
of area names with spaces, a 17-month export of one station, and a file pushed with another spec.

    .venv/bin/python bench/onboarding.py [--only adult,nypd] [--timeout 900]

Writes bench/results/onboarding.json and prints the table.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
import tomllib
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import DATA, print_table, write_results  # noqa: E402
from bench.onboarding_cases import generated  # noqa: E402
from bench.stream_vs_batch import cli  # noqa: E402
from db.url import sqlite_url  # noqa: E402
from stream.config.privacy import StreamPrivacy  # noqa: E402
from stream.config.settings import Settings  # noqa: E402
from stream.ops.broker import ensure_topics, free_port, topic_partitions  # noqa: E402
from stream.ops.runtime import migrate, spawn_worker, stop_process  # noqa: E402
from stream.specdraft.fates import parse  # noqa: E402
from stream.station.advert import live, read_adverts  # noqa: E402
from stream.testing.services import broker  # noqa: E402

REAL = {"adult": DATA / "adult" / "adult.csv", "adult-uci": DATA / "adult-uci" / "adult.data",
        "adult-uci-test": DATA / "adult-uci" / "adult.test", "cargo2000": DATA / "cargo2000" / "c2k_data_comma.csv",
        "nypd": DATA / "nypd-arrests-queens-2021" / "nypd_arrests_queens_2021.csv",
        "ipums-cps": DATA / "ipums-cps" / "cps_00421_persons.csv"}


def first_error(text: str) -> str:
    return next((line for line in text.splitlines() if line.startswith("error:")), "")


def draft(src: Path, spec: Path, timeout: float) -> dict[str, Any]:
    code, text = cli(["spec", "draft", str(src), "--out", str(spec)], spec.parent, timeout)
    out: dict[str, Any] = {"draft_exit": code, "draft_error": first_error(text)}
    if code != 0:
        return out
    body = spec.read_text(encoding="utf-8")
    data = tomllib.loads(body)
    fates = parse(body)
    out["columns"] = {c: {"fate": f, "why": why} for c, (f, why) in fates.items()}
    out["fates"] = {f: sum(1 for v, _ in fates.values() if v == f) for f in ("identifier", "qi", "sensitive",
                                                                              "passthrough", "withheld")}
    out["qis"] = [q["name"] for q in data.get("qi", [])]
    out["sensitive"] = data.get("sensitive", {}).get("name")
    out["keys"] = {k: data[k] for k in ("id_column", "id_scope", "time_column", "station_column") if k in data}
    out["station_map"] = len(data.get("station_map", {}))
    out["input_columns"] = bool(data.get("input", {}).get("columns"))
    as_drafted = next((line for line in text.splitlines() if "as drafted:" in line), "")
    out["anonymize_args"] = as_drafted.split(f"--spec {spec} ", 1)[-1].split() if as_drafted else []
    out["decide_first"] = body.split("# Decide first:")[1].split("\n\n")[0] if "# Decide first:" in body else ""
    return out


def anonymize(src: Path, spec: Path, args: list[str], timeout: float) -> dict[str, Any]:
    started = time.perf_counter()
    code, text = cli(["anonymize", str(src), "--spec", str(spec), *args, "--out", str(spec.with_suffix(".out.csv"))],
                     spec.parent, timeout)
    said = re.search(r"released (\d+) rows, suppressed (\d+)", text)
    return {"anonymize_exit": code, "anonymize_error": first_error(text), "anonymize_s": round(time.perf_counter()
                                                                                              - started, 1),
            "released": int(said.group(1)) if said else None, "suppressed": int(said.group(2)) if said else None}


def push(kafka: Any, src: Path, spec: Path, work: Path, engine: str, sensitive: bool, station: str | None,
         timeout: float, worker_spec: Path | None = None) -> dict[str, Any]:
    """A worker running ``worker_spec`` (default: the draft), then ``anonstream push``: exit, summary, receipt."""
    tag = uuid.uuid4().hex[:8]
    work.mkdir(parents=True, exist_ok=True)
    settings = Settings(broker_url=kafka.url, database_url=sqlite_url(work), data_dir=work,
                        spec=str(worker_spec or spec), app_id=f"onb-{tag}", topic_reports=f"o{tag}.reports",
                        topic_dlq=f"o{tag}.reports.dlq", topic_anonymized=f"o{tag}.anonymized",
                        topic_releases=f"o{tag}.releases", engine=engine or "mondrian",
                        privacy=StreamPrivacy() if sensitive else StreamPrivacy(l=1), web_port=free_port(),
                        log_level="warn")
    ensure_topics(settings.bootstrap_servers(), topic_partitions(settings))
    migrate(settings)
    if station:
        from db import Database
        from db.stations import StationRegistry

        db = Database(settings.db_url())
        from datetime import UTC, datetime

        StationRegistry(db).add([station], "onboarding bench", datetime.now(UTC))
        db.dispose()
    worker = spawn_worker(settings, work / "worker.log")
    try:
        deadline = time.monotonic() + 120
        while not live(read_adverts(settings.bootstrap_servers(), settings.topic_reports)):
            if worker.poll() is not None or time.monotonic() > deadline:
                return {"push_exit": None, "push_error": "worker did not start: "
                        + (work / "worker.log").read_text()[-300:]}
            time.sleep(0.5)
        started = time.perf_counter()
        code, text = cli(["push", str(src), "--spec", str(spec), "--broker", kafka.url, "--topic",
                          settings.topic_reports, "--wait", str(int(timeout)), *(["--station", station] if station
                                                                                 else [])], work, timeout + 60)
        sent = re.search(r"push: sent (\d+) report\(s\), rejected (\d+)", text)
        receipt = [line for line in text.splitlines() if line.startswith("receipt:")]
        return {"push_exit": code, "push_error": first_error(text), "push_s": round(time.perf_counter() - started, 1),
                "sent": int(sent.group(1)) if sent else None, "rejected": int(sent.group(2)) if sent else None,
                "receipt": receipt, "push_reasons": [line.strip() for line in text.splitlines()
                                                     if re.match(r"\s+\d+ x [a-z-]+", line)][:6]}
    finally:
        stop_process(worker)


def run_case(kafka: Any, name: str, src: Path, work: Path, timeout: float, other_spec: str | None,
             station: str | None) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    spec = work / f"{name}.toml"
    row: dict[str, Any] = {"case": name, "file": str(src), "rows": sum(1 for _ in src.open("rb")) - 1}
    row |= draft(src, spec, timeout)
    if row["draft_exit"] != 0:
        return row
    row["check_exit"], _said = cli(["spec", "check", str(src), "--spec", str(spec)], work, timeout)
    row |= anonymize(src, spec, row["anonymize_args"], timeout)
    engine = row["anonymize_args"][1] if len(row["anonymize_args"]) > 1 else "mondrian"
    station = station or (None if "station_column" in row["keys"] else "S1")
    push_spec = spec
    if other_spec is not None:  # the wrong-spec case: the worker runs the draft, the station names another spec
        push_spec = Path(other_spec)
    row["station_arg"] = station
    row |= push(kafka, src, push_spec, work / "stream", engine, bool(row["sensitive"]), station, timeout,
                worker_spec=spec)
    return row


def verdict(row: dict[str, Any]) -> str:
    """The push column: what the receipt says, or why nothing was sent (in full under the table)."""
    if row.get("push_exit") is None:
        return "-"
    if row.get("push_error"):
        return f"exit {row['push_exit']}: refused whole, nothing sent (note {row['case']})"
    said = [line.split(" by the worker")[0].removeprefix("receipt: ") for line in row.get("receipt", [])
            if "accepted" in line or "dead-lettered" in line or "not ingested" in line]
    rejected = f"; push rejected {row['rejected']}" if row.get("rejected") else ""
    return f"exit {row['push_exit']}: sent {row.get('sent')}{rejected}; receipt: " + "; ".join(said or ["none"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()
    kafka = broker()
    rows = []
    with tempfile.TemporaryDirectory(prefix="onboarding-") as tmp:
        work = Path(tmp)
        cases = [(n, p, None, None) for n, p in REAL.items()] + generated(work / "gen")
        for name, src, other, station in cases:
            if args.only and name not in args.only.split(","):
                continue
            started = time.perf_counter()
            row = run_case(kafka, name, src, work / name, args.timeout, other, station)
            row["wall_s"] = round(time.perf_counter() - started, 1)
            for key in ("draft_error", "anonymize_error", "push_error"):  # the temporary folder says nothing
                row[key] = str(row.get(key) or "").replace(f"{work}/", "")
            rows.append(row)
            print(f"{name}: draft {row['draft_exit']} check {row.get('check_exit')} anonymize "
                  f"{row.get('anonymize_exit')} push {row.get('push_exit')} ({row['wall_s']} s)", flush=True)
    table = [{"case": r["case"], "rows": r["rows"],
              "draft": f"exit {r['draft_exit']} (note {r['case']})" if r["draft_exit"] else
              ", ".join(f"{n} {f[:4]}" for f, n in r["fates"].items() if n) + f"; engine {r['anonymize_args'][1]}",
              "check": r.get("check_exit", "-"),
              "anonymize": "-" if r.get("anonymize_exit") is None else
              f"exit {r['anonymize_exit']}: {r['released']} released, {r['suppressed']} suppressed"
              if r.get("anonymize_exit") == 0 else f"exit {r['anonymize_exit']}: {r['anonymize_error'][:60]}",
              "push": verdict(r)} for r in rows]
    path = write_results("onboarding", {"cases": rows})
    print_table(table, ["case", "rows", "draft", "check", "anonymize", "push"])
    for r in rows:
        for key in ("draft_error", "anonymize_error", "push_error"):
            if r.get(key):
                print(f"note {r['case']} ({key.split('_')[0]}): {r[key]}")
        if r.get("decide_first"):
            print(f"note {r['case']} (decide first): " + " ".join(r["decide_first"].replace("#", " ").split()))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
