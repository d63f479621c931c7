"""The kernel cache is keyed by source, not by path: a copy of the tree elsewhere (a fresh clone) loads
what another copy compiled; an edit anywhere in a kernel's folder compiles it again; kernels of other
packages keep numba's own locators."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stream.ops.kernel_cache import LOCATORS, kernel_cache_environment, sources_digest, warm_marker

ROOT = Path(__file__).resolve().parents[3]

KERNEL = """\
from numba import njit

from core.probe.helper import SCALE


@njit(cache=True)
def scaled(x):
    return x * SCALE
"""

OTHER = """\
from numba import njit


@njit(cache=True)
def doubled(x):
    return 2 * x
"""


def _tree(base: Path, scale: int = 3) -> Path:
    """A package ``core.probe`` with one cached kernel and a sibling module it reads a constant from."""
    probe = base / "core" / "probe"
    probe.mkdir(parents=True)
    (base / "core" / "__init__.py").write_text("")
    (probe / "__init__.py").write_text("")
    (probe / "helper.py").write_text(f"SCALE = {scale}\n")
    (probe / "kern.py").write_text(KERNEL)
    (base / "other_probe.py").write_text(OTHER)
    return base


def _run(base: Path, cache: Path, code: str) -> str:
    """``code`` in a fresh interpreter with ``base`` first on the path and the CLI's kernel-cache settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update({"ANONSTREAM_CACHE_DIR": str(cache), "NUMBA_DEBUG_CACHE": "1",
                "PYTHONPATH": os.pathsep.join([str(base), str(ROOT)])})
    env.update(kernel_cache_environment(env))
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=base, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


PROBE = "from core.probe.kern import scaled; print('result', scaled(7))"


def test_a_copy_elsewhere_loads_what_the_first_compiled_and_an_edit_compiles_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _run(_tree(tmp_path / "a"), cache, PROBE)
    assert "result 21" in first and "data saved" in first
    second = _run(_tree(tmp_path / "b"), cache, PROBE)  # same source, another path: nothing compiled
    assert "result 21" in second and "data loaded" in second and "data saved" not in second
    edited = _run(_tree(tmp_path / "c", scale=5), cache, PROBE)  # only the sibling module changed
    assert "result 35" in edited and "data saved" in edited
    assert _run(tmp_path / "a", cache, PROBE).count("data loaded") >= 1  # the first copy's entry is still there
    entries = sorted(p.name for p in (cache / "numba").iterdir())
    assert len([e for e in entries if e.startswith("core.probe-")]) == 2, entries


def test_kernels_of_other_packages_keep_numbas_locators(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    out = _run(_tree(tmp_path / "a"), cache, "from other_probe import doubled; print('result', doubled(4))")
    assert "result 8" in out and "data saved" in out
    assert not any(p.name.startswith("core.") for p in (cache / "numba").iterdir())


def test_settings_the_user_chose_are_kept() -> None:
    assert kernel_cache_environment({"NUMBA_CACHE_DIR": "/x", "NUMBA_CACHE_LOCATOR_CLASSES": "Mine"}) == {}
    chosen = kernel_cache_environment({"NUMBA_CACHE_DIR": "/x"})
    assert chosen == {"NUMBA_CACHE_LOCATOR_CLASSES": LOCATORS}


def test_the_warm_marker_follows_the_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert warm_marker() == str(tmp_path / f"warm-{sources_digest()}")
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert warm_marker() is None
