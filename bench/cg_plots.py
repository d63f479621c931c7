"""Figures of bench/cg_paper.py, laid out like the CG paper's Figs. 2-9 (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

ENGINES = ("cg-kanon", "cg-diverse")
WEIGHTS = ("A1:S1:R1", "A10:S5:R1", "A1:S5:R10")


def _find(runs: list[dict[str, Any]], dataset: str, weights: str, engine: str) -> dict[str, Any] | None:
    return next((r for r in runs if r["dataset"] == dataset and r["weights"] == weights and r["engine"] == engine),
                None)


def _offences(run: dict[str, Any]) -> list[str]:
    sev = run["severity"]
    return sorted(run["frequency"], key=lambda o: (sev[o], o))


def _tick(run: dict[str, Any], offences: list[str]) -> list[str]:
    return [f"{o[:18]} ({run['severity'][o]:g})" for o in offences]


def fig_class_size(runs: list[dict[str, Any]], ds: str, out: Path) -> Path:
    found = [(f"{ds}: CG-Kanon, uniform severity (Fig. 2)", _find(runs, ds, "A1:S1:R1 uniform severity", "cg-kanon")),
             (f"{ds}: CG-Kanon, severity-weighted (Fig. 3)", _find(runs, ds, "A1:S1:R1", "cg-kanon")),
             (f"{ds}: CG-Diverse", _find(runs, ds, "A1:S1:R1", "cg-diverse"))]
    panels = [(t, r) for t, r in found if r is not None]
    ref = panels[-1][1]  # order and label offences by their real severity, also for the uniform run
    offs = _offences(ref)
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 5), squeeze=False)
    for ax, (title, run) in zip(axes[0], panels, strict=True):
        ax.bar(range(len(offs)), [run["class_size_by_offence"].get(o, 0.0) for o in offs], color="tab:blue")
        ax.set_xticks(range(len(offs)), _tick(ref, offs), rotation=75, fontsize=7)
        ax.set_ylabel("mean size of the class holding the offence")
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path = out / f"cg_{ds}_fig2_3_class_size.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def fig_frequency(runs: list[dict[str, Any]], ds: str, out: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    for ax, engine, fig_no in zip(axes, ENGINES, ("4", "5"), strict=True):
        run = _find(runs, ds, "A1:S1:R1", engine)
        if run is None:
            continue
        offs = _offences(run)
        mean = [run["frequency"][o]["mean"] for o in offs]
        std = [run["frequency"][o]["std"] for o in offs]
        ax.errorbar(range(len(offs)), mean, yerr=std, fmt="o", capsize=3)
        ax.set_xticks(range(len(offs)), _tick(run, offs), rotation=75, fontsize=7)
        ax.set_ylabel("frequency of the offence in its classes (mean, std)")
        ax.set_title(f"{ds}: {engine}, A1:S1:R1 (Fig. {fig_no})", fontsize=9)
    fig.tight_layout()
    path = out / f"cg_{ds}_fig4_5_frequency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def fig_loss(runs: list[dict[str, Any]], ds: str, out: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, engine, fig_no in zip(axes, ENGINES, ("6", "7"), strict=True):
        found = [(w, _find(runs, ds, w, engine)) for w in WEIGHTS]
        present = [(w, r) for w, r in found if r is not None]
        if not present:
            continue
        attrs = list(present[0][1]["per_attribute_loss"])
        width = 0.8 / len(present)
        for i, (w, r) in enumerate(present):
            x = np.arange(len(attrs)) + i * width
            ax.bar(x, [r["per_attribute_loss"][a] for a in attrs], width, label=f"{w} (LM {r['lm']:.3f})")
        ax.set_xticks(np.arange(len(attrs)) + 0.4 - width / 2, attrs, fontsize=8)
        ax.set_ylabel("information loss per attribute")
        ax.set_title(f"{ds}: information loss, {engine} (Fig. {fig_no})", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / f"cg_{ds}_fig6_7_loss.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def fig_curves(runs: list[dict[str, Any]], ds: str, out: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, engine, fig_no in zip(axes, ENGINES, ("8", "9"), strict=True):
        for w in WEIGHTS:
            r = _find(runs, ds, w, engine)
            if r is None:
                continue
            c = np.asarray(r["curve"], float)
            t = np.r_[c[:, 0], r["wall_s"]]
            line, = ax.step(t, np.r_[c[:, 1], c[-1, 1]], where="post", label=f"{w} objective")
            ax.step(t, np.r_[c[:, 2], c[-1, 2]], where="post", ls="--", color=line.get_color(), label=f"{w} LM")
        ax.set_yscale("log")
        ax.set_xlabel("seconds (wall clock, shared machine)")
        ax.set_ylabel("objective = 1 / fitness (solid), LM (dashed)")
        ax.set_title(f"{ds}: loss against time, {engine} (Fig. {fig_no})", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / f"cg_{ds}_fig8_9_curves.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(runs: list[dict[str, Any]], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ds in sorted({r["dataset"] for r in runs}):
        paths += [fig_class_size(runs, ds, out), fig_frequency(runs, ds, out), fig_loss(runs, ds, out),
                  fig_curves(runs, ds, out)]
    return paths
