"""The verdict: one line that says the service is healthy, or the first thing that needs action and what to do.

Both the console's ``/health`` page and ``anonstream status`` open with it; both compute it here, from the
health dict :meth:`stream.console.service.ConsoleService.health` returns (no I/O of its own). The checks, in
the order they are reported (the first that fires is the verdict; every one that fires is listed):

1. **worker** (exit 5): no worker is running (heartbeats stopped, or none in the consumer group);
2. **held window** (exit 4): a window the worker refused to release: its reason sorted into a risk
   refusal, a budget refusal, an engine error or a failed verification, with the button to press;
3. **lag** (exit 7): the workers are :data:`LAG_ACT` reports or more behind the reports topic;
4. **dead letters** (exit 6): reports were dead-lettered in the last :data:`DLQ_RECENT_S` seconds.

Exit codes of ``anonstream status`` (docs/operations.md, "Exit codes"): 0 healthy, 1 still busy after
``--wait``, 2 usage, 3 a service unreachable, then the codes above.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

EXIT_HEALTHY, EXIT_HELD, EXIT_WORKER, EXIT_DLQ, EXIT_LAG = 0, 4, 5, 6, 7
EXIT_MEANINGS = {EXIT_HELD: "a window is held (a release was refused): review it, then release it or carry it",
                 EXIT_WORKER: "no worker is running", EXIT_DLQ: "reports are being dead-lettered",
                 EXIT_LAG: "the workers are behind the reports topic"}
LAG_ACT = 1000  # reports behind before the lag needs action
DLQ_RECENT_S = 900.0  # dead letters this recent count as "growing"
RELEASE_BUTTON = "“release after review” (console, Health page, Held windows)"


@dataclass(frozen=True)
class Finding:
    """One thing that needs action: what, and what to do about it."""

    check: str  # worker | held | lag | dlq
    what: str
    action: str
    code: int

    @property
    def line(self) -> str:
        return f"{self.what}: {self.action}"


@dataclass(frozen=True)
class Verdict:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # not failures: what could not be checked

    @property
    def healthy(self) -> bool:
        return not self.findings

    @property
    def code(self) -> int:
        return self.findings[0].code if self.findings else EXIT_HEALTHY

    @property
    def line(self) -> str:
        if self.findings:
            more = len(self.findings) - 1
            return f"ACTION NEEDED: {self.findings[0].line}" + (f" (and {more} more below)" if more else "")
        worker = "" if any(n.startswith("worker not checked") for n in self.notes) else "worker running, "
        return f"HEALTHY: {worker}no held window, no backlog, no recent dead letters" + (
            f" ({'; '.join(self.notes)})" if self.notes else "")

    def as_dict(self) -> dict[str, Any]:
        return {"healthy": self.healthy, "code": self.code, "line": self.line, "notes": self.notes,
                "findings": [{"check": f.check, "what": f.what, "action": f.action, "code": f.code}
                             for f in self.findings]}


def age_text(seconds: float | None) -> str:
    """``42 s``, ``17 min``, ``3.5 h``, ``2.0 days``; ``–`` when unknown."""
    if seconds is None:
        return "–"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 172800 else f"{seconds / 86400:.1f} days"


def _when(iso: str | None, now: datetime) -> float | None:
    if not iso:
        return None
    try:
        t = datetime.fromisoformat(iso)
    except ValueError:
        return None
    return (now - (t if t.tzinfo else t.replace(tzinfo=UTC))).total_seconds()


def _worker(h: dict[str, Any], now: datetime) -> Finding | None:
    wk = h.get("worker") or {}
    status = str(wk.get("status") or "unknown")
    if status == "running":
        return None
    beats = [b for b in wk.get("heartbeats") or [] if b.get("heartbeat_age_s") is not None]
    if beats:
        last = min(beats, key=lambda b: b["heartbeat_age_s"])
        age = float(last["heartbeat_age_s"])
        since = (f"since {now - timedelta(seconds=age):%Y-%m-%d %H:%M} UTC ({age_text(age)} ago: last heartbeat of "
                 f"{last['worker']})")
    elif status == "unknown":  # neither a heartbeat nor a reachable broker: nothing says a worker ever ran
        return None
    else:
        since = "(none in the consumer group, no heartbeat in the ledger)"
    pending = (h.get("pool") or {}).get("pending_total") or 0
    return Finding("worker", f"no worker running {since}" + (f"; {pending} report(s) wait" if pending else ""),
                   "start one (`anonstream run`, or `docker compose up -d worker`) and read the last worker's log "
                   "for why it stopped", EXIT_WORKER)


def held_kind(reason: str) -> tuple[str, str, str]:
    """What kind of refusal a held window's reason is, what to fix first, and the release mode to pick then."""
    r = reason.lower()
    if "budget" in r:
        return ("release refused by the privacy budget", "wait for the budget's next period or raise the budget",
                "carry into next window")
    if "risk" in r:
        return ("release refused by the risk bound", "raise k (or relax max_risk / avg_risk if the policy allows)",
                "retry now")
    if r.startswith("verification failed"):
        return "release failed verification", "fix the setting the failures name", "retry now"
    if "conflicting" in r:
        return "release kept conflicting with concurrent releases", "nothing to fix", "retry now"
    return "the engine refused the window", "fix the engine or its parameters and restart the workers", "retry now"


def _held(h: dict[str, Any], now: datetime) -> Finding | None:
    held = (h.get("windows") or {}).get("held") or []
    if not held:
        return None
    w = held[-1]  # the oldest (the list is newest first)
    kind, fix, mode = held_kind(str(w.get("reason") or ""))
    age = _when(w.get("closed_at"), now)
    more = f" (and {len(held) - 1} more held window(s))" if len(held) > 1 else ""
    return Finding("held", f"window {w['id']} held for {age_text(max(age or 0.0, 0.0))}, {w.get('count')} report(s) "
                   f"unpublished: {kind} ({w.get('reason')}){more}",
                   f"{fix}, then press {RELEASE_BUTTON} with “{mode}”", EXIT_HELD)


def _lag(h: dict[str, Any]) -> Finding | None:
    lag = h.get("lag") or {}
    total = lag.get("total")
    if lag.get("error") or not isinstance(total, int | float) or total < LAG_ACT:
        return None
    return Finding("lag", f"the workers are {int(total)} report(s) behind {lag.get('topic')}",
                   "check that every worker is running and not failing (its log, `anonstream_failures_total`); "
                   "add workers (compose `deploy.replicas`) if they are all busy", EXIT_LAG)


def _dlq(h: dict[str, Any], now: datetime) -> Finding | None:
    recent = [e for e in (h.get("dlq") or {}).get("recent") or []
              if (age := _when(e.get("at"), now)) is not None and age <= DLQ_RECENT_S]
    if not recent:
        return None
    by: dict[str, set[str]] = {}
    for e in recent:
        by.setdefault(str(e.get("reason")), set()).add(str(e.get("station")).strip("()"))
    n = f"{len(recent)}+" if len(recent) == len((h.get("dlq") or {}).get("recent") or []) >= 20 else str(len(recent))
    reasons = ", ".join(f"{reason} ({', '.join(sorted(st))})" for reason, st in sorted(by.items()))
    if "unknown-station" in by:
        fix = (f"register the station(s): `anonstream stations add {' '.join(sorted(by['unknown-station']))}` "
               "(their reports are rejected until then); other reasons: fix the export at the station and push again")
    else:
        fix = "fix the export at the station and push it again (reasons: Health page → Dead-letter queue)"
    return Finding("dlq", f"{n} report(s) dead-lettered in the last {DLQ_RECENT_S / 60:.0f} min: {reasons}", fix,
                   EXIT_DLQ)


def verdict(h: dict[str, Any], now: datetime | None = None) -> Verdict:
    """The verdict on a health dict (see the module docstring for the checks and their order)."""
    now = now or datetime.now(UTC)
    found = [f for f in (_worker(h, now), _held(h, now), _lag(h), _dlq(h, now)) if f is not None]
    notes = []
    lag = h.get("lag") or {}
    if lag.get("error"):
        notes.append(f"consumer lag not checked: {lag['error']}")
    if (h.get("worker") or {}).get("status") == "unknown":
        notes.append("worker not checked: no heartbeat and no broker")
    return Verdict(found, notes)
