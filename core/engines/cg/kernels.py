"""numba kernels of the CG search: optimal segmentation of an ordering, and class-space local search.

Shared conventions:

* QI arrays come from :class:`core.engines.cg.problem.Problem` (``kind``, ``xr`` as ``x``, ``span``,
  ``gr`` as ``g``, ``height``, ``cost_flat``, ``cost_off``, ``w``), row-major so that one tuple's
  values and codes are contiguous; a class's loss per tuple is
  sum_a w_a * IL_a(class) with w summing to 1.
* ``mode`` 0 is CG-Kanon (privacy term: severity penalty), 1 is CG-Diverse (privacy term:
  severity-weighted frequency of each tuple's own offence in its class).
* Both objective terms are normalised so that a release's totals are ``lm`` and ``pr`` in [0, 1]:
  ``lm_scale`` = 1 / n and ``pr_scale`` / ``pr_offset`` as set up by :mod:`core.engines.cg.runner`.

All kernels live in this one module on purpose: numba's on-disk cache (``cache=True``) is keyed on
the file of the function compiled and does not notice edits to callees in other modules, so a
kernel split across files could silently keep a stale inlined callee after an upgrade.

Local search (``sweep``):

State (built by :mod:`core.engines.cg.state`): regular classes 0..C-1 keep their members in
``mem`` (C x cap) and their generalization state (``cmn``, ``cmx``, ``clv``, ``cref``, loss per
tuple ``il``); index C is the CG-Diverse top class (every QI ``*``, loss 1 per tuple), whose members
are not listed. ``cls[t]`` is t's class (-1: suppressed). ``tot`` = [loss total, privacy total].

For each visited tuple t, the candidates are the tuples at distance 1..R from t in two orderings;
for each candidate u (in class B != t's class A) the kernel evaluates moving t to B and swapping
t with u (only when the move does not already improve), and for CG-Diverse moving t into or out
of the top class. The best move that lowers the objective max(pr, lm) + eps * (pr + lm) is applied.
Every state the kernel reaches is valid.
"""

from __future__ import annotations

import numpy as np
from numba import njit

INF = np.inf
# "no row" as a typed int64: a bare -1 passed to another kernel types as Literal[int](-1), and numba
# compiles a second copy of the callee for it (a fresh install compiled members_il three times).
NO_ROW = np.int64(-1)
ALL_CRITICAL = np.int64(-2)  # a class so small that removing any member may change it (see _criticals)


@njit(cache=True, nogil=True)
def diverse_ok(distinct, sum_s, size, lmin, ase_rule, ltarget):  # pragma: no cover - numba
    if distinct < lmin:
        return False
    if ase_rule:
        need = min(np.ceil(sum_s / size - 1e-9), ltarget)
        return distinct >= need
    return True


@njit(cache=True, nogil=True)
def class_term(mode, size, sum_s, qv, cap, pr_scale):  # pragma: no cover - numba
    """A class's contribution to the (unshifted) privacy term."""
    if size == 0:
        return 0.0
    if mode == 0:
        return sum_s * (1.0 / size - 1.0 / cap) * pr_scale
    return qv / size * pr_scale


@njit(cache=True, nogil=True)
def _state_il(kind, span, g, cost_flat, cost_off, w, mn, mx, lv, ref):  # pragma: no cover - numba
    il = 0.0
    for a in range(len(kind)):
        if kind[a] == 0:
            c = (mx[a] - mn[a]) / span[a]
            il += w[a] * (c if c < 1.0 else 1.0)
        else:
            il += w[a] * cost_flat[cost_off[a, lv[a]] + g[ref, a, lv[a]]]
    return il


@njit(cache=True, nogil=True)
def _absorb(kind, x, g, height, mn, mx, lv, ref, t):  # pragma: no cover - numba
    """Extend the generalization state (mn, mx, lv around ``ref``) to cover tuple ``t``."""
    for a in range(len(kind)):
        if kind[a] == 0:
            v = x[t, a]
            if v < mn[a]:
                mn[a] = v
            if v > mx[a]:
                mx[a] = v
        else:
            lvl = lv[a]
            while lvl < height[a] and g[t, a, lvl] != g[ref, a, lvl]:
                lvl += 1
            lv[a] = lvl


@njit(cache=True, nogil=True)
def _start(kind, x, mn, mx, lv, t):  # pragma: no cover - numba
    for a in range(len(kind)):
        mn[a] = x[t, a]
        mx[a] = x[t, a]
        lv[a] = 0


@njit(cache=True, nogil=True)
def _add_sensitive(v, severity, i, stamp, cnt, distinct, qv, sum_s):  # pragma: no cover - numba
    """A row with sensitive value ``v`` joins the class growing from position ``i``: its distinct count,
    the sum over values of severity-weighted squared counts (``qv``) and the severity sum, updated."""
    if stamp[v] != i:
        stamp[v] = i
        cnt[v] = 0
    if cnt[v] == 0:
        distinct += 1
    qv += severity * (2 * cnt[v] + 1)
    cnt[v] += 1
    return distinct, qv, sum_s + severity


@njit(cache=True, nogil=True)
def _classes_of(back, n):  # pragma: no cover - numba
    """The class number of each position (-1 = skipped) and the count, read back from ``back`` (each
    prefix's last class size, 0 = its last row skipped)."""
    out = np.full(n, -1, np.int64)
    j = n
    cid = 0
    while j > 0:
        size = back[j]
        if size <= 0:
            j -= 1
            continue
        for p in range(j - size, j):
            out[p] = cid
        cid += 1
        j -= size
    return out, cid


@njit(cache=True, nogil=True)
def segment(order, kmin, cap, lam, mode, lmin, ase_rule, ltarget, skip_cost, lm_scale, pr_scale,
            kind, x, span, g, height, cost_flat, cost_off, w, sens, sev, m):  # pragma: no cover - numba
    """Optimal split of ``order`` into consecutive classes of kmin..cap rows (plus skipped rows).

    Minimises sum over classes of (1 - lam) * loss + lam * privacy term, where a skipped row costs
    ``skip_cost[row]``. Returns the class number of each position (-1 = skipped) and the count.
    """
    n = len(order)
    d = len(kind)
    best = np.full(n + 1, INF)
    back = np.full(n + 1, -1, np.int64)
    best[0] = 0.0
    mn = np.empty(d)
    mx = np.empty(d)
    lv = np.zeros(d, np.int64)
    cnt = np.zeros(m, np.int64)
    stamp = np.full(m, -1, np.int64)
    for i in range(n):
        b = best[i]
        if b == INF:
            continue
        ref = order[i]
        c = b + skip_cost[ref]
        if c < best[i + 1]:
            best[i + 1] = c
            back[i + 1] = 0
        _start(kind, x, mn, mx, lv, ref)
        sum_s = 0.0
        qv = 0.0
        distinct = 0
        for size in range(1, min(cap, n - i) + 1):
            t = order[i + size - 1]
            if size > 1:
                _absorb(kind, x, g, height, mn, mx, lv, ref, t)
            distinct, qv, sum_s = _add_sensitive(sens[t], sev[t], i, stamp, cnt, distinct, qv, sum_s)
            if size < kmin:
                continue
            if mode == 1 and not diverse_ok(distinct, sum_s, size, lmin, ase_rule, ltarget):
                continue
            il = _state_il(kind, span, g, cost_flat, cost_off, w, mn, mx, lv, ref)
            c = b + (1.0 - lam) * size * il * lm_scale + lam * class_term(mode, size, sum_s, qv, cap, pr_scale)
            if c < best[i + size]:
                best[i + size] = c
                back[i + size] = size
    return _classes_of(back, n)


@njit(cache=True, nogil=True)
def segment_table(order, kmin, cap, mode, lmin, ase_rule, ltarget, pr_scale, kind, x, span, g, height, cost_flat,
                  cost_off, w, sens, sev, m):  # pragma: no cover - numba
    """The classes :func:`segment` may form along ``order``, for every value of its ``lam``.

    For each start position i and size kmin + j (up to cap): ``ok[i, j]`` whether ``order[i:i + size]``
    is a valid class, ``il[i, j]`` its loss per tuple and ``pr[i, j]`` its privacy term, computed
    exactly as :func:`segment` computes them (same operations, same order), so
    :func:`segment_with` returns :func:`segment`'s split to the last bit.
    """
    n = len(order)
    d = len(kind)
    width = cap - kmin + 1
    ok = np.zeros((n, width), np.bool_)
    il_t = np.zeros((n, width))
    pr_t = np.zeros((n, width))
    mn = np.empty(d)
    mx = np.empty(d)
    lv = np.zeros(d, np.int64)
    cnt = np.zeros(m, np.int64)
    stamp = np.full(m, -1, np.int64)
    for i in range(n):
        ref = order[i]
        _start(kind, x, mn, mx, lv, ref)
        sum_s = 0.0
        qv = 0.0
        distinct = 0
        for size in range(1, min(cap, n - i) + 1):
            t = order[i + size - 1]
            if size > 1:
                _absorb(kind, x, g, height, mn, mx, lv, ref, t)
            distinct, qv, sum_s = _add_sensitive(sens[t], sev[t], i, stamp, cnt, distinct, qv, sum_s)
            if size < kmin:
                continue
            if mode == 1 and not diverse_ok(distinct, sum_s, size, lmin, ase_rule, ltarget):
                continue
            ok[i, size - kmin] = True
            il_t[i, size - kmin] = _state_il(kind, span, g, cost_flat, cost_off, w, mn, mx, lv, ref)
            pr_t[i, size - kmin] = class_term(mode, size, sum_s, qv, cap, pr_scale)
    return ok, il_t, pr_t


@njit(cache=True, nogil=True)
def segment_with(n, kmin, cap, lam, skip_cost, lm_scale, order, ok, il_t, pr_t):  # pragma: no cover - numba
    """:func:`segment` from the classes of :func:`segment_table` (the same split and class numbers)."""
    best = np.full(n + 1, INF)
    back = np.full(n + 1, -1, np.int64)
    best[0] = 0.0
    for i in range(n):
        b = best[i]
        if b == INF:
            continue
        c = b + skip_cost[order[i]]
        if c < best[i + 1]:
            best[i + 1] = c
            back[i + 1] = 0
        for size in range(kmin, min(cap, n - i) + 1):
            if not ok[i, size - kmin]:
                continue
            c = b + (1.0 - lam) * size * il_t[i, size - kmin] * lm_scale + lam * pr_t[i, size - kmin]
            if c < best[i + size]:
                best[i + size] = c
                back[i + size] = size
    return _classes_of(back, n)


@njit(cache=True, nogil=True)
def members_il(c, skip, extra, mem, size, kind, x, span, g, height, cost_flat, cost_off, w,
               mn, mx, lv):  # pragma: no cover - numba
    """Loss per tuple of class ``c`` without member ``skip`` and with tuple ``extra`` (-1: none)."""
    ref = NO_ROW
    for j in range(size[c]):
        t = mem[c, j]
        if t == skip:
            continue
        if ref < 0:
            ref = t
            _start(kind, x, mn, mx, lv, t)
        else:
            _absorb(kind, x, g, height, mn, mx, lv, ref, t)
    if extra >= 0:
        if ref < 0:
            ref = extra
            _start(kind, x, mn, mx, lv, extra)
        else:
            _absorb(kind, x, g, height, mn, mx, lv, ref, extra)
    if ref < 0:
        return 0.0, ref
    return _state_il(kind, span, g, cost_flat, cost_off, w, mn, mx, lv, ref), ref


@njit(cache=True, nogil=True)
def refresh(c, mem, size, il, cmn, cmx, clv, cref, crit, lv2, ext2, kind, x, span, g, height, cost_flat, cost_off,
            w):  # pragma: no cover - numba
    """Recompute the stored generalization state, loss and critical members of regular class ``c``."""
    val, ref = members_il(c, NO_ROW, NO_ROW, mem, size, kind, x, span, g, height, cost_flat, cost_off, w,
                          cmn[c], cmx[c], clv[c])
    il[c] = val
    cref[c] = ref
    _criticals(c, mem, size, kind, x, g, height, cmn, cmx, clv, crit, lv2, ext2)


@njit(cache=True, nogil=True)
def refresh_all(n_classes, mem, size, il, cmn, cmx, clv, cref, kind, x, span, g, height, cost_flat, cost_off,
                w):  # pragma: no cover - numba
    """The generalization state and loss of every regular class (critical members: :func:`criticals_all`)."""
    for c in range(n_classes):
        val, ref = members_il(c, NO_ROW, NO_ROW, mem, size, kind, x, span, g, height, cost_flat, cost_off, w,
                              cmn[c], cmx[c], clv[c])
        il[c] = val
        cref[c] = ref


@njit(cache=True, nogil=True)
def criticals_all(n_classes, mem, size, kind, x, g, height, cmn, cmx, clv, crit, lv2,
                  ext2):  # pragma: no cover - numba
    """The critical members of every regular class (:func:`_criticals`), once a state is to be searched."""
    for c in range(n_classes):
        _criticals(c, mem, size, kind, x, g, height, cmn, cmx, clv, crit, lv2, ext2)


@njit(cache=True, nogil=True)
def fill_members(cls, n_classes, mem, pos):  # pragma: no cover - numba
    """Members of each regular class in ``mem`` (rows in increasing order) and each row's slot in ``pos``."""
    fill = np.zeros(n_classes, np.int64)
    for t in range(len(cls)):
        c = cls[t]
        if 0 <= c < n_classes:
            mem[c, fill[c]] = t
            pos[t] = fill[c]
            fill[c] += 1


@njit(cache=True, nogil=True)
def _criticals(c, mem, size, kind, x, g, height, cmn, cmx, clv, crit, lv2, ext2):  # pragma: no cover - numba
    """Which single member's removal changes regular class ``c``'s generalization, and to what.

    Per QI: ``crit[c, a, 0]`` is the member whose removal lowers the class's level (a TREE QI: its
    code one level below is shared by every other member, and ``lv2[c, a]`` is the level without
    it) or raises its minimum (a RANGE QI: the only member at the minimum, ``ext2[c, a, 0]`` the
    minimum of the others); ``crit[c, a, 1]`` / ``ext2[c, a, 1]`` the same for a RANGE QI's maximum.
    -1: removing any one member changes nothing; ``ALL_CRITICAL``: classes of two or fewer rows, left
    to :func:`members_il`. Only valid when every TREE QI nests (:attr:`Problem.nests`).
    """
    n_c = size[c]
    for a in range(len(kind)):
        crit[c, a, 0] = NO_ROW
        crit[c, a, 1] = NO_ROW
        if n_c <= 2:
            crit[c, a, 0] = ALL_CRITICAL
            crit[c, a, 1] = ALL_CRITICAL
            continue
        if kind[a] == 0:
            lo = cmn[c, a]
            hi = cmx[c, a]
            n_lo = 0
            n_hi = 0
            at_lo = NO_ROW
            at_hi = NO_ROW
            lo2 = INF
            hi2 = -INF
            for j in range(n_c):
                t = mem[c, j]
                v = x[t, a]
                if v == lo:
                    n_lo += 1
                    at_lo = t
                elif v < lo2:
                    lo2 = v
                if v == hi:
                    n_hi += 1
                    at_hi = t
                elif v > hi2:
                    hi2 = v
            if n_lo == 1:
                crit[c, a, 0] = at_lo
                ext2[c, a, 0] = lo2
            if n_hi == 1:
                crit[c, a, 1] = at_hi
                ext2[c, a, 1] = hi2
            continue
        top_lv = clv[c, a]
        if top_lv == 0:
            continue
        first = mem[c, 0]
        code0 = g[first, a, top_lv - 1]
        n0 = 0
        n1 = 0
        other = NO_ROW
        code1 = -1
        several = False
        for j in range(n_c):
            t = mem[c, j]
            code = g[t, a, top_lv - 1]
            if code == code0:
                n0 += 1
            elif other < 0:
                other = t
                code1 = code
                n1 = 1
            elif code == code1:
                n1 += 1
            else:
                several = True
                break
        if several or other < 0 or (n0 != 1 and n1 != 1):
            continue
        gone = first if n0 == 1 else other
        ref = NO_ROW
        lvl = 0
        for j in range(n_c):
            t = mem[c, j]
            if t == gone:
                continue
            if ref < 0:
                ref = t
                continue
            while lvl < height[a] and g[t, a, lvl] != g[ref, a, lvl]:
                lvl += 1
        crit[c, a, 0] = gone
        lv2[c, a] = lvl


@njit(cache=True, nogil=True)
def _without(c, u, mem, cmn, cmx, clv, cref, crit, lv2, ext2, kind, mn, mx, lv):  # pragma: no cover - numba
    """The generalization state of regular class ``c`` without its member ``u`` into (mn, mx, lv), from the
    class's stored state and critical members; returns a member of the rest to use as reference, or -1
    when the class is too small for the shortcut (then :func:`members_il` computes it)."""
    for a in range(len(kind)):
        lo = crit[c, a, 0]
        hi = crit[c, a, 1]
        if lo == ALL_CRITICAL or hi == ALL_CRITICAL:
            return NO_ROW
        if kind[a] == 0:
            mn[a] = ext2[c, a, 0] if lo == u else cmn[c, a]
            mx[a] = ext2[c, a, 1] if hi == u else cmx[c, a]
        else:
            lv[a] = lv2[c, a] if lo == u else clv[c, a]
    ref = cref[c]
    if ref == u:
        ref = mem[c, 0] if mem[c, 0] != u else mem[c, 1]
    return ref


@njit(cache=True, nogil=True)
def _il_plus(kind, x, span, g, height, cost_flat, cost_off, w, mn, mx, lv, ref, t):  # pragma: no cover - numba
    """Loss per tuple of the state (mn, mx, lv around ``ref``) with tuple ``t`` added, the state left as it
    is: what :func:`_absorb` then :func:`_state_il` give, with the same operations in the same order."""
    il = 0.0
    for a in range(len(kind)):
        if kind[a] == 0:
            v = x[t, a]
            lo = mn[a]
            hi = mx[a]
            if v < lo:
                lo = v
            if v > hi:
                hi = v
            c = (hi - lo) / span[a]
            il += w[a] * (c if c < 1.0 else 1.0)
        else:
            lvl = lv[a]
            while lvl < height[a] and g[t, a, lvl] != g[ref, a, lvl]:
                lvl += 1
            il += w[a] * cost_flat[cost_off[a, lvl] + g[ref, a, lvl]]
    return il


@njit(cache=True, nogil=True)
def _il_swapped(c, u, t, mem, cmn, cmx, clv, cref, crit, lv2, ext2, kind, x, span, g, height, cost_flat, cost_off,
                w):  # pragma: no cover - numba
    """Loss per tuple of regular class ``c`` with its member ``u`` replaced by tuple ``t``, read from the
    class's stored state and critical members (:func:`_without`, then :func:`_il_plus`, fused); -1.0 when
    the class is too small for that (then :func:`members_il` computes it)."""
    ref = cref[c]
    if ref == u:
        ref = mem[c, 0] if mem[c, 0] != u else mem[c, 1]
    il = 0.0
    for a in range(len(kind)):
        lo_at = crit[c, a, 0]
        hi_at = crit[c, a, 1]
        if lo_at == ALL_CRITICAL or hi_at == ALL_CRITICAL:
            return -1.0
        if kind[a] == 0:
            v = x[t, a]
            lo = ext2[c, a, 0] if lo_at == u else cmn[c, a]
            hi = ext2[c, a, 1] if hi_at == u else cmx[c, a]
            if v < lo:
                lo = v
            if v > hi:
                hi = v
            cost = (hi - lo) / span[a]
            il += w[a] * (cost if cost < 1.0 else 1.0)
        else:
            lvl = lv2[c, a] if lo_at == u else clv[c, a]
            while lvl < height[a] and g[t, a, lvl] != g[ref, a, lvl]:
                lvl += 1
            il += w[a] * cost_flat[cost_off[a, lvl] + g[ref, a, lvl]]
    return il


@njit(cache=True, nogil=True)
def objective(lm, pr_raw, pr_offset, eps):  # pragma: no cover - numba
    pr = pr_raw - pr_offset
    if pr < 0.0:
        pr = 0.0
    big = lm if lm > pr else pr
    return big + eps * (lm + pr)


@njit(cache=True, nogil=True)
def _valid(c, top, size, distinct, sum_s, kmin, cap, mode, lmin, ase_rule, ltarget):  # pragma: no cover
    if c == top:
        return size == 0 or (size >= kmin and (mode == 0 or distinct >= lmin))
    if size < kmin or size > cap:
        return False
    return mode == 0 or diverse_ok(distinct, sum_s, size, lmin, ase_rule, ltarget)


@njit(cache=True, nogil=True)
def _remove(c, t, cls, pos, mem, size, sums, qv, cnt, distinct, sens, sev):  # pragma: no cover
    v = sens[t]
    qv[c] -= sev[t] * (2 * cnt[c, v] - 1)
    cnt[c, v] -= 1
    if cnt[c, v] == 0:
        distinct[c] -= 1
    sums[c] -= sev[t]
    if c < mem.shape[0]:
        j = pos[t]
        last = mem[c, size[c] - 1]
        mem[c, j] = last
        pos[last] = j
    size[c] -= 1
    cls[t] = -1


@njit(cache=True, nogil=True)
def _add(c, t, cls, pos, mem, size, sums, qv, cnt, distinct, sens, sev):  # pragma: no cover
    v = sens[t]
    qv[c] += sev[t] * (2 * cnt[c, v] + 1)
    if cnt[c, v] == 0:
        distinct[c] += 1
    cnt[c, v] += 1
    sums[c] += sev[t]
    if c < mem.shape[0]:
        mem[c, size[c]] = t
        pos[t] = size[c]
    size[c] += 1
    cls[t] = c


@njit(cache=True, nogil=True)
def sweep(visit, o1, p1, o2, p2, radius, cls, pos, mem, size, sums, qv, cnt, distinct, il, cmn, cmx, clv,
          cref, crit, lv2, ext2, fast, tot, cver, tev, clock, full, first, mode, kmin, cap, lmin, ase_rule, ltarget,
          lm_scale, pr_scale, pr_offset, eps, kind, x, span, g, height, cost_flat, cost_off, w, sens,
          sev):  # pragma: no cover
    """One pass of best-improvement moves over the tuples in ``visit``; returns moves applied.

    With ``fast`` (every TREE QI nests, :attr:`Problem.nests`) a class without one member is read from
    the class's stored state and critical members (:func:`_without`) instead of a pass over its
    members: the same levels and bounds, hence the same losses to the last bit.

    Don't-look bits: ``clock[0]`` counts applied moves, ``cver[c]`` is the count when class c last
    changed and ``tev[t]`` the count when t was last found without an improving move. Unless
    ``full``, t is skipped when neither its class nor any candidate class changed since then.
    """
    top = mem.shape[0]
    d = len(kind)
    n = len(cls)
    mn = np.empty(d)
    mx = np.empty(d)
    lv = np.zeros(d, np.int64)
    amn = np.empty(d)
    amx = np.empty(d)
    alv = np.zeros(d, np.int64)
    a_ref = NO_ROW
    cand = np.empty(4 * radius + 1, np.int64)
    seen = np.empty(4 * radius + 1, np.int64)
    seen_ok = np.zeros(4 * radius + 1, np.bool_)
    applied = 0
    for t in visit:
        a = cls[t]
        if a < 0:
            continue
        v = sens[t]
        st = sev[t]
        # candidates: neighbours in both orderings, plus the top class for CG-Diverse
        k = 0
        for r in range(1, radius + 1):
            for q in (p1[t] - r, p1[t] + r):
                if 0 <= q < n:
                    cand[k] = o1[q]
                    k += 1
            for q in (p2[t] - r, p2[t] + r):
                if 0 <= q < n:
                    cand[k] = o2[q]
                    k += 1
        if mode == 1 and a != top and size[top] > 0:
            cand[k] = -2
            k += 1
        if not full and tev[t] >= 0 and cver[a] < tev[t]:
            fresh = False
            for ci in range(k):
                u = cand[ci]
                b = top if u == -2 else cls[u]
                if b >= 0 and cver[b] >= tev[t]:
                    fresh = True
                    break
            if not fresh:
                continue
        cur = objective(tot[0], tot[1], pr_offset, eps)
        # removal of t from A (shared by every move of t)
        a_size = size[a] - 1
        a_dist = distinct[a] - (1 if cnt[a, v] == 1 else 0)
        a_sum = sums[a] - st
        a_qv = qv[a] - st * (2 * cnt[a, v] - 1)
        rem_ok = _valid(a, top, a_size, a_dist, a_sum, kmin, cap, mode, lmin, ase_rule, ltarget)
        if a == top:
            a_lm = -lm_scale
        else:
            a_ref = _without(a, t, mem, cmn, cmx, clv, cref, crit, lv2, ext2, kind, amn, amx, alv) if fast else NO_ROW
            if a_ref >= 0:
                a_il = _state_il(kind, span, g, cost_flat, cost_off, w, amn, amx, alv, a_ref)
            else:
                a_il, a_ref = members_il(a, t, NO_ROW, mem, size, kind, x, span, g, height, cost_flat, cost_off, w,
                                         amn, amx, alv)
            a_lm = (a_size * a_il - size[a] * il[a]) * lm_scale
        a_pr = class_term(mode, a_size, a_sum, a_qv, cap, pr_scale) - class_term(mode, size[a], sums[a], qv[a],
                                                                                 cap, pr_scale)
        best_gain = 1e-12
        best_kind = 0
        best_u = NO_ROW
        best_b = NO_ROW
        tried = 0
        for ci in range(k):
            if first and best_kind != 0:
                break
            u = cand[ci]
            b = top if u == -2 else cls[u]
            if b < 0 or b == a:
                continue
            # move t -> B (once per class)
            moved_ok = False
            again = False
            for z in range(tried):
                if seen[z] == b:
                    again = True
                    moved_ok = seen_ok[z]
                    break
            if not again:
                seen[tried] = b
                seen_ok[tried] = False
                tried += 1
            if rem_ok and not again:
                b_size = size[b] + 1
                b_dist = distinct[b] + (1 if cnt[b, v] == 0 else 0)
                b_sum = sums[b] + st
                b_qv = qv[b] + st * (2 * cnt[b, v] + 1)
                if _valid(b, top, b_size, b_dist, b_sum, kmin, cap, mode, lmin, ase_rule, ltarget):
                    if b == top:
                        b_lm = lm_scale
                    else:
                        b_il = _il_plus(kind, x, span, g, height, cost_flat, cost_off, w, cmn[b], cmx[b], clv[b],
                                        cref[b], t)
                        b_lm = (b_size * b_il - size[b] * il[b]) * lm_scale
                    b_pr = class_term(mode, b_size, b_sum, b_qv, cap, pr_scale) - \
                        class_term(mode, size[b], sums[b], qv[b], cap, pr_scale)
                    gain = cur - objective(tot[0] + a_lm + b_lm, tot[1] + a_pr + b_pr, pr_offset, eps)
                    moved_ok = gain > 1e-12
                    seen_ok[tried - 1] = moved_ok
                    if gain > best_gain:
                        best_gain, best_kind, best_u, best_b = gain, 1, u, b
            # swap t <-> u (both regular classes)
            if u < 0 or b == top or a == top or moved_ok:
                continue
            vu = sens[u]
            su = sev[u]
            if vu == v:
                a2_dist, a2_qv, b2_dist, b2_qv = distinct[a], qv[a], distinct[b], qv[b]
            else:
                a2_dist = distinct[a] - (1 if cnt[a, v] == 1 else 0) + (1 if cnt[a, vu] == 0 else 0)
                a2_qv = qv[a] - st * (2 * cnt[a, v] - 1) + su * (2 * cnt[a, vu] + 1)
                b2_dist = distinct[b] - (1 if cnt[b, vu] == 1 else 0) + (1 if cnt[b, v] == 0 else 0)
                b2_qv = qv[b] - su * (2 * cnt[b, vu] - 1) + st * (2 * cnt[b, v] + 1)
            a2_sum = sums[a] - st + su
            b2_sum = sums[b] - su + st
            if not _valid(a, top, size[a], a2_dist, a2_sum, kmin, cap, mode, lmin, ase_rule, ltarget):
                continue
            if not _valid(b, top, size[b], b2_dist, b2_sum, kmin, cap, mode, lmin, ase_rule, ltarget):
                continue
            a2_il = _il_plus(kind, x, span, g, height, cost_flat, cost_off, w, amn, amx, alv, a_ref, u)  # (A - t) + u
            b2_il = -1.0
            if fast:  # (B - u) + t from the stored state of B and its critical members
                b2_il = _il_swapped(b, u, t, mem, cmn, cmx, clv, cref, crit, lv2, ext2, kind, x, span, g, height,
                                    cost_flat, cost_off, w)
            if b2_il < 0.0:
                b2_il = members_il(b, u, t, mem, size, kind, x, span, g, height, cost_flat, cost_off, w, mn, mx,
                                   lv)[0]
            dlm = (size[a] * (a2_il - il[a]) + size[b] * (b2_il - il[b])) * lm_scale
            dpr = class_term(mode, size[a], a2_sum, a2_qv, cap, pr_scale) - \
                class_term(mode, size[a], sums[a], qv[a], cap, pr_scale) + \
                class_term(mode, size[b], b2_sum, b2_qv, cap, pr_scale) - \
                class_term(mode, size[b], sums[b], qv[b], cap, pr_scale)
            gain = cur - objective(tot[0] + dlm, tot[1] + dpr, pr_offset, eps)
            if gain > best_gain:
                best_gain, best_kind, best_u, best_b = gain, 2, u, b
        if best_kind == 0:
            tev[t] = clock[0]
            continue
        clock[0] += 1
        cver[a] = clock[0]
        cver[best_b] = clock[0]
        b = best_b
        old_lm = 0.0
        old_pr = class_term(mode, size[a], sums[a], qv[a], cap, pr_scale) + \
            class_term(mode, size[b], sums[b], qv[b], cap, pr_scale)
        for c in (a, b):
            old_lm += (size[c] * il[c] if c != top else size[c] * 1.0) * lm_scale
        _remove(a, t, cls, pos, mem, size, sums, qv, cnt, distinct, sens, sev)
        if best_kind == 2:
            _remove(b, best_u, cls, pos, mem, size, sums, qv, cnt, distinct, sens, sev)
            _add(a, best_u, cls, pos, mem, size, sums, qv, cnt, distinct, sens, sev)
        _add(b, t, cls, pos, mem, size, sums, qv, cnt, distinct, sens, sev)
        new_lm = 0.0
        for c in (a, b):
            if c != top:
                refresh(c, mem, size, il, cmn, cmx, clv, cref, crit, lv2, ext2, kind, x, span, g, height, cost_flat,
                        cost_off, w)
                new_lm += size[c] * il[c] * lm_scale
            else:
                new_lm += size[c] * lm_scale
        tot[0] += new_lm - old_lm
        tot[1] += class_term(mode, size[a], sums[a], qv[a], cap, pr_scale) + \
            class_term(mode, size[b], sums[b], qv[b], cap, pr_scale) - old_pr
        applied += 1
    return applied
