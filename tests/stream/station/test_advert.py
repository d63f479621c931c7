"""Which worker serves a topic: a live worker of another spec (or feed) stops the push; none is a warning."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from core.errors import ParamsError
from stream.station.advert import Advert, check_workers, describe_none, live
from stream.wire.receipts import ADVERT_TTL_S, advert


def _ad(worker: str, version: str, age_s: float = 1.0, feed: str = "default", name: str = "crime") -> Advert:
    msg = advert(worker, feed, "t.reports", name, version, (datetime.now(UTC) - timedelta(seconds=age_s)).isoformat())
    parsed = Advert.parse(json.dumps(msg).encode())
    assert parsed is not None
    return parsed


def test_a_live_worker_of_the_same_spec_is_found() -> None:
    ads = [_ad("w1", "a" * 64), _ad("w2", "a" * 64, age_s=ADVERT_TTL_S * 2)]
    assert [a.worker for a in check_workers(ads, "t.reports", "crime", "a" * 64, None)] == ["w1"]


def test_a_live_worker_of_another_spec_or_feed_refuses_the_push() -> None:
    with pytest.raises(ParamsError, match=r"runs spec 'nypd' \(version bbbbbbbbbbbb\), not 'crime'") as exc:
        check_workers([_ad("w1", "b" * 64, name="nypd")], "t.reports", "crime", "a" * 64, None)
    assert exc.value.reason == "spec-mismatch" and "nothing was sent" in exc.value.message
    with pytest.raises(ParamsError, match="the same name: the spec files differ"):
        check_workers([_ad("w1", "b" * 64)], "t.reports", "crime", "a" * 64, None)
    with pytest.raises(ParamsError, match="runs feed 'arrests', not 'default'"):
        check_workers([_ad("w1", "a" * 64, feed="arrests")], "t.reports", "crime", "a" * 64, "default")
    # without --feed the feed name is not compared: the spec is what matters
    assert check_workers([_ad("w1", "a" * 64, feed="arrests")], "t.reports", "crime", "a" * 64, None)


def test_a_stale_advert_of_another_spec_only_warns() -> None:
    ads = [_ad("w1", "b" * 64, age_s=ADVERT_TTL_S + 5, name="nypd")]
    assert check_workers(ads, "t.reports", "crime", "a" * 64, None) == []
    text = describe_none(ads, "t.reports")
    assert "no worker has advertised on t.reports" in text and "ran spec 'nypd'" in text
    assert "no receipt" in describe_none([], "t.reports")


def test_malformed_adverts_are_ignored() -> None:
    assert Advert.parse(b"{}") is None and Advert.parse(b"nope") is None and Advert.parse(None) is None
    naive = json.dumps(advert("w", "default", "t", "crime", "a", "2024-01-01T00:00:00")).encode()
    parsed = Advert.parse(naive)
    assert parsed is not None and parsed.at.tzinfo is not None and live([parsed]) == []
