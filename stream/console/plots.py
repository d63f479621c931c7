"""Server-side SVG plots of a release (matplotlib's object API on the Agg canvas; no pyplot state,
no CDN, no JavaScript). Each function takes the aggregates of :mod:`stream.console.analysis` and
returns an SVG document as text."""

from __future__ import annotations

import io
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

_RC: Any = {"svg.fonttype": "none", "svg.hashsalt": "anonstream", "font.size": 9}


def _svg(fig: Figure) -> str:
    FigureCanvasAgg(fig)
    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


def _figure(title: str, width: float = 6.4, height: float = 3.4) -> tuple[Figure, Any]:
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height), dpi=96)
        ax = fig.add_subplot(1, 1, 1)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    return fig, ax


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_xticks([])
    ax.set_yticks([])


def class_sizes_svg(hist: dict[str, Any], k_required: int | None) -> str:
    fig, ax = _figure("Equivalence-class sizes")
    sizes, counts = hist.get("sizes") or [], hist.get("counts") or []
    if not sizes:
        _empty(ax, "no released records")
        return _svg(fig)
    if len(sizes) <= 40:
        ax.bar([str(s) for s in sizes], counts, color="#4a78b5")
        ax.set_xlabel("class size (records)")
        if len(sizes) > 20:
            ax.tick_params(axis="x", labelrotation=90)
    else:
        expanded = [s for s, c in zip(sizes, counts, strict=True) for _ in range(c)]
        ax.hist(expanded, bins=30, color="#4a78b5")
        ax.set_xlabel("class size (records)")
        if k_required:
            ax.axvline(k_required, color="#c0392b", linestyle="--", label=f"k = {k_required}")
            ax.legend()
    ax.set_ylabel("classes")
    return _svg(fig)


def offences_svg(rows: list[dict[str, Any]]) -> str:
    fig, ax = _figure("Offence frequency within its classes (cf. CG paper Figs. 4-5)", width=7.2, height=3.8)
    ax.set_title(ax.get_title(), pad=30)
    if not rows:
        _empty(ax, "no sensitive attribute in this release")
        return _svg(fig)
    names = [r["value"] + (f" ({r['severity']:g})" if r.get("severity") is not None else "") for r in rows]
    x = list(range(len(rows)))
    mean = [100 * r["mean"] for r in rows]
    std = [100 * r["std"] for r in rows]
    ax.bar(x, mean, yerr=std, capsize=3, color="#6aa84f", label="mean share in its classes (± sd)")
    ax.scatter(x, [100 * r["max"] for r in rows], marker="x", color="#c0392b", zorder=3, label="max share")
    ax.scatter(x, [100 * r["overall"] for r in rows], marker="_", s=200, color="#333", zorder=3,
               label="share of the release")
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=60, ha="right")
    ax.set_ylabel("% of class")
    ax.set_xlabel("offence (severity)" if any(r.get("severity") is not None for r in rows) else "offence")
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, frameon=False)
    return _svg(fig)


def loss_svg(loss: dict[str, float]) -> str:
    fig, ax = _figure("Information loss per attribute", height=max(2.0, 0.45 * len(loss) + 1.0))
    if not loss:
        _empty(ax, "the release stored no per-attribute loss")
        return _svg(fig)
    names = list(loss)
    ax.barh(names, [loss[n] for n in names], color="#e69138")
    ax.set_xlim(0, max(1.0, max(loss.values())))
    ax.set_xlabel("normalized loss (0 = original, 1 = fully generalized)")
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def front_svg(points: dict[str, Any], note: str | None = None) -> str:
    fig, ax = _figure("PBG-EA front (chosen point marked)")
    pts = points.get("points") or []
    if not pts:
        _empty(ax, note or "no front for this release")
        return _svg(fig)
    others = [p for p in pts if not p["selected"]]
    chosen = [p for p in pts if p["selected"]]
    ax.scatter([p["x"] for p in others], [p["y"] for p in others], color="#4a78b5", label="front member")
    if chosen:
        ax.scatter([p["x"] for p in chosen], [p["y"] for p in chosen], marker="*", s=220, color="#c0392b",
                   zorder=3, label="released (chosen)")
    ax.set_xlabel(str(points.get("x")))
    ax.set_ylabel(str(points.get("y")))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    if note:
        ax.text(0.99, 0.01, note, ha="right", va="bottom", transform=ax.transAxes, fontsize=7, color="#666")
    return _svg(fig)


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def risk_svg(risk: dict[str, Any] | None) -> str:
    """Records by prosecutor risk (the buckets of the manifest's ``privacy.risk.histogram``)."""
    fig, ax = _figure("Records by prosecutor re-identification risk")
    buckets = (risk or {}).get("histogram") or []
    if not buckets or not sum(b["records"] for b in buckets):
        _empty(ax, "no risk histogram in this release's manifest" if not buckets else "no released records")
        return _svg(fig)
    labels = [f"{_pct(b['low'])}–{_pct(b['high'])}" for b in buckets]
    threshold = float(risk.get("threshold", 0.2)) if risk else 0.2
    colors = ["#c0392b" if b["low"] >= threshold - 1e-12 else "#4a78b5" for b in buckets]
    ax.bar(labels, [b["records"] for b in buckets], color=colors)
    ax.set_xlabel(f"prosecutor risk 1/|class| (red: above the {threshold:g} threshold)")
    ax.set_ylabel("records")
    ax.tick_params(axis="x", labelrotation=30)
    return _svg(fig)


def _focus(levels: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The level a QI's panel shows: the finest where half the rows resolve, else the best resolved one."""
    half = [lv for lv in levels if lv.get("resolved", 0) >= 0.5]
    if half:
        return half[0]
    best = max(levels, key=lambda lv: lv.get("resolved", 0), default=None)
    return best if best and best.get("resolved") else None


def utility_svg(utility: dict[str, Any] | None, top: int = 12) -> str:
    """Original against released distribution per QI (at one level each) and for the sensitive attribute:
    shares of the window's rows, from the manifest's ``utility`` (core/metrics/utility.py)."""
    panels: list[tuple[str, dict[str, int], dict[str, int] | None, str]] = []
    n = (utility or {}).get("published") or 0
    for name, qi in ((utility or {}).get("qis") or {}).items() if n else ():
        lv = _focus(qi.get("levels") or [])
        if lv is not None:
            note = f"coarser: {100 * lv['coarser'] / n:.0f}%" if n else ""
            note += f"; original cells under k withheld ({lv['withheld']} rows)" if lv.get("withheld") else ""
            panels.append((f"{name} at {lv['name']} (TVD {lv['tvd'] or 0:.2f})", lv["released"], lv["original"], note))
    sens = (utility or {}).get("sensitive")
    if sens and n:
        panels.append((f"{sens['name']} (published)", sens["released"], sens.get("original"),
                       "" if "original" in sens else "original counts not published"))
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(7.2, 1.0 + 2.1 * max(len(panels), 1)), dpi=96)
        if not panels:
            ax = fig.add_subplot(1, 1, 1)
            ax.set_title("Original against released distribution")
            _empty(ax, (utility or {}).get("error") or ("no utility report in this release's manifest" if not utility
                                                         else "no level resolves"))
            return _svg(fig)
        for i, (title, released, original, note) in enumerate(panels, start=1):
            ax = fig.add_subplot(len(panels), 1, i)
            keys = sorted(set(released) | set(original or {}), key=lambda c: -max(released.get(c, 0),
                                                                                 (original or {}).get(c, 0)))[:top]
            x = list(range(len(keys)))
            if original is not None:
                ax.bar([v - 0.2 for v in x], [100 * original.get(c, 0) / n for c in keys], width=0.4,
                       color="#999", label="original")
            ax.bar([v + (0.2 if original is not None else 0) for v in x], [100 * released.get(c, 0) / n for c in keys],
                   width=0.4, color="#4a78b5", label="released")
            ax.set_xticks(x)
            ax.set_xticklabels(keys, rotation=30, ha="right", fontsize=7)
            ax.set_title(title, fontsize=9)
            ax.set_ylabel("% of rows")
            ax.grid(axis="y", alpha=0.3)
            if note:
                ax.text(0.99, 0.95, note, ha="right", va="top", transform=ax.transAxes, fontsize=7, color="#666")
            if i == 1:
                ax.legend(fontsize=7, loc="upper center")
        fig.suptitle("Original against released distribution (share of published rows)")
        fig.tight_layout()
    return _svg(fig)
