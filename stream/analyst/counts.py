"""A release's differentially private counts beside its data: ``_<release id>.counts.json``.

With a spec's ``[dp]`` table each manifest carries, signed, noisy count tables over the spec's
groupings, their mechanism and each budget block's spend (``manifest["dp"]``,
:mod:`stream.worker.dpcounts`). ``anonstream consume`` writes them beside the release as a sidecar
whose name starts with ``_``, so readers of the folder's data files (``pandas.read_parquet(folder)``,
pyarrow, Spark) skip it; :func:`read_counts` loads them:

    >>> from stream.analyst.dataset import read_counts
    >>> read_counts("releases/", by=("offence",))        # release_id, offence, count, ci95, sd, ...

Each ``count`` is the exact count plus noise from OpenDP's discrete Gaussian (or Laplace) mechanism,
as drawn: unbiased, and negative sometimes (a near-empty cell plus negative noise). The true count
lies within ``count ± ci95`` with 95 % probability; a sum of m cells of one table is unbiased with
standard deviation ``sd * √m`` (95 % half-width about ``1.96 * sd * √m``,
:meth:`core.dp.tables.CountTable.sum_ci95`); sums over releases add their variances. Cells of the
public domain nobody fell in are published too (a missing cell would say "zero").

``read_counts(path, verify=True)`` first checks every sidecar under ``path`` against the signed manifest
beside it (its content hash, :mod:`stream.analyst.sidecars`), and that no manifest listing counts lost
its sidecar: an edited or missing one raises :class:`stream.analyst.sidecars.ReleaseCheckError`.

``view="consistent"`` gives instead, per release, a non-negative integer view whose tables agree on
their shared margins (:func:`core.dp.consistent.consistent_view`, post-processing of the published
tables): for display, not for estimates (it is biased where counts are small), so its ``ci95`` and
``sd`` are NaN.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from core.dp.consistent import consistent_view
from core.dp.tables import CountTable
from stream.analyst.sidecars import ReleaseCheckError, counts_problem, load_signed, manifest_file, resolve_public_key
from stream.wire.release_ids import valid_release_id

SUFFIX = ".counts.json"


def counts_name(release_id: str) -> str:
    """The sidecar's file name (``_`` first: data readers of the folder skip it)."""
    return f"_{release_id}{SUFFIX}"


def write_counts(folder: Path, release_id: str, manifest: dict[str, Any]) -> Path | None:
    """Write the manifest's ``dp`` section as ``folder/_<release id>.counts.json``; None without one."""
    if valid_release_id(release_id) is None:
        raise ValueError("release id outside the allowed alphabet")
    dp = manifest.get("dp")
    if not isinstance(dp, dict):
        return None
    path = folder / counts_name(release_id)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"release_id": release_id, **dp}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def counts_files(root: Path) -> list[Path]:
    """The counts sidecars under ``root`` (or ``root`` itself), sorted by path."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob(f"_*{SUFFIX}") if p.is_file())


def _sidecar(path: Path) -> Path:
    """A release data file's sidecar (``x/<rid>.parquet`` -> ``x/_<rid>.counts.json``), else ``path``."""
    if path.is_file() and not path.name.endswith(SUFFIX):
        return path.with_name(counts_name(path.name.split(".", 1)[0]))
    return path


View = Literal["unbiased", "consistent"]


def verify_counts(root: Path, public_key: Ed25519PublicKey) -> None:
    """Every counts sidecar under ``root`` against the signed manifest beside it, and every manifest there
    that lists counts against its sidecar; :class:`ReleaseCheckError` naming each release that fails."""
    folders = {f.parent: None for f in counts_files(root)}
    if root.is_dir():
        folders.update({m.parent: None for m in root.rglob("*.manifest.json")})
    failed: dict[str, str] = {}
    for folder in sorted(folders):
        rids = {p.name[1:-len(SUFFIX)] for p in folder.glob(f"_*{SUFFIX}")}
        rids |= {p.name.removeprefix("_")[: -len(".manifest.json")] for p in folder.glob("*.manifest.json")}
        for rid in sorted(r for r in rids if valid_release_id(r) is not None):
            if root.is_file() and rid != root.name[1:-len(SUFFIX)]:
                continue
            mpath = manifest_file(folder, rid)
            try:
                if mpath is None:
                    raise ValueError(f"{counts_name(rid)} has no signed manifest beside it (_{rid}.manifest.json)")
                raw, manifest = load_signed(mpath, rid, public_key)
                problem = counts_problem(folder, rid, raw, manifest)
            except ValueError as exc:
                problem = str(exc)
            if problem is not None:
                failed[rid] = problem
    if failed:
        raise ReleaseCheckError(failed)


def read_counts(path: str | Path, by: tuple[str, ...] | list[str] | None = None,
                view: View = "unbiased", verify: bool = False,
                public_key: str | Ed25519PublicKey | None = None) -> pd.DataFrame:
    """The count tables under ``path`` (a folder written by ``consume``, a sidecar, or a release's data file)
    as one DataFrame: ``release_id``, ``grouping`` (its columns joined by ``×``), the group columns,
    ``count``, ``ci95``, ``sd`` (each cell's noise standard deviation), ``mechanism`` and ``rho``. ``by``:
    only that grouping, without ``grouping``.

    ``view``: ``"unbiased"`` (the default) gives the published counts, unbiased and sometimes negative;
    ``"consistent"`` each release's tables made non-negative, whole and consistent on their shared
    margins (the module docstring says what that view is for; its ``ci95`` and ``sd`` are NaN).

    A release whose counts were refused (a budget block's cap) has no rows here; its sidecar says why
    (``refused``). ``verify``: check the sidecars against their signed manifests first (:func:`verify_counts`;
    ``public_key`` as for ``read_releases``)."""
    if view not in ("unbiased", "consistent"):
        raise ValueError(f"view must be 'unbiased' or 'consistent' (got {view!r})")
    root = _sidecar(Path(path))
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or folder")
    if verify:
        verify_counts(root, resolve_public_key(public_key))
    frames = []
    for file in counts_files(root):
        doc = json.loads(file.read_text(encoding="utf-8"))
        tables = [CountTable.from_json(raw) for raw in doc.get("tables") or []]
        if view == "consistent":
            tables = consistent_view(tables)  # one release's tables together, before choosing ``by``
        for table in tables:
            if by is not None and tuple(table.by) != tuple(by):
                continue
            frame = table.to_frame()
            frame.insert(0, "grouping", "×".join(table.by))
            frame.insert(0, "release_id", str(doc.get("release_id", "")))
            frame["sd"] = table.sd
            frame["mechanism"] = table.mechanism
            frame["rho"] = table.rho
            frames.append(frame)
    if not frames:
        return pd.DataFrame({"release_id": pd.Series(dtype="string"), "count": pd.Series(dtype="int64"),
                             "ci95": pd.Series(dtype="float64"), "sd": pd.Series(dtype="float64")})
    out = pd.concat(frames, ignore_index=True, sort=False)
    out["release_id"] = out["release_id"].astype("string")
    return out.drop(columns=["grouping"]) if by is not None else out
