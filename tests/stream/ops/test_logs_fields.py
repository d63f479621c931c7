"""Every log line about a window or a release carries the `window` and `release_id` fields (docs/operations.md)."""

from __future__ import annotations

import ast
import json
import logging
from pathlib import Path

from stream.ops.logs import JsonFormatter, TextFormatter, ctx, release_ctx

ROOT = Path(__file__).resolve().parents[3]
LEVELS = {"debug", "info", "warning", "error", "critical", "exception"}


def _log_calls(path: Path) -> list[ast.Call]:
    calls = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LEVELS
                and isinstance(node.func.value, ast.Name) and node.func.value.id in ("log", "ALERT")):
            calls.append(node)
    return calls


def test_every_worker_log_call_about_a_window_or_release_passes_the_fields() -> None:
    missing, about_count = [], 0
    for path in sorted((ROOT / "stream" / "worker").glob("*.py")):
        for call in _log_calls(path):
            first = call.args[0] if call.args else None
            text = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
            about = any(w in text for w in ("window %s", "release %s", "windows %s", "window {"))
            about_count += about
            if about and not any(k.arg == "extra" for k in call.keywords):
                missing.append(f"{path.name}:{call.lineno}: {text[:60]}")
    assert not missing, missing
    assert about_count >= 10  # the scan sees the calls (release, carry, hold, publish, leases, risk ...)


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord("stream.worker.release", logging.INFO, __file__, 1, "window %s carried", ("w-1",), None)
    for k, v in extra.items():
        setattr(record, k, v)
    return record


def test_a_window_line_has_both_fields_and_a_release_line_its_window() -> None:
    line = json.loads(JsonFormatter().format(_record(**ctx(window="w-1"))))
    assert line["window"] == "w-1" and "release_id" in line and line["release_id"] is None
    assert "release_id" not in json.loads(JsonFormatter().format(_record()))  # a line about neither
    manifest = json.dumps({"release_id": "r-1", "window": {"id": "w-1", "key": "station:S1"}}).encode()
    line = json.loads(JsonFormatter().format(_record(**release_ctx("r-1", manifest))))
    assert (line["window"], line["release_id"]) == ("w-1", "r-1")
    assert release_ctx("r-2", b"not json") == {"release_id": "r-2", "window": None}
    assert TextFormatter().format(_record(**ctx(window="w-1"))).endswith("[window=w-1]")
