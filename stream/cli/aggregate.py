"""``anonstream aggregate``: differentially private counts of a file, charged to the ledger's budget blocks."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from core.errors import ParamsError

AGGREGATE_HELP = """\
Count the rows of a CSV (or .jsonl) file per group of the --by columns, with differentially private
noise from OpenDP (discrete Gaussian by default), and write the group columns, `count` and `ci95`
(the half-width of each cell's 95 % interval: count ± ci95 holds the exact count in 95 % of cells).
Every cell of the columns' public domain is written, zero cells too. The columns are the file's, or
the spec's [dp.columns] (e.g. region, age_band, week for the crime spec); docs/privacy.md
"Differentially private counts" explains the guarantee and what an analyst may conclude.

With --ledger the run charges its privacy spend to every budget block the rows fall in (a station's
day by default, or the spec's [dp] block) and refuses, writing nothing, once a block's lifetime cap
(--budget, else the spec's cap_epsilon) would be exceeded; the refusal names the block and what is
left. Without --ledger nothing is accounted: repeated runs add up unchecked.

Examples:
  anonstream aggregate reports.csv --spec crime --by region,offence --epsilon 1 --ledger var/ledger.db --out counts.csv
  anonstream aggregate ../shared/data/adult/adult.csv --spec adult --by sex,salary-class --epsilon 0.5 --out c.csv
"""


def settings_for(spec: Any, args: argparse.Namespace) -> Any:
    """The spec's [dp] table (or defaults) with this run's grouping and options applied, validated."""
    from pydantic import ValidationError

    from core.dp.spec import DPSpec

    by = tuple(c.strip() for c in args.by.split(",") if c.strip())
    if not by:
        raise ParamsError("--by needs at least one column, e.g. --by region,offence")
    base: dict[str, Any] = spec.dp.model_dump() if spec.dp is not None else {}
    if spec.dp is None:
        base["block"] = "station-day" if spec.station_column and spec.time_column else "dataset"
    updates = {"groupings": [list(by)], "epsilon": args.epsilon, "cap_epsilon": args.budget, "delta": args.delta,
               "mechanism": args.mechanism, "unit": args.unit, "max_contributions": args.max_contributions,
               "block": args.block,
               "person": [c.strip() for c in args.person.split(",") if c.strip()] if args.person else None}
    base.update({k: v for k, v in updates.items() if v is not None})
    try:
        return DPSpec.model_validate(base)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "dp"
        raise ParamsError(f"{where}: {err['msg'].removeprefix('Value error, ')}") from None


def charges(dp: Any) -> tuple[float, float]:
    """(ρ this run spends per block, each block's cap in ρ)."""
    return dp.rho, dp.cap_rho


def refusal(exc: Any, dp: Any) -> str:
    """One line: the block, what is left of it and what this query needed (ρ, with the cap as ε)."""
    return (f"privacy budget of block {exc.block} is exhausted: rho {exc.remaining:.4g} of {exc.cap:.4g} left "
            f"(cap epsilon {dp.cap_epsilon:g} at delta {dp.delta:g}), this query needs rho {exc.asked:.4g} "
            f"(epsilon {dp.epsilon:g}); nothing written")


def cmd_aggregate(args: argparse.Namespace) -> int:
    import pandas as pd

    from core.dp.blocks import row_blocks
    from core.dp.derive import grouping_columns, person_keys
    from core.dp.plan import count_tables
    from stream.cli._paths import check_paths
    from stream.io.specs import load_spec_data
    from stream.io.tables import read_for_spec
    from stream.wire.csvsafe import neutralize_frame

    spec = load_spec_data(args.spec)
    check_paths((args.input,), {"--out": args.out}, spec.input.encoding)
    dp = settings_for(spec, args)
    spec = spec.model_copy(update={"dp": dp})
    frame = read_for_spec(args.input, spec)
    groups, domains = grouping_columns(frame, spec)
    time_col = spec.time_column or "event_time"
    blocks = row_blocks(frame, by=dp.block, station_column=spec.station_column or "station_id",
                        date_column=time_col, feed=args.feed, dataset=spec.name,
                        date_format=spec.date_format(time_col))
    work = groups.assign(_block=blocks.to_numpy())
    if dp.unit == "person":
        work["_person"] = person_keys(frame, spec).to_numpy()
    rho, cap_rho = charges(dp)
    keys = sorted(set(blocks.tolist()))

    def tables() -> pd.DataFrame:
        out = count_tables(work, list(dp.groupings), domains, rho, unit=dp.unit, mechanism=dp.mechanism,
                           person_column="_person" if dp.unit == "person" else None, block_column="_block",
                           max_contributions=dp.max_contributions)
        return out[0].to_frame()

    out_path = Path(args.out)
    fd, tmp = tempfile.mkstemp(prefix=f".{out_path.name}.", dir=out_path.parent)
    os.close(fd)
    try:
        if args.ledger:
            left = _charged(args, dp, keys, rho, cap_rho, tables, tmp)
        else:
            neutralize_frame(tables()).to_csv(tmp, index=False)
            left = None
        os.replace(tmp, out_path)  # after the spend committed: never a table without its spend
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    cells = pd.read_csv(out_path)
    print(f"aggregate: {len(cells)} cells by {' x '.join(dp.groupings[0])}, {dp.mechanism} noise, epsilon "
          f"{dp.epsilon:g} (rho {rho:.4g}), 95% interval ±{cells['ci95'].iloc[0]:g}; {len(keys)} block(s)"
          + (f", least left: rho {left:.4g} of {cap_rho:.4g}" if left is not None else
             "; no --ledger: this spend is not accounted"))
    return 0


def _charged(args: argparse.Namespace, dp: Any, keys: list[str], rho: float, cap_rho: float,
             tables: Any, tmp: str) -> float:
    """Charge the blocks and write the table in one ledger transaction; the least ρ left after it."""
    from core.errors import AnonymizationError
    from db import budget
    from stream.batch.history import open_ledger
    from stream.config.settings import load_settings
    from stream.wire.csvsafe import neutralize_frame

    db, _settings = open_ledger(args.ledger, load_settings())
    try:
        with db.unit() as session:
            budget.charge(session, keys, rho, cap_rho, purpose=f"aggregate {Path(args.input).name} by {args.by}")
            neutralize_frame(tables()).to_csv(tmp, index=False)  # noise drawn only after the charge fitted
            state = budget.remaining(session, keys)
        return min(cap - spent for cap, spent in state.values())
    except budget.BudgetExceeded as exc:
        raise AnonymizationError(refusal(exc, dp), reason="budget-exceeded") from None
    finally:
        db.dispose()


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("aggregate", help="differentially private counts of a file (charged to a ledger's budget)",
                       description=AGGREGATE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="input CSV or .jsonl file")
    p.add_argument("--spec", required=True, help="spec file or bundled spec name")
    p.add_argument("--by", required=True, metavar="COL[,COL]", help="the grouping columns")
    p.add_argument("--epsilon", type=_positive, required=True, help="privacy loss of this query, per block")
    p.add_argument("--budget", type=_positive, metavar="B",
                   help="lifetime cap per block, as epsilon (default: the spec's [dp] cap_epsilon, else 10)")
    p.add_argument("--ledger", metavar="URL", help="ledger to charge: a SQLite file (created) or a migrated URL")
    p.add_argument("--out", required=True, help="write the counts here (CSV: the group columns, count, ci95)")
    p.add_argument("--delta", type=_positive, help="delta of the (epsilon, delta) statement (default 1e-6)")
    p.add_argument("--mechanism", choices=["gaussian", "laplace"], help="noise (default: the spec's, else gaussian)")
    p.add_argument("--unit", choices=["report", "person"], help="privacy unit (default: the spec's, else report)")
    p.add_argument("--person", metavar="COL[,COL]", help="with --unit person: the columns that identify a person")
    p.add_argument("--max-contributions", type=int, help="with --unit person: reports kept per person and block")
    p.add_argument("--block", choices=["station-day", "feed-day", "dataset"], help="budget blocks (default: spec's)")
    p.add_argument("--feed", default="default", help="the feed named in feed-day blocks (default: default)")
    p.set_defaults(func=cmd_aggregate)
