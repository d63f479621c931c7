"""Aggregates of one release for the console: class sizes, offence frequency per class, loss per attribute.

All figures are computed from what the ledger stores (``release_records`` and the release's metrics),
and only aggregates leave this module.

Interpretations:

* **Classes** are the equivalence classes an attacker sees: released rows grouped by their
  generalized QI labels (as the independent verifier does), not by the engine's class ids. The
  two agree for every engine here; where they would not, the label grouping is the honest one.
* **Offence frequency within its classes** (CG paper, Figs. 4-5, "sensitive attributes frequency"):
  for each offence, over the classes that contain it, the share of the class it makes up. We report
  the mean, the standard deviation, the minimum and the maximum of that share, and the offence's
  overall share of the release. Offences are ordered by severity when the spec has a severity table.
* **Information loss per attribute** is the engine's ``metrics.per_attribute_loss`` (the mean
  normalized generalization cost of each QI, suppressed rows counting 1), as stored in the ledger.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.privacy import achieved


def frame_of(columns: list[str], rows: list[list[Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def split_columns(columns: list[str], qi_names: list[str] | None,
                  sensitive: str | None) -> tuple[list[str], str | None]:
    """QI columns and the sensitive column of a stored release, using the spec when it matches."""
    cols = [c for c in columns if c != "class_id"]
    if sensitive is None or sensitive not in cols:
        sensitive = "offence" if "offence" in cols else None
    if qi_names and all(q in cols for q in qi_names):
        return list(qi_names), sensitive
    return [c for c in cols if c != sensitive], sensitive


def label_classes(frame: pd.DataFrame, qis: list[str]) -> np.ndarray:
    """Class index per row from the generalized QI labels (0..n_classes-1)."""
    if len(frame) == 0:
        return np.zeros(0, dtype=np.int64)
    return frame[qis].astype(str).groupby(qis, sort=False, dropna=False).ngroup().to_numpy().astype(np.int64)


def class_size_histogram(sizes: np.ndarray) -> dict[str, Any]:
    """How many classes have each size (exact sizes; the plot bins them when there are many)."""
    if len(sizes) == 0:
        return {"classes": 0, "rows": 0, "sizes": [], "counts": [], "min": None, "max": None, "mean": None,
                "median": None}
    values, counts = np.unique(sizes, return_counts=True)
    return {"classes": len(sizes), "rows": int(sizes.sum()), "sizes": values.astype(int).tolist(),
            "counts": counts.astype(int).tolist(), "min": int(sizes.min()), "max": int(sizes.max()),
            "mean": round(float(sizes.mean()), 3), "median": float(np.median(sizes))}


def offence_frequencies(frame: pd.DataFrame, cls: np.ndarray, sensitive: str,
                        severity: dict[str, float] | None) -> list[dict[str, Any]]:
    """Per sensitive value: its share within each class containing it (mean/std/min/max) and overall."""
    if len(frame) == 0:
        return []
    values = frame[sensitive].astype(str).to_numpy()
    codes, uniques = pd.factorize(values, sort=True)
    n_cls = int(cls.max()) + 1
    counts = np.zeros((n_cls, len(uniques)), dtype=np.int64)
    np.add.at(counts, (cls, codes), 1)
    sizes = counts.sum(axis=1)
    out = []
    for j, name in enumerate(uniques):
        present = counts[:, j] > 0
        share = counts[present, j] / sizes[present]
        out.append({
            "value": str(name), "severity": (severity or {}).get(str(name)), "records": int(counts[:, j].sum()),
            "classes": int(present.sum()), "overall": round(float(counts[:, j].sum() / len(values)), 6),
            "mean": round(float(share.mean()), 6), "std": round(float(share.std()), 6),
            "min": round(float(share.min()), 6), "max": round(float(share.max()), 6),
        })
    if severity:
        out.sort(key=lambda r: (r["severity"] is None, r["severity"] or 0.0, r["value"]))
    return out


def analyse(columns: list[str], rows: list[list[Any]], qi_names: list[str] | None, sensitive: str | None,
            severity: dict[str, float] | None) -> dict[str, Any]:
    """Class sizes, privacy recomputed from labels, and offence frequencies of stored records."""
    frame = frame_of(columns, rows)
    qis, sens = split_columns(columns, qi_names, sensitive)
    cls = label_classes(frame, qis)
    sizes = np.bincount(cls) if len(cls) else np.zeros(0, dtype=np.int64)
    privacy: dict[str, Any] = {}
    if len(cls):
        sens_codes = pd.factorize(frame[sens].astype(str), sort=True)[0] if sens else None
        privacy = achieved(cls, sens_codes).as_dict()
    return {
        "qi_columns": qis, "sensitive": sens, "records": len(frame),
        "class_sizes": class_size_histogram(sizes), "privacy_from_labels": privacy,
        "offences": offence_frequencies(frame, cls, sens, severity) if sens else [],
    }


def per_attribute_loss(metrics: dict[str, Any] | None) -> dict[str, float]:
    loss = (metrics or {}).get("per_attribute_loss") or {}
    return {str(k): float(v) for k, v in loss.items() if isinstance(v, int | float)}


def stored_front(manifest: dict[str, Any] | None, metrics: dict[str, Any] | None) -> dict[str, Any] | None:
    """A PBG-EA front if the ledger stored the engine's diagnostics (manifest or metrics)."""
    for holder in (manifest or {}, metrics or {}, (manifest or {}).get("diagnostics") or {},
                   (metrics or {}).get("diagnostics") or {}):
        front = holder.get("front") if isinstance(holder, dict) else None
        if isinstance(front, list) and front:
            return {"front": front, "objectives": holder.get("objectives"), "policy": holder.get("policy"),
                    "source": "ledger"}
    return None
