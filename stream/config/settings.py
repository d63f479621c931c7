"""Service settings (pydantic-settings): every field can be set as ``ANONSTREAM_<FIELD>`` in the environment.

Two modes:

* ``embedded`` (default): no broker configured means the bundled ``tansu`` broker is started on a free
  loopback port; no database configured means SQLite under ``data_dir`` (``./var``); a missing
  fingerprint key is generated once and kept in ``data_dir/fingerprint.key`` so fingerprints stay
  stable across restarts.
* ``production``: ``broker_url``, ``database_url``, ``fingerprint_key`` and ``signing_key`` are required;
  secrets have no defaults. :meth:`Settings.check_production` names every missing one in a single
  error line, and refuses weak ones: a fingerprint or signing key of fewer than 32 random bytes, an
  operator token shorter than 24 characters (with how to generate a key).

Secrets (``fingerprint_key``, ``signing_key``, ``operator_token``) are ``SecretStr`` and never appear in
logs or reprs.
"""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.canonical import station_id
from core.errors import AnonymizationError, ParamsError
from db.url import sqlite_url, with_password
from db.window_policy import WindowPolicy
from stream.config import names
from stream.config.delay import DelayPolicy
from stream.config.names import ENV_PREFIX
from stream.config.privacy import EngineName, StreamPrivacy
from stream.config.secrets import (
    SECRET_FIELDS,
    FileSettings,
    check_production_secrets,
    secret_value,
    weak_key,
)

__all__ = ["ENV_PREFIX", "REQUIRED_IN_PRODUCTION", "SECRET_FIELDS", "Settings", "load_settings", "secret_value",
           "weak_key"]

REQUIRED_IN_PRODUCTION = ("broker_url", "database_url", "fingerprint_key", "signing_key")


class Settings(BaseSettings):
    """Configuration of the worker, the CLI tools and the (later) operator console."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True, populate_by_name=True,
                                      env_nested_delimiter="__")

    mode: Literal["embedded", "production"] = Field(
        default="embedded", description="embedded: the bundled broker and SQLite when none is configured; "
        "production: broker, database and keys required, weak secrets refused")
    # ANONSTREAM_HOME (or ANONSTREAM_DATA_DIR): the embedded instance's files (state, SQLite, key, logs)
    # (no bare alias such as "home": the environment source would read $HOME for it)
    data_dir: Path = Field(default=Path("var"), validation_alias=AliasChoices("ANONSTREAM_HOME", "ANONSTREAM_DATA_DIR"),
                           description="the embedded instance's files: state, SQLite ledger, keys, broker log")

    # --- broker and topics -------------------------------------------------------------------------
    broker_url: str | None = Field(default=None, description="kafka://host:port[,host:port]; none = embedded")
    app_id: str = Field(default="anonstream", description="the workers' consumer group (faust app id)")
    topic_reports: str = Field(default="crime.reports", description="input topic: the stations' reports")
    topic_dlq: str = Field(default="crime.reports.dlq", description="dead letters (refused reports)")
    topic_anonymized: str = Field(default="crime.anonymized", description="anonymized records")
    topic_releases: str = Field(default="crime.releases", description="signed release manifests")
    reports_partitions: int = Field(default=4, ge=1, description="partitions of the input topic (at most this "
                                    "many workers share the input)")
    output_partitions: int = Field(default=1, ge=1, description="partitions of the records topic")
    session_timeout_s: float = Field(default=6.0, gt=0, description="consumer session timeout (tansu: 6)")
    heartbeat_interval_s: float = Field(default=2.0, gt=0, description="consumer heartbeat interval")
    take_max: int = Field(default=2000, ge=1, description="reports persisted per batch")
    take_within_s: float = Field(default=0.5, gt=0, description="persist a smaller batch after this long")

    # --- database ----------------------------------------------------------------------------------
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; none = SQLite in data_dir")

    # --- dataset and windows -----------------------------------------------------------------------
    spec: str = Field(default="crime", description="bundled spec name or path to a spec TOML file")
    pipelines: Path | None = Field(default=None, description="TOML file declaring several feeds (docs/operations.md "
                                   "'Several feeds'); none = these settings are the one feed, named default")
    feed: str = Field(default="default", description="the feed these settings describe (set per feed from "
                      "`pipelines`; not an operator setting)")
    ledger: str | None = Field(default=None, description="fingerprint scope of the feed: feeds with the same "
                               "ledger block each other's released reports; none = the feed's own")
    windows: WindowPolicy = Field(default_factory=WindowPolicy, description="the window policy (db/window_policy.py)")
    delay: DelayPolicy = Field(default_factory=DelayPolicy, description="delay-bounded releases (CASTLE)")
    regions: dict[str, str] = Field(default_factory=dict, description="station -> region (JSON table), for "
                                    "windows.by = region")
    tick_interval_s: float = Field(default=1.0, gt=0, description="how often a worker looks for due windows")
    release_concurrency: int = Field(default=2, ge=1, description="windows a worker anonymizes at once")
    release_processes: bool = Field(default=True, description="release windows in child processes (one per "
                                    "release slot) instead of threads of the worker process")

    # --- input guards (stream/intake/guards.py) and the station registry ----------------------------------
    max_report_bytes: int = Field(default=65_536, ge=1024, le=1_000_000, description="larger messages are "
                                  "dead-lettered as too-large")
    event_time_max_future_s: int = Field(default=86_400, ge=0, le=31_536_000, description="event times further "
                                         "in the future are dead-lettered as implausible-time")
    event_time_horizon_days: int = Field(default=3_650, ge=1, le=36_500, description="event times older than "
                                         "this are dead-lettered as implausible-time")
    register_stations: Literal["first-sight", "registered"] | None = Field(
        default=None, description="first-sight: a station's first valid report registers it; registered: only "
        "stations added with `anonstream stations add`; none = registered in production, first-sight embedded")

    # --- sampling, engine, privacy and linking guard ---------------------------------------------------
    sample_policy: Literal["all", "fraction", "max"] = Field(
        default="all", description="which eligible reports of a window are anonymized: all, a fraction, at most N")
    sample_fraction: float = Field(default=1.0, gt=0, le=1, description="share sampled (sample_policy = fraction)")
    sample_max: int = Field(default=10_000, ge=1, description="most reports sampled (sample_policy = max)")
    sample_seed: int = Field(default=0, description="seed of the sampling (mixed with each window id)")
    engine: EngineName | None = Field(default=None, description="engine name; none = cg-diverse when privacy asks "
                                     "for distinct l >= 2 (the default), cg-kanon when it asks for k only")
    privacy: StreamPrivacy = Field(default_factory=StreamPrivacy, description="what every release must satisfy "
                                   "(stream/config/privacy.py)")
    risk_threshold: float = Field(default=0.2, gt=0, le=1, description="records above this prosecutor risk are "
                                  "counted in the manifest and warned about")
    person_columns: tuple[str, ...] = Field(default=("name", "dob"), description="columns of the person "
                                            "fingerprint (JSON list; privacy.link_guard = person)")
    content_columns: tuple[str, ...] = Field(
        default=(), description="columns of the content fingerprint when a report has no person columns; "
        "empty = event time, every QI and the sensitive value")

    # --- secrets, signing and claim leases (issue 14: trust) ---------------------------------------
    fingerprint_key: SecretStr | None = Field(default=None, description="HMAC key of the report fingerprints; "
                                              "embedded: generated once in data_dir/fingerprint.key")
    operator_token: SecretStr | None = Field(default=None, description="token of the console's controls")
    signing_key: SecretStr | None = Field(default=None, description="Ed25519 private key (64 hex digits) that "
                                          "signs manifests; embedded: generated once in data_dir/signing.key")
    release_public_key: str | None = Field(default=None, description="Ed25519 public key (hex) `consume` "
                                           "verifies manifests with (`anonstream keys public` prints it)")
    consume_max_unconfirmed: int = Field(default=100_000, ge=1, description="records `consume` keeps of one "
                                         "release whose manifest has not arrived; more are refused and counted")
    claim_lease_s: float = Field(default=10.0, gt=0, description="lease of a window or publish claim; its "
                                 "holder renews it every lease/3, so a dead worker's work is retried within it")

    # --- worker ------------------------------------------------------------------------------------
    web_host: str = Field(default="127.0.0.1", description="address of the worker's web port")
    web_port: int = Field(default=6066, ge=0, le=65535, description="the worker's /metrics, /ready and /live "
                          "(0 = a free port)")
    log_level: str = Field(default="info", description="the faust worker's log level")
    fault_point: Literal["claim", "anonymize", "after-noise", "after-ledger-write", "mid-publish",
                         "mid-republish", "aggregate-after-charge", "aggregate-mid-write",
                         "stop-after-ingest"] | None = Field(
        default=None, description="testing only: kill the worker hard at this point (crash recovery tests)")

    # --- operations (docs/operations.md) -----------------------------------------------------------
    log_format: Literal["text", "json"] = Field(default="text", description="json: one object per line")
    database_password: SecretStr | None = Field(
        default=None, description="inserted into DATABASE_URL when it has none (use *_FILE for a secret file)")
    console_port: int = Field(default=6067, ge=0, le=65535, description="port `run` advertises for the console")
    broker_watch_s: float = Field(default=5.0, gt=0, description="how often `run` checks its broker's topics")
    broker_lost_exit_s: float = Field(default=120.0, gt=0,
                                      description="exit 3 if the broker stays unreachable this long")

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: Any, env_settings: Any,
                                   dotenv_settings: Any, file_secret_settings: Any) -> tuple[Any, ...]:
        return (init_settings, names.NestedEnv(settings_cls), names.AliasEnv(settings_cls),
                FileSettings(settings_cls), dotenv_settings, file_secret_settings)

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        """Flat names (``k``, ``window_size_s``, ...: :data:`~stream.config.names.ALIASES`) into their group;
        the window policy's feed is the settings' feed."""
        if not isinstance(data, dict):
            return data
        out = names.nest(data)
        feed = out.get("feed", cls.model_fields["feed"].default)
        out["windows"] = {**names.as_dict(out.get("windows")), "feed": feed}
        return out

    @model_validator(mode="after")
    def _production_secrets(self) -> Settings:
        if self.mode == "production":
            self.check_production()
        return self

    def check_production(self) -> None:
        """Every setting production needs is set, and no secret is weak (one error line naming them all)."""
        check_production_secrets(self, REQUIRED_IN_PRODUCTION)

    # --- derived values ----------------------------------------------------------------------------
    @property
    def embedded_broker(self) -> bool:
        return not self.broker_url

    def db_url(self) -> str:
        if self.database_url:
            return with_password(self.database_url, secret_value(self.database_password))
        return sqlite_url(self.data_dir)

    def bootstrap_servers(self) -> list[str]:
        """``host:port`` list from ``broker_url`` (``kafka://a:1,b:2`` or ``a:1,b:2``)."""
        if not self.broker_url:
            raise ParamsError("no broker configured; set ANONSTREAM_BROKER_URL", reason="missing-setting")
        text = self.broker_url.split("://", 1)[-1]
        return [h.strip() for h in text.replace(";", ",").split(",") if h.strip()]

    def faust_broker(self) -> str:
        return "kafka://" + ";".join(self.bootstrap_servers())

    def key_bytes(self) -> bytes:
        """The fingerprint key; in embedded mode created once under ``data_dir`` when not configured."""
        if self.fingerprint_key is not None and self.fingerprint_key.get_secret_value():
            return self._scoped(self.fingerprint_key.get_secret_value().encode())
        if self.mode == "production":
            raise ParamsError("production mode needs ANONSTREAM_FINGERPRINT_KEY", reason="missing-setting")
        path = self.data_dir / "fingerprint.key"
        if not path.exists():  # written whole, then linked once: first runs at the same time share one key
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".fingerprint.key.{secrets.token_hex(8)}")
            tmp.touch(0o600, exist_ok=False)  # the owner's alone before the key is in it
            tmp.write_text(secrets.token_hex(32))
            with contextlib.suppress(FileExistsError):  # another process created it first: use that one
                path.hardlink_to(tmp)
            tmp.unlink()
        return self._scoped(path.read_text().strip().encode())

    def _scoped(self, key: bytes) -> bytes:
        """The deployment key for the ``default`` ledger scope; a key derived from it (HMAC) for any other
        feed, so the fingerprints of one feed never match those of another (docs/operations.md)."""
        scope = self.ledger or self.feed
        if scope == "default":
            return key
        import hmac

        return hmac.new(key, f"feed\x1f{scope}".encode(), "sha256").hexdigest().encode()

    def station_check(self) -> Literal["first-sight", "registered"]:
        """Production always requires registered stations; embedded mode registers on first sight by default."""
        if self.mode == "production":
            return "registered"
        return self.register_stations or "first-sight"

    def window_key_for(self, station: str) -> str:
        """The window key of a station's reports, by its canonical id (``08`` is ``8``, as ``regions`` keys
        are read); keys of a feed other than ``default`` start with ``<feed>/``."""
        prefix, station = "" if self.feed == "default" else f"{self.feed}/", station_id(station)
        if self.windows.by == "station":
            return f"{prefix}station:{station}"
        if self.windows.by == "region":
            region = self.regions.get(station) or next((r for s, r in self.regions.items() if station_id(s) == station),
                                                       "unassigned")
            return f"{prefix}region:{region}"
        return f"{prefix}global"

    def with_updates(self, **values: Any) -> Settings:
        """A copy with some fields replaced (validated again). A group (``privacy``, ``windows``) given as a
        table keeps the fields the table leaves out; flat names (``k=``) are accepted too."""
        data = self.model_dump()
        for name in SECRET_FIELDS:
            secret = getattr(self, name)
            data[name] = secret.get_secret_value() if secret is not None else None
        for name, value in values.items():
            group = isinstance(getattr(self, name, None), BaseModel) and isinstance(value, dict)
            data[name] = {**data[name], **value} if group else value
        return Settings.model_validate(data)

    def env(self) -> dict[str, str]:
        """These settings as ``ANONSTREAM_*`` environment variables (for worker subprocesses)."""
        import json

        out: dict[str, str] = {}
        for path, field in names.leaves(type(self)):
            value: Any = self
            for part in path:
                value = getattr(value, part)
            if value is None:
                continue
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            elif isinstance(value, dict | list | tuple):
                value = json.dumps(list(value) if isinstance(value, tuple) else value)
            out[names.names_of(path, field)[0]] = str(value)
        return out


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with explicit overrides (CLI options) applied on top.

    An invalid value raises :class:`AnonymizationError` (``invalid-setting``) naming the variable.
    """
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        base = Settings()
        return base.with_updates(**clean) if clean else base
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise AnonymizationError(f"invalid setting: {problems}", reason="invalid-setting") from None


def _problem(error: Any) -> str:
    """One pydantic error as ``ANONSTREAM_NAME: message (got value)``, naming the variable the value came
    from (a flat alias when that is the one set); secrets are never echoed."""
    loc = tuple(str(part) for part in error["loc"])
    if not loc:
        return str(error["msg"])
    known = {path: field for path, field in names.leaves(Settings)}
    path = next((loc[:n] for n in range(len(loc), 0, -1) if loc[:n] in known), loc)
    choices = names.names_of(path, known[path]) if path in known else [names.env_name(path)]
    env = names.environ()
    name = next((n for n in choices if n in env or f"{n}_FILE" in env), choices[0])
    shown = "" if path[0] in SECRET_FIELDS else f" (got {str(error['input'])[:60]!r})"
    return f"{name}: {str(error['msg']).removeprefix('Value error, ')}{shown}"
