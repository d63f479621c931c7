"""``anonstream warmup``: compile or load every engine's numba kernels once, after installing."""

from __future__ import annotations

import argparse
import os

from stream.cli.engines import cached_listing
from stream.ops.kernel_cache import warm_marker

WARMUP_HELP = """\
Compile (after an install or upgrade) or load every engine's numba kernels once, so no engine
pays for compilation inside its time budget, and refresh the cached engine listing. Run it once
after installing (the Docker image runs it at build time). Kernels go to NUMBA_CACHE_DIR
(default: the anonstream folder of your user cache).
"""


def cmd_warmup(args: argparse.Namespace) -> int:
    import time

    from core.engines.warmup import warm_up_all

    started = time.perf_counter()
    times = warm_up_all(args.engine or None)
    for name, seconds in times.items():
        print(f"{name:<12} {seconds:6.2f}s")
    cached_listing(refresh=True)
    marker = warm_marker()
    if marker is not None and not args.engine:  # every engine: later processes of these sources compile nothing
        with open(marker, "w") as handle:
            handle.write("".join(f"{name} {seconds:.2f}\n" for name, seconds in times.items()))
    print(f"kernels ready in {time.perf_counter() - started:.1f}s "
          f"(cache: {os.environ.get('NUMBA_CACHE_DIR') or 'numba default'})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from core.engines.registry import engine_names

    w = sub.add_parser("warmup", help="compile or load every engine's kernels once (run after installing)",
                       description=WARMUP_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("--engine", action="append", choices=engine_names(), help="only this engine (repeatable)")
    w.set_defaults(func=cmd_warmup)
