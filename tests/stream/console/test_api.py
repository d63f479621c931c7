"""The console's read API and pages against a real (SQLite) ledger built by the stream's own code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import numpy as np

from tests.stream.console.conftest import Console
from tests.stream.console.seed import Seeded


def test_releases_list_and_filters(console: Console, seeded: Seeded) -> None:
    data = console.get_json("/api/releases")
    ids = {r["id"] for r in data["releases"]}
    assert ids == set(seeded.releases.values())
    assert data["total"] == len(ids)
    row = next(r for r in data["releases"] if r["id"] == seeded.releases["S1"])
    for key in ("created_at", "window", "stations", "engine", "k", "l", "information_loss", "released",
                "suppressed", "held_back"):
        assert key in row
    assert row["stations"] == ["S1"] and row["engine"] == "mondrian" and row["k"] >= 5
    assert row["released"] + row["suppressed"] + row["held_back"] <= row["received"]
    assert {"S1", "S2", "S3", "P1", "T1", "H1"} <= set(data["stations"])

    only = console.get_json("/api/releases?station=S2")["releases"]
    assert [r["id"] for r in only] == [seeded.releases["S2"]]
    assert console.get_json("/api/releases?station=S")["releases"] == []  # exact station match, not a prefix

    # the days the seeded releases were made on (not today's date: a run may cross midnight)
    made = [datetime.fromisoformat(r["created_at"]).astimezone(UTC).date() for r in data["releases"]]
    first, last = min(made), max(made)
    assert len(console.get_json(f"/api/releases?since={first - timedelta(days=1)}")["releases"]) == len(ids)
    assert console.get_json(f"/api/releases?since={last + timedelta(days=1)}")["releases"] == []
    assert console.get_json(f"/api/releases?until={first - timedelta(days=1)}")["releases"] == []
    assert len(console.get_json(f"/api/releases?until={last}")["releases"]) == len(ids)
    page = console.get_json("/api/releases?limit=2&offset=1")
    assert len(page["releases"]) == 2 and page["total"] == len(ids)

    status, _h, body = console.call("GET", "/api/releases?since=yesterday")
    assert status == 400 and "not a date" in body


def test_release_detail_analysis_matches_ledger(console: Console, seeded: Seeded) -> None:
    rid = seeded.releases["S1"]
    d = console.get_json(f"/api/releases/{rid}")
    assert d["id"] == rid and d["verification"]["ok"] is True
    an = d["analysis"]
    cs = an["class_sizes"]
    sizes, counts = np.array(cs["sizes"]), np.array(cs["counts"])
    assert int((sizes * counts).sum()) == d["released"] == an["records"]
    assert cs["min"] == d["k"] == an["privacy_from_labels"]["k"] >= d["params"]["k"]
    assert an["privacy_from_labels"]["l_distinct"] == d["l"]
    offences = an["offences"]
    assert sum(o["records"] for o in offences) == d["released"]
    assert abs(sum(o["overall"] for o in offences) - 1.0) < 1e-4
    for o in offences:
        assert 0 < o["min"] <= o["mean"] <= o["max"] <= 1
    severities = [o["severity"] for o in offences]
    assert severities == sorted(severities)  # ordered by severity, as in the CG paper's figures
    assert set(d["per_attribute_loss"]) == set(an["qi_columns"])
    assert set(d["plots"]) == {"class-sizes", "offences", "risk", "utility", "loss"}  # no front for mondrian
    assert any(a["action"] == "release-stored" for a in d["audit"])


def test_release_not_found(console: Console) -> None:
    status, _h, body = console.call("GET", "/api/releases/r-nope")
    assert status == 404 and "no such release" in body
    status, headers, body = console.call("GET", "/releases/r-nope")
    assert status == 404 and headers["Content-Type"].startswith("text/html")
    assert console.call("GET", "/releases/r-nope/plots/loss.svg")[0] == 404
    assert console.call("GET", f"/api/releases/{quote('r-nope')}/front")[0] == 404


def test_plots_are_svg(console: Console, seeded: Seeded) -> None:
    rid = seeded.releases["S2"]
    for name in ("class-sizes", "offences", "risk", "utility", "loss"):
        status, headers, body = console.call("GET", f"/releases/{rid}/plots/{name}.svg")
        assert status == 200 and headers["Content-Type"].startswith("image/svg+xml")
        assert "<svg" in body and 'href="http' not in body  # self-contained, nothing fetched
    utility = console.get_json(f"/api/releases/{rid}")["manifest"]["utility"]
    svg = console.call("GET", f"/releases/{rid}/plots/utility.svg")[2]
    assert "Original against released distribution" in svg and "original" in svg and "released" in svg
    for name in utility["qis"]:  # one panel per QI that resolves at some level, titled with its level
        if any(lv["resolved"] for lv in utility["qis"][name]["levels"]):
            assert f"{name} at " in svg
    assert f"{utility['sensitive']['name']} (published)" in svg
    assert 'src="/releases/' + quote(rid, safe="") + '/plots/utility.svg"' in console.call("GET", f"/releases/{rid}")[2]
    assert console.call("GET", f"/releases/{rid}/plots/nonsense.svg")[0] == 404


def test_pbg_front_recomputed_with_chosen_point(console: Console, seeded: Seeded) -> None:
    rid = seeded.releases["P1"]
    d = console.get_json(f"/api/releases/{rid}")
    assert d["engine"] == "pbg-ea" and "front" in d["plots"]
    front = console.get_json(f"/api/releases/{rid}/front")
    assert front["source"] in ("ledger", "recomputed")
    assert front["front"], "the front is empty"
    chosen = [m for m in front["front"] if m["selected"]]
    assert len(chosen) == 1 and chosen[0]["k"] == d["k"]
    if front["source"] == "recomputed":
        assert front["consistent"] is True
    pts = front["points"]["points"]
    assert len(pts) == len(front["front"]) and sum(p["selected"] for p in pts) == 1
    status, _h, svg = console.call("GET", f"/releases/{rid}/plots/front.svg")
    assert status == 200 and "<svg" in svg and "chosen" in svg


def test_health(console: Console, seeded: Seeded) -> None:
    h = console.get_json("/api/health")
    pool = {r["station"]: r for r in h["pool"]["stations"]}
    assert pool["T1"]["pending"] == 3 and pool["T1"]["oldest_pending_age_s"] > 0
    assert pool["S1"]["pending"] == 0 and pool["S1"]["released"] > 0
    assert h["pool"]["pending_total"] >= 3
    assert h["dlq"]["by_reason"] == seeded.rejected and h["dlq"]["total"] == sum(seeded.rejected.values())
    assert {e["reason"] for e in h["dlq"]["recent"]} == set(seeded.rejected)
    held = {w["id"]: w for w in h["windows"]["held"]}
    assert seeded.held_window in held
    assert "unknown parameter" in held[seeded.held_window]["reason"]
    assert held[seeded.held_window]["still_pending"] == 40
    carried = {w["id"]: w for w in h["windows"]["carried"]}
    assert carried[seeded.carried_window]["reason"].startswith("too small")
    assert "no broker configured" in h["lag"]["error"]
    assert h["worker"]["activity"]["releases_by_state"] == {"stored": len(seeded.releases)}
    assert h["read_only"] is False


def test_windows_stations_audit_index(console: Console, seeded: Seeded) -> None:
    held = console.get_json("/api/windows?state=held")["windows"]
    assert seeded.held_window in {w["id"] for w in held} and all(w["state"] == "held" for w in held)
    released = console.get_json("/api/windows?state=released")["windows"]
    assert len(released) == len(seeded.releases)
    status, _h, body = console.call("GET", "/api/windows?state=bogus")
    assert status == 400 and "unknown window state" in body
    stations = {s["station"] for s in console.get_json("/api/stations")["stations"]}
    assert {"S1", "S2", "S3", "P1", "T1", "H1"} <= stations
    audit = console.get_json("/api/audit?limit=500")["audit"]
    assert {a["subject"] for a in audit if a["action"] == "release-stored"} == set(seeded.releases.values())
    assert any(a["action"] == "window-held" and a["subject"] == seeded.held_window for a in audit)
    assert "/api/health" in " ".join(console.get_json("/api")["endpoints"])


def test_html_pages(console: Console, seeded: Seeded) -> None:
    status, headers, body = console.call("GET", "/")
    assert status == 200 and "Releases" in body  # redirected to the list
    status, headers, body = console.call("GET", "/releases?station=S3")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert seeded.releases["S3"] in body and seeded.releases["S1"] not in body
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    rid = seeded.releases["P1"]
    status, _h, body = console.call("GET", f"/releases/{rid}")
    assert status == 200 and body.count('<img class=plot') == 6 and "plots/front.svg" in body
    status, _h, body = console.call("GET", "/health")
    assert status == 503 and seeded.held_window.split("|")[0] in body and "release after review" in body  # held
    assert "<h2>Linking guard</h2>" in body and "co-offenders" in body
    assert console.call("GET", "/audit")[0] == 200
    for page in ("/releases", f"/releases/{rid}", "/health", "/audit"):
        body = console.call("GET", page)[2]
        assert "<script" not in body and "https://" not in body  # no CDN, no external assets


def test_release_carries_its_risk_profile(console: Console, seeded: Seeded) -> None:
    """The manifest's privacy.risk is shown on the release page and drawn as a histogram."""
    rid = seeded.releases["S1"]
    d = console.get_json(f"/api/releases/{rid}")
    risk = d["manifest"]["privacy"]["risk"]
    assert risk["records"] == d["released"]
    assert risk["prosecutor"]["highest"] == 1 / d["k"]  # the smallest class
    assert sum(b["records"] for b in risk["histogram"]) == d["released"]
    assert risk["sample_uniques"] == 0.0 and risk["sample_uniques_input"] is not None
    assert d["verification"]["max_risk"] == 1 / d["k"]
    status, _h, page = console.call("GET", f"/releases/{rid}")
    assert status == 200 and "Re-identification risk" in page and "prosecutor risk: highest / average" in page
    svg = console.call("GET", f"/releases/{rid}/plots/risk.svg")[2]
    assert "no risk histogram" not in svg and "Records by prosecutor" in svg
