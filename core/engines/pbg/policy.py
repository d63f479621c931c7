"""Selection policies: pick one member of a front automatically, e.g. for a stream.

Grammar (case-insensitive)::

    policy    := ("min" | "max") INDEX [ "where" condition ( "and" condition )* ]
    condition := INDEX OP NUMBER          OP: >= > <= < == = !=

INDEX is one of k, l, S_k, S_l, GLM, CM, suppressed (see ``properties``). Example:
``min GLM where k >= 5 and l >= 3``. Ties are broken by lower GLM, then by lower lattice height,
then by the level vector, so the choice is deterministic. When no member satisfies the
conditions, :class:`core.errors.InfeasibleError` names the closest members (smallest total
relative violation).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.engines.pbg.properties import INDEX_NAMES, Indices, canonical_index
from core.errors import InfeasibleError, ParamsError

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
    "==": operator.eq, "=": operator.eq, "!=": operator.ne,
}
_TOKEN = re.compile(r"\s*(>=|<=|==|!=|[<>=]|[A-Za-zℓ_][\w\-ℓ]*|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


@dataclass(frozen=True)
class Condition:
    index: str
    op: str
    value: float

    def holds(self, m: Indices) -> bool:
        return _OPS[self.op](m.value(self.index), self.value)

    def violation(self, m: Indices) -> float:
        """Relative distance from satisfying the condition (0 when it holds)."""
        if self.holds(m):
            return 0.0
        return abs(m.value(self.index) - self.value) / max(abs(self.value), 1.0) + 1e-9

    def __str__(self) -> str:
        v = int(self.value) if float(self.value).is_integer() else self.value
        return f"{self.index} {self.op} {v}"


@dataclass(frozen=True)
class Policy:
    sense: str  # "min" or "max"
    index: str
    conditions: tuple[Condition, ...] = ()

    def __str__(self) -> str:
        cond = " and ".join(str(c) for c in self.conditions)
        return f"{self.sense} {self.index}" + (f" where {cond}" if cond else "")

    def indices_used(self) -> tuple[str, ...]:
        return (self.index, *(c.index for c in self.conditions))

    def select(self, front: Sequence[Indices]) -> int:
        """Position in ``front`` of the chosen member."""
        if not front:
            raise InfeasibleError("the front is empty: nothing to select", reason="infeasible")
        ok = [i for i, m in enumerate(front) if all(c.holds(m) for c in self.conditions)]
        if not ok:
            raise InfeasibleError(self._closest_message(front), reason="infeasible")
        sign = 1.0 if self.sense == "min" else -1.0
        return min(ok, key=lambda i: (sign * front[i].value(self.index), front[i].GLM, sum(front[i].levels),
                                      front[i].levels))

    def _closest_message(self, front: Sequence[Indices]) -> str:
        ranked = sorted(range(len(front)), key=lambda i: sum(c.violation(front[i]) for c in self.conditions))
        shown = []
        for i in ranked[:3]:
            m = front[i]
            vals = ", ".join(f"{n}={_fmt(m.value(n))}" for n in dict.fromkeys(self.indices_used()))
            shown.append(f"#{i} ({vals}; levels {list(m.levels)})")
        return (f"no front member satisfies '{self}' ({len(front)} members); closest: " + "; ".join(shown))


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def _index(tok: str, policy: str) -> str:
    try:
        return canonical_index(tok, INDEX_NAMES)
    except ParamsError:
        raise ParamsError(f"selection policy '{policy}': unknown index '{tok}'; valid: "
                          f"{', '.join(INDEX_NAMES)}") from None


def parse_policy(text: str) -> Policy:
    """Parse a policy string; syntax errors are :class:`ParamsError` naming the problem."""
    src = text.strip()
    toks: list[str] = []
    pos = 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m or not m.group(1):
            raise ParamsError(f"selection policy '{src}': cannot read '{src[pos:].strip()[:20]}'")
        toks.append(m.group(1))
        pos = m.end()
        while pos < len(src) and src[pos].isspace():
            pos += 1
    if len(toks) < 2 or toks[0].lower() not in ("min", "max"):
        raise ParamsError(f"selection policy '{src}': expected 'min INDEX' or 'max INDEX' "
                          "[where INDEX >= NUMBER and ...], e.g. 'min GLM where k >= 5 and l >= 3'")
    sense, index = toks[0].lower(), _index(toks[1], src)
    rest = toks[2:]
    conditions: list[Condition] = []
    if rest:
        if rest[0].lower() != "where":
            raise ParamsError(f"selection policy '{src}': expected 'where' after '{toks[1]}', got '{rest[0]}'")
        rest = rest[1:]
        while True:
            if len(rest) < 3 or rest[1] not in _OPS:
                raise ParamsError(f"selection policy '{src}': expected a condition like 'k >= 5' "
                                  f"at '{' '.join(rest) or 'end'}'")
            try:
                value = float(rest[2])
            except ValueError:
                raise ParamsError(f"selection policy '{src}': '{rest[2]}' is not a number") from None
            conditions.append(Condition(_index(rest[0], src), rest[1], value))
            rest = rest[3:]
            if not rest:
                break
            if rest[0].lower() != "and" or len(rest) == 1:
                raise ParamsError(f"selection policy '{src}': expected 'and' between conditions, "
                                  f"got '{' '.join(rest)}'")
            rest = rest[1:]
    return Policy(sense, index, tuple(conditions))
