"""``consume`` with a consumer group on the real broker, the three formats, the dated dataset, and
``read_releases`` loading what it wrote with typed columns."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stream.analyst.consumer import GroupOffsets
from stream.analyst.dataset import read_releases
from stream.analyst.export import write_release
from stream.analyst.export.types import release_frame
from stream.ops.broker import EmbeddedBroker
from stream.testing.manifests import contract_manifest
from stream.wire.records import checksum, dumps, record_messages
from stream.wire.signing import sign_manifest

SERVICE = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
COLUMNS = ["class_id", "age", "age_lo", "age_hi", "share", "postcode", "suppressed", "event_date", "offence"]


def _release(rid: str, day: str, n: int = 6) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A signed release of ``n`` rows with ints (some null), floats, text that looks numeric, booleans,
    dates and formula-like text."""
    rows = [[i % 2, "[20-29]" if i % 3 else "*", 20 if i % 3 else None, 29 if i % 3 else None, i / 4,
             "0778" if i % 2 else "778*", i % 3 == 0, day, "=SUM(A1)" if i == 1 else "Theft"] for i in range(n)]
    msgs = record_messages(rid, COLUMNS, rows)
    manifest = contract_manifest(rid, COLUMNS, n, checksum(msgs), start=f"{day}T00:00:00+00:00")
    return sign_manifest(manifest, SERVICE), msgs


def _check_types(df: pd.DataFrame) -> None:
    assert str(df["class_id"].dtype) == "Int64" and str(df["age_lo"].dtype) == "Int64"
    assert df["age_lo"].isna().sum() > 0 and str(df["share"].dtype) == "float64"
    assert str(df["suppressed"].dtype) == "boolean"
    assert pd.api.types.is_datetime64_any_dtype(df["event_date"])
    assert str(df["age"].dtype) == "string" and str(df["offence"].dtype) == "string"
    assert "=SUM(A1)" in set(df["offence"])  # the CSV's formula neutralization is undone on reading


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
@pytest.mark.parametrize("partition_by", [None, "date"])
def test_read_releases_on_every_format_flat_and_partitioned(tmp_path: Path, fmt: str,
                                                             partition_by: str | None) -> None:
    for rid, day in (("r-a", "2024-03-01"), ("r-b", "2024-03-02"), ("r-c", "2024-03-02")):
        manifest, msgs = _release(rid, day)
        assert write_release(tmp_path, manifest, msgs, fmt, partition_by) is not None
        assert write_release(tmp_path, manifest, msgs, fmt, partition_by) is None  # idempotent by id
    if partition_by:
        assert sorted(p.name for p in tmp_path.iterdir()) == ["window_date=2024-03-01", "window_date=2024-03-02"]
        assert (tmp_path / "window_date=2024-03-02" / f"r-c.{fmt}").exists()
        assert (tmp_path / "window_date=2024-03-02" / "_r-c.manifest.json").exists()
    df = read_releases(tmp_path)
    assert len(df) == 18 and df.groupby("release_id").size().to_dict() == {"r-a": 6, "r-b": 6, "r-c": 6}
    assert list(df.columns[:2]) == ["release_id", "class_id"]
    _check_types(df)
    assert str(df["postcode"].dtype) == "string"  # '0778' is never a number, even in CSV
    assert df.groupby(["age_lo", "age_hi"]).size().to_dict() == {(20, 29): 12}


def test_parquet_round_trips_the_types(tmp_path: Path) -> None:
    manifest, msgs = _release("r-p", "2024-03-01")
    frame = release_frame(manifest, msgs)
    path = write_release(tmp_path, manifest, msgs, "parquet")
    assert path is not None
    back = pd.read_parquet(path)
    assert back.dtypes.to_dict() == frame.dtypes.to_dict()
    pd.testing.assert_frame_equal(back, frame)


def test_a_partitioned_parquet_dataset_reads_as_one_pyarrow_table(tmp_path: Path) -> None:
    import pyarrow.dataset as ds

    for rid, day in (("r-a", "2024-03-01"), ("r-b", "2024-03-02")):
        manifest, msgs = _release(rid, day)
        write_release(tmp_path, manifest, msgs, "parquet", "date")
    table = ds.dataset(tmp_path, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()
    assert table.num_rows == 12 and {"window_date", "event_date", "age_lo"} <= set(table.schema.names)


def test_offsets_never_pass_an_incomplete_release() -> None:
    g = GroupOffsets()
    g.seen("records", 0, "r-1")
    g.seen("records", 1, "r-1")
    g.seen("records", 2, "r-2")
    g.seen("releases", 0, "r-1")
    assert g.committable() == {"records": 0, "releases": 0}
    g.written("r-1")
    assert g.committable() == {"records": 2, "releases": 1}  # r-2's manifest has not come yet
    g.seen("releases", 1, None)  # a refused or duplicate message holds nothing back
    g.seen("releases", 2, "r-2")
    g.written("r-2")
    assert g.committable() == {"records": 3, "releases": 3}


def _publish(kafka: Any, topics: tuple[str, str], releases: list[tuple[dict[str, Any], list[dict[str, Any]]]],
             records: bool = True, manifests: bool = True) -> None:
    from stream.ops.kafka_clients import make_producer

    producer = make_producer([kafka.url.split("://")[-1]])
    for manifest, msgs in releases:
        for m in msgs if records else []:
            producer.send(topics[1], value=dumps(m))
        if manifests:
            producer.send(topics[0], value=dumps(manifest))
    producer.flush()
    producer.close()


@pytest.mark.broker
def test_consume_twice_with_a_group_resumes(kafka: EmbeddedBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from stream.cli.main import main
    from stream.ops.broker import ensure_topics

    tag = uuid.uuid4().hex[:8]
    topics = (f"t{tag}.crime.releases", f"t{tag}.crime.anonymized")
    ensure_topics([kafka.url.split("://")[-1]], {topics[0]: 1, topics[1]: 2})
    monkeypatch.setenv("ANONSTREAM_TOPIC_RELEASES", topics[0])
    monkeypatch.setenv("ANONSTREAM_TOPIC_ANONYMIZED", topics[1])
    monkeypatch.setenv("ANONSTREAM_RELEASE_PUBLIC_KEY", SERVICE.public_key().public_bytes_raw().hex())
    _publish(kafka, topics, [_release("r-1", "2024-03-01"), _release("r-2", "2024-03-02")])
    out = tmp_path / "dataset"
    group = f"g-{tag}"
    cmd = ["consume", "--broker", kafka.url, "--out", str(out), "--format", "parquet", "--partition-by", "date",
           "--group", group, "--timeout", "120"]

    assert main([*cmd, "--max-releases", "2", "--idle", "3"]) == 0
    assert "2 release(s) written" in capsys.readouterr().out
    first = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert first == ["window_date=2024-03-01/r-1.parquet", "window_date=2024-03-02/r-2.parquet"]

    # Second run, same group, nothing new: nothing read again, nothing written.
    assert main([*cmd, "--idle", "2"]) == 0
    printed = capsys.readouterr().out
    assert "0 release(s) written" in printed and "already written" not in printed
    assert "skipped 0 duplicate record(s) and 0 duplicate manifest(s)" in printed

    # One more release: exactly that one is written.
    _publish(kafka, topics, [_release("r-3", "2024-03-02")])
    assert main([*cmd, "--max-releases", "1", "--idle", "3"]) == 0
    printed = capsys.readouterr().out
    assert "1 release(s) written" in printed and "release r-3:" in printed and "r-1" not in printed
    df = read_releases(out)
    assert sorted(df["release_id"].unique()) == ["r-1", "r-2", "r-3"]
    assert df.groupby("window_date").size().to_dict() == {pd.Timestamp("2024-03-01"): 6,
                                                         pd.Timestamp("2024-03-02"): 12}
    _check_types(df)

    # A release whose records came in one run and whose manifest comes after it: the first run commits
    # nothing past its records, so the next run reads them again and writes the release.
    late = _release("r-4", "2024-03-03")
    _publish(kafka, topics, [late], manifests=False)
    assert main([*cmd, "--idle", "2"]) == 0
    assert "0 release(s) written" in capsys.readouterr().out
    _publish(kafka, topics, [late], records=False)
    assert main([*cmd, "--max-releases", "1", "--idle", "3"]) == 0
    assert "release r-4:" in capsys.readouterr().out
    assert (out / "window_date=2024-03-03" / "r-4.parquet").exists()

    # Another group starts from the beginning; files already there are not written twice.
    assert main([*cmd, "--group", f"other-{tag}", "--idle", "2"]) == 0
    printed = capsys.readouterr().out
    assert "0 release(s) written" in printed
