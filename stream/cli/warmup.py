"""``anonstream warmup``: compile or load every engine's numba kernels once, after installing."""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

from stream.cli.engines import cached_listing
from stream.ops.cores import usable_cores
from stream.ops.kernel_cache import warm_marker

WARMUP_HELP = """\
Compile (after an install or upgrade) or load every engine's numba kernels once, so no engine
pays for compilation inside its time budget, and refresh the cached engine listing. Run it once
after installing (the Docker image runs it at build time). Kernels go to NUMBA_CACHE_DIR
(default: the anonstream folder of your user cache). Engine families compile in parallel
processes (--jobs); a fresh install takes about a minute on 2 cores. Once every kernel of this
version's sources is in the cache (a marker there, keyed by the sources, says so), a later run only
refreshes the listing and says so; --force loads every kernel again (a few seconds).
"""


def families(names: list[str]) -> list[list[str]]:
    """``names`` grouped by engine family (the folder of the engine's module: one group shares its kernels),
    the largest group first, each group in registry order."""
    from core.engines.registry import get_engine

    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(type(get_engine(name)).__module__.rsplit(".", 1)[0], []).append(name)
    return sorted(groups.values(), key=len, reverse=True)


def warm_in_parallel(names: list[str], jobs: int) -> dict[str, float]:
    """Warm every family of ``names`` up in up to ``jobs`` processes (numba compiles on one core per
    process); engines of one family share kernels, so a family is never split across processes."""
    from core.engines.warmup import warm_up_all

    groups = families(names)
    if jobs <= 1 or len(groups) == 1:
        done = [warm_up_all(names)]
    else:
        with ProcessPoolExecutor(min(jobs, len(groups)), mp_context=multiprocessing.get_context("spawn")) as pool:
            done = list(pool.map(warm_up_all, groups))
    times: dict[str, float] = {}
    for result in done:  # a family that searches the lattice reports loading its kernels too: the first says it
        for key, value in result.items():
            times.setdefault(key, value)
    order = ["lattice kernels", *names]
    return {key: times[key] for key in sorted(times, key=order.index)}


def cmd_warmup(args: argparse.Namespace) -> int:
    from core.engines.registry import engine_names

    started = time.perf_counter()
    marker = warm_marker()
    if marker is not None and os.path.exists(marker) and not args.engine and not getattr(args, "force", False):
        cached_listing(refresh=True)
        print(f"kernels already compiled for this version: every engine's kernels are in the cache "
              f"({os.path.dirname(marker)}); --force loads them all again")
        return 0
    names = args.engine or engine_names()
    times = warm_in_parallel(names, args.jobs)
    for name, seconds in times.items():
        print(f"{name:<15} {seconds:6.2f}s")
    cached_listing(refresh=True)
    if marker is not None and not args.engine:  # every engine: later processes of these sources compile nothing
        with open(marker, "w") as handle:
            handle.write("".join(f"{name} {seconds:.2f}\n" for name, seconds in times.items()))
    print(f"kernels ready in {time.perf_counter() - started:.1f}s with {args.jobs} process(es) "
          f"(cache: {os.environ.get('NUMBA_CACHE_DIR') or 'numba default'})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from core.engines.registry import engine_names

    w = sub.add_parser("warmup", help="compile or load every engine's kernels once (run after installing)",
                       description=WARMUP_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("--engine", action="append", choices=engine_names(), help="only this engine (repeatable)")
    w.add_argument("--jobs", type=int, default=usable_cores(), metavar="N",
                   help="compile in up to N processes, one engine family each (default: the cores this "
                        "process may use, %(default)s here)")
    w.add_argument("--force", action="store_true",
                   help="load (or compile) every kernel even when the cache already holds this version's")
    w.set_defaults(func=cmd_warmup)
