"""``anonstream warmup``: engine families compile in parallel processes, a family never split; the run
over every engine leaves the marker a parallel test run looks for."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from core.engines.registry import engine_names
from stream.cli.warmup import cmd_warmup, families, warm_in_parallel
from stream.ops.kernel_cache import warm_marker


def test_families_keep_engines_that_share_kernels_together() -> None:
    groups = families(engine_names())
    assert sorted(n for g in groups for n in g) == sorted(engine_names())
    hetero = next(g for g in groups if "ils" in g)
    assert {"kmember", "lgreedy", "ils"} <= set(hetero)
    assert {"cg-kanon", "cg-diverse"} <= set(next(g for g in groups if "cg-kanon" in g))
    assert [len(g) for g in groups] == sorted((len(g) for g in groups), reverse=True)


def test_two_processes_warm_what_one_does_in_the_same_order() -> None:
    names = ["mondrian", "kmember", "optimal"]
    assert list(warm_in_parallel(names, 2)) == list(warm_in_parallel(names, 1)) == ["lattice kernels", *names]


def test_only_a_run_over_every_engine_leaves_the_marker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", os.environ.get("NUMBA_CACHE_DIR", str(tmp_path)))
    monkeypatch.setattr("stream.cli.warmup.warm_marker", lambda: str(tmp_path / "warm-x"))
    assert cmd_warmup(argparse.Namespace(engine=["mondrian"], jobs=1)) == 0
    assert not (tmp_path / "warm-x").exists()
    assert "mondrian" in capsys.readouterr().out
    assert warm_marker() is not None


def test_a_warm_cache_is_not_loaded_again_unless_forced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "warm-x"
    marker.write_text("lattice kernels 1.00\n")
    monkeypatch.setattr("stream.cli.warmup.warm_marker", lambda: str(marker))
    warmed: list[list[str]] = []

    def warm(names: list[str], jobs: int) -> dict[str, float]:
        warmed.append(names)
        return {}

    monkeypatch.setattr("stream.cli.warmup.warm_in_parallel", warm)
    assert cmd_warmup(argparse.Namespace(engine=None, jobs=1, force=False)) == 0
    assert warmed == [] and "already compiled for this version" in capsys.readouterr().out
    assert cmd_warmup(argparse.Namespace(engine=None, jobs=1, force=True)) == 0
    assert len(warmed) == 1 and "kernels ready" in capsys.readouterr().out
    assert cmd_warmup(argparse.Namespace(engine=["mondrian"], jobs=1, force=False)) == 0  # one engine: loaded
    assert warmed[-1] == ["mondrian"]
