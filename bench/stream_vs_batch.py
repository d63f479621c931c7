"""Benchmark: a station's export pushed unsorted through the embedded worker, against batch ``anonymize``.

The bundled NYPD arrests (13,224 rows, dates in the export's own order, not sorted), its spec drafted
by ``anonstream spec draft``, then:

* batch: ``anonstream anonymize FILE --spec DRAFT --engine cg-kanon -k 5`` (one release of the file);
* stream: the bundled broker (tansu), SQLite under a temporary folder (the embedded defaults), one
  worker (``anonstream run``) with the README's window settings (``windows.by = global``, 31-day
  windows), engine cg-kanon with k = 5 and l = 1 (k only, as the batch run; the stream's default is
  l = 2, which cg-kanon does not enforce); ``anonstream push FILE --spec DRAFT`` as a station runs it.
  Waits until every pushed report is accounted for (released, suppressed, blocked, dead-lettered,
  duplicate or pending) and every release is published.

Information loss is the loss metric LM (the CG paper's weighted loss, what ``anonymize`` prints as
``loss=``) with every row costed against the *whole file's* domain: a release's own ``loss`` in its
manifest is costed against its window's domain (a month label costs 1 in a one-month window and
1/12 in a year), so averaging manifests would compare different rulers. Each released row is
re-costed from its published labels on the whole file's hierarchy encoding; a suppressed row costs 1.
The batch figure is re-costed the same way (it equals ``anonymize``'s own ``loss=``, a check of the
re-costing). Reports still pending (a window below ``min_release_rows`` waiting for the next batch)
are not in the stream's loss; they are reported.

    .venv/bin/python bench/stream_vs_batch.py [--windows global|station] [--keep DIR]

Writes bench/results/stream_vs_batch.json (or stream_vs_batch-<windows>.json) and prints a table.
Target: stream loss within 1.15x of batch.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from bench._common import DATA, print_table, write_results  # noqa: E402
from core.encoding import encode  # noqa: E402
from db import Database, ReleaseRepository  # noqa: E402
from db.url import sqlite_url  # noqa: E402
from db.windows import WindowPolicy  # noqa: E402
from stream.config.privacy import StreamPrivacy  # noqa: E402
from stream.config.settings import Settings  # noqa: E402
from stream.io.specs import load_schema  # noqa: E402
from stream.io.tables import read_for_spec  # noqa: E402
from stream.ops.broker import ensure_topics, free_port, topic_partitions  # noqa: E402
from stream.ops.runtime import migrate, spawn_worker, stop_process  # noqa: E402
from stream.testing.services import broker  # noqa: E402

NYPD = DATA / "nypd-arrests-queens-2021" / "nypd_arrests_queens_2021.csv"
WINDOWS = {"global": {"by": "global", "size_s": 2_678_400},  # the README's stream step
           "station": {}}  # the embedded defaults: one-day windows per station (precinct)
ACCOUNTED = ("released", "suppressed", "blocked", "dlq", "duplicate", "correction", "pending")


def cli(args: list[str], cwd: Path, timeout: float = 900) -> tuple[int, str]:
    """``anonstream ARGS`` in a subprocess (no ANONSTREAM_* variables of ours leak in); exit code and output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run([sys.executable, "-m", "stream.cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


class Recoster:
    """Costs published rows against the whole file's hierarchy encoding (LM with the spec's weights)."""

    def __init__(self, data: Path, spec: Path) -> None:
        self.schema = load_schema(spec)
        batch = encode(read_for_spec(data, self.schema.spec, self.schema), self.schema)
        self.n = batch.n
        w = np.asarray(batch.weights, float)
        self.weights = w / w.sum()
        self.cost: list[dict[str, float]] = []
        for q in batch.qis:
            table: dict[str, float] = {}
            for labels, costs in zip(q.labels, q.cost, strict=True):
                for label, c in zip(labels, costs, strict=True):
                    table.setdefault(str(label), float(c))
            self.cost.append(table)
        self.names = [q.name for q in batch.qis]

    def total(self, rows: pd.DataFrame) -> float:
        """Summed weighted cost of these published rows (one column per QI, the published label)."""
        out = 0.0
        for name, table, w in zip(self.names, self.cost, self.weights, strict=True):
            labels = rows[name].astype(str)
            unknown = sorted(set(labels) - set(table))
            if unknown:
                raise ValueError(f"{name}: labels not in the file's hierarchy encoding: {unknown[:5]}")
            out += w * float(labels.map(table).sum())
        return out

    def loss(self, rows: pd.DataFrame, suppressed: int) -> float:
        n = len(rows) + suppressed
        return (self.total(rows) + suppressed) / n if n else 0.0


def batch_run(work: Path, spec: Path, k: int, recost: Recoster) -> dict[str, Any]:
    out = work / "batch.csv"
    started = time.perf_counter()
    code, text = cli(["anonymize", str(NYPD), "--spec", str(spec), "--engine", "cg-kanon", "-k", str(k),
                      "--out", str(out)], work)
    wall = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(f"anonymize exited {code}:\n{text[-3000:]}")
    printed = re.search(r"released (\d+) rows, suppressed (\d+).*loss=([0-9.]+)", text)
    df = pd.read_csv(out, dtype=str, keep_default_na=False)
    flag = df["suppressed"].str.lower() == "true" if "suppressed" in df else pd.Series(False, index=df.index)
    released, suppressed = df[~flag], int(flag.sum())
    return {"rows": len(df), "released": len(released), "suppressed": suppressed,
            "loss": recost.loss(released, suppressed), "loss_printed": float(printed.group(3)) if printed else None,
            "wall_s": round(wall, 1)}


def settled(db: Database, pushed: int) -> dict[str, int] | None:
    acc = ReleaseRepository(db).accounting()
    done = sum(acc.get(k, 0) for k in ACCOUNTED) >= pushed
    return acc if done and acc.get("windows_open", 1) == 0 and acc.get("releases_stored", 1) == 0 else None


def stream_run(work: Path, spec: Path, k: int, windows: dict[str, Any], recost: Recoster,
               timeout: float) -> dict[str, Any]:
    kafka = broker()
    tag = uuid.uuid4().hex[:8]
    settings = Settings(
        broker_url=kafka.url, database_url=sqlite_url(work), data_dir=work, spec=str(spec), app_id=f"bench-{tag}",
        topic_reports=f"b{tag}.reports", topic_dlq=f"b{tag}.reports.dlq", topic_anonymized=f"b{tag}.anonymized",
        topic_releases=f"b{tag}.releases", engine="cg-kanon", privacy=StreamPrivacy(k=k, l=1),
        windows=WindowPolicy(**windows), web_port=free_port(), log_level=os.environ.get("BENCH_LOG_LEVEL", "warn"))
    ensure_topics(settings.bootstrap_servers(), topic_partitions(settings))
    migrate(settings)
    db = Database(settings.db_url())
    worker = spawn_worker(settings, work / "worker.log")
    try:
        started = time.perf_counter()
        code, text = cli(["push", str(NYPD), "--spec", str(spec), "--broker", kafka.url,
                          "--topic", settings.topic_reports], work)
        pushed_s = time.perf_counter() - started
        sent = re.search(r"sent (\d+) report", text)
        if sent is None:
            raise RuntimeError(f"push exited {code}:\n{text[-3000:]}")
        pushed = int(sent.group(1))
        deadline, previous, acc = time.monotonic() + timeout, None, None
        while time.monotonic() < deadline:
            if worker.poll() is not None:
                raise RuntimeError(f"worker exited {worker.returncode}: {(work / 'worker.log').read_text()[-3000:]}")
            acc = settled(db, pushed)
            if acc is not None and acc == previous:
                break
            previous = acc
            time.sleep(1.0)
        else:
            raise RuntimeError(f"not settled after {timeout}s: {ReleaseRepository(db).accounting()}")
        wall = time.perf_counter() - started
        return {**collect(db, recost), "push_exit": code, "sent": pushed, "push_s": round(pushed_s, 1),
                "wall_s": round(wall, 1), "accounting": acc}
    finally:
        stop_process(worker)
        db.dispose()


def collect(db: Database, recost: Recoster) -> dict[str, Any]:
    from sqlalchemy import select

    from db.models import Release, ReleaseRecords

    with db.read() as s:
        rows = s.execute(select(Release.id, Release.released, Release.suppressed, Release.information_loss,
                                Release.metrics, ReleaseRecords.columns, ReleaseRecords.rows)
                         .join(ReleaseRecords, ReleaseRecords.release_id == Release.id)
                         .order_by(Release.created_at)).all()
    frames, sizes, suppressed, own = [], [], 0, []
    for r in rows:
        frames.append(pd.DataFrame(r.rows, columns=r.columns))
        sizes.append(int(r.released))
        suppressed += int(r.suppressed)
        own.append(float((r.metrics or {}).get("loss_metric", r.information_loss or 0.0)))
    released = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=recost.names)
    worst = max(own) if own else None
    return {"releases": len(rows), "sizes": sizes, "min_size": min(sizes, default=None),
            "max_size": max(sizes, default=None), "released": len(released), "suppressed": suppressed,
            "loss": recost.loss(released, suppressed),
            "manifest_loss_max": worst,
            "manifest_loss_mean": float(np.average(own, weights=sizes)) if sizes and sum(sizes) else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", choices=sorted(WINDOWS), default="global",
                        help="global: the README's 31-day windows (default); station: the embedded defaults")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for the stream to settle")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="stream-vs-batch-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        spec = work / "nypd.toml"
        code, text = cli(["spec", "draft", str(NYPD), "--out", str(spec)], work)
        if code != 0:
            raise RuntimeError(f"spec draft exited {code}:\n{text}")
        recost = Recoster(NYPD, spec)
        batch = batch_run(work, spec, args.k, recost)
        stream = stream_run(work / "stream", spec, args.k, WINDOWS[args.windows], recost, args.timeout)
    acc = stream["accounting"]
    ratio = stream["loss"] / batch["loss"] if batch["loss"] else None
    table = [
        {"run": "batch anonymize", "releases": 1, "min size": batch["released"], "max size": batch["released"],
         "released": batch["released"], "suppressed": batch["suppressed"], "pending": 0, "blocked": 0,
         "loss (LM)": batch["loss"], "x batch": 1.0, "wall s": batch["wall_s"]},
        {"run": f"stream, push unsorted ({args.windows} windows)", "releases": stream["releases"],
         "min size": stream["min_size"], "max size": stream["max_size"], "released": stream["released"],
         "suppressed": stream["suppressed"], "pending": acc.get("pending", 0), "blocked": acc.get("blocked", 0),
         "loss (LM)": stream["loss"], "x batch": ratio, "wall s": stream["wall_s"]},
    ]
    print(f"{NYPD.name}: {recost.n} rows, cg-kanon k={args.k}; loss = LM costed on the whole file's domain")
    print_table(table, list(table[0]))
    print(f"batch loss as anonymize printed it: {batch['loss_printed']}; largest loss in a stream manifest "
          f"(window's own domain): {stream['manifest_loss_max']}")
    print(f"stream within 1.15x of batch: {'yes' if ratio is not None and ratio <= 1.15 else 'no'}")
    name = "stream_vs_batch" if args.windows == "global" else f"stream_vs_batch-{args.windows}"
    path = write_results(name, {"data": str(NYPD.relative_to(DATA)), "k": args.k, "windows": WINDOWS[args.windows],
                                "batch": batch, "stream": stream, "ratio": ratio, "table": table})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
