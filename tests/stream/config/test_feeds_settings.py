"""The pipelines file (stream/config/feeds.py): each feed's settings, and one-line errors for bad files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from core.errors import ParamsError
from stream.cli.main import main
from stream.config.feeds import feed_named, feeds, load_pipelines
from stream.config.settings import Settings
from stream.ops.broker import topic_partitions

EXAMPLE = Path(__file__).resolve().parents[3] / "stream" / "specs" / "pipelines.example.toml"

FEED = """
[[feed]]
name = "{name}"
input = "{input}"
spec = "{spec}"
outputs = {{ records = "{name}.out", releases = "{name}.rel", dlq = "{name}.dlq" }}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "feeds.toml"
    path.write_text(text)
    return path


def _settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(data_dir=tmp_path, fingerprint_key=SecretStr("k" * 64), **kw)


def test_example_file_gives_each_feed_its_own_settings(tmp_path: Path) -> None:
    base = _settings(tmp_path, pipelines=EXAMPLE, k=3, sample_seed=9)
    crime, arrests = feeds(base)
    assert (crime.feed, crime.spec, crime.engine, crime.privacy.k, crime.topic_reports) == (
        "crime", "crime", "cg-kanon", 5, "crime.reports")
    assert (arrests.feed, arrests.spec, arrests.engine, arrests.privacy.k, arrests.windows.size_s) == (
        "arrests", "nypd", "mondrian", 10, 2_592_000)
    assert arrests.topic_anonymized == "arrests.anonymized" and arrests.topic_dlq == "arrests.reports.dlq"
    assert arrests.sample_seed == 9  # what a feed leaves out is the deployment's
    # window keys and fingerprint keys are per feed; the default feed's are unchanged
    assert crime.window_key_for("S1") == "crime/station:S1" and base.window_key_for("S1") == "station:S1"
    assert len({base.key_bytes(), crime.key_bytes(), arrests.key_bytes()}) == 3
    assert base.key_bytes() == b"k" * 64
    assert set(topic_partitions(base)) == {"crime.reports", "crime.anonymized", "crime.releases",
                                           "crime.reports.dlq", "arrests.reports", "arrests.anonymized",
                                           "arrests.releases", "arrests.reports.dlq",
                                           # receipts and worker adverts of each input topic (stream/wire/receipts.py)
                                           "crime.reports.receipts", "crime.reports.workers",
                                           "arrests.reports.receipts", "arrests.reports.workers"}
    assert feed_named(base, "arrests").spec == "nypd"


def test_without_pipelines_the_settings_are_the_default_feed(tmp_path: Path) -> None:
    base = _settings(tmp_path)
    assert feeds(base) == [base] and base.feed == "default"
    assert feed_named(base, None) is base and feed_named(base, "default") is base
    with pytest.raises(ParamsError, match="no feed named 'x'; feeds: default"):
        feed_named(base, "x")


def test_shared_ledger_scope_shares_the_fingerprint_key(tmp_path: Path) -> None:
    text = FEED.format(name="a", input="a.in", spec="crime") + 'ledger = "shared"\n' + \
        FEED.format(name="b", input="b.in", spec="crime") + 'ledger = "shared"\n'
    a, b = feeds(_settings(tmp_path, pipelines=_write(tmp_path, text)))
    assert a.key_bytes() == b.key_bytes() and a.window_key_for("S1") != b.window_key_for("S1")


@pytest.mark.parametrize(("text", "message"), [
    (FEED.format(name="a", input="x", spec="crime") + 'colour = "red"\n', r"feed\[1\]\.colour: unknown key"),
    (FEED.format(name="a", input="x", spec="crime") + FEED.format(name="a", input="y", spec="crime"),
     "duplicate feed name 'a'"),
    (FEED.format(name="a", input="x", spec="crime") + FEED.format(name="b", input="x", spec="crime"),
     "duplicate input topic 'x'"),
    (FEED.format(name="a", input="x", spec="no-such-spec"), "feed 'a': spec 'no-such-spec'"),
    (FEED.format(name="A b", input="x", spec="crime"), r"feed\[1\]\.name: String should match pattern"),
    (FEED.format(name="a", input="x", spec="crime").replace("outputs", "#"), r"feed\[1\]\.outputs: Field required"),
    (FEED.format(name="a", input="x", spec="crime") + FEED.format(name="b", input="a.out", spec="crime"),
     "topic 'a.out' is used by feeds 'a' and 'b'"),
    ("[[feed]\nname=", "not valid TOML"),
    ("", r"feed: Field required"),
])
def test_bad_pipelines_files_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ParamsError, match=message) as err:
        load_pipelines(path)
    assert "\n" not in err.value.message and str(path) in err.value.message


def test_cli_reports_a_bad_pipelines_file_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, FEED.format(name="a", input="x", spec="crime") + FEED.format(name="a", input="y",
                                                                                      spec="crime"))
    data = tmp_path / "reports.csv"
    data.write_text("report_id,station_id\n1,S1\n")
    code = main(["push", str(data), "--feed", "a", "--pipelines", str(path), "--broker", "kafka://127.0.0.1:1"])
    err = capsys.readouterr().err
    assert code == 2 and "duplicate feed name 'a'" in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


def test_a_spec_path_is_relative_to_the_pipelines_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "mine.toml").write_text((EXAMPLE.parent / "crime.toml").read_text())
    path = _write(tmp_path, FEED.format(name="a", input="x", spec="specs/mine.toml"))
    monkeypatch.chdir(EXAMPLE.parent)  # not where the spec is
    (a,) = feeds(_settings(tmp_path, pipelines=path))
    assert a.spec == str((tmp_path / "specs" / "mine.toml").resolve())


def test_stations_cli_keeps_a_registry_per_feed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    assert main(["migrate", "--database", url]) == 0
    where = ["--database", url, "--pipelines", str(EXAMPLE)]
    assert main(["stations", "add", "101", "102", "--feed", "arrests", *where]) == 0
    assert main(["stations", "add", "S1", "--feed", "crime", *where]) == 0
    capsys.readouterr()
    assert main(["stations", "list", "--feed", "arrests", *where]) == 0
    listed = capsys.readouterr().out
    assert "101" in listed and "102" in listed and "S1" not in listed
    assert main(["stations", "list", *where]) == 2  # several feeds: which registry?
    err = capsys.readouterr().err
    assert "choose one with --feed (crime, arrests)" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["push", "reports.csv", "--station", "S1"], ["consume", "--out", "out"], ["run"]])
def test_a_bad_pipelines_file_is_the_first_error_before_anything_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        command: list[str]) -> None:
    """No broker or database configured: the pipelines file is still what is reported (one line), and
    `run` starts no embedded broker for a file it cannot use."""
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("ANONSTREAM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ANONSTREAM_PIPELINES", str(tmp_path / "missing.toml"))
    (tmp_path / "reports.csv").write_text("report_id,station_id\n1,S1\n")
    code = main(command)
    err = capsys.readouterr().err
    assert code == 2 and "pipelines file" in err and "cannot read it" in err, err
    assert len([line for line in err.splitlines() if line.strip()]) == 1
    assert not (tmp_path / "var" / "instance.json").exists()
