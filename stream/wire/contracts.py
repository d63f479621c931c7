"""Typed contracts of what crosses a topic or a folder: the release manifest, the record message, the
count tables' sidecar and the push receipt (docs/stream.md, "Contracts"; JSON Schema in docs/schema/).

Every model is frozen. Where the contract is ours, unknown fields are refused (``extra="forbid"``);
fields added after the first releases have defaults, so a manifest of an older release still reads:
``deployment`` and ``files`` (issue 40), ``rows`` (row hashes), ``codebook``, ``utility`` and ``dp``
(optional by nature), ``event_time``, ``sample_policy``, ``link_guard`` and ``blocked_reasons``, and
the fields older manifests carried and newer ones dropped (``created_at``, ``timings``). A reader
verifies a manifest's signature over the raw JSON first (:func:`stream.wire.signing.verify_manifest`)
and parses it with :meth:`Manifest.parse` after; it keeps the raw dict for anything it writes, so
defaults filled in here never change signed bytes.

``python -m stream.wire.schema`` regenerates the JSON Schema files from these models.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from db.states import WindowState

__all__ = ["CountsSidecar", "Manifest", "PushReceipt", "RecordMessage", "ReleaseFiles", "WindowState",
           "content_sha256", "contract_error"]

FILES_ALG: Literal["sha256-json-v1"] = "sha256-json-v1"


class _Ours(BaseModel):
    """A contract we define: frozen, and a field it does not know is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def content_sha256(obj: Any) -> str:
    """SHA-256 (hex) of ``obj``'s canonical JSON: keys sorted, no spaces, ASCII (as :func:`signed_bytes`).

    A sidecar's hash is over its content, not its bytes, so the hash is the same whatever the
    indentation it was written with; any changed, added or removed value changes it."""
    text = json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def contract_error(exc: ValidationError) -> str:
    """One line naming the first field that breaks a contract and why."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "(top level)"
    return f"{where}: {err.get('msg', 'invalid')}"


class WindowSpan(_Ours):
    """The manifest's ``window``: id, key, seq, close reason and the released events' span (UTC)."""

    id: str
    key: str
    start: str = Field(description="UTC midnight of the first released event day (ISO)")
    end: str = Field(description="UTC midnight after the last released event day (ISO, excluded)")
    first_day: str | None = None
    last_day: str | None = None
    seq: int = 0
    close_reason: str | None = None


class EventTime(_Ours):
    first: str | None = Field(description="first event day (ISO), included")
    last: str | None = Field(description="last event day (ISO), included")


class RowsDigest(_Ours):
    """Signed row hashes (:mod:`stream.wire.rowhash`)."""

    alg: str
    root: str
    hashes: str
    columns: list[str]


class Signature(_Ours):
    alg: Literal["ed25519"]
    key_id: str
    value: str


class ReleaseFiles(_Ours):
    """What the manifest signs of the files ``consume`` writes beside the data file (issue 40): the
    content hash (:func:`content_sha256`) of the count tables' sidecar (``_<id>.counts.json``) and of
    the codebook (``_<id>.codebook.json`` minus the ``reader_columns`` its reader adds, which follow from
    the partition), and the partition the release belongs to (``window_date``). The data file's rows
    are covered by ``rows``; the manifest by its signature."""

    alg: Literal["sha256-json-v1"] = FILES_ALG
    counts: str | None = Field(description="content hash of the counts sidecar; null: the release has none")
    codebook: str | None = Field(description="content hash of the codebook; null: the release has none")
    partition: dict[str, str] = Field(description="partition values, e.g. {\"window_date\": \"2024-03-01\"}")


class Manifest(_Ours):
    """A release's manifest on the releases topic, in the ledger and beside its files. A release is
    complete for a consumer once this has verified and its ``records`` records match ``rows``."""

    release_id: str
    deployment: str | None = Field(default=None, description="the deployment's id (in the ledger): release "
                                   "ids of two deployments differ even when they share a signing key")
    window: WindowSpan
    event_time: EventTime | None = None
    stations: list[str]
    engine: str
    params: dict[str, Any]
    seed: int
    sample_policy: str | None = None
    link_guard: str | None = None
    k: int
    l: int | None  # noqa: E741
    privacy: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any]
    counts: dict[str, int]
    blocked_reasons: dict[str, str] = Field(default_factory=dict)
    records: int = Field(ge=0)
    columns: list[str]
    checksum: str
    diagnostics: dict[str, Any] = Field(default_factory=dict)
    codebook: dict[str, Any] | None = None
    utility: dict[str, Any] | None = None
    dp: dict[str, Any] | None = None
    files: ReleaseFiles | None = None
    rows: RowsDigest | None = None
    signature: Signature | None = None
    created_at: str | None = Field(default=None, description="older manifests only (the ledger keeps it)")
    timings: dict[str, Any] | None = Field(default=None, description="older manifests only")

    @classmethod
    def parse(cls, raw: Any) -> Manifest:
        """The manifest in ``raw`` (a decoded JSON object); :class:`pydantic.ValidationError` if it is not one."""
        return cls.model_validate(raw)

    def partition(self) -> str | None:
        """The release's ``window_date``: signed in ``files``, else (older manifests) its window's start day."""
        if self.files is not None:
            return self.files.partition.get("window_date")
        start = self.window.start
        return start[:10] if len(start) >= 10 else None


class RecordMessage(_Ours):
    """One released record on the anonymized topic, keyed by release id (numbered by ``seq`` from 0)."""

    release_id: str
    seq: int = Field(ge=0, strict=True)
    class_id: int | None = None
    values: dict[str, Any]


class CountTableJson(_Ours):
    """One noisy count table (:meth:`core.dp.tables.CountTable.to_json`)."""

    by: list[str]
    groups: list[list[Any]]
    counts: list[int]
    ci95: float
    mechanism: str
    rho: float
    unit: str
    max_contributions: int = 1
    sd: float | None = None


class CountsSidecar(_Ours):
    """``_<release id>.counts.json``: the release id and the manifest's ``dp`` section
    (:mod:`stream.worker.dpcounts`), as ``consume`` writes it."""

    release_id: str
    mechanism: str
    epsilon: float
    delta: float | None = None
    rho: float = 0.0
    unit: str | None = None
    population: str | None = None
    block_by: str | None = None
    days: list[str] = Field(default_factory=list)
    refused_blocks: list[str] = Field(default_factory=list)
    not_counted: int | None = None
    tables: list[CountTableJson] = Field(default_factory=list)
    refused: dict[str, Any] | None = None
    refused_message: str | None = None
    blocks: list[dict[str, Any]] = Field(default_factory=list)


class PushReceipt(_Ours):
    """What a worker made of one push's reports in one batch (:mod:`stream.wire.receipts`): accepted and
    dead-lettered numbers as inclusive runs ``[first, last]``."""

    push: str = Field(pattern=r"^[0-9a-f]{32}$")
    worker: str
    feed: str
    accepted: list[tuple[int, int]]
    dead: dict[str, list[tuple[int, int]]]


SCHEMAS: dict[str, type[BaseModel]] = {"manifest": Manifest, "record": RecordMessage, "counts": CountsSidecar,
                                       "receipt": PushReceipt}
