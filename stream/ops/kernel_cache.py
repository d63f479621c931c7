"""The user's cache folder, and the numba settings that keep the engines' compiled kernels in it.

Standard library only: the command line calls :func:`use_kernel_cache` before anything imports
numba (numba reads these settings once, at import). The kernels are keyed by their source, not by
the path they were loaded from (``stream/ops/kernel_locator.py``), so ``anonstream warmup`` run once
after installing serves every later process, a fresh clone of the same code included.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

# numba's locator classes, by name: ours (kernels of our packages, keyed by source), then numba's own order.
LOCATORS = ",".join(["stream.ops.kernel_locator.SourceKeyedLocator", "UserProvidedCacheLocator", "InTreeCacheLocator",
                     "UserWideCacheLocator"])


def cache_dir(environ: Mapping[str, str] = os.environ) -> str:
    """The user's cache folder for anonstream (``ANONSTREAM_CACHE_DIR``, else XDG / ~/.cache)."""
    explicit = environ.get("ANONSTREAM_CACHE_DIR")
    if explicit:
        return explicit
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "anonstream")


def kernel_cache_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to add to ``environ`` so numba keeps our kernels in a writable user folder, keyed by source.

    A ``NUMBA_CACHE_DIR`` or ``NUMBA_CACHE_LOCATOR_CLASSES`` the user chose is kept. Without a writable
    folder nothing is added (numba's own fallback applies: next to the sources, or its user folder)."""
    update: dict[str, str] = {}
    if not environ.get("NUMBA_CACHE_DIR"):
        path = os.path.join(cache_dir(environ), "numba")
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            return update
        if not os.access(path, os.W_OK):
            return update
        update["NUMBA_CACHE_DIR"] = path
    if not environ.get("NUMBA_CACHE_LOCATOR_CLASSES"):
        update["NUMBA_CACHE_LOCATOR_CLASSES"] = LOCATORS
    return update


def use_kernel_cache() -> None:
    """Set :func:`kernel_cache_environment` in this process (and so in every process it starts)."""
    os.environ.update(kernel_cache_environment(os.environ))


def digest_sources(root: str, recursive: bool, salt: str = "") -> str:
    """A digest of ``salt`` and the paths (relative to ``root``) and bytes of every ``.py`` file in ``root``
    (and its sub-folders when ``recursive``)."""
    digest = hashlib.sha256(salt.encode())
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(dirs) if recursive else []  # os.walk visits them in this order
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                digest.update(os.path.relpath(path, root).encode() + b"\0" + handle.read() + b"\0")
    return digest.hexdigest()[:20]


def sources_digest() -> str:
    """A digest of every module of ``core`` (where the kernels live), numba's version and Python's."""
    import importlib.metadata
    import importlib.util
    import sys

    spec = importlib.util.find_spec("core")
    salt = f"{sys.version_info[:2]} numba {importlib.metadata.version('numba')}"
    root = next(iter(spec.submodule_search_locations or []), None) if spec else None
    return digest_sources(root, recursive=True, salt=salt) if root else salt


def warm_marker(environ: Mapping[str, str] = os.environ) -> str | None:
    """The file ``anonstream warmup`` leaves in the kernel cache once every kernel of these sources is in it."""
    folder = environ.get("NUMBA_CACHE_DIR")
    return os.path.join(folder, f"warm-{sources_digest()}") if folder else None
