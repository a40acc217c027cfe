"""Undirected weighted CSR graphs for the neuron-topology mapper (docs/neuron-mapping.md).

The mapping method (docs/neuron-mapping.md, section 1 "Problem") treats the network as a
topology: neurons are vertices with a *size* (what they cost on a core), synapses are
edges with a *weight*.
The partitioner works on an undirected view in which the synapses u->v and v->u
(and parallel synapses) become one edge whose weight is the sum of theirs.

Representation used throughout nnx.topology (compressed sparse rows):

* ``indptr``  int64 [n+1]
* ``indices`` int32 [nnz]   (each undirected edge appears in both rows)
* ``eweight`` float32 [nnz]
* ``vsize``   int64 [n]      capacity usage of a vertex
* ``vcount``  int64 [n]      number of original neurons merged into the vertex
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np


@dataclass
class Graph:
    """An undirected weighted graph in CSR form (see module docstring)."""

    indptr: np.ndarray
    indices: np.ndarray
    eweight: np.ndarray
    vsize: np.ndarray
    vcount: np.ndarray

    @property
    def n(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def total_edge_weight(self) -> float:
        """Sum of undirected edge weights (each edge counted once)."""
        return float(self.eweight[: self.nnz].sum(dtype=np.float64) / 2.0)

    def nbytes(self) -> int:
        return sum(
            a.nbytes for a in (self.indptr, self.indices, self.eweight, self.vsize, self.vcount)
        )


@nb.njit(cache=True)
def _degrees(pre, post, n):
    deg = np.zeros(n + 1, dtype=np.int64)
    for i in range(pre.shape[0]):
        a = pre[i]
        b = post[i]
        if a != b:
            deg[a + 1] += 1
            deg[b + 1] += 1
    return deg


@nb.njit(cache=True)
def _fill(pre, post, w, indptr, indices, eweight):
    pos = indptr[:-1].copy()
    for i in range(pre.shape[0]):
        a = pre[i]
        b = post[i]
        if a == b:
            continue
        ww = np.float32(abs(w[i]))
        indices[pos[a]] = b
        eweight[pos[a]] = ww
        pos[a] += 1
        indices[pos[b]] = a
        eweight[pos[b]] = ww
        pos[b] += 1


@nb.njit(cache=True)
def merge_duplicates(indptr, indices, eweight):
    """Merge parallel entries of every row in place (weights summed).

    Uses a last-seen marker per column so it is O(nnz) without sorting; rows
    are compacted towards the front. Returns the new indptr.
    """
    n = indptr.shape[0] - 1
    mark = np.full(n, -1, dtype=np.int64)
    out = np.zeros(n + 1, dtype=np.int64)
    wp = 0
    for v in range(n):
        start = wp
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            if u == v:
                continue
            m = mark[u]
            if m >= start:
                eweight[m] += eweight[j]
            else:
                mark[u] = wp
                indices[wp] = u
                eweight[wp] = eweight[j]
                wp += 1
        out[v + 1] = wp
    return out


def _trim(arr: np.ndarray, m: int) -> np.ndarray:
    if m >= arr.shape[0] * 0.9:
        return arr[:m]
    return arr[:m].copy()


def from_edges(
    pre: np.ndarray,
    post: np.ndarray,
    weight: np.ndarray | None = None,
    size: np.ndarray | None = None,
    n: int | None = None,
) -> Graph:
    """Build the undirected, duplicate-merged CSR graph of a directed synapse list.

    Synapses u->v are the topology's edges; the partitioner treats them as
    undirected with summed (absolute) weights. Self-synapses are dropped (they never
    cross a cut).
    """
    pre = np.ascontiguousarray(pre)
    post = np.ascontiguousarray(post)
    if pre.shape != post.shape or pre.ndim != 1:
        raise ValueError("pre and post must be 1-D arrays of the same length")
    if n is None:
        n = int(max(pre.max(initial=-1), post.max(initial=-1)) + 1)
        if size is not None:
            n = max(n, int(size.shape[0]))
    if weight is None:
        weight = np.ones(pre.shape[0], dtype=np.float32)
    weight = np.ascontiguousarray(weight)
    if weight.shape != pre.shape:
        raise ValueError("weight must have one entry per synapse")
    deg = _degrees(pre, post, n)
    indptr = np.cumsum(deg, out=deg)
    nnz = int(indptr[-1])
    indices = np.empty(nnz, dtype=np.int32)
    eweight = np.empty(nnz, dtype=np.float32)
    _fill(pre, post, weight, indptr, indices, eweight)
    indptr = merge_duplicates(indptr, indices, eweight)
    m = int(indptr[-1])
    indices = _trim(indices, m)
    eweight = _trim(eweight, m)
    if size is None:
        vsize = np.ones(n, dtype=np.int64)
    else:
        vsize = np.ascontiguousarray(size, dtype=np.int64)
        if vsize.shape[0] != n:
            raise ValueError(f"size has {vsize.shape[0]} entries but there are {n} neurons")
    return Graph(indptr, indices, eweight, vsize, np.ones(n, dtype=np.int64))


@nb.njit(cache=True)
def _cut_and_hop(indptr, indices, eweight, part, core_x, core_y):
    n = indptr.shape[0] - 1
    cut = 0.0
    hop = 0.0
    total = 0.0
    for v in range(n):
        pv = part[v]
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            w = eweight[j]
            total += w
            pu = part[u]
            if pu != pv:
                cut += w
                hop += w * (abs(core_x[pu] - core_x[pv]) + abs(core_y[pu] - core_y[pv]))
    return cut / 2.0, hop / 2.0, total / 2.0


def cut_and_hop(g: Graph, part: np.ndarray, core_of_part: np.ndarray | None = None, mesh_w: int = 1):
    """Weighted edge cut, hop traffic (weight x Manhattan distance) and total weight.

    ``part`` is per vertex; ``core_of_part`` maps parts to core indices y*W+x
    (identity when None).
    """
    part = np.ascontiguousarray(part, dtype=np.int64)
    k = int(part.max(initial=-1)) + 1
    if core_of_part is None:
        core_of_part = np.arange(k, dtype=np.int64)
    core_of_part = np.asarray(core_of_part, dtype=np.int64)
    cx = (core_of_part % mesh_w).astype(np.int64)
    cy = (core_of_part // mesh_w).astype(np.int64)
    return _cut_and_hop(g.indptr, g.indices, g.eweight, part, cx, cy)


def part_loads(vsize: np.ndarray, part: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(part, weights=vsize, minlength=k).astype(np.int64)


@nb.njit(cache=True)
def _quotient(indptr, indices, eweight, part, k):
    # returns COO of the inter-part weights (duplicates merged later)
    n = indptr.shape[0] - 1
    cnt = 0
    for v in range(n):
        pv = part[v]
        for j in range(indptr[v], indptr[v + 1]):
            if part[indices[j]] != pv:
                cnt += 1
    a = np.empty(cnt, dtype=np.int64)
    b = np.empty(cnt, dtype=np.int64)
    w = np.empty(cnt, dtype=np.float64)
    i = 0
    for v in range(n):
        pv = part[v]
        for j in range(indptr[v], indptr[v + 1]):
            pu = part[indices[j]]
            if pu != pv:
                a[i] = pv
                b[i] = pu
                w[i] = eweight[j]
                i += 1
    return a, b, w


@nb.njit(cache=True)
def _quotient_dense_merge(a, b, w, k):
    # per-row merge via marker, returns CSR with float64 weights
    deg = np.zeros(k + 1, dtype=np.int64)
    for i in range(a.shape[0]):
        deg[a[i] + 1] += 1
    for i in range(k):
        deg[i + 1] += deg[i]
    pos = deg[:-1].copy()
    idx = np.empty(a.shape[0], dtype=np.int32)
    ww = np.empty(a.shape[0], dtype=np.float32)
    for i in range(a.shape[0]):
        p = pos[a[i]]
        idx[p] = b[i]
        ww[p] = w[i]
        pos[a[i]] += 1
    return deg, idx, ww


def quotient_graph(g: Graph, part: np.ndarray, k: int) -> Graph:
    """The group graph that placement works on (docs/neuron-mapping.md, section 2, step 6):
    one vertex per part, edge weights summed over the synapses between two parts;
    vertex size = part load."""
    part = np.ascontiguousarray(part, dtype=np.int64)
    a, b, w = _quotient(g.indptr, g.indices, g.eweight, part, k)
    indptr, idx, ww = _quotient_dense_merge(a, b, w, k)
    del a, b, w
    indptr = merge_duplicates(indptr, idx, ww)
    m = int(indptr[-1])
    loads = part_loads(g.vsize, part, k)
    counts = np.bincount(part, weights=g.vcount, minlength=k).astype(np.int64)
    return Graph(indptr, idx[:m].copy(), ww[:m].copy(), loads, counts)
