"""Placement of neuron groups on the core mesh (seed 003 steps S7-S9,
paragraphs 82-89)."""

from __future__ import annotations

import numba as nb
import numpy as np

from .bisect import bisect
from .graph import Graph


def choose_region(k: int, mesh_w: int, mesh_h: int) -> tuple[int, int]:
    """Seed paragraph 83: a rectangle of cores holding at least the k groups;
    the smallest such area that fits the mesh, the squarest on ties."""
    best = None
    for h in range(1, mesh_h + 1):
        w = -(-k // h)
        if w > mesh_w:
            continue
        key = (w * h, abs(w - h))
        if best is None or key < best[0]:
            best = (key, w, h)
    if best is None:
        raise ValueError(f"{k} groups do not fit a {mesh_w}x{mesh_h} mesh")
    return best[1], best[2]


@nb.njit(cache=True)
def _terminal_bias(indptr, indices, eweight, groups, label, lab, cx, cy, ax, ay, bx, by):
    # reward for side 1 (region centre (ax, ay)) from edges to groups outside
    # the set, whose current region centres are (cx, cy)
    m = groups.shape[0]
    bias = np.zeros(m, dtype=np.float64)
    for i in range(m):
        g = groups[i]
        s = 0.0
        for j in range(indptr[g], indptr[g + 1]):
            u = indices[j]
            if label[u] == lab:
                continue
            da = abs(cx[u] - ax) + abs(cy[u] - ay)
            db = abs(cx[u] - bx) + abs(cy[u] - by)
            s += eweight[j] * (db - da)
        bias[i] = s
    return bias


def initial_placement(q: Graph, mesh_w: int, mesh_h: int, *, trials: int = 4,
                      refine: str = "fm", frontier_only: bool = True, terminal: bool = True,
                      rng: np.random.Generator) -> np.ndarray:
    """Recursive bisection placement (seed paragraphs 83-85).

    The region (``choose_region``) has as many usable cores as groups; the
    spare cores (last ones in row-major order of the region) are unusable.
    The region is cut at the middle of its longer side and the group set is
    bisected (same greedy-growing bisection as partitioning, by group count so
    each half gets exactly as many groups as its sub-region has usable cores);
    recursion stops at one group per core. Returns core index (y*W+x) per group.

    ``terminal=True`` (nnx improvement; False = seed) adds terminal propagation:
    regions are split breadth first and a group's edges to groups outside the
    set being split pull it towards the sub-region nearer to their current
    region's centre, so neighbouring regions are oriented towards each other.
    """
    from collections import deque
    k = q.n
    rw, rh = choose_region(k, mesh_w, mesh_h)
    usable = np.zeros((rh, rw), dtype=bool)
    usable.reshape(-1)[:k] = True
    core = np.full(k, -1, dtype=np.int64)
    label = np.zeros(k, dtype=np.int64)
    loc = np.zeros(k, dtype=np.int64)
    stack = deque([(np.arange(k, dtype=np.int64), 0, 0, 0, rw, rh)])
    cx = np.full(k, (rw - 1) / 2.0)
    cy = np.full(k, (rh - 1) / 2.0)
    next_label = 1
    while stack:
        groups, lab, x0, y0, w, h = stack.popleft()
        if groups.shape[0] == 0:
            continue
        if groups.shape[0] == 1:
            ys, xs = np.nonzero(usable[y0:y0 + h, x0:x0 + w])
            core[groups[0]] = (y0 + ys[0]) * mesh_w + (x0 + xs[0])
            continue
        if w >= h:
            r1 = (x0, y0, w // 2, h)
            r2 = (x0 + w // 2, y0, w - w // 2, h)
        else:
            r1 = (x0, y0, w, h // 2)
            r2 = (x0, y0 + h // 2, w, h - h // 2)
        c1 = int(usable[r1[1]:r1[1] + r1[3], r1[0]:r1[0] + r1[2]].sum())
        c2 = int(usable[r2[1]:r2[1] + r2[3], r2[0]:r2[0] + r2[2]].sum())
        assert c1 + c2 == groups.shape[0]
        if c1 == 0 or c2 == 0:
            r = r1 if c1 else r2
            cx[groups], cy[groups] = r[0] + (r[2] - 1) / 2.0, r[1] + (r[3] - 1) / 2.0
            stack.append((groups, lab, *r))
            continue
        a1x, a1y = r1[0] + (r1[2] - 1) / 2.0, r1[1] + (r1[3] - 1) / 2.0
        a2x, a2y = r2[0] + (r2[2] - 1) / 2.0, r2[1] + (r2[3] - 1) / 2.0
        bias = None
        if terminal:
            bias = _terminal_bias(q.indptr, q.indices, q.eweight, groups, label, lab, cx, cy,
                                  a1x, a1y, a2x, a2y)
        side = bisect(q, groups, label, lab, loc, c1, c1, c1, by_count=True, trials=trials,
                      refine=refine, rng=rng, frontier_only=frontier_only, bias=bias)
        a = groups[side == 1]
        b = groups[side == 0]
        if a.shape[0] != c1:  # growing stops at exactly c1 and FM keeps it; be safe
            allg = np.concatenate([a, b])
            a, b = allg[:c1], allg[c1:]
        la, lb = next_label, next_label + 1
        next_label += 2
        label[a] = la
        label[b] = lb
        cx[a], cy[a] = a1x, a1y
        cx[b], cy[b] = a2x, a2y
        stack.append((a, la, *r1))
        stack.append((b, lb, *r2))
    return core


@nb.njit(cache=True)
def _forces(indptr, indices, eweight, px, py):
    k = indptr.shape[0] - 1
    fx = np.zeros(k)
    fy = np.zeros(k)
    for g in range(k):
        for j in range(indptr[g], indptr[g + 1]):
            u = indices[j]
            fx[g] += eweight[j] * (px[u] - px[g])
            fy[g] += eweight[j] * (py[u] - py[g])
    return fx, fy


@nb.njit(cache=True)
def _force_after(indptr, indices, eweight, px, py, g, h, nx, ny):
    # force on g when g sits at (nx, ny) and h sits at g's old place
    fx = 0.0
    fy = 0.0
    for j in range(indptr[g], indptr[g + 1]):
        u = indices[j]
        if u == h:
            ux = px[g]
            uy = py[g]
        else:
            ux = px[u]
            uy = py[u]
        fx += eweight[j] * (ux - nx)
        fy += eweight[j] * (uy - ny)
    return fx, fy


@nb.njit(cache=True)
def _hop_of(indptr, indices, eweight, px, py, g, h, nx, ny):
    s = 0.0
    for j in range(indptr[g], indptr[g + 1]):
        u = indices[j]
        if u == h:
            continue
        s += eweight[j] * (abs(px[u] - nx) + abs(py[u] - ny))
    return s


@nb.njit(cache=True)
def _force_directed(indptr, indices, eweight, px, py, grid, fraction, radius, max_iter,
                    hop_cost):
    k = indptr.shape[0] - 1
    gh, gw = grid.shape
    ntop = max(1, int(np.ceil(k * fraction)))
    swaps = 0
    for it in range(max_iter):
        fx, fy = _forces(indptr, indices, eweight, px, py)
        mag = np.sqrt(fx * fx + fy * fy)
        order = np.argsort(-mag)
        done = 0
        for t in range(ntop):
            g = order[t]
            if mag[g] <= 0:
                break
            gx = px[g]
            gy = py[g]
            # current force on g (positions may have changed this iteration)
            cfx, cfy = _force_after(indptr, indices, eweight, px, py, g, -1, gx, gy)
            cmag = np.sqrt(cfx * cfx + cfy * cfy)
            best = -1
            bc = -1e-9
            for yy in range(max(0, gy - radius), min(gh, gy + radius + 1)):
                for xx in range(max(0, gx - radius), min(gw, gx + radius + 1)):
                    h = grid[yy, xx]
                    if h < 0 or h == g:
                        continue
                    if (xx - gx) * cfx + (yy - gy) * cfy <= 0:
                        continue  # not in the direction g is pulled
                    if hop_cost:
                        before = _hop_of(indptr, indices, eweight, px, py, g, h, gx, gy) + \
                            _hop_of(indptr, indices, eweight, px, py, h, g, xx, yy)
                        after = _hop_of(indptr, indices, eweight, px, py, g, h, xx, yy) + \
                            _hop_of(indptr, indices, eweight, px, py, h, g, gx, gy)
                        c = after - before
                    else:
                        hfx, hfy = _force_after(indptr, indices, eweight, px, py, h, -1, xx, yy)
                        gfx, gfy = _force_after(indptr, indices, eweight, px, py, g, h, xx, yy)
                        hfx2, hfy2 = _force_after(indptr, indices, eweight, px, py, h, g, gx, gy)
                        c = (np.sqrt(gfx * gfx + gfy * gfy) - cmag) + \
                            (np.sqrt(hfx2 * hfx2 + hfy2 * hfy2) - np.sqrt(hfx * hfx + hfy * hfy))
                    if c < bc:
                        bc = c
                        best = h
            if best >= 0:
                h = best
                hx = px[h]
                hy = py[h]
                grid[gy, gx] = h
                grid[hy, hx] = g
                px[h] = gx
                py[h] = gy
                px[g] = hx
                py[g] = hy
                done += 1
        swaps += done
        if done == 0:
            break
    return swaps


def force_directed(q: Graph, core: np.ndarray, mesh_w: int, mesh_h: int, *,
                   fraction: float = 0.05, radius: int = 2, max_iter: int = 200,
                   cost: str = "hop") -> tuple[np.ndarray, int]:
    """Force-directed refinement (seed paragraphs 86-89).

    An edge of weight w between groups u at (xu, yu) and v at (xv, yv) pulls u
    by w*(xv-xu, yv-yu) and v the opposite way. Each iteration takes the
    ``fraction`` (5 %) of groups with the largest net force, largest first; for
    each it looks at the cores within ``radius`` in the half-plane of its force
    and swaps with the group of lowest swap cost if that cost is negative;
    iterations stop when nothing swaps or after ``max_iter``.
    ``cost="force"`` is the seed's swap cost (change of |net force| of the two
    groups); ``cost="hop"`` (nnx default) is the exact change of hop traffic,
    which is the quantity being minimised. Spare cores never receive a group.
    Returns (core per group, number of swaps).
    """
    core = np.asarray(core, dtype=np.int64).copy()
    px = core % mesh_w
    py = core // mesh_w
    grid = np.full((mesh_h, mesh_w), -1, dtype=np.int64)
    grid[py, px] = np.arange(q.n)
    w = q.eweight.astype(np.float64)
    swaps = _force_directed(q.indptr, q.indices, w, px, py, grid, fraction, radius, max_iter,
                            cost == "hop")
    return py * mesh_w + px, int(swaps)
