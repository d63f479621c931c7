"""docker-compose.yml: services, healthchecks, dependencies and environment checked against the settings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from stream.settings import ENV_PREFIX, REQUIRED_IN_PRODUCTION, SECRET_FIELDS, Settings

ROOT = Path(__file__).resolve().parents[2]
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


def test_services_and_images(compose) -> None:  # type: ignore[no-untyped-def]
    services = compose["services"]
    assert {"kafka", "kafka-topics", "postgres", "migrate", "worker"} <= set(services)
    assert re.match(r"apache/kafka:4\.", services["kafka"]["image"])
    assert services["postgres"]["image"].startswith("postgres:")
    assert (ROOT / "Dockerfile").exists() and services["migrate"]["build"] == "."
    assert services["worker"]["image"] == services["migrate"]["image"]


def test_kafka_is_single_node_kraft_with_loopback_listener(compose) -> None:  # type: ignore[no-untyped-def]
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


def test_healthchecks_and_dependencies(compose) -> None:  # type: ignore[no-untyped-def]
    s = compose["services"]
    assert "pg_isready" in " ".join(s["postgres"]["healthcheck"]["test"])
    assert s["migrate"]["command"][-1] == "migrate" and s["migrate"]["restart"] == "no"
    assert s["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert s["kafka-topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    deps = {name: d["condition"] for name, d in s["worker"]["depends_on"].items()}
    assert deps["migrate"] == deps["kafka-topics"] == "service_completed_successfully"
    assert deps["kafka"] == deps["postgres"] == "service_healthy"
    assert "--no-migrate" in s["worker"]["command"]
    # scalable with --scale: no fixed container name and no host port
    assert "container_name" not in s["worker"] and "ports" not in s["worker"]
    assert "healthcheck" in s["worker"]


def test_topics_created_with_explicit_partitions(compose) -> None:  # type: ignore[no-untyped-def]
    topics = compose["services"]["kafka-topics"]
    script = "\n".join(topics["command"])
    defaults = Settings()
    created = dict(re.findall(r"create (\S+) \"?\$?\$?(\w+)\"?", script))
    assert set(created) == {defaults.topic_reports, defaults.topic_dlq, defaults.topic_anonymized,
                            defaults.topic_releases}
    assert "--partitions" in script and "--if-not-exists" in script
    env = _env(topics)
    # the reports topic gets exactly the partition count the workers are configured with
    worker_env = _env(compose["services"]["worker"])
    assert created[defaults.topic_reports] == "REPORTS_PARTITIONS"
    assert env["REPORTS_PARTITIONS"] == worker_env["ANONSTREAM_REPORTS_PARTITIONS"]
    assert created[defaults.topic_dlq] == "1" and created[defaults.topic_releases] == "1"


def test_environment_matches_settings_model(compose) -> None:  # type: ignore[no-untyped-def]
    fields = set(Settings.model_fields)
    for name in ("migrate", "worker"):
        env = _env(compose["services"][name])
        for key in env:
            assert key.startswith(ENV_PREFIX), key
            assert key[len(ENV_PREFIX):].lower() in fields, f"{key} is not a setting"
        for field in (*REQUIRED_IN_PRODUCTION, *SECRET_FIELDS):
            assert f"{ENV_PREFIX}{field.upper()}" in env
        # secrets have no defaults: compose refuses to start without them
        for field in SECRET_FIELDS:
            assert re.fullmatch(r"\$\{\w+:\?[^}]+\}", env[f"{ENV_PREFIX}{field.upper()}"])
        with pytest.raises(KeyError):
            {k: _interpolate(v, {}) for k, v in env.items()}
        given = {"POSTGRES_PASSWORD": "pw", "ANONSTREAM_FINGERPRINT_KEY": "k" * 32, "ANONSTREAM_OPERATOR_TOKEN": "t"}
        values = {k[len(ENV_PREFIX):].lower(): _interpolate(v, given) for k, v in env.items()}
        settings = Settings.model_validate(values)
        assert settings.mode == "production"
        assert settings.bootstrap_servers() == ["kafka:9092"]
        assert settings.db_url().startswith("postgresql+psycopg2://anonstream:pw@postgres:5432/")
        assert settings.fingerprint_key is not None and "k" * 32 not in repr(settings)


def test_production_mode_refuses_missing_secrets() -> None:
    from core.errors import ParamsError

    with pytest.raises(ParamsError, match="ANONSTREAM_FINGERPRINT_KEY"):
        Settings(mode="production", broker_url="kafka://k:9092", database_url="postgresql://x/y")
    ok = Settings(mode="production", broker_url="kafka://k:9092", database_url="postgresql://x/y",
                  fingerprint_key="secret")
    assert "secret" not in repr(ok) and ok.key_bytes() == b"secret"
