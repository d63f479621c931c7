"""Several feeds in one deployment: the ``pipelines`` TOML file and each feed's settings.

A feed is one input topic with its own spec, engine, privacy parameters, window policy and output
topics. ``ANONSTREAM_PIPELINES=/path/feeds.toml`` (or ``--pipelines``) declares them; one worker fleet
serves them all (:mod:`stream.worker.fleet`). Without it the deployment's settings are the one feed, named
``default``, exactly as before.

Each feed is the deployment's :class:`~stream.config.settings.Settings` with the feed's values replaced
(``feed_settings``), so everything downstream (the orchestrator, release processes, the validator)
works on one feed's settings and never sees another feed's. Isolation in the ledger:

* window keys of a feed other than ``default`` start with ``<feed>/`` (so its windows, window ids,
  release ids, pending pool, watermarks and carried reports are its own), and ``windows.feed`` names
  the feed so each feed's orchestrator claims, reclaims and publishes its own windows only;
* fingerprints are keyed per feed (a key derived from the deployment's fingerprint key and the
  feed's ``ledger`` scope, by default its name): a report in one feed never blocks nor is blocked by
  a report of another, unless both feeds name the same ``ledger``.

Example file: ``stream/specs/pipelines.example.toml``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator
from pydantic.fields import FieldInfo

from core.errors import ParamsError
from db.window_policy import WindowPolicy
from stream.config.names import leaves
from stream.config.privacy import EngineName, StreamPrivacy

FEED_NAME = r"^[a-z0-9][a-z0-9_-]{0,31}$"


def _partial(model: type[BaseModel], group: str) -> type[BaseModel]:
    """A feed's table for one settings group: the group's fields, declared there, each optional (a value
    the feed leaves out is the deployment's); any other key is an error."""
    fields: dict[str, Any] = {}
    for path, field in leaves(model, (group,)):
        annotation: Any = field.annotation
        fields[path[-1]] = (annotation | None, FieldInfo.merge_field_infos(field, default=None, default_factory=None))
    return create_model(group.title(), __config__=ConfigDict(extra="forbid", frozen=True), __module__=__name__,
                        **fields)


if TYPE_CHECKING:
    Privacy: TypeAlias = BaseModel
    Windows: TypeAlias = BaseModel
else:
    Privacy = _partial(StreamPrivacy, "privacy")  # a feed's privacy table: any field of StreamPrivacy
    Windows = _partial(WindowPolicy, "windows")  # a feed's windows table: any field of WindowPolicy but feed


class Outputs(BaseModel):
    """A feed's output topics."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    records: str = Field(min_length=1)
    releases: str = Field(min_length=1)
    dlq: str = Field(min_length=1)


class Feed(BaseModel):
    """One ``[[feed]]`` table of the pipelines file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=FEED_NAME)
    input: str = Field(min_length=1, description="input (reports) topic")
    spec: str = Field(min_length=1, description="bundled spec name or path (relative to the pipelines file)")
    engine: EngineName | None = None
    ledger: str | None = Field(default=None, pattern=FEED_NAME, description="fingerprint scope (default: name)")
    privacy: Privacy = Field(default_factory=Privacy)
    windows: Windows = Field(default_factory=Windows)
    outputs: Outputs


class Pipelines(BaseModel):
    """The whole file: ``[[feed]]`` tables."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    feed: list[Feed] = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct(self) -> Pipelines:
        for what, values in (("feed name", [f.name for f in self.feed]), ("input topic", [f.input for f in self.feed])):
            seen: set[str] = set()
            for v in values:
                if v in seen:
                    raise ValueError(f"duplicate {what} {v!r}")
                seen.add(v)
        outputs: dict[str, str] = {}
        for f in self.feed:
            for topic in (f.input, f.outputs.records, f.outputs.releases, f.outputs.dlq):
                if outputs.setdefault(topic, f.name) != f.name:
                    raise ValueError(f"topic {topic!r} is used by feeds {outputs[topic]!r} and {f.name!r}")
        return self


def _where(error: Any) -> str:
    loc = [str(p) for p in error["loc"]]
    if len(loc) >= 2 and loc[0] == "feed" and loc[1].isdigit():
        loc = [f"feed[{int(loc[1]) + 1}]", *loc[2:]]
    return ".".join(loc)


def load_pipelines(path: Path) -> Pipelines:
    """Read and validate a pipelines file; any problem is one :class:`ParamsError` line naming it."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ParamsError(f"pipelines file {path}: cannot read it ({exc.strerror})", reason="invalid-setting") from None
    except tomllib.TOMLDecodeError as exc:
        raise ParamsError(f"pipelines file {path}: not valid TOML ({exc})", reason="invalid-setting") from None
    try:
        pipes = Pipelines.model_validate(data)
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            msg = "unknown key" if e["type"] == "extra_forbidden" else str(e["msg"]).removeprefix("Value error, ")
            where = _where(e)
            problems.append(f"{where}: {msg}" if where else msg)
        raise ParamsError(f"pipelines file {path}: {'; '.join(problems)}", reason="invalid-setting") from None
    from stream.io.specs import load_schema

    for f in pipes.feed:
        try:
            load_schema(_spec_ref(f.spec, Path(path)))
        except Exception as exc:  # a spec not found or invalid: name the feed and the spec
            raise ParamsError(f"pipelines file {path}: feed {f.name!r}: spec {f.spec!r}: "
                              f"{getattr(exc, 'message', exc)}", reason="invalid-setting") from None
    return pipes


def _spec_ref(spec: str, pipelines_path: Path) -> str:
    """A spec path relative to the pipelines file, when such a file exists; else the name as given."""
    candidate = pipelines_path.parent / spec
    return str(candidate.resolve()) if spec.endswith(".toml") and candidate.is_file() else spec


def feed_settings(base: Any, feed: Feed, pipelines_path: Path) -> Any:
    """The deployment's settings with this feed's values (the feed's :class:`Settings`)."""
    try:
        return base.with_updates(
            feed=feed.name, ledger=feed.ledger, spec=_spec_ref(feed.spec, pipelines_path),
            engine=feed.engine or base.engine, topic_reports=feed.input, topic_anonymized=feed.outputs.records,
            topic_releases=feed.outputs.releases, topic_dlq=feed.outputs.dlq,
            privacy=feed.privacy.model_dump(exclude_unset=True), windows=feed.windows.model_dump(exclude_unset=True))
    except ValidationError as exc:  # a feed's values that are valid alone but not with the deployment's
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}"
                             for e in exc.errors())
        raise ParamsError(f"pipelines file {pipelines_path}: feed {feed.name!r}: {problems}",
                          reason="invalid-setting") from None


def feeds(settings: Any) -> list[Any]:
    """Every feed's settings: the pipelines file's feeds, or ``[settings]`` (the one ``default`` feed)."""
    if settings.pipelines is None:
        return [settings]
    path = Path(settings.pipelines)
    return [feed_settings(settings, f, path) for f in load_pipelines(path).feed]


def feed_named(settings: Any, name: str | None) -> Any:
    """One feed's settings by name (``None``: the only feed, or ``default``); a clear error otherwise."""
    all_feeds = feeds(settings)
    names = [f.feed for f in all_feeds]
    if name is None:
        if len(all_feeds) == 1:
            return all_feeds[0]
        raise ParamsError(f"this deployment has several feeds; choose one with --feed ({', '.join(names)})",
                          reason="invalid-setting")
    for f in all_feeds:
        if f.feed == name:
            return f
    raise ParamsError(f"no feed named {name!r}; feeds: {', '.join(names)}", reason="invalid-setting")
