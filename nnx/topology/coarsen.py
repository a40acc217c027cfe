"""Coarsening by heavy-edge pairing (step S2 of the original; docs/neuron-mapping.md,
section 2 "Method"; nnx's additions in section 7 "Coarsening")."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .graph import Graph


@nb.njit(cache=True)
def _match(indptr, indices, eweight, vsize, perm, max_size, eligible_only, strong):
    """One random-order pairing pass. Returns (match, dropped_weight).

    The original's rule: for each vertex (random order) take its heaviest edge;
    pair the two ends if neither is paired yet and the merged size is at most
    ``max_size`` (capacity / 15). With ``eligible_only`` (nnx improvement) the
    heaviest edge *among the still-pairable neighbours* is taken instead, as in
    METIS's heavy-edge matching, which pairs more vertices per round; with
    ``strong`` > 0 (nnx) only among the edges of at least ``strong`` x the
    vertex's heaviest edge: once its strong neighbours are taken, a vertex would
    otherwise pair with a far vertex over a light long-range synapse, and the
    pair travels together until the finest level, where one of the two is left
    stranded in another group's territory.
    """
    n = indptr.shape[0] - 1
    match = np.full(n, -1, dtype=np.int64)
    dropped = 0.0
    for t in range(n):
        v = perm[t]
        if match[v] != -1:
            continue
        best = -1
        bw = -1.0
        sv = vsize[v]
        if eligible_only and strong > 0.0:
            mw = 0.0
            for j in range(indptr[v], indptr[v + 1]):
                if eweight[j] > mw:
                    mw = eweight[j]
            bw = strong * mw
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            w = eweight[j]
            if w > bw:
                if eligible_only:
                    if match[u] != -1 or sv + vsize[u] > max_size:
                        continue
                bw = w
                best = u
        if best < 0:
            continue
        if match[best] != -1 or sv + vsize[best] > max_size:
            continue
        match[v] = best
        match[best] = v
        dropped += bw
    for v in range(n):
        if match[v] == -1:
            match[v] = v
    return match, dropped


@nb.njit(cache=True)
def _two_hop(indptr, indices, eweight, vsize, match, max_size):
    """nnx (METIS's two-hop matching): pair vertices left unmatched by
    :func:`_match` that share their heaviest neighbour. On bipartite-like graphs
    (a conv layer: many output neurons on the same few input pixels, no edges
    among them) heavy-edge pairing alone stalls after one round; merging such
    twins keeps coarsening going. Returns the number of new pairs."""
    n = indptr.shape[0] - 1
    key = np.full(n, -1, dtype=np.int64)
    cnt = 0
    for v in range(n):
        if match[v] != v:
            continue
        bw = -1.0
        for j in range(indptr[v], indptr[v + 1]):
            if eweight[j] > bw:
                bw = eweight[j]
                key[v] = indices[j]
        if key[v] >= 0:
            cnt += 1
    if cnt < 2:
        return 0
    cand = np.empty(cnt, dtype=np.int64)
    c = 0
    for v in range(n):
        if key[v] >= 0:
            cand[c] = v
            c += 1
    order = cand[np.argsort(key[cand], kind="mergesort")]
    pairs = 0
    a = 0
    while a < cnt - 1:
        v = order[a]
        u = order[a + 1]
        if key[v] == key[u] and vsize[v] + vsize[u] <= max_size:
            match[v] = u
            match[u] = v
            pairs += 1
            a += 2
        else:
            a += 1
    return pairs


@nb.njit(cache=True)
def _contract(indptr, indices, eweight, vsize, vcount, match):
    n = indptr.shape[0] - 1
    cmap = np.empty(n, dtype=np.int64)
    nc = 0
    for v in range(n):
        u = match[v]
        if u >= v:
            cmap[v] = nc
            cmap[u] = nc
            nc += 1
    cindptr = np.zeros(nc + 1, dtype=np.int64)
    cindices = np.empty(indptr[n], dtype=np.int32)
    cw = np.empty(indptr[n], dtype=np.float32)
    csize = np.zeros(nc, dtype=np.int64)
    ccount = np.zeros(nc, dtype=np.int64)
    mark = np.full(nc, -1, dtype=np.int64)
    wp = 0
    c = 0
    for v in range(n):
        u = match[v]
        if u < v:
            continue
        start = wp
        csize[c] = vsize[v] + (vsize[u] if u != v else 0)
        ccount[c] = vcount[v] + (vcount[u] if u != v else 0)
        for r in range(2):
            x = v if r == 0 else u
            if r == 1 and u == v:
                break
            for j in range(indptr[x], indptr[x + 1]):
                cu = cmap[indices[j]]
                if cu == c:
                    continue
                m = mark[cu]
                if m >= start:
                    cw[m] += eweight[j]
                else:
                    mark[cu] = wp
                    cindices[wp] = cu
                    cw[wp] = eweight[j]
                    wp += 1
        c += 1
        cindptr[c] = wp
    return cmap, cindptr, cindices[:wp].copy(), cw[:wp].copy(), csize, ccount


@dataclass
class Level:
    """One coarsening round: the coarse graph and the fine->coarse vertex map."""

    graph: Graph
    cmap: np.ndarray


def coarsen_once(g: Graph, max_size: int, trials: int, rng: np.random.Generator,
                 matching: str = "eligible", two_hop: bool = False,
                 two_hop_min: float = 0.25, match_strong: float = 0.0) -> Level:
    """As in the original: run ``trials`` (4-8) random pairings and contract the
    one with the largest drop in total edge weight (the weight of the edges
    that disappear inside merged pairs). With ``two_hop`` (nnx) and more than
    ``two_hop_min`` of the vertices unpaired, :func:`_two_hop` pairs the
    leftovers that share their heaviest neighbour."""
    best = None
    best_drop = -1.0
    for _ in range(max(1, trials)):
        perm = rng.permutation(g.n).astype(np.int64)
        match, drop = _match(g.indptr, g.indices, g.eweight, g.vsize, perm, max_size,
                             matching == "eligible", float(match_strong))
        if drop > best_drop:
            best, best_drop = match, drop
    if two_hop and (best == np.arange(g.n)).sum() > two_hop_min * g.n:
        _two_hop(g.indptr, g.indices, g.eweight, g.vsize, best, max_size)
    cmap, ip, ix, w, s, c = _contract(g.indptr, g.indices, g.eweight, g.vsize, g.vcount, best)
    return Level(Graph(ip, ix, w, s, c), cmap)


def coarsen(g: Graph, capacity: int, *, trials: int = 4, size_fraction: float = 1 / 15,
            min_reduction: float = 0.2, matching: str = "eligible", min_vertices: int = 0,
            two_hop: bool = False, match_strong: float = 0.0, rng: np.random.Generator,
            on_level=None) -> list[Level]:
    """Repeat :func:`coarsen_once` until a round shrinks the vertex count by less
    than ``min_reduction`` (20 %). Merged vertices may not exceed
    ``capacity * size_fraction`` (1/15). Both are the original's values
    (docs/neuron-mapping.md, section 2, step 2).

    ``min_vertices`` (0 = the original's behaviour) stops early once the graph is
    that small. ``on_level(level)`` is called after each round (e.g. to write the
    intermediate topology to disk in the input's format, as the original does;
    docs/neuron-mapping.md, section 3.1, ``--keep-levels``).
    """
    max_size = max(1, int(capacity * size_fraction))
    levels: list[Level] = []
    cur = g
    while cur.n > max(1, min_vertices):
        lv = coarsen_once(cur, max_size, trials, rng, matching, two_hop,
                          match_strong=match_strong)
        reduction = 1.0 - lv.graph.n / cur.n
        if lv.graph.n == cur.n:
            break
        levels.append(lv)
        if on_level is not None:
            on_level(lv)
        cur = lv.graph
        if reduction < min_reduction:
            break
    return levels
