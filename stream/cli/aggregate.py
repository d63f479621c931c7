"""``anonstream aggregate``: differentially private counts of a file, charged to the blocks it declares."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from core.errors import ParamsError
from stream.ops.faults import crash_at

AGGREGATE_HELP = """\
Count the rows of a CSV (or .jsonl, .parquet) file per group of the --by columns, with differentially
private noise from OpenDP (discrete Gaussian by default), and write the group columns, `count` and
`ci95` (the half-width of each cell's 95 % interval: count ± ci95 holds the exact count in 95 % of
cells). Every cell of the columns' public domain is written, zero cells too. Counts are unbiased
(noise can make one negative): sums of cells are unbiased too. The columns are the file's, or the
spec's [dp.columns] (e.g. region, age_band, week for the crime spec); docs/privacy.md "Differentially
private counts" states the guarantee and what an analyst may conclude.

The scope is declared, never read from the rows: --stations and --days name the budget blocks this
query charges (a station's UTC day, the crime spec's default; for a spec whose blocks are the whole
data set, nothing to declare). Rows outside the declared scope are not counted; the run says how many,
never which. Period columns (week, day, month) take their cells from --days.

With --ledger the run checks the ledger's privacy policy (block scheme, cap, delta, the largest
epsilon per query, feeds: recorded from the spec by the ledger's first run, changed only by
`anonstream budget set-cap` / `add-feed`), charges every declared block and commits that spend, and
only then draws the noise and writes --out (atomically). A block without room refuses the whole
query, naming the block, and nothing is written. --dry-run prints each cell's interval and what the
blocks have left, and spends nothing. Without --ledger nothing is accounted.

Examples:
  anonstream aggregate reports.csv --spec crime --by region,offence --epsilon 1 \\
      --stations S1,S2 --days 2024-01-01..2024-01-07 --ledger var/ledger.db --out counts.csv
  anonstream aggregate ../shared/data/adult/adult.csv --spec adult --by sex,salary-class --epsilon 0.5 --out c.csv
  anonstream budget show --ledger var/ledger.db
"""


def settings_for(spec: Any, args: argparse.Namespace, recorded: Any = None) -> Any:
    """The spec's [dp] table (or defaults), then the ledger's ``recorded`` policy (its block scheme, cap,
    delta and largest epsilon win over the spec's), then this run's options, validated. An option that
    disagrees with the recorded policy is refused later, by the ledger."""
    from pydantic import ValidationError

    from core.dp_spec import DPSpec

    by = tuple(c.strip() for c in args.by.split(",") if c.strip())
    if not by:
        raise ParamsError("--by needs at least one column, e.g. --by region,offence")
    base: dict[str, Any] = spec.dp.model_dump() if spec.dp is not None else {}
    if spec.dp is None:
        base["block"] = "station-day" if spec.station_column and spec.time_column else "dataset"
    if recorded is not None:
        base.update(block=recorded.block_by, cap_epsilon=recorded.cap_epsilon, delta=recorded.delta,
                    max_epsilon=recorded.max_epsilon)
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
        names = {"epsilon": "--epsilon", "cap_epsilon": "--budget", "delta": "--delta", "block": "--block"}
        raise ParamsError(f"{names.get(where, where)}: {err['msg'].removeprefix('Value error, ')}") from None


def declared_days(text: str | None) -> list[str] | None:
    """``--days FIRST..LAST`` (or one day) as every UTC day of the range."""
    from core.dp.blocks import day_range

    if text is None:
        return None
    first, _sep, last = text.partition("..")
    return day_range(first, last or first)


def declared_stations(text: str | None) -> list[str] | None:
    from core.canonical import canonical_id

    if text is None:
        return None
    stations = sorted({canonical_id(s) for s in text.split(",") if s.strip()})
    if not stations:
        raise ParamsError("--stations needs at least one station id, e.g. --stations S1,S2")
    return stations


def scope_blocks(dp: Any, spec: Any, args: argparse.Namespace, stations: list[str] | None,
                 days: list[str] | None) -> list[str] | None:
    """The blocks the caller declared (None: no scope declared, allowed only without a ledger)."""
    from core.dp.blocks import declared_blocks, station_key

    needs = {"station-day": ("--stations", "--days"), "feed-day": ("--days",), "dataset": ()}[dp.block]
    missing = [flag for flag, value in (("--stations", stations), ("--days", days)) if flag in needs and not value]
    if missing:
        if args.ledger:
            raise ParamsError(f"blocks by {dp.block} need {' and '.join(missing)}: the blocks a query charges are "
                              "declared, never read from the rows (e.g. --stations S1,S2 --days 2024-01-01..2024-01-07"
                              ")")
        return None
    return declared_blocks(dp.block, keys=[station_key(s) for s in stations or ()], days=days or (),
                           feed=args.feed, dataset=spec.name)


def inside_scope(frame: Any, dp: Any, spec: Any, args: argparse.Namespace, blocks: list[str] | None) -> Any:
    """A boolean mask: the rows whose own block is one of the declared ones (every row without a scope)."""
    import numpy as np

    from core.canonical import canonical_id
    from core.dp.blocks import row_blocks

    if blocks is None:
        return np.ones(len(frame), dtype=bool)
    time_col, station_col = spec.time_column or "event_time", spec.station_column or "station_id"
    keys = None
    if dp.block == "station-day" and station_col in frame.columns:
        keys = "station:" + frame[station_col].map(canonical_id)
    rows = row_blocks(frame, by=dp.block, station_column=station_col, date_column=time_col, feed=args.feed,
                      dataset=spec.name, date_format=spec.date_format(time_col), keys=keys)
    return rows.isin(set(blocks)).to_numpy()


def cmd_aggregate(args: argparse.Namespace) -> int:
    from stream.cli._paths import check_paths
    from stream.io.specs import load_spec_data

    spec = load_spec_data(args.spec)
    check_paths((args.input,), {"--out": args.out}, spec.input.encoding)
    db = _open(args.ledger) if args.ledger else None
    try:
        return _aggregate(args, spec, db)
    finally:
        if db is not None:
            db.dispose()


def _open(target: str) -> Any:
    from stream.batch.history import open_ledger
    from stream.config.settings import load_settings

    return open_ledger(target, load_settings())[0]


def _aggregate(args: argparse.Namespace, spec: Any, db: Any) -> int:
    from core.dp.derive import grouping_columns, person_keys
    from core.dp.mechanism import ci95
    from db.dp_policy import read_policy
    from stream.io.tables import read_for_spec

    recorded = None
    if db is not None:
        with db.read() as s:
            recorded = read_policy(s)
    dp = settings_for(spec, args, recorded)  # every parameter in its range before anything is read or allocated
    spec = spec.model_copy(update={"dp": dp})
    days, stations = declared_days(args.days), declared_stations(args.stations)
    blocks = scope_blocks(dp, spec, args, stations, days)
    frame = read_for_spec(args.input, spec)
    inside = inside_scope(frame, dp, spec, args, blocks)
    work, domains = grouping_columns(frame[inside], spec, days)
    if dp.unit == "person":
        work["_person"] = person_keys(frame[inside], spec).to_numpy()
    sensitivity = dp.max_contributions if dp.unit == "person" else 1
    half = ci95(dp.rho / len(dp.groupings), dp.mechanism, sensitivity)
    outside = int((~inside).sum())
    scope = f"{len(blocks)} declared block(s)" if blocks is not None else "no declared scope"
    left = _spend(args, db, dp, blocks or [], dry_run=args.dry_run) if db is not None else None
    if args.dry_run:
        print(f"aggregate (dry run, nothing spent): epsilon {dp.epsilon:g} (rho {dp.rho:.4g}) would give each cell "
              f"a 95% interval of ±{half:g}; {scope}" + (f", least left: rho {left:.4g}" if left is not None else ""))
        return 0
    fault = _fault_point()
    crash_at("aggregate-after-charge", fault)
    table = _noisy(work, dp, domains)  # noise only now: after the spend committed
    _write(Path(args.out), table, fault)
    print(f"aggregate: {len(table)} cells by {' x '.join(dp.groupings[0])}, {dp.mechanism} noise, epsilon "
          f"{dp.epsilon:g} (rho {dp.rho:.4g}), 95% interval ±{half:g}; {scope}"
          + (f", {outside} row(s) outside it not counted" if outside else "")
          + (f"; least left: rho {left:.4g}" if left is not None else "; no --ledger: this spend is not accounted"))
    return 0


def _spend(args: argparse.Namespace, db: Any, dp: Any, blocks: list[str], dry_run: bool) -> float:
    from stream.batch.dp_ledger import charge_declared

    done = charge_declared(db, dp, args.feed, blocks, f"aggregate {Path(args.input).name} by {args.by}",
                           dry_run=dry_run)
    return done.least_left


def _noisy(work: Any, dp: Any, domains: dict[str, list[str]]) -> Any:
    from core.dp.plan import count_tables

    tables = count_tables(work, list(dp.groupings), domains, dp.rho, unit=dp.unit, mechanism=dp.mechanism,
                          person_column="_person" if dp.unit == "person" else None,
                          max_contributions=dp.max_contributions)
    return tables[0].to_frame()


def _fault_point() -> str | None:
    from stream.config.settings import load_settings

    return load_settings().fault_point


def _write(path: Path, table: Any, fault: str | None) -> None:
    """The table as CSV, written atomically (never a half-written file, never a device replaced)."""
    from stream.io.atomic import write_atomic
    from stream.io.csvsafe import neutralize_frame

    def write(target: Path) -> None:
        neutralize_frame(table).to_csv(target, index=False)
        crash_at("aggregate-mid-write", fault)

    write_atomic(path, write)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("aggregate", help="differentially private counts of a file (charged to a ledger's budget)",
                       description=AGGREGATE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="input CSV, .jsonl or .parquet file")
    p.add_argument("--spec", required=True, help="spec file or bundled spec name")
    p.add_argument("--by", required=True, metavar="COL[,COL]", help="the grouping columns")
    p.add_argument("--epsilon", type=_positive, required=True,
                   help="privacy loss of this query on each declared block (0.001 to the policy's max_epsilon)")
    p.add_argument("--stations", metavar="S[,S]", help="the stations whose days this query charges (station-day "
                   "blocks); their rows only are counted")
    p.add_argument("--days", metavar="FIRST..LAST", help="the UTC days this query charges (YYYY-MM-DD..YYYY-MM-DD, "
                   "or one day); rows of other days are not counted; period columns take their cells from them")
    p.add_argument("--ledger", metavar="URL", help="ledger to charge: a SQLite file (created) or a migrated URL")
    p.add_argument("--out", required=True, help="write the counts here (CSV: the group columns, count, ci95)")
    p.add_argument("--dry-run", action="store_true", help="print each cell's interval and what is left; spend nothing")
    p.add_argument("--budget", type=_positive, metavar="B", help="lifetime cap per block as epsilon: only when this "
                   "run creates the ledger's policy (default: the spec's cap_epsilon); later it must agree")
    p.add_argument("--delta", type=_positive, help="delta of the (epsilon, delta) statement (default 1e-6)")
    p.add_argument("--mechanism", choices=["gaussian", "laplace"], help="noise (default: the spec's, else gaussian)")
    p.add_argument("--unit", choices=["report", "person"], help="privacy unit (default: the spec's, else report)")
    p.add_argument("--person", metavar="COL[,COL]", help="with --unit person: the columns that identify a person")
    p.add_argument("--max-contributions", type=int, help="with --unit person: reports kept per person and block")
    p.add_argument("--block", choices=["station-day", "feed-day", "dataset"],
                   help="budget blocks: only when this run creates the ledger's policy (default: the spec's)")
    p.add_argument("--feed", default="default", help="the feed of the blocks (one the ledger's policy knows)")
    p.set_defaults(func=cmd_aggregate)
