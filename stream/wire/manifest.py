"""The release manifest: what a release says about itself on ``crime.releases`` (docs/stream.md).

Built once, when the release is stored, from the window, the engine's release and the verifier's
report; then signed (:mod:`stream.wire.signing`) and kept in the ledger, so a re-publish sends exactly
the same bytes. Nothing here identifies a report: counts, spans, parameters and public diagnostics.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

from core.engines.base import PRIVATE_DIAGNOSTICS, reproducible_diagnostics
from core.engines.nesting import utility_with_nesting
from stream.wire.contracts import FILES_ALG, Manifest, ReleaseFiles, content_sha256
from stream.wire.records import clean_json

_MAX_DIAGNOSTIC_BYTES = 100_000
BLOCK_RULES = ("report", "content", "person")
BLOCK_REASONS = {  # what each linking-guard rule blocked and why: manifests, status, console, batch reports
    "report": "the same report (station and report id) was already released",
    "content": "same content as an already released report (a re-send); reports sharing their content "
               "in one export, such as co-offenders, are each released once",
    "person": "a report about a person already released",
}


def blocked_reasons(counts: dict[str, int]) -> dict[str, str]:
    """:data:`BLOCK_REASONS` of the rules that blocked something in ``counts`` (``blocked_<rule>`` keys)."""
    return {rule: BLOCK_REASONS[rule] for rule in BLOCK_RULES if counts.get(f"blocked_{rule}")}


def public_diagnostics(diagnostics: dict[str, Any]) -> dict[str, Any]:
    """Engine diagnostics safe to publish: no row-level linkage, nothing large (e.g. a PBG-EA front), no
    wall-clock measurement (they would make two runs of the same window differ)."""
    out: dict[str, Any] = {}
    for key, value in reproducible_diagnostics(diagnostics).items():
        if key in PRIVATE_DIAGNOSTICS:
            continue
        clean = clean_json(value)
        if len(json.dumps(clean, default=str)) <= _MAX_DIAGNOSTIC_BYTES:
            out[key] = clean
    return out


def release_counts(received: int, released: int, suppressed: int, held_back: int, blocked: int,
                   duplicates: int, blocked_by: dict[tuple[str, str], int], carried_in: int = 0,
                   dropped_missing: int = 0) -> dict[str, int]:
    """The manifest's ``counts``: where every report the window received went (blocked split by rule).

    ``received = released + suppressed + held_back + blocked``. ``held_back`` reports stay pending and
    are counted again, as ``carried_in``, by the key's next manifest: summed over a key's manifests,
    ``received - carried_in`` counts every report once (docs/stream.md, "Accounting"). ``dropped_missing``:
    reports of the key dropped by the spec's ``on_missing = "drop"`` since its previous manifest (they
    are dead-lettered as ``missing-value`` too, so the station can fix and resend them)."""
    return {"received": received, "carried_in": carried_in, "released": released, "suppressed": suppressed,
            "held_back": held_back, "blocked": blocked, "duplicates": duplicates, "dropped_missing": dropped_missing,
            **{f"blocked_{rule}": sum(n for (_, r), n in blocked_by.items() if r == rule) for rule in BLOCK_RULES}}


def event_window(window: Any, span: tuple[str | None, str | None]) -> dict[str, Any]:
    """The manifest's ``window``: its id, key, seq and close reason, and the span of the released
    events: ``first_day`` and ``last_day`` (ISO days, both included) and ``start`` / ``end``, the UTC
    midnights that bound them (``end`` excluded). A release of carried, merged (a catch-up push of 14
    days) or backfilled reports spans their days, not the day of the window that released them."""
    first, last = span
    if first is None or last is None:  # no event (never for a stored release): the window's own bounds
        start, end = window.start, window.end
    else:
        start = datetime.combine(date.fromisoformat(first), datetime.min.time(), UTC)
        end = datetime.combine(date.fromisoformat(last), datetime.min.time(), UTC) + timedelta(days=1)
    return {"id": window.id, "key": window.key, "start": start.isoformat(), "end": end.isoformat(),
            "first_day": first, "last_day": last, "seq": window.seq, "close_reason": window.close_reason}


def release_files(rid: str, window: dict[str, Any], codebook: dict[str, Any] | None,
                  dp: dict[str, Any] | None) -> dict[str, Any]:
    """The manifest's ``files``: content hashes of the sidecars ``consume`` writes from the manifest (the
    count tables, ``{"release_id": rid, **dp}``, and the codebook) and the release's partition value
    (``window_date``: its window's start day), all signed with the manifest (:class:`ReleaseFiles`)."""
    return ReleaseFiles(alg=FILES_ALG, counts=None if dp is None else content_sha256({"release_id": rid, **dp}),
                        codebook=None if codebook is None else content_sha256(codebook),
                        partition={"window_date": str(window["start"])[:10]}).model_dump(mode="json")


def build_manifest(rid: str, window: Any, span: tuple[str | None, str | None], stations: list[str],
                   release: Any, seed: int, *, sample_policy: str, link_guard: str, k: int, l: int | None,  # noqa: E741
                   risk: dict[str, Any] | None, metrics: dict[str, Any], counts: dict[str, int], records: int,
                   columns: list[str], checksum: str, codebook: dict[str, Any] | None = None,
                   utility: dict[str, Any] | None = None, dp: dict[str, Any] | None = None,
                   deployment: str | None = None) -> dict[str, Any]:
    """The unsigned manifest of release ``rid`` of ``window``: a function of the window's reports, the
    settings it states (``sample_policy``, the privacy settings' ``link_guard``: values, so the wire formats
    never read the settings) and the seed only, so the same input gives the same bytes whatever the load (no
    creation time, no stage timings: those stay in the ledger, ``releases.created_at`` and the verification's
    ``timings``, and in the logs). The one exception is ``dp`` (with a spec's ``[dp]``): the noisy count
    tables, their mechanism and each budget block's spend (:mod:`stream.worker.dpcounts`), whose noise is
    drawn afresh by each computation, never seeded; a re-publish sends the stored manifest.

    ``span`` is the first and last event day (ISO, :func:`core.columns.day_span`) of the released
    reports: ``window`` and ``event_time`` state it, to the day (an exact time would single a report out).
    ``deployment``: the ledger's deployment id (:mod:`db.deployment`). The result is checked against the
    contract (:class:`stream.wire.contracts.Manifest`); ``rows`` and ``signature`` are added after."""
    first, last = span
    extra = {"dp": dp} if dp is not None else {}
    body = clean_json({
        "release_id": rid,
        "window": event_window(window, span),
        "event_time": {"first": first, "last": last},  # days, both included
        "stations": stations, "engine": release.engine, "params": release.params, "seed": seed,
        "sample_policy": sample_policy, "link_guard": link_guard,
        "k": k, "l": l, "privacy": {**release.privacy, "risk": risk}, "metrics": metrics, "counts": counts,
        "blocked_reasons": blocked_reasons(counts),
        "records": records, "columns": columns, "checksum": checksum,
        "diagnostics": public_diagnostics(release.diagnostics),
        "codebook": codebook,  # core.columns.codebook: spec version, column meanings, level shares
        # core.metrics.utility, public=True: what anonymization cost, per QI level; QIs not nested (issue 39)
        "utility": utility if utility is None else utility_with_nesting(utility, release),
        **extra,  # differentially private counts and their budget (stream.worker.dpcounts)
    })
    body["files"] = release_files(rid, body["window"], body["codebook"], body.get("dp"))
    if deployment is not None:
        body["deployment"] = deployment
    Manifest.parse(body)  # the contract: a field of the wrong type fails here, before anything is signed
    return body
