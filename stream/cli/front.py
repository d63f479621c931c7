"""``anonstream front``: search the Pareto front of privacy/utility indices with PBG-EA, print it
as a table and draw it as a PNG scatter (optionally against the exhaustive front)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from core.encoding import Schema, encode
from core.engines.pbg import DIRECTIONS, Indices, PropertyEvaluator, parse_policy
from core.engines.pbg.assess import pareto_mask
from core.engines.pbg.engine import front_rows
from core.engines.registry import get_engine, make_params
from core.errors import AnonymizationError, ParamsError
from core.lattice import Lattice
from core.schema import DatasetSpec, parse_spec
from stream.cli._paths import check_paths
from stream.cli._progress import ProgressPrinter
from stream.io.atomic import write_atomic, write_text_atomic
from stream.io.specs import load_spec_data
from stream.io.tables import read_for_spec

FRONT_HELP = """\
Search the front of minimal property based generalizations (PBG-EA, Dewri et al. 2010) and show
the trade-off between privacy (k, l, S_k, S_l) and loss (GLM, CM) before choosing a release.

Examples (the PBG paper's Adult setup):
  anonstream front ../shared/data/adult/adult.csv --spec adult --sensitive occupation \\
      --objectives k,GLM --eta 0.01 --png front.png
  anonstream front ../shared/data/adult/adult.csv --spec adult --sensitive occupation \\
      --qis age,workclass,education,marital-status,race,sex,native-country \\
      --class-attribute salary-class --objectives k,GLM,CM --select "min GLM where k >= 5"

Use the chosen policy in a stream or batch run with:
  anonstream anonymize IN.csv --spec SPEC --engine pbg-ea --param select="min GLM where k >= 5 and l >= 3"
"""


def adapt_spec(spec: DatasetSpec, qis: list[str] | None = None, sensitive: str | None = None,
               class_attribute: str | None = None) -> DatasetSpec:
    """A spec with the QIs restricted/reordered, another sensitive attribute, and the CM class
    attribute kept as a pass-through column when it has no other role."""
    data: dict[str, Any] = spec.model_dump(mode="python")
    names = qis or spec.qi_names
    if sensitive:
        names = [n for n in names if n != sensitive]
        data["sensitive"] = {"name": sensitive}
    data["qi"] = [spec.qi_spec(n).model_dump(mode="python") for n in names]
    used = set(names) | ({data["sensitive"]["name"]} if data.get("sensitive") else set())
    if class_attribute and class_attribute not in used and class_attribute not in data.get("passthrough", ()):
        data["passthrough"] = [*data.get("passthrough", ()), class_attribute]
    return parse_spec(data)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.1f}" if not v.is_integer() else str(int(v))
    return str(v)


def front_table(rows: list[dict[str, Any]], objectives: list[str]) -> str:
    """Plain-text table of front rows (as produced by ``front_rows``)."""
    extra = [c for c in ("k", "l", "S_k", "S_l", "GLM", "CM", "suppressed") if c not in objectives
             and rows and c in rows[0]]
    cols = ["#", "levels", *objectives, *extra, "sel"]
    body = [[str(i), ",".join(str(v) for v in r["levels"].values()), *(_fmt(r[c]) for c in objectives),
             *(_fmt(r[c]) for c in extra), "*" if r.get("selected") else ""] for i, r in enumerate(rows)]
    widths = [max(len(c), *(len(b[j]) for b in body)) if body else len(c) for j, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(b, widths, strict=True)) for b in body]
    return "\n".join(lines)


def save_front_png(path: str | Path, objectives: list[str], values: np.ndarray, reference: np.ndarray | None = None,
                   selected: int | None = None, title: str = "") -> None:
    """Scatter of a front (2 objectives: plane, 3: 3-D) with the exhaustive front behind it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = len(objectives)
    dims = list(range(min(r, 3)))
    both = values if reference is None or not len(reference) else np.vstack([values, reference])
    logs = [bool(both[:, j].min() > 0 and both[:, j].max() / both[:, j].min() > 100) for j in dims]
    labels = [f"log10 {objectives[j]}" if lg else objectives[j] for j, lg in zip(dims, logs, strict=True)]

    def pts(v: np.ndarray) -> list[np.ndarray]:
        cols = [np.log10(v[:, j]) if lg else v[:, j] for j, lg in zip(dims, logs, strict=True)]
        return cols if r > 1 else [cols[0], np.zeros(len(v))]

    fig = plt.figure(figsize=(6.4, 4.8))
    three = r >= 3
    ax: Any = fig.add_subplot(projection="3d") if three else fig.add_subplot()  # 2-D or 3-D axes
    if reference is not None and len(reference):
        ax.scatter(*pts(reference), s=40, facecolors="none", edgecolors="grey", label="exhaustive front")
    ax.scatter(*pts(values), s=14, c="tab:blue", label="PBG-EA archive")
    if selected is not None:
        ax.scatter(*pts(values[[selected]]), s=90, marker="*", c="tab:red", label="selected")
    ax.set_xlabel(labels[0])
    if r > 1:
        ax.set_ylabel(labels[1])
    if three:
        ax.set_zlabel(labels[2])
    ax.set_title(title or " vs ".join(objectives))
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def exhaustive_front(props: PropertyEvaluator, objectives: tuple[str, ...], max_nodes: int) -> np.ndarray:
    lattice = Lattice(props.heights)
    if lattice.size > max_nodes:
        raise ParamsError(f"--reference needs every lattice node evaluated: {lattice.size} nodes, "
                          f"more than --max-nodes={max_nodes}")
    vals = np.array([props.indices(tuple(int(x) for x in n)).vector(objectives) for n in lattice.all_nodes()])
    dirs = np.array([DIRECTIONS[o] for o in objectives])
    return vals[pareto_mask(vals, dirs)]


def cmd_front(args: argparse.Namespace) -> int:
    qis = [q.strip() for q in args.qis.split(",")] if args.qis else None
    spec = adapt_spec(load_spec_data(args.spec), qis, args.sensitive, args.class_attribute)
    schema = Schema.from_spec(spec)
    check_paths((args.input,), {"--png": args.png, "--json": args.json}, spec.input.encoding)
    frame = read_for_spec(args.input, spec)
    engine: Any = get_engine("pbg-ea")  # PBG-EA's own search() and params, beyond the Engine protocol
    values: dict[str, object] = {"objectives": args.objectives, "eps": args.eps, "max_suppression": args.eta,
                                 "population": args.population, "iterations": args.iterations,
                                 "class_attribute": args.class_attribute}
    params: Any = make_params(engine, values)
    batch = encode(frame, schema)
    started = time.perf_counter()
    front, diag = engine.search(batch, params, np.random.default_rng(args.seed), ProgressPrinter("pbg-ea"))
    runtime = time.perf_counter() - started
    selected, failure = None, None
    if args.select:
        try:
            selected = parse_policy(args.select).select(front)
        except AnonymizationError as exc:
            failure = exc
    objectives = list(params.objectives)
    rows = front_rows(front, schema.qi_names, selected)
    print(f"QIs (levels column order): {', '.join(schema.qi_names)}; heights {batch.heights.tolist()}")
    print(front_table(rows, objectives))
    print(f"{len(front)} members (Theorem 2 bound {diag['archive_bound']}), {diag['nodes_evaluated']} of "
          f"{Lattice(batch.heights).size} nodes evaluated, eta={diag['eta_rows']} rows, {runtime:.2f}s")
    reference = None
    if args.reference:
        props = PropertyEvaluator(batch, diag["eta_rows"], frame[args.class_attribute].to_numpy()
                                  if args.class_attribute else None)
        reference = exhaustive_front(props, params.objectives, args.max_nodes)
        print(f"exhaustive front: {len(reference)} minimal PBGs")
    if args.png:
        vals = np.array([m.vector(params.objectives) for m in front])
        write_atomic(args.png, lambda tmp: save_front_png(tmp, objectives, vals, reference, selected,
                                                          f"PBG-EA front ({', '.join(objectives)})"), option="--png")
        print(f"wrote {args.png}")
    if args.json:
        out = {**diag, "front": rows, "qis": schema.qi_names, "runtime_s": runtime, "policy": args.select,
               "selected": selected, "eta": params.max_suppression, "input": str(args.input)}
        if reference is not None:
            out["reference"] = reference.tolist()
        write_text_atomic(args.json, json.dumps(out, indent=2, default=_jsonable), option="--json")
    if failure is not None:
        raise failure
    return 0


def _jsonable(obj: object) -> object:
    if isinstance(obj, Indices):
        return obj.as_dict()
    return obj.tolist() if hasattr(obj, "tolist") else str(obj)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("front", help="Pareto front of privacy and loss (PBG-EA): table and PNG",
                       description=FRONT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="input file: CSV, JSON lines (.jsonl) or Parquet (.parquet)")
    p.add_argument("--spec", required=True, help="spec file or bundled spec name")
    p.add_argument("--qis", help="comma-separated QIs to use, in this order (default: the spec's)")
    p.add_argument("--sensitive", help="use this column as the sensitive attribute (removed from the QIs)")
    p.add_argument("--class-attribute", help="class label column for CM (kept as pass-through)")
    p.add_argument("--objectives", default="k,GLM", help="comma-separated: k, l, S_k, S_l, GLM, CM (default k,GLM)")
    p.add_argument("--eps", help="discretization per objective, comma-separated (default all 1)")
    p.add_argument("--eta", type=float, default=None,
                   help="suppression budget as a fraction of rows (default: pbg-ea's max_suppression, 0.01)")
    p.add_argument("--population", type=int, default=25, help="N_pop (default 25)")
    p.add_argument("--iterations", type=int, default=100, help="generations (default 100)")
    p.add_argument("--select", help="mark the member chosen by a policy, e.g. 'min GLM where k >= 5 and l >= 3'")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--reference", action="store_true", help="also evaluate every node and plot the exhaustive front")
    p.add_argument("--max-nodes", type=int, default=50_000, help="lattice size limit for --reference")
    p.add_argument("--png", help="write a scatter of the front here")
    p.add_argument("--json", help="write the front and search diagnostics here")
    p.set_defaults(func=cmd_front)
