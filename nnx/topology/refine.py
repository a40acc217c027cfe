"""Move-cost refinement during uncoarsening (seed 003 steps S5-1/S5-2,
paragraphs 77-81)."""

from __future__ import annotations

import numba as nb
import numpy as np

from .graph import Graph


@nb.njit(cache=True)
def _refine(indptr, indices, eweight, vsize, part, load, cap, perm, passes, balance,
            core_x, core_y, hop_weight, hop_all):
    """Seed paragraphs 79-80, in numba.

    For vertex v in part i, W_k = weight of v's edges into part k; moving v to
    k costs c_ik = W_i - W_k. Vertices are visited in random order (``perm``);
    the lowest-cost part is tried first and, when it would exceed ``cap``, the
    next lowest (paragraph 80); only negative costs are taken. Loads and
    therefore later costs are updated after every move.

    nnx additions (both off in seed mode): ``balance`` lets a vertex of an
    over-capacity part move at non-negative cost (cheapest first, else to the
    lightest part) so that coarse-level overloads are repaired; ``hop_weight``
    > 0 adds hop_weight x (change of sum w x Manhattan distance between the
    cores of the parts) to the cost, with parts already placed at
    (core_x, core_y). ``hop_all`` evaluates the hop term for every candidate
    part (otherwise only for cut-neutral or better ones, which cannot dissolve a
    group's stray fragment far from the rest of it).
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
            if not active[v]:
                continue
            active[v] = 0
            p = part[v]
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
            for a in range(nt):
                q = lst[a]
                if q == p:
                    continue
                c = wi - acc[q]
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
            if target < 0 and over:
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
           hop_weight: float = 0.0, hop_all: bool = False) -> int:
    """Refine ``part`` (int64, in place) on graph ``g``; returns the number of moves.

    ``passes`` bounds the repetitions of the random-order sweep (paragraph 80:
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
                       passes, balance, cx, cy, float(hop_weight), bool(hop_all)))
