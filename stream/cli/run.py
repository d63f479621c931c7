"""``anonstream run``: one worker, with the embedded broker when none is configured."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stream.cli._worker_options import overrides, quiet, worker_options
from stream.config.settings import Settings, load_settings

RUN_HELP = """\
Run one worker: consume crime reports, window them, release anonymized batches.

With no broker configured (ANONSTREAM_BROKER_URL / --broker) the bundled broker is started on a
free loopback port (`pip install 'anonstream[embedded]'`); with no database configured, SQLite under
the data directory (ANONSTREAM_HOME, default ./var) is used. The instance is recorded in
$ANONSTREAM_HOME/instance.json, so every other command finds its broker and database. Migrations run
first unless --no-migrate; releases the broker lacks are re-published from the ledger. The web port
serves /metrics (Prometheus) and /ready; a broker that loses its data exits 3 (exit codes: below).
All settings come from ANONSTREAM_* environment variables (or ANONSTREAM_*_FILE).
Ctrl-C (or SIGTERM) stops it cleanly: one line, exit 0; pending reports stay in the ledger.

--detach runs the worker in the background and returns once it is ready; `anonstream stop` stops it.

Several feeds (each its own input topic, spec, engine, privacy parameters, windows and output
topics) are served by the same worker with --pipelines FILE (or ANONSTREAM_PIPELINES); see
stream/specs/pipelines.example.toml and docs/operations.md "Several feeds".
"""


def cmd_run(args: argparse.Namespace) -> int:
    quiet(args)
    from core.errors import ParamsError
    from stream.ops.broker import free_port
    from stream.ops.locate import port_free, resolve

    settings = resolve(load_settings(**overrides(args)))  # flag > environment > the instance's state file
    if settings.pipelines is not None:  # a bad pipelines file is one error line before anything starts
        from stream.config.feeds import load_pipelines

        load_pipelines(Path(settings.pipelines))
    check_counts_settings(settings)  # DP counts that could not hold their guarantee: one line, nothing started
    if settings.web_port == 0:  # the configuration first: what it says is wrong whatever else runs here
        settings = settings.with_updates(web_port=free_port(settings.web_host))
    elif not port_free(settings.web_host, settings.web_port):
        raise ParamsError(f"web port {settings.web_port} on {settings.web_host} is in use (another worker?): pass "
                          "--web-port N or set ANONSTREAM_WEB_PORT (0 picks a free port)", reason="port-in-use")
    if args.detach:  # the worker runs in another process: this one imports none of it
        return _detach(settings, args.ready_timeout)
    from stream.ops.runtime import embedded
    from stream.worker.app import run_worker

    started = settings
    try:
        with embedded(settings, run_migrations=not args.no_migrate, watch=True) as ready:
            started = ready
            _announce(ready)
            code = run_worker(ready)
    except KeyboardInterrupt:  # Ctrl-C before the worker took the signal over (start-up), or while it stopped
        code = 0
    if code == 0:
        _stopped(started)
    return code


def check_counts_settings(settings: Settings) -> None:
    """Each feed's spec's [dp] against its settings (:func:`stream.config.dp.check_dp_settings`)."""
    from stream.config.dp import check_dp_settings
    from stream.config.feeds import feeds
    from stream.io.specs import load_spec_data

    for feed in feeds(settings):
        check_dp_settings(feed, load_spec_data(feed.spec).dp)


def _detach(settings: Settings, timeout: float) -> int:
    """Start the worker in the background, wait for it to be ready, say where it is and how to stop it."""
    from stream.ops.background import log_tail, running_pid, start_detached

    pid = running_pid(settings)
    if pid is not None:
        print(f"anonstream run: a worker already runs for {settings.data_dir.resolve()} (pid {pid}); "
              "stop it with `anonstream stop`", flush=True)
        return 0
    started = start_detached(settings, timeout)
    if not started.ready:
        why = (f"exited with code {started.exit_code}" if started.exit_code is not None
               else f"was not ready within {timeout:.0f}s (still starting: see the log, or `anonstream stop`)")
        print(f"error: the worker {why}; last lines of {started.log}:\n{log_tail(started.log)}", file=sys.stderr)
        return started.exit_code or 3
    if not _advertised(settings, started.pid, timeout):
        print(f"warning: the worker is ready but has not advertised its spec yet (log {started.log}); a push now "
              "warns that no worker serves it and gets no receipt", file=sys.stderr)
    announce = [line for line in log_tail(started.log, 200).splitlines() if line.startswith("  ")
                or line.startswith("anonstream run: worker")]
    print("\n".join(announce[-8:]), flush=True)
    print(f"anonstream run: worker running in the background (pid {started.pid}, log {started.log}); "
          "stop it with `anonstream stop`", flush=True)
    return 0


def _advertised(settings: Settings, pid: int, timeout: float) -> bool:
    """Wait until the detached worker advertises its spec on every input topic (what `push` checks before
    sending, stream/wire/receipts.py), so a push right after `run --detach` gets its receipt."""
    import time

    from stream.config.feeds import feeds
    from stream.ops.locate import pid_alive, resolve
    from stream.station.advert import live, read_adverts

    ready = resolve(settings)  # the embedded broker the worker started, if it started one
    if not ready.broker_url:
        return False
    topics = [f.topic_reports for f in feeds(ready)]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid_alive(pid):
        try:
            if all(live(read_adverts(ready.bootstrap_servers(), t, timeout=2.0)) for t in topics):
                return True
        except Exception:  # the broker is still starting: try again
            pass
        time.sleep(0.5)
    return False


def _stopped(s: Settings) -> None:
    """One line when the worker stops (Ctrl-C, SIGTERM): what is left, and that nothing is lost."""
    from db import Database, ReleaseRepository

    try:
        counts = ReleaseRepository(Database(s.db_url())).accounting()
        pending = f"{counts.get('pending', 0)} report(s) pending, {counts.get('releases_published', 0)} release(s) " \
                  "published; "
    except Exception:  # the line is a courtesy: a ledger gone meanwhile must not turn a clean stop into a traceback
        pending = ""
    print(f"anonstream run: stopped. {pending}pending reports stay in the ledger and the next `anonstream run` "
          "resumes them.", flush=True)


def _announce(s: Settings) -> None:
    """Where everything is, and what to try next (stdout; logs go to stderr)."""
    from stream.ops.locate import safe_url

    home = s.data_dir.resolve()
    embedded_note = f" (embedded, log {home / 'broker.log'})" if (home / "instance.json").exists() else ""
    web = f"http://{s.web_host}:{s.web_port}"
    print("\n".join([
        f"anonstream run: worker on {web}/  (metrics {web}/metrics, readiness {web}/ready)",
        f"  broker    {s.broker_url}{embedded_note}",
        f"  database  {safe_url(s.db_url())}",
        f"  console   anonstream console --port {s.console_port}  (then open http://127.0.0.1:{s.console_port}/)",
        f"  home      {home}  (other commands find this instance from any directory with ANONSTREAM_HOME={home})",
        *_feed_lines(s),
        "  next      anonstream push reports.csv  (rows name their station, or --station S1)  |  anonstream status"]),
          flush=True)


def _feed_lines(s: Settings) -> list[str]:
    """One line per feed when a pipelines file declares them."""
    if s.pipelines is None:
        return []
    from stream.config.feeds import feeds

    return [f"  feed      {f.feed}: {f.topic_reports} -> {f.topic_anonymized} (spec {f.spec}, engine "
            f"{f.engine or 'default'}, k={f.privacy.k})" for f in feeds(s)]


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", parents=[worker_options()], help="run a worker (embedded broker if none configured)",
                       description=RUN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--web-port", type=int, help="worker web port: /metrics, /ready (default 6066; 0 = a free port)")
    r.add_argument("--no-migrate", action="store_true", help="skip the migrations start-up step")
    r.add_argument("--detach", action="store_true", help="run in the background: return once the worker is ready "
                   "(its output in DATA_DIR/run.log); stop it with `anonstream stop`")
    r.add_argument("--ready-timeout", type=float, default=180.0, metavar="S",
                   help="with --detach: seconds to wait for the worker to be ready (default 180)")
    r.add_argument("--pipelines", metavar="FILE", help="serve several feeds declared in this TOML file (default: "
                   "ANONSTREAM_PIPELINES; none = one feed from these settings); see docs/operations.md")
    r.set_defaults(func=cmd_run)
