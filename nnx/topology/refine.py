"""Move-cost refinement during uncoarsening (step S5 of the original;
docs/neuron-mapping.md, section 2 "Method"; nnx's additions in section 7 "Uncoarsening")."""

from __future__ import annotations

import numba as nb
import numpy as np

from .graph import Graph


@nb.njit(cache=True)
def _refine(indptr, indices, eweight, vsize, part, load, cap, perm, passes, balance,
            core_x, core_y, hop_weight, hop_all, teleport):
    """The original's move-cost refinement, in numba.

    For vertex v in part i, W_k = weight of v's edges into part k; moving v to
    k costs c_ik = W_i - W_k. Vertices are visited in random order (``perm``);
    the lowest-cost part is tried first and, when it would exceed ``cap``, the
    next lowest; only negative costs are taken. Loads and
    therefore later costs are updated after every move.

    nnx additions (both off with ``--algorithm seed``): ``balance`` lets a vertex of an
    over-capacity part move at non-negative cost (cheapest first, else to the
    lightest part) so that coarse-level overloads are repaired; ``hop_weight``
    > 0 adds hop_weight x (change of sum w x Manhattan distance between the
    cores of the parts) to the cost, with parts already placed at
    (core_x, core_y). ``hop_all`` evaluates the hop term for every candidate
    part (otherwise only for cut-neutral or better ones, which cannot dissolve a
    group's stray fragment far from the rest of it). Without ``teleport`` an
    over-capacity part whose neighbouring parts are all full does not send the
    vertex to the lightest part anywhere (which leaves a far fragment) but to the
    cheapest neighbouring part that is lighter than it even after the move, so
    overflow cascades along adjacent parts (the sum of squared loads falls with
    every such move, so it terminates).
    """
    n = indptr.shape[0] - 1
    k = load.shape[0]
    acc = np.zeros(k, dtype=np.float64)
    stamp = np.full(k, -1, dtype=np.int64)
    lst = np.empty(k, dtype=np.int64)
    cst = np.empty(k, dtype=np.float64)
    cl = np.empty(k, dtype=np.int64)
    moved_total = 0
    use_hop = hop_weight > 0.0
    # only vertices next to a move can have a new cost: later sweeps visit those
    active = np.ones(n, dtype=np.uint8)
    for _p in range(passes):
        moved = 0
        for t in range(n):
            v = perm[t]
            p = part[v]
            if not active[v] and not (balance and load[p] > cap):
                continue
            active[v] = 0
            nt = 0
            for j in range(indptr[v], indptr[v + 1]):
                q = part[indices[j]]
                if stamp[q] != t + _p * n:
                    stamp[q] = t + _p * n
                    acc[q] = 0.0
                    lst[nt] = q
                    nt += 1
                acc[q] += eweight[j]
            over = balance and load[p] > cap
            if nt == 0 and not over:
                continue
            wi = acc[p] if stamp[p] == t + _p * n else 0.0
            # candidate costs; the hop term (if any) only for cut-neutral or
            # better candidates, which keeps the sweep O(degree) per vertex
            nc = 0
            gbest = -1
            gcost = 0.0
            wtot = 0.0
            if use_hop and not over:
                for a in range(nt):
                    wtot += acc[lst[a]]
            for a in range(nt):
                q = lst[a]
                if q == p:
                    continue
                c = wi - acc[q]
                if use_hop and not over:
                    # exact pruning: every edge to r changes length by at most
                    # d(p, q), edges into p grow by exactly d(p, q); when even
                    # this bound leaves the cost positive the move is never taken
                    dpq = abs(core_x[q] - core_x[p]) + abs(core_y[q] - core_y[p])
                    if c + hop_weight * dpq * (2.0 * wi - wtot) > 1e-9 * (wi + 1.0):
                        continue
                if use_hop and (hop_all or c <= 0.0):
                    h = 0.0
                    for b in range(nt):
                        r = lst[b]
                        dq = abs(core_x[q] - core_x[r]) + abs(core_y[q] - core_y[r])
                        dp = abs(core_x[p] - core_x[r]) + abs(core_y[p] - core_y[r])
                        h += acc[r] * (dq - dp)
                    c += hop_weight * h
                cl[nc] = q
                cst[nc] = c
                nc += 1
                if over and not teleport and load[q] + vsize[v] < load[p] and (
                        gbest < 0 or c < gcost):
                    gbest = q
                    gcost = c
            sv = vsize[v]
            target = -1
            # lowest cost first, next lowest when it does not fit (selection,
            # not a full sort: the first candidate usually fits)
            while nc > 0:
                bi = 0
                for a in range(1, nc):
                    if cst[a] < cst[bi]:
                        bi = a
                if cst[bi] >= 0 and not over:
                    break
                q = cl[bi]
                if load[q] + sv <= cap:
                    target = q
                    break
                nc -= 1
                cl[bi] = cl[nc]
                cst[bi] = cst[nc]
            if target < 0 and over and not teleport:
                target = gbest
            if target < 0 and over and teleport:
                best = -1
                bl = cap + 1
                for q in range(k):
                    if q != p and load[q] + sv <= cap and load[q] < bl:
                        bl = load[q]
                        best = q
                target = best
            if target >= 0:
                part[v] = target
                load[p] -= sv
                load[target] += sv
                moved += 1
                for j in range(indptr[v], indptr[v + 1]):
                    active[indices[j]] = 1
        moved_total += moved
        if moved == 0:
            break
    return moved_total


def refine(g: Graph, part: np.ndarray, nparts: int, capacity: int, *, passes: int = 8,
           balance: bool = True, rng: np.random.Generator, core_of_part=None, mesh_w: int = 1,
           hop_weight: float = 0.0, hop_all: bool = False, teleport: bool = True) -> int:
    """Refine ``part`` (int64, in place) on graph ``g``; returns the number of moves.

    ``passes`` bounds the repetitions of the random-order sweep (as in the original,
    moves change other vertices' costs, so the sweep is repeated until nothing
    moves)."""
    load = np.bincount(part, weights=g.vsize, minlength=nparts).astype(np.int64)
    perm = rng.permutation(g.n).astype(np.int64)
    if core_of_part is None or hop_weight <= 0:
        cx = cy = np.zeros(nparts, dtype=np.int64)
        hop_weight = 0.0
    else:
        cx = (np.asarray(core_of_part) % mesh_w).astype(np.int64)
        cy = (np.asarray(core_of_part) // mesh_w).astype(np.int64)
    return int(_refine(g.indptr, g.indices, g.eweight, g.vsize, part, load, int(capacity), perm,
                       passes, balance, cx, cy, float(hop_weight), bool(hop_all),
                       bool(teleport)))


@nb.njit(cache=True)
def _find(par, a):
    while par[a] != a:
        par[a] = par[par[a]]
        a = par[a]
    return a


@nb.njit(cache=True)
def _repair_fragments(indptr, indices, eweight, vsize, part, load, cap, strong_frac, max_size):
    """Move every small connected piece of a part to the neighbouring part it is
    most strongly attached to (nnx; see :func:`repair_fragments`)."""
    n = indptr.shape[0] - 1
    k = load.shape[0]
    maxw = np.zeros(n, dtype=np.float64)
    for v in range(n):
        for j in range(indptr[v], indptr[v + 1]):
            if eweight[j] > maxw[v]:
                maxw[v] = eweight[j]
    # components of every part's induced subgraph on strong edges (union-find)
    par = np.arange(n)
    for v in range(n):
        pv = part[v]
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            if u <= v or part[u] != pv:
                continue
            if eweight[j] < strong_frac * min(maxw[v], maxw[u]):
                continue
            a = _find(par, v)
            b = _find(par, u)
            if a != b:
                par[a] = b
    root = np.empty(n, dtype=np.int64)
    csize = np.zeros(n, dtype=np.int64)
    for v in range(n):
        r = _find(par, v)
        root[v] = r
        csize[r] += vsize[v]
    # the largest piece of every part stays
    big = np.full(k, -1, dtype=np.int64)
    for v in range(n):
        if root[v] == v:
            p = part[v]
            if big[p] < 0 or csize[v] > csize[big[p]]:
                big[p] = v
    order = np.argsort(root, kind="mergesort")
    acc = np.zeros(k, dtype=np.float64)
    stamp = np.full(k, -1, dtype=np.int64)
    lst = np.empty(k, dtype=np.int64)
    moved = 0
    a = 0
    while a < n:
        r = root[order[a]]
        b = a
        while b < n and root[order[b]] == r:
            b += 1
        p = part[order[a]]
        if big[p] != r and csize[r] <= max_size:
            nt = 0
            for t in range(a, b):
                v = order[t]
                for j in range(indptr[v], indptr[v + 1]):
                    u = indices[j]
                    if root[u] == r:
                        continue
                    q = part[u]
                    if stamp[q] != r:
                        stamp[q] = r
                        acc[q] = 0.0
                        lst[nt] = q
                        nt += 1
                    acc[q] += eweight[j]
            wp = acc[p] if stamp[p] == r else 0.0
            best = -1
            bw = wp
            for c in range(nt):
                q = lst[c]
                if q != p and acc[q] > bw:
                    bw = acc[q]
                    best = q
            if best >= 0:
                for t in range(a, b):
                    part[order[t]] = best
                load[p] -= csize[r]
                load[best] += csize[r]
                moved += b - a
        a = b
    return moved


def repair_fragments(g: Graph, part: np.ndarray, nparts: int, capacity: int, *,
                     strong_frac: float = 0.3, max_frac: float = 0.5) -> int:
    """Fragment repair (nnx): split every part into the connected components of
    its induced subgraph on *strong* edges (weight >= ``strong_frac`` x the
    lighter end's heaviest edge, so that the weak random synapses that join far
    pieces do not count) and move each piece but the largest, if it is at most
    ``max_frac`` x capacity, to the part it has the most edge weight to (when that
    beats its own part). Capacity is NOT enforced here: the receiving part may
    exceed it; the following :func:`refine` with ``balance`` sheds the overflow
    to adjacent parts. Returns the number of vertices moved."""
    load = np.bincount(part, weights=g.vsize, minlength=nparts).astype(np.int64)
    return int(_repair_fragments(g.indptr, g.indices, g.eweight, g.vsize, part, load,
                                 int(capacity), float(strong_frac),
                                 int(max_frac * capacity)))
