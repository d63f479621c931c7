"""Where the engines' compiled numba kernels are kept, keyed by their source rather than their path.

numba's own on-disk cache keys a kernel by the absolute path of its file and the file's modification
time. A fresh clone, a checkout moved elsewhere or a test run from a copy of the tree therefore
compiles every kernel again (about 40 s of CPU for all engines) although the source is the same;
and a kernel that inlines a helper from a sibling module is not recompiled when only the helper
changes. :class:`SourceKeyedLocator` keys the kernels of our packages by the package's name and a
digest of every module in the kernel's folder (an engine family, or ``core/lattice``) instead:

- the same source finds the same compiled kernels wherever it is checked out;
- an edit to any module of the folder (a helper it inlines included) compiles the folder's kernels again;
- two checkouts at different commits keep separate entries, and never overwrite each other's.

numba imports this module itself, by the name ``stream.ops.kernel_cache`` puts in
``NUMBA_CACHE_LOCATOR_CLASSES`` beside ``NUMBA_CACHE_DIR``; kernels of other packages keep numba's own
locators. A numba without that setting ignores it and keys by path, as before. Of ours, this module
imports only the standard-library ``stream.ops.kernel_cache``.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from numba.core import config
from numba.core.caching import UserProvidedCacheLocator

from stream.ops.kernel_cache import digest_sources

# Packages whose kernels are keyed by source (the engines, the lattice and the privacy models all live in core).
PACKAGES = ("core.",)


@functools.cache
def folder_digest(folder: str) -> str:
    """A digest of every ``.py`` file directly in ``folder`` (a kernel's engine family, or ``core/lattice``)."""
    return digest_sources(folder, recursive=False)


class SourceKeyedLocator(UserProvidedCacheLocator):
    """numba cache locator: ``<NUMBA_CACHE_DIR>/<package>-<folder digest>`` for kernels of :data:`PACKAGES`."""

    def __init__(self, py_func: Any, py_file: str) -> None:
        super().__init__(py_func, py_file)
        self._digest = folder_digest(os.path.dirname(os.path.abspath(py_file)))
        package = py_func.__module__.rpartition(".")[0]
        self._cache_path = os.path.join(os.path.abspath(config.CACHE_DIR),  # type: ignore[attr-defined]  # set at run time
                                        f"{package}-{self._digest}")

    def get_source_stamp(self) -> str:
        return self._digest

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> SourceKeyedLocator | None:
        if not str(getattr(py_func, "__module__", "")).startswith(PACKAGES):
            return None
        return super().from_function(py_func, py_file)

