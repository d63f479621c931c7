"""``anonstream engines`` (what each engine accepts) and ``anonstream warmup`` (kernels ready after install).

Listing the engines imports every engine module (numpy, pandas, scipy, numba: over a second). The
listing depends only on the installed sources, so it is kept in the user's cache folder under a
fingerprint of those sources (paths, sizes and modification times of every module under ``core``
and of this module): after the first call (or ``anonstream warmup``) it prints without
importing any engine. A changed, added or removed module changes the fingerprint.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
from pathlib import Path

from stream.ops.kernel_cache import cache_dir

ENGINES_HELP = """\
List every engine with what it guarantees, its paper and the parameters it accepts.

Each parameter is shown as you would type it, with its default, its type (allowed values for a
choice, 'list of' for lists given as JSON) and its bounds:
  anonstream anonymize IN.csv --spec adult --engine kgen --param max_evaluations=2000
Parameters of privacy models an engine refuses (l or t) are not listed for it.
"""


def sources_fingerprint() -> str:
    """Hash of the Python version, this module and every module under ``core`` (path, size, mtime).

    Installing or upgrading rewrites the files, so it changes the fingerprint as a version would."""
    h = hashlib.sha256(sys.version.encode())
    spec = importlib.util.find_spec("core")
    roots = [Path(r) for r in (spec.submodule_search_locations or [])] if spec else []
    for root in roots:
        for path in sorted([*root.rglob("*.py"), Path(__file__)]):
            st = path.stat()
            h.update(f"{path}\x1f{st.st_size}\x1f{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:20]


def render_listing() -> str:
    """The engine listing (imports every engine)."""
    from core.engines.registry import describe, engine_names, get_engine

    lines: list[str] = []
    for name in engine_names():
        eng = get_engine(name)
        lines.append(f"{name}: {eng.summary}")
        if eng.paper:
            lines.append(f"  paper: {eng.paper}")
        lines.append(f"  guarantees: {', '.join(eng.models)}")
        for p in describe(eng):
            kind = p["type"] + (f" ({p['bounds']})" if p["bounds"] else "")
            assign = f"{p['name']}={p['default']}"
            lines.append(f"  --param {assign:<26} {kind:<34} {p['description']}".rstrip())
        lines.append("")
    return "\n".join(lines) + "\n"


def _listing_path() -> Path:
    return Path(cache_dir()) / f"engines-{sources_fingerprint()}.txt"


def cached_listing(refresh: bool = False) -> str:
    """The listing from the cache, rendering and storing it when missing (or when ``refresh``)."""
    path = _listing_path()
    if not refresh:
        try:
            return path.read_text(encoding="utf-8")
        except OSError:
            pass
    text = render_listing()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for old in path.parent.glob("engines-*.txt"):
            old.unlink(missing_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # an unwritable cache only costs the next call the same time
    return text


def cmd_engines(args: argparse.Namespace) -> int:
    sys.stdout.write(cached_listing(refresh=args.refresh))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("engines", help="list engines with their parameters and defaults",
                       description=ENGINES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("--refresh", action="store_true", help="rebuild the cached listing")
    e.set_defaults(func=cmd_engines)
