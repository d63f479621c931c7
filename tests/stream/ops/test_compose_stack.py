"""docker-compose.yml started without Docker: what compose starts, as local processes, in `depends_on` order.

The test reads the compose file and runs each anonstream service's own ``command`` with its own
``environment`` (secrets as ``*_FILE``, written by ``anonstream keys init``) against a real PostgreSQL
and the test broker; the Kafka and PostgreSQL images are stood in for by those, and their healthcheck
and topic-creation shell commands run as written, with the Kafka tools replaced by small shims. What
stands for compose's network: ``kafka:9092`` and ``postgres:5432`` are the test servers' addresses,
``/run/secrets/NAME`` is the secrets folder's file, and each container's fixed port (6066, 6067) is a
free local port. The production walkthrough's own lines (station registration, push, the console with
its token) are read from docs/operations.md and run the same way.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from stream.cli.main import main
from stream.ops.broker import free_port
from stream.ops.runtime import stop_process, wait_until
from stream.testing.reports import day_of_reports
from stream.testing.services import PostgresServer, listens_on, start_broker

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]
VAR = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")
SHIM = '''#!{python}
"""Stand-in for the Kafka image's {name}: the same options, kafka-python underneath."""
import argparse, sys
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError
p = argparse.ArgumentParser()
p.add_argument("--bootstrap-server", required=True)
for flag in ("--create", "--if-not-exists"):
    p.add_argument(flag, action="store_true")
for opt in ("--replication-factor", "--topic", "--partitions", "--config"):
    p.add_argument(opt)
a = p.parse_args()
admin = KafkaAdminClient(bootstrap_servers=a.bootstrap_server, request_timeout_ms=10000)  # ApiVersions first
if a.create:
    config = dict([a.config.split("=", 1)]) if a.config else {{}}
    try:
        admin.create_topics([NewTopic(a.topic, int(a.partitions), int(a.replication_factor), topic_configs=config)])
    except TopicAlreadyExistsError:
        if not a.if_not_exists:
            sys.exit(1)
admin.close()
'''


def _interpolate(value: str, env: dict[str, str]) -> str:
    return VAR.sub(lambda m: env.get(m.group(1), m.group(2) or ""), value).replace("$$", "$")


class Stack:
    """The compose file's services as local processes (see the module docstring)."""

    def __init__(self, tmp: Path, pg: PostgresServer) -> None:
        self.compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
        self.services: dict[str, Any] = self.compose["services"]
        self.tmp, self.pg, self.kafka = tmp, pg, start_broker()
        self.secrets = tmp / "secrets"
        self.vars = {"ANONSTREAM_SECRETS_DIR": str(self.secrets)}  # compose's own variables (.env)
        self.bin = tmp / "bin"
        self.bin.mkdir()
        for name in ("kafka-topics.sh", "kafka-broker-api-versions.sh"):
            (self.bin / name).write_text(SHIM.format(python=sys.executable, name=name))
            (self.bin / name).chmod(0o755)
        self.ports: dict[str, str] = {}
        self.procs: dict[str, list[subprocess.Popen[bytes]]] = {}

    # --- what stands for the network --------------------------------------------------------------------
    def local(self, text: str, port: str | None = None) -> str:
        text = (text.replace("/opt/kafka/bin/", f"{self.bin}/").replace("kafka:9092", self.kafka.bootstrap)
                .replace("localhost:9092", self.kafka.bootstrap).replace("postgres:5432", f"127.0.0.1:{self.pg.port}")
                .replace("-p 5432", f"-p {self.pg.port}").replace("/run/secrets/", f"{self.secrets}/"))
        for fixed, free in ([(port, self.ports[port])] if port else []):
            text = text.replace(fixed, free)
        return text

    def env(self, name: str, port: str | None = None) -> dict[str, str]:
        svc = self.services[name]
        given = {_interpolate(str(k), self.vars): _interpolate(str(v), self.vars)
                 for k, v in (svc.get("environment") or {}).items()}
        for key, value in given.items():
            if key.endswith("_FILE"):  # a secret the service mounts, from the folder compose reads it from
                secret = Path(value).name
                assert value == f"/run/secrets/{secret}" and secret in svc["secrets"], (name, key)
                assert _interpolate(self.compose["secrets"][secret]["file"], self.vars) == str(self.secrets / secret)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
        env.update(_image_env(self.tmp / f"home-{name}"))
        env.update({k: self.local(v, port) for k, v in given.items()})
        env["PATH"] = f"{self.pg.bindir}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONPATH"] = str(ROOT)
        return env

    def argv(self, command: list[str], port: str | None = None) -> list[str]:
        argv = [self.local(_interpolate(str(c), self.vars), port) for c in command]
        if argv[0] == "anonstream":
            return [sys.executable, "-m", "stream.cli.main", *argv[1:]]
        return [sys.executable if argv[0] == "python" else argv[0], *argv[1:]]

    # --- services -------------------------------------------------------------------------------------------
    def order(self) -> list[str]:
        """The services (without the optional profiles) in an order that respects `depends_on`."""
        todo = {n: set(s.get("depends_on") or {}) for n, s in self.services.items() if not s.get("profiles")}
        out: list[str] = []
        while todo:
            ready = sorted(n for n, deps in todo.items() if deps <= set(out))
            assert ready, f"a dependency cycle: {todo}"
            out.append(ready[0])
            del todo[ready[0]]
        return out

    def dependencies_met(self, name: str, completed: set[str], healthy: set[str]) -> None:
        for dep, spec in (self.services[name].get("depends_on") or {}).items():
            want = spec["condition"]
            assert dep in (completed if want == "service_completed_successfully" else healthy), (name, dep, want)

    def healthy(self, name: str, port: str | None = None, replica: int = 0) -> None:
        """Run the service's healthcheck command as compose would: until it passes, within its budget."""
        check = self.services[name]["healthcheck"]
        kind, *cmd = check["test"]
        shell = self.local(_interpolate(cmd[0], self.vars), port)
        argv = ["sh", "-c", shell] if kind == "CMD-SHELL" else self.argv(cmd, port)
        budget = _seconds(check.get("start_period", "0s")) + check.get("retries", 3) * _seconds(check["interval"])
        # compose's own budget, with room for a loaded CI machine (a slow start is not what this test checks;
        # the check itself must pass, and a service that exits fails at once)
        deadline = time.monotonic() + max(budget, 300.0)
        while True:
            done = subprocess.run(argv, env=self.env(name, port), capture_output=True, timeout=60)
            if done.returncode == 0:
                return
            proc = self.procs.get(name, [None])[replica] if name in self.procs else None
            assert proc is None or proc.poll() is None, f"{name} exited with {proc.returncode}: {self.log(name)}"
            assert time.monotonic() < deadline, f"{name} unhealthy: {done.stderr[-500:]!r} {self.log(name)}"
            time.sleep(0.25)  # a check is a short process: poll often, compose's interval is not what is tested

    def one_shot(self, name: str, on_output: Any = None) -> subprocess.CompletedProcess[str]:
        """A job run to completion, restarted on failure as its `restart: on-failure:N` says."""
        svc = self.services[name]
        policy = str(svc.get("restart", "no"))
        attempts = 1 + (int(policy.split(":")[1]) if policy.startswith("on-failure:") else 0)
        command = svc["command"] if "entrypoint" not in svc else [*svc["entrypoint"], *svc["command"]]
        for _attempt in range(attempts):
            proc = subprocess.Popen(self.argv(command), env=self.env(name), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            if on_output is not None:
                on_output(proc)
            out, err = proc.communicate(timeout=300)
            if proc.returncode == 0:
                return subprocess.CompletedProcess(proc.args, 0, out, err)
        raise AssertionError(f"{name} failed {attempts} time(s): {err[-2000:]}")

    def start(self, name: str, port: str, replica: int) -> None:
        """Start one replica on a free local port standing for its fixed one, and return once that process
        itself listens there. A free port is only free until somebody binds it: when another process of a
        parallel test run took it first, the service exits with the port in use and starts again on another
        (a container's port is its own, so this is the test's race, not the service's)."""
        svc = self.services[name]
        log_path = self.tmp / f"{name}-{replica}.log"
        for _attempt in range(5):
            self.ports[port] = str(free_port())  # each replica is its own container: its own port
            log = log_path.open("wb")
            proc = subprocess.Popen(self.argv(svc["command"], port), env=self.env(name, port), stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.tmp)
            log.close()
            bound = int(self.ports[port])
            assert wait_until(lambda p=proc, b=bound: p.poll() is not None or listens_on(p.pid, b), timeout=300), \
                f"{name} never listened on {bound}: {log_path.read_text(errors='replace')[-2000:]}"
            if proc.poll() is None:
                self.procs.setdefault(name, []).append(proc)
                return
            text = log_path.read_text(errors="replace")
            assert "in use" in text, f"{name} exited with {proc.returncode}: {text[-2000:]}"
        raise AssertionError(f"{name}: five free ports were taken before it could bind one")

    def log(self, name: str, tail: int = 3000) -> str:
        return "\n".join(p.read_text(errors="replace")[-tail:] for p in sorted(self.tmp.glob(f"{name}-*.log")))

    def close(self) -> None:
        for procs in self.procs.values():
            for p in procs:
                stop_process(p)
        self.kafka.stop()


def _image_env(home: Path) -> dict[str, str]:
    """The image's ENV (Dockerfile): its settings, with its paths inside the container made local."""
    line = re.search(r"^ENV (.+?)(?<!\\)$", (ROOT / "Dockerfile").read_text().replace("\\\n", " "), re.M)
    assert line is not None
    env = dict(item.split("=", 1) for item in line.group(1).split())
    assert env["ANONSTREAM_MODE"] == "production" and env["ANONSTREAM_LOG_FORMAT"] == "json"
    env["ANONSTREAM_HOME"] = str(home)  # the image creates it; here the services must (the worker does)
    for cache in ("ANONSTREAM_CACHE_DIR", "NUMBA_CACHE_DIR"):  # the test run's: the kernels are compiled there
        env[cache] = os.environ.get(cache, env[cache])
    return env


def _seconds(text: str) -> float:
    return float(str(text).rstrip("s"))


def _walkthrough() -> dict[str, list[str]]:
    """The production walkthrough's commands (docs/operations.md), by what they do."""
    doc = (ROOT / "docs" / "operations.md").read_text()
    block = doc[doc.index("## Deployment with compose"):].split("```sh", 1)[1].split("```", 1)[0]
    lines = [shlex.split(ln.split("  #")[0]) for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    find = {"keys": ["anonstream", "keys", "init"], "register": ["docker", "compose", "run", "--rm", "migrate"],
            "push": ["anonstream", "push"], "up": ["docker", "compose", "up"], "console": ["curl"]}
    return {what: next(ln for ln in lines if ln[:len(prefix)] == prefix) for what, prefix in find.items()}


def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _create_role_and_database(pg: PostgresServer, env: dict[str, str], secrets: Path) -> None:
    """What the postgres image does on a fresh volume: POSTGRES_USER, POSTGRES_DB, POSTGRES_PASSWORD_FILE."""
    import sqlalchemy as sa

    password = (secrets / Path(env["POSTGRES_PASSWORD_FILE"]).name).read_text().strip()
    engine = sa.create_engine(pg.url(), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql(f"CREATE ROLE \"{env['POSTGRES_USER']}\" LOGIN PASSWORD '{password}'")
        conn.exec_driver_sql(f"CREATE DATABASE \"{env['POSTGRES_DB']}\" OWNER \"{env['POSTGRES_USER']}\"")
    engine.dispose()


def test_what_compose_starts_starts_and_releases(pg: PostgresServer, tmp_path: Path) -> None:
    docs = _walkthrough()
    assert docs["keys"][3:] == ["--secrets-dir", "secrets"] and "--scale" not in docs["up"]
    stack = Stack(tmp_path, pg)
    try:
        # the secrets, as the walkthrough writes them
        assert main(["keys", "init", "--secrets-dir", str(stack.secrets)]) == 0
        order = stack.order()
        assert order.index("migrate") > order.index("postgres") and order.index("worker") > order.index("migrate")
        completed: set[str] = set()
        healthy: set[str] = set()
        pg_env = {k: str(v) for k, v in stack.services["postgres"]["environment"].items()}
        for name in order:
            stack.dependencies_met(name, completed, healthy)
            if name == "kafka":  # the test broker stands in for the image; its healthcheck runs as written
                stack.healthy("kafka")
                healthy.add(name)
            elif name == "postgres":
                # the server answers pg_isready over TCP, but (as on a fresh volume) the image has not yet
                # created its role and database: migrate must wait for them
                stack.healthy("postgres")
                healthy.add(name)
            elif name == "kafka-topics":
                stack.one_shot(name)
                _check_topics(stack)
                completed.add(name)
            elif name == "migrate":
                def init_later(proc: subprocess.Popen[str]) -> None:
                    assert proc.stderr is not None and "anonstream" not in pg_env.get("created", "")
                    for line in proc.stderr:  # migrate says it retries; then the image finishes its init
                        if "retrying in" in line:
                            break
                    _create_role_and_database(pg, pg_env, stack.secrets)
                    pg_env["created"] = "anonstream"

                done = stack.one_shot(name, on_output=init_later)
                assert "database at revision" in done.stdout
                completed.add(name)
            elif name in ("worker", "console"):
                port = {"worker": "6066", "console": "6067"}[name]
                replicas = int(_interpolate(str(stack.services[name].get("deploy", {}).get("replicas", 1)), {}))
                for replica in range(replicas):
                    stack.start(name, port, replica)
                    stack.healthy(name, port, replica)
                healthy.add(name)
            else:
                raise AssertionError(f"a service this test does not start: {name}")
        assert len(stack.procs["worker"]) == 2
        _register_push_and_release(stack, docs)
        _alerts_and_logs(stack)
    finally:
        stack.close()


def _check_topics(stack: Stack) -> None:
    """kafka-topics created every topic the workers use, with the partitions they are configured with."""
    from kafka import KafkaConsumer

    from stream.config.settings import Settings
    from stream.ops.broker import topic_partitions

    env = stack.env("worker", None)
    expected = topic_partitions(Settings(reports_partitions=int(env["ANONSTREAM_REPORTS_PARTITIONS"]),
                                         output_partitions=int(env["ANONSTREAM_OUTPUT_PARTITIONS"])))
    consumer = KafkaConsumer(bootstrap_servers=stack.kafka.bootstrap)
    try:
        found = {t: len(consumer.partitions_for_topic(t) or ()) for t in expected}
    finally:
        consumer.close()
    assert found == expected


def _register_push_and_release(stack: Stack, docs: dict[str, list[str]]) -> None:
    token = (stack.secrets / "operator_token").read_text().strip()
    # the walkthrough's registration step, run with the migrate service's environment (`docker compose run`)
    register = docs["register"][5:]
    done = subprocess.run(stack.argv(register), env=stack.env("migrate"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "added" in done.stdout, done.stderr
    station = register[register.index("add") + 1]
    csv = stack.tmp / "reports.csv"
    pd.DataFrame(day_of_reports(1, 120, seed=11)["S1"]).assign(station_id=station).to_csv(csv, index=False)
    # the walkthrough's push, from the host (no ANONSTREAM_* settings), to the broker's published listener
    push = [str(csv) if a == "reports.csv" else a for a in docs["push"]]
    push[push.index("--broker") + 1] = stack.kafka.url
    host_env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(stack.argv(push), env=host_env, capture_output=True, text=True, timeout=300,
                          cwd=stack.tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    console = f"http://127.0.0.1:{stack.ports['6067']}"
    assert docs["console"][-1].endswith("/api/health")
    assert _get(console + "/api/releases")[0] == 401
    assert _get(console + "/api/health")[0] == 401

    def published() -> list[dict[str, Any]]:
        status, body = _get(console + "/api/releases", token)
        assert status == 200
        return [r for r in json.loads(body)["releases"] if r["state"] == "published"]

    assert wait_until(lambda: bool(published()), timeout=300, interval=1.0), stack.log("worker")
    assert _get(console + "/api/health", token)[0] == 200
    release = published()[0]
    env = stack.env("worker")
    assert release["k"] >= int(env["ANONSTREAM_K"]) and release["stations"] == [station]
    # the release was made with the compose settings, and signed with the signing_key secret
    status, body = _get(f"{console}/api/releases/{release['id']}", token)
    manifest = json.loads(body)["manifest"]
    assert status == 200 and manifest["engine"] == env["ANONSTREAM_ENGINE"]
    assert manifest["link_guard"] == env["ANONSTREAM_LINK_GUARD"]
    assert manifest["params"]["k"] == int(env["ANONSTREAM_K"])
    keys = subprocess.run(stack.argv(["anonstream", "keys", "public"]), env=env, capture_output=True, text=True,
                          timeout=120)
    from stream.wire.signing import public_key_from_text, verify_manifest

    assert keys.returncode == 0 and verify_manifest(manifest, public_key_from_text(keys.stdout.strip())) is None
    # without the registration step, production dead-letters the station's reports and push says so (exit 1)
    unregistered = stack.tmp / "unregistered.csv"
    pd.read_csv(csv).head(5).assign(station_id="S9").to_csv(unregistered, index=False)
    push[push.index(str(csv))] = str(unregistered)
    push[push.index("--station") + 1] = "S9"
    done = subprocess.run(stack.argv(push), env=host_env, capture_output=True, text=True, timeout=300, cwd=stack.tmp)
    assert done.returncode == 1 and "unknown-station" in done.stdout + done.stderr, done.stdout + done.stderr


def _alerts_and_logs(stack: Stack) -> None:
    """A worker's /metrics serves every metric the alert rules name; its JSON log lines about a window or a
    release carry both fields."""
    from tests.stream.ops.test_alerts import PROMETHEUS_OWN, _named, _rules, served

    status, body = _get(f"http://127.0.0.1:{stack.ports['6066']}/metrics")
    assert status == 200
    missing = _named(" ".join(r["expr"] for r in _rules())) - served(body.decode()) - PROMETHEUS_OWN
    assert not missing, missing
    lines = [json.loads(ln) for ln in stack.log("worker", 10**7).splitlines() if ln.startswith("{")]
    about = [ln for ln in lines if re.search(r"\brelease r-|\bwindow \S*\|", ln["message"])]
    assert any("published" in ln["message"] for ln in about)
    assert all("window" in ln and "release_id" in ln for ln in about), [ln for ln in about if "window" not in ln]
