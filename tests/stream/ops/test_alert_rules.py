"""The alert rules fire only on states an operator must act on: evaluated by Prometheus's own `promtool test rules`
over the default demo's metrics (no alert fires, although its releases carry risk warnings expected for the engine),
and over each state a rule is for (it fires).

The demo's metrics: `anonstream demo` with its defaults runs here, then the worker's /metrics is rebuilt from its
ledger through the worker's own code (:class:`stream.worker.metrics.WorkerMetrics`: the ledger's families, each
published release's manifest through ``released``, the accepted and dead-lettered counts through ``batch``), since
the demo's worker has exited by the time the demo returns. Counters rise from 0 over the first half hour, gauges
stay constant, for three hours of one worker scraped every minute.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from stream.testing.debian import apt_install

pytestmark = [pytest.mark.broker, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "monitoring" / "alerts.yml"
WORKER = {"job": "anonstream-worker", "instance": "worker:6066"}
MINUTES = 180  # the evaluated span
RAMP = 30  # counters reach the demo's totals after this many minutes
Series = dict[tuple[str, tuple[tuple[str, str], ...]], str]


def _promtool_path() -> str:
    """Prometheus's promtool, from Debian's prometheus package (installed if missing, as the tests install
    PostgreSQL): the rules are evaluated by Prometheus itself or the test fails."""
    apt_install(["prometheus"], lambda: shutil.which("promtool") is not None)
    found = shutil.which("promtool")
    assert found, "promtool not found and `apt-get install prometheus` failed: install Debian's prometheus"
    return found


def _alert_names() -> list[str]:
    doc = yaml.safe_load(RULES.read_text())
    return [r["alert"] for g in doc["groups"] for r in g["rules"]]


def _values(value: float, counter: bool) -> str:
    if not counter or value == 0:
        return f"{value:g}x{MINUTES}"
    return f"0+{value / RAMP:.10g}x{RAMP} {value:g}x{MINUTES - RAMP}"


def _series(scrape: str) -> Series:
    out: Series = {}
    for family in text_string_to_metric_families(scrape):
        for s in family.samples:
            if s.name.endswith("_created") or s.value != s.value:  # creation times, NaN
                continue
            counter = s.name.endswith(("_total", "_bucket", "_count", "_sum"))  # rise from 0; gauges stay
            out[(s.name, tuple(sorted({**s.labels, **WORKER}.items())))] = _values(float(s.value), counter)
    out[("up", tuple(sorted(WORKER.items())))] = f"1x{MINUTES}"
    return out


def _selector(name: str, labels: tuple[tuple[str, str], ...]) -> str:
    inner = ",".join(f'{k}="{v}"'.replace("\\", "\\\\") for k, v in labels)
    return f"{name}{{{inner}}}"


def _promtool(tmp: Path, rules: Path, series: Series, checks: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    test = {"rule_files": [str(rules)], "evaluation_interval": "1m",
            "tests": [{"interval": "1m",
                       "input_series": [{"series": _selector(n, labels), "values": v} for (n, labels), v in
                                        sorted(series.items())],
                       "alert_rule_test": checks}]}
    path = tmp / f"test-{len(list(tmp.glob('test-*.yml')))}.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    return subprocess.run([_promtool_path(), "test", "rules", str(path)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The default demo's metrics (text format) and a scratch folder."""
    from db import Database, ReleaseRepository
    from db.models import Counter, Release
    from stream.cli.main import main
    from stream.worker.metrics import WorkerMetrics

    _promtool_path()  # before the demo: a machine without promtool fails here, not after minutes
    tmp = tmp_path_factory.mktemp("demo")
    saved = {k: os.environ.pop(k) for k in [k for k in os.environ if k.startswith("ANONSTREAM_")]}
    cwd = Path.cwd()
    os.chdir(tmp)
    try:
        assert main(["demo", "--timeout", "240"]) == 0
    finally:
        os.chdir(cwd)
        os.environ.update(saved)
    from sqlalchemy import select

    db = Database(f"sqlite:///{tmp / 'var' / 'demo' / 'anonstream.db'}")
    try:
        metrics = WorkerMetrics(db=db)
        metrics.feeds(["default"])
        with db.read() as s:
            manifests = [(m, f) for m, f in s.execute(select(Release.manifest, Release.window_key)
                                                      .where(Release.state == "published")).all()]
            dlq = [r for r, n in s.execute(select(Counter.reason, Counter.count).where(Counter.kind == "dlq")).all()
                   for _ in range(int(n))]
        acc = ReleaseRepository(db).accounting()
        metrics.batch(sum(acc.get(k, 0) for k in ("released", "suppressed", "blocked", "pending")), 0, 0, dlq)
        for manifest, _key in manifests:
            metrics.released(json.dumps(manifest).encode(), None, 0.05, feed="default")
        text = metrics.scrape().decode()
        (tmp / "demo-metrics.txt").write_text(text)
        yield text, tmp
    finally:
        db.dispose()


def test_the_default_demo_fires_no_alert(demo: tuple[str, Path]) -> None:
    scrape, tmp = demo
    series = _series(scrape)
    expected_warnings = [float(v.split("x")[0]) for (n, labels), v in series.items()
                         if n == "anonstream_last_release_risk_warnings" and ("kind", "expected") in labels]
    assert expected_warnings and max(expected_warnings) > 0  # the demo's releases do carry expected warnings
    checks = [{"eval_time": f"{t}m", "alertname": name, "exp_alerts": []}
              for name in _alert_names() for t in (15, 60, MINUTES - 1)]
    done = _promtool(tmp, RULES, series, checks)
    assert done.returncode == 0, done.stdout + done.stderr


def _bare_rules(tmp: Path) -> Path:
    """alerts.yml without its annotations (promtool compares them; the firing depends on expr, for and labels)."""
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    path = tmp / "bare-alerts.yml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _key(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted({**labels, **WORKER}.items()))


@pytest.mark.parametrize(("alert", "state", "labels"), [
    ("AnonstreamWindowHeld", {_key("anonstream_windows", state="held"): f"1x{MINUTES}"}, {"severity": "page"}),
    ("AnonstreamUnexpectedRiskWarnings", {_key("anonstream_last_release_risk_warnings", feed="default",
                                               kind="unexpected"): f"2x{MINUTES}"},
     {"severity": "ticket", "feed": "default"}),
    ("AnonstreamDpCountsRefused", {_key("anonstream_dp_refused_releases_total"): f"0x60 1x{MINUTES - 60}"},
     {"severity": "ticket"}),
    ("AnonstreamDpBudgetLow", {_key("anonstream_dp_budget_remaining_rho", block="station:S1/day:2024-03-01"):
                               f"0.05x{MINUTES}",
                               _key("anonstream_dp_budget_cap_rho", block="station:S1/day:2024-03-01"): f"1x{MINUTES}"},
     {"severity": "ticket", "block": "station:S1/day:2024-03-01"}),
    ("AnonstreamWorkerDown", {_key("up"): f"0x{MINUTES}"}, {"severity": "page", **WORKER}),
])
def test_each_rule_fires_on_its_state(demo: tuple[str, Path], alert: str, state: dict[Any, str],
                                      labels: dict[str, str]) -> None:
    scrape, tmp = demo
    series = _series(scrape) | state
    checks = [{"eval_time": "90m", "alertname": alert, "exp_alerts": [{"exp_labels": labels}]}]
    checks += [{"eval_time": "90m", "alertname": other, "exp_alerts": []} for other in _alert_names()
               if other not in (alert, "AnonstreamNoWorker")]
    done = _promtool(tmp, _bare_rules(tmp), series, checks)
    assert done.returncode == 0, done.stdout + done.stderr
