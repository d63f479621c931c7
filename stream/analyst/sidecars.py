"""What the signed manifest says about the files beside a release's data file, checked on disk.

A manifest signs (``files``, :class:`stream.wire.contracts.ReleaseFiles`) the content hash of the count
tables' sidecar and of the codebook, and the release's partition value (``window_date``); the data file's
rows are signed through ``rows``. Manifests older than ``files`` are checked against the same hashes
computed from their signed ``dp`` and ``codebook`` sections, and against their window's start day.
Here each is compared with the folder: a missing, extra or edited sidecar, a codebook whose Markdown or
reader columns do not follow from the signed codebook, and a release moved to another date partition
each fail with one line naming the file and what differs (:func:`sidecar_problems`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import ValidationError

from stream.wire.codebook import reader_columns, render_markdown
from stream.wire.contracts import Manifest, content_sha256, contract_error
from stream.wire.signing import verify_manifest

PARTITION_KEY = "window_date"
COUNTS_SUFFIX = ".counts.json"


class ReleaseCheckError(ValueError):
    """Release files that do not match their signed manifests; ``failed`` maps release id -> why."""

    def __init__(self, failed: dict[str, str]) -> None:
        self.failed = failed
        super().__init__("release(s) not matching their signed manifest: "
                         + "; ".join(f"{rid}: {why}" for rid, why in failed.items()))


def manifest_file(folder: Path, release_id: str) -> Path | None:
    """The manifest of ``release_id`` in ``folder`` (``_<id>.manifest.json``, or the older ``<id>.manifest.json``)."""
    for name in (f"_{release_id}.manifest.json", f"{release_id}.manifest.json"):
        if (folder / name).is_file():
            return folder / name
    return None


def folder_partitions(folder: Path, root: Path) -> dict[str, str]:
    """``key=value`` folder names between ``root`` and ``folder`` (hive-style partitions)."""
    try:
        rel = folder.relative_to(root) if root.is_dir() else Path()
    except ValueError:
        return {}
    return dict(part.split("=", 1) for part in rel.parts if "=" in part)


def load_signed(path: Path, release_id: str, public_key: Ed25519PublicKey) -> tuple[dict[str, Any], Manifest]:
    """The manifest at ``path``, its signature verified, naming ``release_id``, and parsed by its contract;
    ValueError with one line saying what is wrong otherwise."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path.name}: unreadable ({type(exc).__name__})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path.name}: not a JSON object")
    why = verify_manifest(raw, public_key)
    if why is not None:
        raise ValueError(f"{path.name}: {why}")
    if raw.get("release_id") != release_id:
        raise ValueError(f"{path.name} is the manifest of release {str(raw.get('release_id'))[:64]!r}")
    try:
        return raw, Manifest.parse(raw)
    except ValidationError as exc:
        raise ValueError(f"{path.name} breaks the manifest contract ({contract_error(exc)})") from None


def first_difference(got: Any, signed: Any, where: str = "") -> str | None:
    """The path of the first value in ``got`` that differs from ``signed`` (``tables[0].counts[3]``)."""
    if isinstance(got, dict) and isinstance(signed, dict):
        for key in sorted(set(got) | set(signed)):
            if key not in got or key not in signed:
                return f"{where}.{key}".lstrip(".") + (" added" if key not in signed else " removed")
            found = first_difference(got[key], signed[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(got, list) and isinstance(signed, list):
        if len(got) != len(signed):
            return f"{where or '(top)'} has {len(got)} entries, signed {len(signed)}"
        for i, (a, b) in enumerate(zip(got, signed, strict=True)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if got == signed and type(got) is type(signed) else (where.lstrip(".") or "(top)")


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path.name}: unreadable ({type(exc).__name__})") from None


def counts_problem(folder: Path, rid: str, raw: dict[str, Any], manifest: Manifest) -> str | None:
    """Whether ``_<rid>.counts.json`` is the one the manifest signs (or absent when it signs none)."""
    path = folder / f"_{rid}{COUNTS_SUFFIX}"
    signed_doc = {"release_id": rid, **raw["dp"]} if isinstance(raw.get("dp"), dict) else None
    expected = manifest.files.counts if manifest.files is not None else (
        None if signed_doc is None else content_sha256(signed_doc))
    if expected is None:
        return f"{path.name}: its signed manifest has no counts" if path.exists() else None
    if not path.is_file():
        return f"{path.name} is missing (its signed manifest lists counts)"
    doc = _json_file(path)
    if content_sha256(doc) == expected:
        return None
    what = first_difference(doc, signed_doc) if signed_doc is not None else None
    return f"{path.name} differs from its signed hash" + (f" (first at {what})" if what else "")


def codebook_problem(folder: Path, rid: str, raw: dict[str, Any], manifest: Manifest,
                     partitions: list[str]) -> str | None:
    """Whether ``_<rid>.codebook.json`` and ``.md`` are the ones the signed codebook gives in this folder."""
    path, md = folder / f"_{rid}.codebook.json", folder / f"_{rid}.codebook.md"
    signed = raw.get("codebook") if isinstance(raw.get("codebook"), dict) else None
    expected = manifest.files.codebook if manifest.files is not None else (
        None if signed is None else content_sha256(signed))
    if expected is None:
        extra = [p.name for p in (path, md) if p.exists()]
        return f"{extra[0]}: its signed manifest has no codebook" if extra else None
    if not path.is_file():
        return f"{path.name} is missing (its signed manifest lists a codebook)"
    doc = _json_file(path)
    if not isinstance(doc, dict):
        return f"{path.name} is not a JSON object"
    own = {k: v for k, v in doc.items() if k != "reader_columns"}
    if content_sha256(own) != expected:
        what = first_difference(own, signed) if signed is not None else None
        return f"{path.name} differs from its signed hash" + (f" (first at {what})" if what else "")
    if doc.get("reader_columns") != reader_columns(partitions):
        return f"{path.name}: its reader_columns do not match this folder's partitions {partitions}"
    if not md.is_file():
        return f"{md.name} is missing (its signed manifest lists a codebook)"
    if md.read_text(encoding="utf-8") != render_markdown(rid, {**raw, "codebook": doc}):
        return f"{md.name} differs from the signed codebook"
    return None


def sidecar_problems(folder: Path, root: Path, rid: str, raw: dict[str, Any], manifest: Manifest) -> str | None:
    """The first way the files beside release ``rid`` in ``folder`` differ from its signed manifest:
    partition, counts sidecar, codebook; None when they match."""
    parts = folder_partitions(folder, root)
    if PARTITION_KEY in parts and parts[PARTITION_KEY] != manifest.partition():
        return (f"moved: it is in {PARTITION_KEY}={parts[PARTITION_KEY]}, its signed manifest puts it in "
                f"{PARTITION_KEY}={manifest.partition()}")
    try:
        return counts_problem(folder, rid, raw, manifest) or codebook_problem(
            folder, rid, raw, manifest, [PARTITION_KEY] if PARTITION_KEY in parts else [])
    except ValueError as exc:
        return str(exc)


def resolve_public_key(explicit: str | Ed25519PublicKey | None) -> Ed25519PublicKey:
    """The key to check with: ``explicit`` (a key, 64 hex digits or ``@file``), else as ``consume`` finds it
    (``ANONSTREAM_RELEASE_PUBLIC_KEY``, else the local worker's key)."""
    if isinstance(explicit, Ed25519PublicKey):
        return explicit
    from stream.config.settings import load_settings, secret_value
    from stream.wire.signing import consumer_public_key

    settings = load_settings()
    return consumer_public_key(explicit or settings.release_public_key, secret_value(settings.signing_key),
                               settings.data_dir)
