"""Greedy graph-growing bisection (step S3 of the original; docs/neuron-mapping.md,
section 2 "Method"; nnx's additions in section 7 "Splitting").

All functions work on a vertex subset ``verts`` of a CSR graph; edges to
vertices outside the subset (``label[u] != lab``) are ignored, so recursive
bisection never copies subgraphs.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .graph import Graph


# ------------------------------------------------------------ a lazy min-heap


@nb.njit(cache=True, inline="always")
def _hpush(hk, hv, hn, key, val):
    i = hn
    hk[i] = key
    hv[i] = val
    while i > 0:
        p = (i - 1) >> 1
        if hk[p] <= hk[i]:
            break
        hk[p], hk[i] = hk[i], hk[p]
        hv[p], hv[i] = hv[i], hv[p]
        i = p
    return hn + 1


@nb.njit(cache=True, inline="always")
def _hpop(hk, hv, hn):
    key = hk[0]
    val = hv[0]
    hn -= 1
    hk[0] = hk[hn]
    hv[0] = hv[hn]
    i = 0
    while True:
        l = 2 * i + 1
        if l >= hn:
            break
        r = l + 1
        c = l
        if r < hn and hk[r] < hk[l]:
            c = r
        if hk[i] <= hk[c]:
            break
        hk[c], hk[i] = hk[i], hk[c]
        hv[c], hv[i] = hv[i], hv[c]
        i = c
    return key, val, hn


# ------------------------------------------------------------ GGGP


@nb.njit(cache=True)
def _grow(indptr, indices, eweight, vsize, verts, loc, label, lab, seed_local, target,
          by_count, side, frontier_only, bias):
    """One greedy-growing trial. side[i] = 1 for selected. Returns the cut.

    The original's rule: selection cost of an unselected vertex = weight of its
    edges to unselected vertices minus weight to selected ones; repeatedly move
    the cheapest (min-priority queue) and update its neighbours. Selecting v
    changes the cut by exactly its cost, so the cut is tracked incrementally.
    """
    m = verts.shape[0]
    cost = np.zeros(m, dtype=np.float64)
    for i in range(m):
        v = verts[i]
        s = 0.0
        for j in range(indptr[v], indptr[v + 1]):
            if label[indices[j]] == lab:
                s += eweight[j]
        cost[i] = s - bias[i]
        side[i] = 0
    cap = m * 2 + 16
    hk = np.empty(cap, dtype=np.float64)
    hv = np.empty(cap, dtype=np.int64)
    touched = np.zeros(m, dtype=np.uint8)
    hn = 0
    if not frontier_only:
        # original: every unselected vertex is in the queue from the start
        for t in range(m):
            if t != seed_local:
                hn = _hpush(hk, hv, hn, cost[t], t)
    cut = 0.0
    sel = 0.0
    cur = seed_local
    while True:
        # select cur
        side[cur] = 1
        cut += cost[cur]
        sel += 1.0 if by_count else vsize[verts[cur]]
        v = verts[cur]
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            if label[u] != lab:
                continue
            iu = loc[u]
            if side[iu]:
                continue
            cost[iu] -= 2.0 * eweight[j]
            touched[iu] = 1
            if hn >= hk.shape[0]:
                # compact: rebuild from current costs of unselected vertices
                hn = 0
                hk2 = np.empty(m * 2 + 16, dtype=np.float64)
                hv2 = np.empty(m * 2 + 16, dtype=np.int64)
                hk = hk2
                hv = hv2
                for t in range(m):
                    if side[t] == 0 and (touched[t] or not frontier_only):
                        hn = _hpush(hk, hv, hn, cost[t], t)
            else:
                hn = _hpush(hk, hv, hn, cost[iu], iu)
        if sel >= target:
            break
        # pop cheapest live entry; vertices never touched have cost = degree
        nxt = -1
        while hn > 0:
            key, val, hn = _hpop(hk, hv, hn)
            if side[val] == 0 and key == cost[val]:
                nxt = val
                break
        if nxt < 0:
            # frontier exhausted (disconnected): take the cheapest of all unselected
            best = -1
            bc = np.inf
            for t in range(m):
                if side[t] == 0 and cost[t] < bc:
                    bc = cost[t]
                    best = t
            if best < 0:
                break
            # push every untouched vertex once so the queue covers the rest
            for t in range(m):
                if side[t] == 0:
                    touched[t] = 1
                    if hn < hk.shape[0]:
                        hn = _hpush(hk, hv, hn, cost[t], t)
            frontier_only = False
            nxt = best
        cur = nxt
    return cut


@nb.njit(cache=True)
def _fm(indptr, indices, eweight, vsize, verts, loc, label, lab, side, lo1, hi1, by_count,
        passes, stall, bias):
    """Fiduccia-Mattheyses refinement of a bisection (nnx improvement, not in the
    original; docs/neuron-mapping.md, section 7 "Splitting"): moves boundary vertices by best
    gain with hill-climbing and rollback, keeping side-1 weight in [lo1, hi1] (or
    moving towards it)."""
    m = verts.shape[0]
    ed = np.zeros(m, dtype=np.float64)
    idg = np.zeros(m, dtype=np.float64)
    vw = np.empty(m, dtype=np.float64)
    w1 = 0.0
    maxw = 0.0
    for i in range(m):
        v = verts[i]
        vw[i] = 1.0 if by_count else vsize[v]
        if vw[i] > maxw:
            maxw = vw[i]
        if side[i]:
            w1 += vw[i]
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            if label[u] != lab:
                continue
            if side[loc[u]] == side[i]:
                idg[i] += eweight[j]
            else:
                ed[i] += eweight[j]
    cut = 0.0
    for i in range(m):
        if side[i]:
            cut += ed[i] - bias[i]
    hk0 = np.empty(4 * m + 16, dtype=np.float64)
    hv0 = np.empty(4 * m + 16, dtype=np.int64)
    hk1 = np.empty(4 * m + 16, dtype=np.float64)
    hv1 = np.empty(4 * m + 16, dtype=np.int64)
    locked = np.zeros(m, dtype=np.uint8)
    moves = np.empty(m, dtype=np.int64)
    for _p in range(passes):
        h0 = 0
        h1 = 0
        for i in range(m):
            locked[i] = 0
            if ed[i] > 0 or bias[i] != 0:
                if side[i]:
                    h1 = _hpush(hk1, hv1, h1, -(ed[i] - idg[i] - bias[i]), i)
                else:
                    h0 = _hpush(hk0, hv0, h0, -(ed[i] - idg[i] + bias[i]), i)
        pen = max(0.0, lo1 - w1, w1 - hi1)
        best_pen = pen
        best_cut = cut
        best_n = 0
        nm = 0
        while True:
            # clean tops
            while h0 > 0 and (locked[hv0[0]] or side[hv0[0]] != 0 or -hk0[0] != ed[hv0[0]] - idg[hv0[0]] + bias[hv0[0]]):
                _k, _v, h0 = _hpop(hk0, hv0, h0)
            while h1 > 0 and (locked[hv1[0]] or side[hv1[0]] != 1 or -hk1[0] != ed[hv1[0]] - idg[hv1[0]] - bias[hv1[0]]):
                _k, _v, h1 = _hpop(hk1, hv1, h1)
            c0 = -1
            c1 = -1
            if h0 > 0:
                i = hv0[0]
                nw = w1 + vw[i]
                if (pen > 0 and w1 < lo1) or (pen == 0 and nw <= hi1 + maxw):
                    c0 = i
            if h1 > 0:
                i = hv1[0]
                nw = w1 - vw[i]
                if (pen > 0 and w1 > hi1) or (pen == 0 and nw >= lo1 - maxw):
                    c1 = i
            if c0 < 0 and c1 < 0:
                break
            if c0 >= 0 and c1 >= 0:
                g0 = ed[c0] - idg[c0] + bias[c0]
                g1 = ed[c1] - idg[c1] - bias[c1]
                if g0 > g1 or (g0 == g1 and abs(w1 + vw[c0] - (lo1 + hi1) / 2) < abs(w1 - vw[c1] - (lo1 + hi1) / 2)):
                    i = c0
                else:
                    i = c1
            elif c0 >= 0:
                i = c0
            else:
                i = c1
            if i == c0:
                _k, _v, h0 = _hpop(hk0, hv0, h0)
            else:
                _k, _v, h1 = _hpop(hk1, hv1, h1)
            g = ed[i] - idg[i] + (bias[i] if side[i] == 0 else -bias[i])
            cut -= g
            if side[i]:
                w1 -= vw[i]
            else:
                w1 += vw[i]
            side[i] = 1 - side[i]
            ed[i], idg[i] = idg[i], ed[i]
            locked[i] = 1
            moves[nm] = i
            nm += 1
            v = verts[i]
            for j in range(indptr[v], indptr[v + 1]):
                u = indices[j]
                if label[u] != lab:
                    continue
                iu = loc[u]
                w = eweight[j]
                if side[iu] == side[i]:
                    ed[iu] -= w
                    idg[iu] += w
                else:
                    ed[iu] += w
                    idg[iu] -= w
                if locked[iu] == 0 and (ed[iu] > 0 or bias[iu] != 0):
                    if side[iu]:
                        if h1 < hk1.shape[0]:
                            h1 = _hpush(hk1, hv1, h1, -(ed[iu] - idg[iu] - bias[iu]), iu)
                    else:
                        if h0 < hk0.shape[0]:
                            h0 = _hpush(hk0, hv0, h0, -(ed[iu] - idg[iu] + bias[iu]), iu)
            pen = max(0.0, lo1 - w1, w1 - hi1)
            if pen < best_pen or (pen == best_pen and cut < best_cut - 1e-9):
                best_pen = pen
                best_cut = cut
                best_n = nm
            elif nm - best_n > stall:
                break
        # roll back to the best prefix
        for t in range(nm - 1, best_n - 1, -1):
            i = moves[t]
            if side[i]:
                w1 -= vw[i]
            else:
                w1 += vw[i]
            side[i] = 1 - side[i]
            ed[i], idg[i] = idg[i], ed[i]
            v = verts[i]
            for j in range(indptr[v], indptr[v + 1]):
                u = indices[j]
                if label[u] != lab:
                    continue
                iu = loc[u]
                w = eweight[j]
                if side[iu] == side[i]:
                    ed[iu] -= w
                    idg[iu] += w
                else:
                    ed[iu] += w
                    idg[iu] -= w
        cut = best_cut
        if best_n == 0:
            break
    return cut


@nb.njit(cache=True)
def _set_loc(verts, loc):
    for i in range(verts.shape[0]):
        loc[verts[i]] = i


def bisect(g: Graph, verts: np.ndarray, label: np.ndarray, lab: int, loc: np.ndarray,
           target: float, lo1: float, hi1: float, *, by_count: bool, trials: int,
           refine: str, rng: np.random.Generator, frontier_only: bool = True,
           bias: np.ndarray | None = None, fm_passes: int = 4) -> np.ndarray:
    """Bisect the vertices ``verts`` (all with ``label == lab``).

    As in the original (docs/neuron-mapping.md, section 2, step 3): ``trials`` (4-8)
    greedy-growing runs from random start vertices, each stopping once the selected
    set reaches ``target`` (half the vertex count in the original; a size target in
    nnx's proportional mode); the lowest cut wins. With ``refine="fm"`` every trial
    is improved by FM within [lo1, hi1] before comparing (nnx improvement; ``"none"``
    is the original). ``frontier_only=False`` is the original's queue holding every
    unselected vertex (a far-away low-degree vertex can then be picked before a frontier
    vertex); True keeps only vertices adjacent to the selected set in the
    queue until it runs dry (METIS-like growing). ``bias[i]`` (placement's
    terminal propagation) is a reward for putting vertex i on side 1; the
    objective is then cut - sum of the rewards of side 1. Returns side (uint8 per vertex of ``verts``; 1 = selected).
    """
    m = verts.shape[0]
    _set_loc(verts, loc)
    if bias is None:
        bias = np.zeros(m, dtype=np.float64)
    best = None
    best_cut = np.inf
    side = np.zeros(m, dtype=np.uint8)
    seeds = rng.integers(0, m, size=max(1, trials))
    for s in seeds:
        cut = _grow(g.indptr, g.indices, g.eweight, g.vsize, verts, loc, label, lab, int(s),
                    float(target), by_count, side, frontier_only, bias)
        if refine == "fm":
            cut = _fm(g.indptr, g.indices, g.eweight, g.vsize, verts, loc, label, lab, side,
                      float(lo1), float(hi1), by_count, fm_passes, max(50, m // 50), bias)
        if cut < best_cut:
            best_cut = cut
            best = side.copy()
    return best


def recursive_bisection(g: Graph, capacity: int, *, nparts: int | None, trials: int = 4,
                        refine: str = "fm", imbalance: float = 0.01,
                        frontier_only: bool = True,
                        rng: np.random.Generator, progress=None) -> tuple[np.ndarray, int]:
    """Initial partition of the coarsest graph (docs/neuron-mapping.md, section 2, step 3).

    ``nparts=None`` is the original's rule: halve by vertex count and recurse
    while a part's total size exceeds ``capacity``; the number of groups is
    whatever results. With ``nparts=k`` (nnx) a set destined for k groups is
    split into ceil(k/2) and floor(k/2) groups with a proportional size
    target, each side bounded by (its groups) x capacity. Returns (part, count).
    """
    n = g.n
    label = np.zeros(n, dtype=np.int64)
    loc = np.zeros(n, dtype=np.int64)
    part = np.zeros(n, dtype=np.int64)
    stack = [(np.arange(n, dtype=np.int64), 0, nparts)]
    next_label = 1
    out = 0
    done_w = 0
    total_w = float(g.vsize.sum())
    while stack:
        verts, lab, k = stack.pop()
        W = float(g.vsize[verts].sum())
        leaf = (k == 1) if k is not None else (W <= capacity)
        if leaf or verts.shape[0] <= 1:
            part[verts] = out
            out += 1
            done_w += W
            if progress is not None:
                progress(done_w, total_w)
            continue
        if k is None:
            by_count = True
            target = verts.shape[0] // 2
            lo1 = hi1 = target
            k1 = k2 = None
        else:
            by_count = False
            k1 = (k + 1) // 2
            k2 = k - k1
            target = W * k1 / k
            slack = imbalance * W + float(g.vsize[verts].max())
            hi1 = min(k1 * capacity, target + slack * k1 / k)
            lo1 = max(W - k2 * capacity, target - slack * k2 / k)
            if lo1 > hi1:
                lo1 = hi1 = target
        side = bisect(g, verts, label, lab, loc, target, lo1, hi1, by_count=by_count,
                      trials=trials, refine=refine, rng=rng, frontier_only=frontier_only)
        a = verts[side == 1]
        b = verts[side == 0]
        la, lb = next_label, next_label + 1
        next_label += 2
        label[a] = la
        label[b] = lb
        stack.append((b, lb, k2))
        stack.append((a, la, k1))
    return part, out
