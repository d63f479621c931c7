"""A release's codebook beside its data: ``<release id>.codebook.json`` and ``<release id>.codebook.md``.

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
    lines += [f"| `{_cell(c['name'])}` | {_cell(c['type'])} | {_cell(c['meaning'])} |" for c in cb.get("columns", [])]
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
    return "\n".join(lines)


def write_codebook(out_dir: Path | str, release_id: str, manifest: dict[str, Any]) -> list[Path]:
    """Write ``<release_id>.codebook.json`` and ``.md`` into ``out_dir``; returns the paths written.

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
    written = []
    for suffix, text in ((".codebook.json", json.dumps(codebook, indent=2, sort_keys=True) + "\n"),
                         (".codebook.md", render_markdown(release_id, manifest))):
        path = out / f"{release_id}{suffix}"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
