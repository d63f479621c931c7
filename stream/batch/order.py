"""History and publication order of a batch run (:func:`stream.batch.run.anonymize_table`, docs/privacy.md).

* Without ``--ledger`` the CLI warns once that separately anonymized overlapping files can be
  intersected, naming the engines the harness (``bench/linking_attack.py``) found most exposed.
* With ``--ledger`` the rows the ledger already released are excluded (counted per guard rule) and the
  verified release is recorded (:mod:`stream.batch.history`) before ``--out`` is written.
* Rows are written in canonical order permuted by a private seed (``--order-seed``, else derived
  from the ledger's key, else random); the seed goes to the ``--report`` JSON only. ``--keep-order``
  keeps the input order for internal diagnostics and warns.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.errors import InputDataError

if TYPE_CHECKING:
    import pandas as pd

Notify = Callable[[str], None]
"""Where a batch run's notes go (``anonstream anonymize``: standard error); by default the log."""
log = logging.getLogger(__name__)

_JSON_ESCAPED = re.compile(r'[^ -~]|["\\]')  # characters json.dumps escapes (ensure_ascii): not plain text
NO_LEDGER_WARNING = ("warning: no --ledger: separately anonymized overlapping files can be intersected to "
                     "narrow or disclose shared reports (most exposed engines: {engines}); pass --ledger FILE "
                     "to exclude reports already released and record this release")


def history_before(ledger: str | None, schema: Any, frame: pd.DataFrame, notify: Notify = log.info) -> Any:
    """With a ledger (a SQLite file or URL): the input's fingerprints and the rows already released;
    without: warn once."""
    if not ledger:
        from stream.batch.exposure import exposed_engines

        notify(NO_LEDGER_WARNING.format(engines=", ".join(exposed_engines())))
        return None
    from stream.batch.history import apply_guard, fingerprint_rows, open_ledger
    from stream.config.settings import load_settings

    settings = load_settings()
    db, settings = open_ledger(ledger, settings)
    hist = apply_guard(db, fingerprint_rows(frame, schema, settings), settings.privacy.link_guard)
    hist.db, hist.settings = db, settings
    return hist


def without_released(frame: pd.DataFrame, history: Any, notify: Notify = log.info) -> pd.DataFrame:
    """The input minus the rows the ledger already released (an error if nothing is left)."""
    if history is None:
        return frame
    if history.repeated:
        notify(f"ledger: {history.repeated} row(s) repeat the content of another row of their station (e.g. "
               "co-offenders): each is its own occurrence and is released, not blocked")
    if not history.excluded:
        return frame
    from stream.wire.manifest import BLOCK_REASONS

    rest = frame.drop(index=history.excluded)
    notify(f"ledger: {len(history.excluded)} of {len(frame)} row(s) already released, excluded: "
           + "; ".join(f"{r} {n} ({BLOCK_REASONS[r]})" for r, n in history.by_rule().items()))
    if rest.empty:
        raise InputDataError(f"every one of the {len(frame)} row(s) was already released "
                             f"(ledger {history.ledger_name()})", reason="already-released")
    return rest


def publication(release: Any, cols: list[str], history: Any, keys: list[str] | None = None, *,
                source: str, seed: int, order_seed: int | None = None, keep_order: bool = False,
                notify: Notify = log.info) -> tuple[Any, dict[str, Any], Any]:
    """The positions of ``release.rows`` in publication order (None: input order, ``keep_order``),
    what the private report says about that order, and each row's distinct-row id
    (:func:`stream.io.csvout.row_ids`, in ``release.rows`` order; equal ids mean equal rows).
    ``keys``: columns that determine the rest of a row (the labels, sensitive and pass-through
    columns of a typed table), hashed instead of every column. ``order_seed`` (else one derived from
    the ledger's key and the release id of ``source`` (the input's file name) and ``seed``, else random)
    seeds the order."""
    from stream.io.csvout import row_ids

    rows = release.rows if list(release.rows.columns) == cols else release.rows[cols]  # no copy if in order
    ids = row_ids(release.rows, keys) if keys else row_ids(rows)
    if keep_order:
        notify("warning: --keep-order writes rows in input order: anyone who knows the input order learns which "
               "released row is whose (for ils, the true matching); internal diagnostics only")
        return None, {"order": "input (--keep-order)"}, ids
    from stream.worker.sampling import order_seed as order_seed_of

    chosen = order_seed
    if chosen is None and history is not None:
        from stream.batch.history import batch_release_id

        rid = batch_release_id(source, release.engine, seed, history, list(rows.index))
        chosen = order_seed_of(history.settings.key_bytes(), rid)
    if chosen is None:
        import secrets

        chosen = secrets.randbits(63)
    return publication_positions(rows, chosen, ids), {"order": "random", "order_seed": chosen}, ids


def published_rows(rows: pd.DataFrame, positions: Any) -> pd.DataFrame:
    """``rows`` in publication order (``positions`` from :func:`publication`; None keeps them)."""
    return rows if positions is None else rows.iloc[positions].reset_index(drop=True)


def publication_positions(rows: pd.DataFrame, seed: int, ids: Any = None) -> Any:
    """Row positions of ``rows`` in :func:`stream.worker.sampling.publish_order`'s order, the same
    permutation computed over the distinct rows: each distinct row's JSON text is built once, and the
    canonical order (by that text, ties by position) is a stable sort of the rows by its rank.
    ``ids``: the rows' distinct-row ids if known (equal ids mean equal rows)."""
    import numpy as np

    from stream.io.csvout import row_ids

    n = len(rows)
    ids = row_ids(rows) if ids is None else ids
    distinct, first = np.unique(ids, return_index=True)
    key_rank = np.empty(len(first), dtype=np.int64)
    every = len(first) == n  # all rows distinct: ids are 0..n-1 in order, no copy of the rows
    key_rank[distinct] = text_ranks(rows if every else rows.iloc[first])
    canonical = np.argsort(key_rank[ids], kind="stable")
    return canonical[np.random.default_rng([seed, 2]).permutation(n)]


def text_ranks(rows: pd.DataFrame) -> Any:
    """Each row's rank (equal texts share one) in the order of ``json.dumps(list(row), default=str)``.

    A row's text is "[" + its items' texts joined by ", " + "]", and an item's text (a JSON scalar)
    is never a proper prefix of another's followed by the same separator, so comparing two rows'
    texts is comparing their (item text + separator) column by column: ranked per column over its
    distinct values, then sorted as tuples. Object columns of mixed Python types fall back to the
    rows' whole texts (values such as 1 and 1.0 hash alike but encode differently)."""
    import numpy as np
    import pandas as pd

    from core.codes import carried

    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    ranks, size = np.zeros(len(rows), dtype=np.int64), 1  # rank of each row's texts so far, and how many
    for j, col in enumerate(rows.columns):
        if size == len(rows):  # every row's text already differs: later columns cannot reorder them
            break
        column = rows[col]
        got = carried(rows, col)  # the table's codes of the column, if it carries them (any numbering ranks alike)
        codes, uniques = (got.codes, got.uniques) if got is not None else pd.factorize(column, use_na_sentinel=True)
        text = column.dtype == object and len(uniques) and pd.api.types.infer_dtype(uniques, skipna=False) == "string"
        if column.dtype == object and len(uniques) and not text:
            keys = json_keys(rows).tolist()
            rank_of = {key: i for i, key in enumerate(sorted(set(keys)))}
            return np.asarray([rank_of[key] for key in keys], dtype=np.int64)
        sep = "]" if j == len(rows.columns) - 1 else ", "
        item = _item_ranks(column, codes, uniques, sep, bool(text))
        # refine: rows ordered by the columns so far, ties broken by this one (one int64 per row held)
        ranks *= int(item.max()) + 1  # in place: the ranks so far are replaced by the refined ones
        ranks += item
        kinds, ranks = np.unique(ranks, return_inverse=True)
        size = len(kinds)
    return ranks.reshape(-1).astype(np.int64, copy=False)


def _item_ranks(column: pd.Series, codes: Any, uniques: Any, sep: str, text: bool) -> Any:
    """Each row's rank of its item's text (``json.dumps(value, default=str) + sep``, null if missing)
    among the column's distinct item texts. Plain printable ASCII text (the JSON text is the value in
    double quotes) is quoted and ranked by pyarrow (its byte order is Python's order of str)."""
    import numpy as np

    missing = bool((codes < 0).any())
    if text and not _JSON_ESCAPED.search("".join(uniques)):
        import pyarrow as pa
        import pyarrow.compute as pc

        quoted = pc.binary_join_element_wise(pa.scalar('"', pa.large_string()),
                                             pa.array(uniques, type=pa.large_string()),
                                             pa.scalar('"' + sep, pa.large_string()), pa.scalar("", pa.large_string()))
        texts = pa.concat_arrays([quoted, pa.array(["null" + sep] if missing else [], pa.large_string())])
        order = pc.sort_indices(texts).to_numpy()
        table = np.empty(len(texts), dtype=np.int64)
        table[order] = np.arange(len(texts))  # distinct values have distinct texts
    else:
        values = column.astype(object).where(column.notna(), None).to_numpy()
        present, where = np.unique(codes, return_index=True)
        texts = [json.dumps(values[i], default=str) + sep for i in where]
        rank = {t: r for r, t in enumerate(sorted(set(texts)))}
        by_present = np.asarray([rank[t] for t in texts], dtype=np.int64)
        table = np.empty(len(uniques) + 1, dtype=np.int64)
        table[present] = by_present  # code -1 (missing) lands last
        return table[codes]
    return table[np.where(codes < 0, len(uniques), codes)]


def json_keys(rows: pd.DataFrame) -> Any:
    """Each row's ``json.dumps(list(row), default=str)`` (missing values as null), as an object array,
    each column's distinct values encoded once (a list's JSON text is its items' texts joined by ", ")."""
    import numpy as np
    import pandas as pd

    keys: Any = None
    for col in rows.columns:
        column = rows[col]
        values = column.astype(object).where(column.notna(), None).to_numpy()
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        if column.dtype == object and not all(type(u) is str for u in uniques):
            # mixed Python values may hash alike (1 == 1.0 == True) but encode differently: every cell
            texts = np.asarray([json.dumps(v, default=str) for v in values], dtype=object)
        else:
            present, first = np.unique(codes, return_index=True)
            table = np.asarray([json.dumps(values[i], default=str) for i in first], dtype=object)
            texts = table[np.searchsorted(present, codes)]
        keys = texts if keys is None else keys + ", " + texts
    if keys is None:
        return np.full(len(rows), "[]", dtype=object)
    return "[" + keys + "]"


def record(history: Any, release: Any, report: Any, published: pd.DataFrame, cols: list[str], *, source: str,
           seed: int, notify: Notify = log.info) -> dict[str, Any] | None:
    """Record a verified release and its fingerprints in the ledger (None without a ledger or if unverified);
    ``source``: the input's file name, ``seed``: the engine's seed (both name the release)."""
    if history is None or not report.ok:
        return None
    from stream.batch.history import batch_release_id, record_release

    rid = batch_release_id(source, release.engine, seed, history, list(release.rows.index))
    rows = published.astype(object).where(published.notna(), None).values.tolist()
    record_release(history.db, rid, source, release, report, rows, cols, history, seed)
    history.db.dispose()
    notify(f"ledger: release {rid} recorded ({release.released} report(s))")
    from stream.wire.manifest import BLOCK_REASONS

    return {"release_id": rid, "excluded": len(history.excluded), "excluded_by_rule": history.by_rule(),
            "excluded_why": {r: BLOCK_REASONS[r] for r in history.by_rule()},
            "repeated_content_released": history.repeated}
