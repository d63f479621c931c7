"""Controls: the operator token (401 / 403), pause / resume, releasing a held window, audit entries."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.stream.console.conftest import Console
from tests.stream.console.seed import Seeded, make_held


@pytest.fixture(autouse=True)
def _unpenalized(console: Console) -> None:
    console.forget_wrong_tokens()  # wrong tokens slow a client down; each test starts afresh


def _controls(seeded: Seeded) -> list[str]:
    wid = quote(seeded.held_window, safe="")
    return ["/api/stations/S1/pause", "/api/stations/S1/resume", f"/api/releases/{seeded.releases['S1']}/verify",
            f"/api/windows/{wid}/release"]


def _control_entries(console: Console) -> list[dict]:
    controls = {"station-paused", "station-resumed", "window-released", "release-reverified"}
    return [a for a in console.get_json("/api/audit?limit=1000")["audit"] if a["action"] in controls]


@pytest.mark.parametrize("index", range(4))
def test_controls_need_the_token(console: Console, seeded: Seeded, index: int) -> None:
    path = _controls(seeded)[index]
    before = _control_entries(console)
    status, headers, body = console.call("POST", path)
    assert status == 401 and "token required" in body and headers["WWW-Authenticate"].startswith("Bearer")
    assert console.call("POST", path, token="wrong-token")[0] == 403
    assert console.call("POST", path, headers={"X-Operator-Token": "wrong"})[0] == 403
    assert console.call("POST", path, form={"token": "wrong"})[0] == 403
    assert console.call("POST", path, body={"token": ""})[0] == 401
    # nothing changed: the held window is still held, S1 not paused, no new control in the audit trail
    h = console.get_json("/api/health")
    assert seeded.held_window in {w["id"] for w in h["windows"]["held"]}
    assert not h["controls"].get("S1", {}).get("paused", False)
    assert _control_entries(console) == before


def test_reads_need_no_token_and_get_is_not_a_control(console: Console, seeded: Seeded) -> None:
    assert console.call("GET", "/api/stations/S1/pause")[0] in (404, 405)
    status, _h, body = console.call("GET", "/api/health")
    assert status == 503 and not json.loads(body)["verdict"]["ok"]  # the seeded ledger holds a window


def test_pause_and_resume(console: Console, token: str) -> None:
    station = "PAUSE1"
    status, _h, body = console.call("POST", f"/api/stations/{station}/pause", token=token,
                                    headers={"X-Operator": "alice <script>"})
    assert status == 200 and json.loads(body)["paused"] is True
    h = console.get_json("/api/health")
    assert h["controls"][station]["paused"] is True
    assert any(r["station"] == station and r["paused"] for r in h["pool"]["stations"])
    audit = console.get_json("/api/audit")["audit"]
    entry = next(a for a in audit if a["subject"] == station)
    assert entry["action"] == "station-paused" and entry["actor"] == "operator:alice script"
    status, _h, body = console.call("POST", f"/api/stations/{station}/resume", token=token)
    assert status == 200 and json.loads(body)["paused"] is False
    assert console.get_json("/api/health")["controls"][station]["paused"] is False
    assert console.call("POST", f"/api/stations/{station}/explode", token=token)[0] == 404


def test_release_held_window_retry_and_carry(console: Console, seeded: Seeded, token: str) -> None:
    retry = make_held(seeded, "RH")
    carry = make_held(seeded, "CH", seed=98)
    held = {w["id"] for w in console.get_json("/api/windows?state=held")["windows"]}
    assert {retry, carry} <= held

    status, _h, body = console.call("POST", f"/api/windows/{quote(retry, safe='')}/release", token=token,
                                    body={"mode": "retry", "note": "config fixed"})
    assert status == 200 and json.loads(body)["state"] == "open"
    status, _h, body = console.call("POST", f"/api/windows/{quote(carry, safe='')}/release", token=token,
                                    form={"mode": "carry"})
    assert status == 200 and json.loads(body)["state"] == "carried"

    states = {w["id"]: w["state"] for w in console.get_json("/api/windows?state=open,carried,held")["windows"]}
    assert states[retry] == "open" and states[carry] == "carried"
    # the worker's due-window scan now picks the re-opened window up again (it is idle)
    from datetime import UTC, datetime

    from db.ledger import due_windows
    from stream.worker.release import window_policy

    assert retry in due_windows(seeded.db, window_policy(seeded.settings), 1.0, datetime.now(UTC))
    audit = [a for a in console.get_json("/api/audit?limit=1000")["audit"] if a["action"] == "window-released"]
    assert {a["subject"]: a["detail"]["mode"] for a in audit} == {retry: "retry", carry: "carry"}
    assert next(a for a in audit if a["subject"] == retry)["detail"]["note"] == "config fixed"

    # a window that is not held cannot be released; an unknown one is 404; a bad mode is 400
    assert console.call("POST", f"/api/windows/{quote(retry, safe='')}/release", token=token)[0] == 409
    assert console.call("POST", "/api/windows/nope/release", token=token)[0] == 404
    assert console.call("POST", f"/api/windows/{quote(seeded.held_window, safe='')}/release", token=token,
                        body={"mode": "publish-anyway"})[0] == 400


def test_html_form_control_renders_a_page(console: Console, token: str) -> None:
    status, headers, body = console.call("POST", "/api/stations/FORM1/pause", form={"token": token, "actor": "bob"},
                                         headers={"Accept": "text/html"})
    assert status == 200 and headers["Content-Type"].startswith("text/html") and "done" in body
    status, headers, body = console.call("POST", "/api/stations/FORM1/resume", form={"token": "nope"},
                                         headers={"Accept": "text/html"})
    assert status == 403 and headers["Content-Type"].startswith("text/html") and "wrong operator token" in body


def test_reverify_without_broker_is_a_clear_error(console: Console, seeded: Seeded, token: str) -> None:
    status, _h, body = console.call("POST", f"/api/releases/{seeded.releases['S1']}/verify", token=token)
    assert status == 503 and "no broker configured" in body
    assert console.call("POST", "/api/releases/r-nope/verify", token=token)[0] == 404


def test_no_token_configured_means_read_only(seeded: Seeded) -> None:
    settings = seeded.settings.with_updates(operator_token=None)
    c = Console(settings, seeded.db, broker_timeout_s=1.0)
    try:
        assert c.get_json("/api/health")["read_only"] is True
        assert c.call("POST", "/api/stations/S1/pause")[0] == 401
        status, _h, body = c.call("POST", "/api/stations/S1/pause", token="anything")
        assert status == 403 and "disabled" in body
    finally:
        c.close()


def test_unmigrated_database_is_503(seeded: Seeded, tmp_path: Path) -> None:
    settings = seeded.settings.with_updates(database_url=f"sqlite:///{tmp_path / 'empty.db'}")
    c = Console(settings, broker_timeout_s=1.0)
    try:
        status, _h, body = c.call("GET", "/api/releases")
        assert status == 503 and "not migrated" in body
        assert c.call("GET", "/health")[0] == 503
    finally:
        c.close()


def test_register_and_remove_stations_from_the_console(console: Console, token: str) -> None:
    """The registry is managed from the health page's forms (token needed), as with `anonstream stations`."""
    assert console.call("POST", "/api/registry/add", form={"stations": "REG1"})[0] == 401
    status, _h, body = console.call("POST", "/api/registry/add", token=token,
                                    form={"stations": "REG1, REG2 REG1", "note": "north"})
    assert status == 200 and json.loads(body) == {"added": ["REG1", "REG2"], "already_registered": []}
    registry = {r["station"]: r for r in console.get_json("/api/health")["registry"]}
    assert registry["REG1"]["source"] == "operator" and registry["REG1"]["note"] == "north"
    page = console.call("GET", "/health", token=token)[2]  # the operator sees the forms
    assert 'action="/api/registry/add"' in page and 'value="REG2"' in page
    page = console.call("GET", "/health")[2]  # a reader without the token sees the registry, no form
    assert "REG2" in page and 'action="/api/registry' not in page and "name=token" not in page
    status, _h, body = console.call("POST", "/api/registry/add", token=token, body={"stations": "REG2"})
    assert status == 200 and json.loads(body)["already_registered"] == ["REG2"]
    status, _h, body = console.call("POST", "/api/registry/add", token=token, form={"stations": "../x"})
    assert status == 400 and "invalid station id" in body
    assert console.call("POST", "/api/registry/add", token=token, form={"stations": " "})[0] == 400
    status, _h, body = console.call("POST", "/api/registry/remove", token=token, form={"stations": "REG1 NOPE"})
    assert status == 200 and json.loads(body) == {"removed": ["REG1"], "not_registered": ["NOPE"]}
    assert "REG1" not in {r["station"] for r in console.get_json("/api/health")["registry"]}
    actions = [a["action"] for a in console.get_json("/api/audit?limit=1000")["audit"]]
    assert "stations-added" in actions and "stations-removed" in actions
    assert console.call("POST", "/api/registry/explode", token=token)[0] == 404


def test_flush_asks_for_a_release_of_what_waits(console: Console, token: str) -> None:
    station = "FLUSH1"  # nothing of it waits: the control says so, and is audited all the same
    assert console.call("POST", f"/api/stations/{station}/flush")[0] == 401
    status, _h, body = console.call("POST", f"/api/stations/{station}/flush", token=token)
    assert status == 200 and json.loads(body) == {"station": station, "key": f"station:{station}", "waiting": 0,
                                                  "windows_flagged": 0}
    assert any(a["action"] == "windows-flushed" for a in console.get_json("/api/audit?limit=1000")["audit"])
    assert console.call("POST", "/api/stations/S%201/flush", token=token)[0] == 400
