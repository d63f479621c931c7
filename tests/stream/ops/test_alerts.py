"""monitoring/: the alert rules are loaded by Prometheus, cover the issue's alarms, and name only metrics a worker
serves on /metrics; the dashboard has its failures and risk panels and a feed variable."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[3]
MONITORING = ROOT / "monitoring"
PROMETHEUS_OWN = {"up"}  # series Prometheus makes itself for each target


def _rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load((MONITORING / "alerts.yml").read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def _named(text: str) -> set[str]:
    return set(re.findall(r"\b(anonstream_[a-z_]+|up)\b", text))


def served(text: str) -> set[str]:
    """Every name a /metrics answer serves: families (a counter also as ``<name>_total``) and samples."""
    out = set()
    for family in text_string_to_metric_families(text):
        out |= {family.name} | {s.name for s in family.samples}
        if family.type == "counter":
            out.add(family.name + "_total")
    return out


@pytest.fixture(scope="module")
def scrape(tmp_path_factory: pytest.TempPathFactory) -> str:
    """What a worker's /metrics answers: its own metrics, the ledger's (a migrated ledger with a held window),
    the release processes' memory and the consumer lag."""
    import migrations
    from db import Database
    from db.models import AuditEntry
    from stream.worker.metrics import WorkerMetrics, _LagCollector

    url = f"sqlite:///{tmp_path_factory.mktemp('alerts') / 'ledger.db'}"
    migrations.upgrade(url)
    db = Database(url)
    with db.unit() as s:
        s.add(AuditEntry(at=datetime.now(UTC), actor="worker", action="window-held", subject="w-1",
                         detail={"reason": "verification failed: max_risk 0.25 > 0.2"}))
    metrics = WorkerMetrics(db=db, child_pids=list)
    metrics.registry.register(_LagCollector(None, {}))
    text = metrics.scrape().decode()
    db.dispose()
    return text


def test_the_rules_cover_every_alarm_and_are_loaded(scrape: str) -> None:
    rules = _rules()
    assert all({"alert", "expr", "labels", "annotations"} <= set(r) for r in rules)
    assert all(r["labels"]["severity"] in ("page", "ticket", "info") for r in rules)
    assert all(r["annotations"]["summary"] and r["annotations"]["description"] for r in rules)
    exprs = " ".join(r["expr"] for r in rules)
    for metric in ("anonstream_failures_total", 'anonstream_windows{state="held"}', "anonstream_consumer_lag",
                   "anonstream_dlq_sent_total", "anonstream_pool_oldest_pending_seconds",
                   'anonstream_last_release_risk_warnings{kind="unexpected"}', "anonstream_dp_refused_releases_total",
                   "anonstream_dp_budget_remaining_rho", 'up{job="anonstream-worker"}'):
        assert metric in exprs, metric
    assert 'kind="expected"' not in exprs  # warnings expected for the engine and settings never alert
    prom = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    mounts = dict(v.rsplit(":", 1)[0].split(":", 1) for v in compose["services"]["prometheus"]["volumes"]
                  if v.startswith("./"))
    assert mounts["./monitoring/alerts.yml"] in prom["rule_files"]
    assert prom["scrape_configs"][0]["job_name"] == "anonstream-worker"
    # a refused release is counted by reason
    assert 'anonstream_release_refusals_total{reason="risk"} 1.0' in scrape


def test_every_metric_the_rules_and_the_dashboard_name_is_served(scrape: str) -> None:
    dash = json.loads((MONITORING / "grafana" / "dashboards" / "anonstream.json").read_text())
    names = _named(" ".join(r["expr"] for r in _rules()))
    names |= _named(" ".join(t["expr"] for p in dash["panels"] for t in p["targets"]))
    missing = names - served(scrape) - PROMETHEUS_OWN
    assert not missing, missing


def test_the_dashboard_has_failures_risk_panels_and_a_feed_variable() -> None:
    dash = json.loads((MONITORING / "grafana" / "dashboards" / "anonstream.json").read_text())
    titles = {p["title"].lower(): p for p in dash["panels"]}
    assert any("failures" in t for t in titles) and any("risk" in t for t in titles)
    feed = next(v for v in dash["templating"]["list"] if v["name"] == "feed")
    assert "label_values" in feed["definition"] and feed["includeAll"]
    for word in ("loss", "k and l"):
        panel = next(p for t, p in titles.items() if word in t)
        assert all('feed=~"$feed"' in t["expr"] and "by (feed)" in t["expr"] for t in panel["targets"]), word
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))


def _documented() -> set[str]:
    """The metric names in docs/operations.md's metrics table (``anonstream_x``, ``_y`` shorthands expanded)."""
    text = (ROOT / "docs" / "operations.md").read_text()
    table = text[text.index("| metric | type | labels | meaning |"):]
    table = table[:table.index("\n\n")]
    out: set[str] = set()
    for row in table.splitlines()[2:]:
        names = re.findall(r"`(anonstream_[a-z_]+|_[a-z_]+)`", row.split("|")[1])
        stem = ""
        for name in names:
            if name.startswith("anonstream_"):
                out.add(name)
                stem = name.rsplit("_", 1)[0] if "last_release" not in name else "anonstream_last_release"
            else:
                out.add(stem + name)
    return out


def test_every_exported_metric_is_in_the_operations_table(scrape: str) -> None:
    """The registered metric names (the worker's own, the ledger's, memory and lag) and the doc's table agree."""
    exported = {family.name + ("_total" if family.type == "counter" else "")
                for family in text_string_to_metric_families(scrape) if not family.name.endswith("_created")}
    exported |= _registered()
    documented = _documented()
    assert exported - documented == set(), "exported, not in docs/operations.md"
    assert documented - exported == set(), "in docs/operations.md, not exported"


def _registered() -> set[str]:
    """Every family the worker's registry declares, samples or not (gauges per feed appear with a release)."""
    from stream.worker.metrics import WorkerMetrics

    names = set()
    for collector in list(WorkerMetrics().registry._collector_to_names):
        # describe() is optional on prometheus_client's Collector type; every collector of the registry has it
        for family in collector.describe():  # type: ignore[attr-defined]
            names.add(family.name + ("_total" if family.type == "counter" else ""))
    return names
