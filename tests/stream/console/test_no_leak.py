"""No response of the console contains a report id, a name, a date of birth or a fingerprint from the input."""

from __future__ import annotations

import re
from urllib.parse import quote

from tests.stream.console.conftest import Console
from tests.stream.console.seed import Seeded


def _crawl(console: Console, seeded: Seeded, token: str) -> dict[str, str]:
    bodies: dict[str, str] = {}

    def get(path: str) -> None:
        status, _h, body = console.call("GET", path, token=token)  # as the operator: control forms included
        healthy = "health" not in path or status == 200  # /health and /api/health: 503 while a window is held
        assert status in ((200,) if healthy else (503,)), (path, status)
        bodies[path] = body

    for path in ("/", "/releases", "/health", "/audit", "/api", "/api/releases", "/api/health", "/api/stations",
                 "/api/audit?limit=1000", "/api/windows?state=open,closing,released,carried,held,empty",
                 "/windows?state=open,closing,released,carried,held,empty", "/budget", "/signoff",
                 "/signoff?since=2024-02-28&until=2024-03-02", "/signoff/report?since=2024-02-28&until=2024-03-02",
                 "/api/signoff?since=2024-02-28&until=2024-03-02"):
        get(path)
    for wid in (seeded.held_window, seeded.carried_window):
        get(f"/windows/{quote(wid, safe='')}")
        get(f"/api/windows/{quote(wid, safe='')}")
    for station in ("S1", "P1", "T1", "H1"):
        get(f"/api/releases?station={station}")
        get(f"/releases?station={station}")
    for rid in seeded.releases.values():
        get(f"/api/releases/{rid}")
        get(f"/releases/{rid}")
        get(f"/api/releases/{rid}/front")
        for name in ("class-sizes", "offences", "utility", "loss", "front"):
            get(f"/releases/{rid}/plots/{name}.svg")
    # control responses too (a pause and a refused window release)
    bodies["pause"] = console.call("POST", "/api/stations/LEAK1/pause", token=token)[2]
    bodies["release"] = console.call("POST", f"/api/windows/{quote(seeded.carried_window, safe='')}/release",
                                     token=token)[2]
    return bodies


def test_no_identifier_in_any_response(console: Console, seeded: Seeded, token: str) -> None:
    bodies = _crawl(console, seeded, token)
    assert len(bodies) > 40
    names = {i for i in seeded.identifiers if " " in i}
    dobs = {i for i in seeded.identifiers if re.fullmatch(r"\d{4}-\d{2}-\d{2}", i)}
    report_ids = {i for i in seeded.identifiers if re.fullmatch(r"[A-Z]+\d+-.+", i)}
    fingerprints = {i for i in seeded.identifiers if re.fullmatch(r"[0-9a-f]{64}", i)}
    assert names and dobs and report_ids and fingerprints  # the seed really collected each kind
    for path, body in bodies.items():
        text = body.lower()
        for value in seeded.identifiers:
            assert value.lower() not in text, f"{path} leaks an input identifier"
    # the seeded DLQ rejection messages quote nothing from the payloads either
    assert "Not An Offence" not in bodies["/api/health"]
