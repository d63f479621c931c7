"""A release's codebook beside its data: ``_<release id>.codebook.json`` and ``_<release id>.codebook.md``
(the leading ``_`` keeps them out of a dataset reader's view of the data).

The codebook itself is built in :mod:`core.columns.codebook` and carried, signed, in the manifest
(``manifest["codebook"]``); this module only renders it as short Markdown and writes both files.
The consumer calls :func:`write_codebook` after a release has been verified and written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stream.wire.release_ids import valid_release_id


def _cell(value: Any) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return " ".join(str(value).split()).replace("|", "\\|")


def render_markdown(release_id: str, manifest: dict[str, Any]) -> str:
    """The codebook of a release as short human-readable Markdown."""
    cb = manifest["codebook"]
    spec = cb.get("spec", {})
    supp = cb.get("suppressed", {})
    lines = [f"# Codebook of release {release_id}", "",
             f"- spec: **{_cell(spec.get('name'))}**, version `{_cell(spec.get('version'))}` (SHA-256 of its content)",
             f"- rows published: {cb.get('rows')}; suppressed by the engine (not published): "
             f"{supp.get('not_published')}; published with every QI `*`: {supp.get('published_all_star')}",
             f"- engine: {_cell(manifest.get('engine'))}, k = {manifest.get('k')}, l = {manifest.get('l')}",
             f"- labels: {_cell(cb.get('label_format'))}", "", "## Columns", "",
             "| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{_cell(c['name'])}` | {_cell(c['type'])} | {_cell(c['meaning'])} |"
              for c in [*cb.get("columns", []), *cb.get("reader_columns", [])]]
    if cb.get("utility"):
        lines += ["", "## What the release preserves", "", _cell(cb["utility"]), "",
                  "Figures: the manifest's `utility` (per QI level and for the sensitive attribute; docs/risk.md)."]
    lines += ["", "## Quasi-identifiers: share of rows at each level", "",
              "| QI | hierarchy | level | rows | share |", "|---|---|---|---|---|"]
    for qi, entry in cb.get("qis", {}).items():
        for s in entry.get("shares", []):
            name = s["name"] if str(s["level"]) == s["name"] else f"{s['level']} ({s['name']})"
            lines.append(f"| `{_cell(qi)}` | {_cell(entry.get('hierarchy'))} | {_cell(name)} | {s['rows']} | "
                         f"{s['share']:.1%} |")
    lines += ["", "Levels: 0 is the original value; `range` is a local-recoding interval and `set` a set "
              "`{a,b}` of original values, neither on a hierarchy level. The manifest beside this file "
              "carries the same codebook, signed.", ""]
    return "\n".join(lines + counts_paragraph(manifest))


def counts_paragraph(manifest: dict[str, Any]) -> list[str]:
    """The codebook's paragraph on the release's differentially private counts (none without them)."""
    dp = manifest.get("dp")
    if not isinstance(dp, dict):
        return []
    half = sorted({t.get("ci95") for t in dp.get("tables") or []} - {None})
    width = f"± {half[0]:g}" if len(half) == 1 else "± ci95"
    sds = sorted({round(float(t["sd"]), 1) for t in dp.get("tables") or [] if t.get("sd") is not None})
    sd = f"sd = {sds[0]:g} here" if len(sds) == 1 else "each table states its sd"
    return ["## Counts and their intervals", "",
            f"The counts in `_{manifest.get('release_id')}.counts.json` (`read_counts`) are not the exact counts: "
            f"each is the exact count plus random noise (discrete {dp.get('mechanism')} mechanism, ε = "
            f"{dp.get('epsilon')} per release shared by its tables, δ = {dp.get('delta')}), drawn once and never "
            "redrawn, so that the counts reveal little about any one report (differential privacy, docs/privacy.md). "
            "The noise has mean zero and the counts are published as drawn, so they are unbiased and can be "
            "negative: a cell nobody fell in reads as a small number of either sign (every cell of the public "
            "domain is published). Keep the negative counts when you add cells up: the sum of m cells of one table "
            f"is unbiased, its noise has standard deviation sd × √m ({sd}), and its 95 % interval is about "
            "± 1.96 × sd × √m (`CountTable.sum_ci95`); sums over releases add their variances. A cell's own 95 % "
            f"interval, count {width}, holds the true count in 95 of 100 cells, so a cell read as 12 {width} says "
            "the truth is likely in that range, and a difference between two cells smaller than their intervals may "
            "be noise. Setting negative counts to 0 before adding would bias the sum upwards; for display, "
            "`read_counts(..., view=\"consistent\")` gives non-negative whole counts whose tables agree on their "
            "shared margins (biased where counts are small, so without intervals). The counts cover the "
            "reports this release took out of the pool, released and suppressed alike, so they can differ from a "
            "count of the rows above by more than the noise when rows were suppressed."
            + (f" This release has no counts: {dp['refused'].get('message')}." if dp.get("refused") else ""), ""]


READER_COLUMNS = {  # the columns read_releases (stream.analyst.dataset) adds to every release's rows
    "release_id": ("string", "the release the row belongs to (its file name; signed in its manifest)"),
    "window_date": ("date", "the first event day of the release (its manifest's window start; the folder "
                            "window_date=YYYY-MM-DD of a dataset written with --partition-by date); a row's own "
                            "dates are event_date_lo and event_date_hi"),
}


def reader_columns(partitions: list[str]) -> list[dict[str, str]]:
    """Codebook entries of the columns ``read_releases`` adds: ``release_id`` and the folder's partitions."""
    return [{"name": c, "type": READER_COLUMNS[c][0], "meaning": READER_COLUMNS[c][1] + " (added by read_releases)"}
            for c in ["release_id", *partitions] if c in READER_COLUMNS]


def write_codebook(out_dir: Path | str, release_id: str, manifest: dict[str, Any],
                   partitions: list[str] | None = None) -> list[Path]:
    """Write ``_<release_id>.codebook.json`` and ``.md`` into ``out_dir``; returns the paths written.
    Both list, after the release's own columns, those ``read_releases`` adds (``release_id`` and the
    ``partitions`` of the folder, e.g. ``window_date``).

    Writes nothing (returns ``[]``) for a manifest without a codebook (releases made before it existed).
    Raises ValueError for a release id outside the allow-listed alphabet (a file name is never a path).
    """
    if valid_release_id(release_id) is None:
        raise ValueError("release id outside the allowed alphabet")
    codebook = manifest.get("codebook")
    if not isinstance(codebook, dict):
        return []
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    codebook = {**codebook, "reader_columns": reader_columns(partitions or [])}
    written = []
    for suffix, text in ((".codebook.json", json.dumps(codebook, indent=2, sort_keys=True) + "\n"),
                         (".codebook.md", render_markdown(release_id, {**manifest, "codebook": codebook}))):
        path = out / f"_{release_id}{suffix}"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
