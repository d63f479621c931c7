"""History and publication order of ``anonstream anonymize`` (docs/privacy.md).

* Without ``--ledger`` the CLI warns once that separately anonymized overlapping files can be
  intersected, naming the engines the harness (``bench/linking_attack.py``) found most exposed.
* With ``--ledger`` the rows the ledger already released are excluded (counted per guard rule) and the
  verified release is recorded (:mod:`stream.batch.history`) before ``--out`` is written.
* Rows are written in canonical order permuted by a private seed (``--order-seed``, else derived
  from the ledger's key, else random); the seed goes to the ``--report`` JSON only. ``--keep-order``
  keeps the input order for internal diagnostics and warns.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import InputDataError

if TYPE_CHECKING:
    import pandas as pd

EXPOSED_ENGINES = ("kmember", "lgreedy", "ils")  # measured by bench/linking_attack.py: docs/privacy.md
NO_LEDGER_WARNING = ("warning: no --ledger: separately anonymized overlapping files can be intersected to "
                     "narrow or disclose shared reports (most exposed engines: {engines}); pass --ledger FILE "
                     "to exclude reports already released and record this release")
HELP = """\
History: rows are written in a random order (canonical, then a private seeded permutation), never the
input's. With --ledger FILE|URL, reports already released (by the stream or an earlier run) are
excluded and counted, and the release is recorded; without it the CLI warns, because two separately
anonymized overlapping files can be intersected (docs/privacy.md):
  anonstream anonymize day2.csv --spec crime --engine kmember --ledger var/ledger.db --out day2-k5.csv
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ledger", metavar="URL", help="remember releases: a SQLite file (created and migrated) or a "
                   "migrated PostgreSQL URL; reports it already released (same report id, or the same content "
                   "under any id: ANONSTREAM_LINK_GUARD) are excluded and counted, and this release is "
                   "recorded. Without it, separately anonymized overlapping files can be intersected")
    p.add_argument("--order-seed", type=int, default=None, help="seed of the published row order (default: a "
                   "private one: from the ledger's key with --ledger, else random; written to --report only)")
    p.add_argument("--keep-order", action="store_true", help="INTERNAL DIAGNOSTICS ONLY: write rows in input "
                   "order (tells anyone who knows the input order which released row is whose)")


def history_before(args: argparse.Namespace, schema: Any, frame: pd.DataFrame) -> Any:
    """With --ledger: the input's fingerprints and the rows already released; without: warn once."""
    if not getattr(args, "ledger", None):
        print(NO_LEDGER_WARNING.format(engines=", ".join(EXPOSED_ENGINES)), file=sys.stderr)
        return None
    from stream.batch.history import apply_guard, fingerprint_rows, open_ledger
    from stream.config.settings import load_settings

    settings = load_settings()
    db, settings = open_ledger(args.ledger, settings)
    hist = apply_guard(db, fingerprint_rows(frame, schema, settings), settings.privacy.link_guard)
    hist.db, hist.settings = db, settings
    return hist


def without_released(frame: pd.DataFrame, history: Any) -> pd.DataFrame:
    """The input minus the rows the ledger already released (an error if nothing is left)."""
    if history is None:
        return frame
    if history.repeated:
        print(f"ledger: {history.repeated} row(s) repeat the content of another row of their station (e.g. "
              "co-offenders): each is its own occurrence and is released, not blocked", file=sys.stderr)
    if not history.excluded:
        return frame
    from stream.wire.manifest import BLOCK_REASONS

    rest = frame.drop(index=history.excluded)
    print(f"ledger: {len(history.excluded)} of {len(frame)} row(s) already released, excluded: "
          + "; ".join(f"{r} {n} ({BLOCK_REASONS[r]})" for r, n in history.by_rule().items()), file=sys.stderr)
    if rest.empty:
        raise InputDataError(f"every one of the {len(frame)} row(s) was already released "
                             f"(ledger {history.ledger_name()})", reason="already-released")
    return rest


def publication(args: argparse.Namespace, release: Any, cols: list[str],
                history: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The released rows in publication order and what the private report says about that order."""
    import pandas as pd

    rows = release.rows[cols]
    if args.keep_order:
        print("warning: --keep-order writes rows in input order: anyone who knows the input order learns which "
              "released row is whose (for ils, the true matching); internal diagnostics only", file=sys.stderr)
        return rows, {"order": "input (--keep-order)"}
    from stream.worker.sampling import order_seed, publish_order

    seed = args.order_seed
    if seed is None and history is not None:
        from stream.batch.history import batch_release_id

        rid = batch_release_id(Path(args.input).name, release.engine, args.seed, history, list(rows.index))
        seed = order_seed(history.settings.key_bytes(), rid)
    if seed is None:
        import secrets

        seed = secrets.randbits(63)
    values = rows.astype(object).where(rows.notna(), None).values.tolist()
    return pd.DataFrame(publish_order(values, seed), columns=cols), {"order": "random", "order_seed": seed}


def record(args: argparse.Namespace, history: Any, release: Any, report: Any, published: pd.DataFrame,
           cols: list[str]) -> dict[str, Any] | None:
    """Record a verified release and its fingerprints in the ledger (None without a ledger or if unverified)."""
    if history is None or not report.ok:
        return None
    from stream.batch.history import batch_release_id, record_release

    name = Path(args.input).name
    rid = batch_release_id(name, release.engine, args.seed, history, list(release.rows.index))
    rows = published.astype(object).where(published.notna(), None).values.tolist()
    record_release(history.db, rid, name, release, report, rows, cols, history, args.seed)
    history.db.dispose()
    print(f"ledger: release {rid} recorded ({release.released} report(s))", file=sys.stderr)
    from stream.wire.manifest import BLOCK_REASONS

    return {"release_id": rid, "excluded": len(history.excluded), "excluded_by_rule": history.by_rule(),
            "excluded_why": {r: BLOCK_REASONS[r] for r in history.by_rule()},
            "repeated_content_released": history.repeated}
