"""Assembling releases from the two topics' messages: :class:`ReleaseAssembler` (used by
:mod:`stream.analyst.consumer`, which documents what is refused and why, and by the test scenarios).
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import ValidationError

from stream.wire.contracts import Manifest, RecordMessage, content_sha256, contract_error
from stream.wire.records import checksum, dumps
from stream.wire.release_ids import valid_release_id
from stream.wire.rowhash import SHORT, digest_of_hashes, record_row, row_hash, short_hashes
from stream.wire.signing import verify_manifest

log = logging.getLogger("stream.analyst.consumer")  # one logger for the consumer's refusals
MAX_PENDING_RELEASES = 10_000  # releases with records but no manifest yet, kept at most (memory bound)
MAX_CANDIDATES = 16  # distinct records kept per (release, seq) before its manifest names the genuine one
MAX_UNCONFIRMED = 100_000  # records kept per release before its manifest arrives (the setting's default)


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """What identifies a release's content: the hash of its signed manifest body (without the signature)."""
    return content_sha256({k: v for k, v in manifest.items() if k != "signature"})


class ReleaseAssembler:
    """Collects manifests and records; yields each release once it is complete and verified.

    Records are kept per ``seq`` as candidates (distinct messages, at most :data:`MAX_CANDIDATES`), never
    first-come-first-kept: once a manifest with row hashes (``rows``) has verified, each ``seq`` keeps the
    candidate whose values hash to the signed row hash and every other one, whenever it arrives, is
    refused as a conflict (logged, counted in ``conflicts``). Manifests without row hashes (older
    releases) complete only when each ``seq`` has a single candidate and their ``checksum`` matches."""

    def __init__(self, public_key: Ed25519PublicKey, max_unconfirmed: int = MAX_UNCONFIRMED) -> None:
        self.public_key, self.max_unconfirmed = public_key, max_unconfirmed
        self.records: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(dict)
        self.manifests: dict[str, dict[str, Any]] = {}
        self.expected: dict[str, list[bytes]] = {}  # release id -> signed short row hashes, in seq order
        self.done: set[str] = set()
        self.digests: dict[str, str] = {}  # release id -> manifest_digest of the content held or written
        self.held: Counter[str] = Counter()  # release id -> records kept for it
        self.id_conflicts = 0  # verified manifests refused: another content under an id held or written
        self.duplicate_records = 0
        self.duplicate_manifests = 0
        self.conflicts = 0  # records refused because another record of their seq matches the signed hash
        self.overflowed: set[str] = set()  # releases a record was refused from for lack of room (MAX_CANDIDATES)
        self.refused: Counter[str] = Counter()  # reason -> messages refused

    def _refuse(self, reason: str, what: str) -> None:
        if not self.refused[reason]:
            log.warning("refused %s: %s", what, reason)
        else:
            log.debug("refused %s: %s", what, reason)
        self.refused[reason] += 1

    def add_raw(self, raw: bytes | None, is_manifest: bool) -> str | None:
        """One message from either topic, as bytes: non-JSON and non-object messages are refused.

        Returns the id of the release this message now waits in (kept until that release completes), or
        None when nothing of it is kept (refused, or a duplicate)."""
        kind = "manifest" if is_manifest else "record"
        try:
            obj = json.loads(raw) if raw is not None else None
        except (ValueError, RecursionError):
            self._refuse("not JSON", f"a {kind} message")
            return None
        if not isinstance(obj, dict):
            self._refuse("not a JSON object", f"a {kind} message")
            return None
        return self.add_manifest(obj) if is_manifest else self.add_record(obj)

    def _matches(self, rid: str, msg: dict[str, Any]) -> bool:
        """Whether ``msg``'s values hash to the signed row hash of its ``seq`` (release ``rid``)."""
        expected = self.expected[rid]
        seq = msg["seq"]
        row = record_row(msg, self.manifests[rid]["rows"]["columns"])
        return seq < len(expected) and row_hash(row)[:SHORT] == expected[seq]

    def _conflict(self, rid: str, msg: dict[str, Any]) -> None:
        self.conflicts += 1
        log.warning("release %s: refused a record for seq %s that does not match the signed row hash "
                    "(a conflicting or planted record)", rid, msg.get("seq"))

    def add_record(self, msg: dict[str, Any]) -> str | None:
        rid = valid_release_id(msg.get("release_id"))
        try:
            seq = RecordMessage.model_validate(msg).seq
        except ValidationError:
            rid = None
        if rid is None:
            self._refuse("malformed record", "a record")
            return None
        if rid in self.done:
            self.duplicate_records += 1
            return None
        if rid in self.manifests and seq >= self.manifests[rid]["records"]:
            self._refuse("record beyond its manifest's record count", f"a record of {rid}")
            return None
        if rid in self.expected and not self._matches(rid, msg):
            self._conflict(rid, msg)
            return None
        candidates = self.records.get(rid, {}).get(seq, [])
        if any(dumps(c) == dumps(msg) for c in candidates):
            self.duplicate_records += 1
            return None
        if rid not in self.manifests and rid not in self.records and len(self.records) > MAX_PENDING_RELEASES:
            self._refuse("too many releases without a manifest", "a record")
            return None
        if len(candidates) >= MAX_CANDIDATES or (rid not in self.manifests and self.held[rid] >= self.max_unconfirmed):
            self._refuse(f"more than {MAX_CANDIDATES} conflicting records for one seq" if len(candidates)
                         >= MAX_CANDIDATES else f"more than {self.max_unconfirmed} records before their manifest",
                         f"a record of {rid}")
            self.overflowed.add(rid)  # follow_releases reads the release again once its manifest is in
            return rid  # its offset holds the group's commit back, and is where the release is read again
        self.records[rid].setdefault(seq, []).append(msg)
        self.held[rid] += 1
        return rid

    def add_manifest(self, manifest: dict[str, Any]) -> str | None:
        rid = valid_release_id(manifest.get("release_id"))
        if rid is None:
            self._refuse("release id outside [A-Za-z0-9_-]{1,64}", "a manifest")
            return None
        why = verify_manifest(manifest, self.public_key)
        if why is not None:
            self._refuse(why, f"manifest {rid}")
            return None
        try:
            Manifest.parse(manifest)
        except ValidationError as exc:
            self._refuse("malformed manifest", f"manifest {rid} ({contract_error(exc)})")
            return None
        digest = manifest_digest(manifest)
        if rid in self.digests and self.digests[rid] != digest:
            self.id_conflicts += 1
            self._refuse("another release under an id already held", f"manifest {rid}")
            log.error("release %s: refused a signed manifest whose content differs from the release already "
                      "held or written under this id (a second deployment sharing the signing key?)", rid)
            return None
        if rid in self.done or rid in self.manifests:
            self.duplicate_manifests += 1
            return None
        self.manifests[rid], self.digests[rid] = manifest, digest
        rows = manifest.get("rows")
        expected = short_hashes(rows) if isinstance(rows, dict) and isinstance(rows.get("columns"), list) else None
        if expected is not None:  # from now on each seq keeps only the record its signed hash names
            self.expected[rid] = expected
            for seq, candidates in list(self.records.get(rid, {}).items()):
                keep = [c for c in candidates if self._matches(rid, c)]
                for c in candidates:
                    if c not in keep:
                        self._conflict(rid, c)
                self.records[rid][seq] = keep[:1]
        for seq in [s for s in self.records.get(rid, {}) if s >= manifest["records"]]:
            self._refuse("record beyond its manifest's record count", f"a record of {rid}")
            del self.records[rid][seq]
        self.held[rid] = sum(len(c) for c in self.records.get(rid, {}).values())
        return rid

    def _assemble(self, rid: str, manifest: dict[str, Any]) -> list[dict[str, Any]] | None:
        recs = self.records.get(rid, {})
        n = manifest["records"]
        if sorted(s for s, c in recs.items() if c) != list(range(n)):
            return None
        ordered = [recs[s][0] for s in range(n)]
        if rid in self.expected:
            root = digest_of_hashes([row_hash(record_row(r, manifest["rows"]["columns"])) for r in ordered])["root"]
            return ordered if root == manifest["rows"].get("root") else None
        if any(len(recs[s]) > 1 for s in range(n)):  # no signed row hashes to choose by
            return None
        return ordered if checksum(ordered) == manifest["checksum"] else None

    def complete(self) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
        """Releases that became complete since the last call, with their records in ``seq`` order."""
        for rid, manifest in list(self.manifests.items()):
            ordered = self._assemble(rid, manifest)
            if ordered is None:
                continue
            self.done.add(rid)
            del self.manifests[rid]
            self.expected.pop(rid, None)
            self.records.pop(rid, None)
            self.held.pop(rid, None)
            yield manifest, ordered

    def incomplete(self) -> list[str]:
        """Releases whose manifest verified but that are not complete (records missing or not matching)."""
        return sorted(self.manifests)
