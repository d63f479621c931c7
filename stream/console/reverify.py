"""Re-verify a published release from the output topic, independently of the worker.

Steps (:func:`reverify_messages` is the pure part, :func:`reverify` adds the broker read):

1. read every ``crime.anonymized`` message keyed by the release id (all partitions, up to the end
   offsets at the time of the call);
2. drop duplicates by ``seq`` (publishing is at-least-once) and count them;
3. compare the record count, and the signed row hashes' root (:mod:`stream.wire.rowhash`; a record
   planted under the release's id is set aside, as ``consume`` does) or for older manifests the
   SHA-256 checksum (:func:`stream.wire.records.checksum`), with the release's manifest in the ledger;
4. group the records by their generalized QI labels (never by the published class ids) and recompute
   k and the distinct / entropy / recursive l with :func:`core.privacy.achieved`;
5. compare with the release's requirement (``params.k``, ``params.l``) and with the k and l the
   ledger stored.

The release passes when the records are complete, the checksum matches and the recomputed k and l
meet the requirement and equal the stored values.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from core.privacy import achieved
from stream.console.analysis import split_columns
from stream.wire.rowhash import digest_of_hashes, record_row, row_hash, short_hashes


def reverify_messages(messages: list[dict[str, Any]], release: dict[str, Any], qi_names: list[str] | None,
                      sensitive: str | None) -> dict[str, Any]:
    """Verdict on the messages read back for ``release`` (a :func:`db.console_queries.release_detail`)."""
    from stream.wire.records import checksum

    manifest = release.get("manifest") or {}
    by_seq, conflicts = _pick_records(messages, manifest.get("rows"))
    ordered = [by_seq[s] for s in sorted(by_seq)]
    expected = int(manifest.get("records", release.get("released", 0)))
    params = release.get("params") or {}
    k_req, l_req = params.get("k"), params.get("l")
    failures: list[str] = []
    out: dict[str, Any] = {"release_id": release["id"], "records_expected": expected, "records_found": len(ordered),
                           "duplicates": len(messages) - len(ordered), "k_required": k_req, "l_required": l_req,
                           "k_stored": release.get("k"), "l_stored": release.get("l")}
    if len(ordered) != expected:
        failures.append(f"{len(ordered)} record(s) on the topic, the manifest says {expected}")
    out["conflicting_records"] = conflicts
    if isinstance(manifest.get("rows"), dict):  # signed row hashes: the root over the values decides
        cols = list(manifest["rows"].get("columns") or [])
        root = digest_of_hashes([row_hash(record_row(m, cols)) for m in ordered])["root"]
        out["checksum_ok"] = bool(ordered) and root == manifest["rows"].get("root")
    else:
        out["checksum_ok"] = bool(ordered) and checksum(ordered) == release.get("checksum")
    if ordered and not out["checksum_ok"]:
        failures.append("the records on the topic differ from the signed manifest")
    columns = list(manifest.get("columns") or [])
    if not columns and ordered:
        columns = ["class_id", *ordered[0]["values"]]
    qis, sens = split_columns(columns, qi_names, sensitive)
    levels: dict[str, Any] = {"k": None, "l_distinct": None}
    if ordered:
        frame = pd.DataFrame([m["values"] for m in ordered])
        missing = [c for c in qis if c not in frame.columns]
        if missing:
            failures.append(f"records lack QI column(s) {', '.join(missing)}")
        else:
            cls = frame[qis].astype(str).groupby(qis, sort=False, dropna=False).ngroup().to_numpy()
            sens_codes = (pd.factorize(frame[sens].astype(str), sort=True)[0]
                          if sens and sens in frame.columns else None)
            levels = achieved(np.asarray(cls), sens_codes).as_dict()
    out.update({"k": levels.get("k"), "l_distinct": levels.get("l_distinct"), "l_entropy": levels.get("l_entropy"),
                "l_recursive": levels.get("l_recursive"), "t": levels.get("t"), "classes": levels.get("classes")})
    k, ld = out["k"], out["l_distinct"]
    if k is not None:
        if isinstance(k_req, int) and k < k_req:
            failures.append(f"recomputed k={k} is below the required k={k_req}")
        if release.get("k") is not None and k != release.get("k"):
            failures.append(f"recomputed k={k} differs from the stored k={release.get('k')}")
        if isinstance(l_req, int) and l_req > 1 and (ld is None or ld < l_req):
            failures.append(f"recomputed l={ld} is below the required l={l_req}")
        if release.get("l") is not None and ld != release.get("l"):
            failures.append(f"recomputed l={ld} differs from the stored l={release.get('l')}")
    out["failures"] = failures
    out["ok"] = not failures
    out["at"] = datetime.now(UTC).isoformat()
    return out


def _pick_records(messages: list[dict[str, Any]], digest: Any) -> tuple[dict[int, dict[str, Any]], int]:
    """One record per ``seq``: the one whose values hash to the manifest's signed row hash of that ``seq``
    when it has them (a record planted under the release's id never wins, as in ``consume``), else the
    first; and how many distinct records were set aside as conflicting."""
    shorts = short_hashes(digest) if isinstance(digest, dict) else None
    cols = list(digest.get("columns") or []) if shorts is not None else []
    first: dict[int, dict[str, Any]] = {}
    genuine: dict[int, dict[str, Any]] = {}
    seen: dict[int, set[bytes]] = {}
    for m in messages:
        seq = int(m["seq"])
        first.setdefault(seq, m)
        if shorts is None:
            continue
        h = row_hash(record_row(m, cols))
        seen.setdefault(seq, set()).add(h)
        if 0 <= seq < len(shorts) and h[:len(shorts[seq])] == shorts[seq]:
            genuine.setdefault(seq, m)
    return first | genuine, sum(len(hs) - 1 for hs in seen.values())  # no genuine record: the checks fail


def reverify(bootstrap: list[str], topic: str, release: dict[str, Any], qi_names: list[str] | None,
             sensitive: str | None, timeout_s: float = 30.0) -> dict[str, Any]:
    """Read ``release`` back from ``topic`` and verify it (see the module doc)."""
    from stream.console.kafka import read_release

    got = read_release(bootstrap, topic, release["id"], timeout_s=timeout_s)
    out = reverify_messages(got["messages"], release, qi_names, sensitive)
    out["topic"] = topic
    out["scanned"] = got["scanned"]
    if not got["complete"]:
        out["failures"].append(f"the topic was not read to its end within {timeout_s:.0f}s")
        out["ok"] = False
    return out
