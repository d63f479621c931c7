"""``anonstream risk``: the re-identification risk profile of a table before anonymization, laid out
like ARX's risk analysis view; also the text form of a release's ``privacy.risk`` (docs/risk.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.errors import ParamsError
from core.risk.reidentification import DEFAULT_THRESHOLD
from stream.cli._paths import check_paths
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec

RISK_HELP = """\
Measure the re-identification risk of a CSV, JSON-lines or Parquet file on the spec's quasi-identifiers, before
anonymizing it: prosecutor, journalist and marketer risk, sample uniques, population uniqueness
(Pitman, Zayatz, SNB and Dankar et al.'s choice between them), the distribution of records by risk,
and attribute disclosure of the sensitive attribute. Formulas and sources: docs/risk.md.

The file is a sample of a population: give the population size or the sampling fraction (neither
means the file is the whole population, so journalist risk equals prosecutor risk).

Examples:
  anonstream risk ../shared/data/adult/adult.csv --spec adult
  anonstream risk ../shared/data/adult/adult.csv --spec adult --sampling-fraction 0.01
  anonstream risk reports.csv --spec crime --population 250000 --threshold 0.1 --json
"""


def _pct(v: Any) -> str:
    return "-" if v is None else f"{100 * float(v):.2f}%"


def format_risk(r: dict[str, Any], indent: str = "  ") -> list[str]:
    """Text lines for a risk profile as stored in ``privacy.risk`` (or printed by ``anonstream risk``)."""
    p = r.get("prosecutor") or {}
    thr = r.get("threshold", DEFAULT_THRESHOLD)
    lines = [f"{'attacker':12}{'records at risk (>' + format(thr, 'g') + ')':>26}{'highest risk':>14}"
             f"{'average risk':>14}",
             f"{'prosecutor':12}{_pct(p.get('records_at_risk')):>26}{_pct(p.get('highest')):>14}"
             f"{_pct(p.get('average')):>14}"]
    if r.get("mode") == "k-regular":
        return [indent + x for x in [*lines, "k-regular release: every record has exactly k candidates",
                                     *[f"WARNING: {w}" for w in r.get("warnings") or []]]]
    j, u, a = r.get("journalist") or {}, r.get("population_uniqueness") or {}, r.get("attribute")
    lines += [f"{'journalist':12}{_pct(j.get('records_at_risk')):>26}{_pct(j.get('highest')):>14}"
              f"{_pct(j.get('average')):>14}",
              f"{'marketer':12}{'':>26}{'':>14}{_pct(r.get('marketer')):>14}",
              f"records {r['records']}, classes {r['classes']}, sampling fraction {r['sampling_fraction']:.4g}, "
              f"population {r['population']}",
              f"sample uniques {_pct(r.get('sample_uniques'))}"
              + (f" (input {_pct(r['sample_uniques_input'])})" if r.get("sample_uniques_input") is not None else ""),
              f"population uniques {_pct(u.get('dankar'))} (Dankar's rule: {u.get('dankar_model')}); "
              f"Pitman {_pct(u.get('pitman'))}, Zayatz {_pct(u.get('zayatz'))}, SNB {_pct(u.get('snb'))}"]
    if a:
        lines.append(f"sensitive '{a['sensitive']}': {a['homogeneous_classes']} homogeneous class(es) with "
                     f"{a['homogeneous_records']} record(s); largest share of one value "
                     f"{_pct(a['max_sensitive_share'])}; delta-disclosure {a['delta_disclosure']:.4f}")
        if a.get("severe_at") is not None:
            lines.append(f"severe records (severity >= {a['severe_at']:g}): {a['severe_records']}; in homogeneous "
                         f"classes {a['severe_in_homogeneous']}; in classes smaller than their severity "
                         f"{a['severe_in_small']}")
    hist = r.get("histogram") or []
    total = max(sum(b["records"] for b in hist), 1)
    if hist:
        lines.append("records by prosecutor risk:")
        for b in hist:
            bar = "#" * round(40 * b["records"] / total)
            lines.append(f"  ({_pct(b['low']):>7}, {_pct(b['high']):>7}] {b['records']:>9} {bar}".rstrip())
    qis = r.get("quasi_identifiers") or []
    if qis:
        lines.append(f"{'quasi-identifier':24}{'distinction':>12}{'separation':>12}")
        lines += [f"{q['name'][:24]:24}{_pct(q['distinction']):>12}{_pct(q['separation']):>12}" for q in qis]
    lines += [f"WARNING: {w}" for w in r.get("warnings") or []]
    return [indent + x for x in lines]


def cmd_risk(args: argparse.Namespace) -> int:
    schema = load_schema(args.spec)
    check_paths((args.input,), encoding=schema.spec.input.encoding)
    frame = read_for_spec(args.input, schema.spec)
    spec = schema.spec
    from core.risk import risk_profile

    try:
        prof = risk_profile(frame, schema.qi_names, sensitive=schema.sensitive,
                            severity=spec.sensitive.severity if spec.sensitive else None,
                            population=args.population, sampling_fraction=args.sampling_fraction,
                            threshold=args.threshold)
    except ValueError as exc:
        raise ParamsError(str(exc)) from None
    data = prof.summary()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"risk profile of {args.input} on {', '.join(schema.qi_names)}")
    print("\n".join(format_risk(data)))
    return 0


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("risk", help="re-identification risk profile of a table (before anonymization)",
                       description=RISK_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="input file: CSV, JSON lines (.jsonl) or Parquet (.parquet)")
    p.add_argument("--spec", required=True, help="spec file or bundled spec name (its QIs are measured)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--population", type=int, metavar="N", help="size of the population the file samples")
    group.add_argument("--sampling-fraction", type=_fraction, metavar="F", help="share of the population in the file")
    p.add_argument("--threshold", type=_fraction, default=DEFAULT_THRESHOLD,
                   help=f"records above this prosecutor risk count as at risk (default {DEFAULT_THRESHOLD})")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.set_defaults(func=cmd_risk)
