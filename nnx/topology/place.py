"""Placement of neuron groups on the core mesh (steps S7-S9 of the original;
docs/neuron-mapping.md, section 2 "Method"; nnx's additions in section 7 "Placement")."""

from __future__ import annotations

import numba as nb
import numpy as np

from .bisect import bisect
from .graph import Graph


def choose_region(k: int, mesh_w: int, mesh_h: int) -> tuple[int, int]:
    """A rectangle of cores holding at least the k groups (as in the original);
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


def halve_region(x0: int, y0: int, w: int, h: int) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    """The two halves (x, y, w, h) of a region cut across its longer side (a vertical
    cut on a tie), the first half the left/top one."""
    if w >= h:
        return (x0, y0, w // 2, h), (x0 + w // 2, y0, w - w // 2, h)
    return (x0, y0, w, h // 2), (x0, y0 + h // 2, w, h - h // 2)


def region_centre(r: tuple[int, int, int, int]) -> tuple[float, float]:
    """The centre (x, y) of region r = (x, y, w, h) in core coordinates."""
    return r[0] + (r[2] - 1) / 2.0, r[1] + (r[3] - 1) / 2.0


def usable_in(usable: np.ndarray, r: tuple[int, int, int, int]) -> int:
    """How many usable cores region r = (x, y, w, h) holds."""
    return int(usable[r[1]:r[1] + r[3], r[0]:r[0] + r[2]].sum())


def usable_cores(k: int, rw: int, rh: int, central: bool) -> np.ndarray:
    """Mask of the k usable cores of a rw x rh region (the original marks spare
    cores unusable but does not say which); ``central=False``
    takes the first k in row-major order, ``central=True`` (nnx) the k with the
    smallest mean Manhattan distance to the region's cores, so the spares are
    the corners: traffic between random pairs of groups then travels less
    (on 32x32 the mean distance between the 1000 most central cores is 20.90
    against 21.31 for all 1024)."""
    usable = np.zeros((rh, rw), dtype=bool)
    if not central or k >= rw * rh:
        usable.reshape(-1)[:k] = True
        return usable
    xs = np.arange(rw)
    ys = np.arange(rh)
    mx = np.abs(xs[:, None] - xs[None, :]).mean(1)
    my = np.abs(ys[:, None] - ys[None, :]).mean(1)
    c = (my[:, None] + mx[None, :]).reshape(-1)
    usable.reshape(-1)[np.argsort(c, kind="stable")[:k]] = True
    return usable


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
                      central: bool = False, rng: np.random.Generator) -> np.ndarray:
    """Recursive bisection placement (docs/neuron-mapping.md, section 2, step 6).

    The region (``choose_region``) has as many usable cores as groups; the
    spare cores (last ones in row-major order of the region) are unusable.
    The region is cut at the middle of its longer side and the group set is
    bisected (same greedy-growing bisection as partitioning, by group count so
    each half gets exactly as many groups as its sub-region has usable cores);
    recursion stops at one group per core. Returns core index (y*W+x) per group.

    ``central=True`` (nnx; False = original) makes the spare cores the region's
    outermost ones instead of the last ones in row-major order (``usable_cores``).

    ``terminal=True`` (nnx improvement; False = original) adds terminal propagation:
    regions are split breadth first and a group's edges to groups outside the
    set being split pull it towards the sub-region nearer to their current
    region's centre, so neighbouring regions are oriented towards each other.
    """
    from collections import deque
    k = q.n
    rw, rh = choose_region(k, mesh_w, mesh_h)
    usable = usable_cores(k, rw, rh, central)
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
        r1, r2 = halve_region(x0, y0, w, h)
        c1 = usable_in(usable, r1)
        c2 = usable_in(usable, r2)
        assert c1 + c2 == groups.shape[0]
        if c1 == 0 or c2 == 0:
            r = r1 if c1 else r2
            cx[groups], cy[groups] = region_centre(r)
            stack.append((groups, lab, *r))
            continue
        (a1x, a1y), (a2x, a2y) = region_centre(r1), region_centre(r2)
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
    """Force-directed refinement (docs/neuron-mapping.md, section 2, step 7).

    An edge of weight w between groups u at (xu, yu) and v at (xv, yv) pulls u
    by w*(xv-xu, yv-yu) and v the opposite way. Each iteration takes the
    ``fraction`` (5 %) of groups with the largest net force, largest first; for
    each it looks at the cores within ``radius`` in the half-plane of its force
    and swaps with the group of lowest swap cost if that cost is negative;
    iterations stop when nothing swaps or after ``max_iter``.
    ``cost="force"`` is the original's swap cost (change of |net force| of the two
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


@nb.njit(cache=True)
def _filter_edges(indptr, indices, eweight, frac):
    k = indptr.shape[0] - 1
    rowmax = np.zeros(k)
    for g in range(k):
        for j in range(indptr[g], indptr[g + 1]):
            if eweight[j] > rowmax[g]:
                rowmax[g] = eweight[j]
    out = np.zeros(k + 1, dtype=np.int64)
    idx = np.empty(indices.shape[0], dtype=np.int32)
    ww = np.empty(indices.shape[0], dtype=np.float32)
    p = 0
    for g in range(k):
        for j in range(indptr[g], indptr[g + 1]):
            u = indices[j]
            w = eweight[j]
            if w >= frac * rowmax[g] or w >= frac * rowmax[u]:
                idx[p] = u
                ww[p] = w
                p += 1
        out[g + 1] = p
    return out, idx[:p].copy(), ww[:p].copy()


def strong_edges(q: Graph, frac: float) -> Graph:
    """The group graph without its weak edges (nnx, not in the original): keep an edge
    when its weight is at least ``frac`` x the heaviest edge of one of its ends.

    On graphs where a share of the synapses are long-range and spread evenly
    (the sheet's random 20 %), every group is linked to almost every other by a
    light edge; those edges cost the same hop traffic wherever the groups go, but
    they drown the heavy edges between spatial neighbours in the placement
    bisection's costs. Placement bisects this graph; swaps use the full one."""
    if frac <= 0:
        return q
    ip, ix, w = _filter_edges(q.indptr, q.indices, q.eweight.astype(np.float64), float(frac))
    return Graph(ip, ix, w, q.vsize, q.vcount)


@nb.njit(cache=True)
def _move_delta(indptr, indices, eweight, px, py, g, h, nx, ny):
    # change of g's hop traffic when g moves to (nx, ny) and h (or nobody when
    # h < 0) takes g's place; the g-h edge keeps its length and is skipped
    s = 0.0
    gx = px[g]
    gy = py[g]
    for j in range(indptr[g], indptr[g + 1]):
        u = indices[j]
        if u == h:
            continue
        ux = px[u]
        uy = py[u]
        s += eweight[j] * ((abs(ux - nx) + abs(uy - ny)) - (abs(ux - gx) + abs(uy - gy)))
    return s


@nb.njit(cache=True)
def _swap_refine(indptr, indices, eweight, px, py, grid, radius, sweeps, perm):
    k = indptr.shape[0] - 1
    gh, gw = grid.shape
    total = 0
    for _s in range(sweeps):
        moved = 0
        for t in range(k):
            g = perm[(t + _s * 7919) % k]
            gx = px[g]
            gy = py[g]
            best = 0.0
            bx = -1
            by = -1
            for yy in range(max(0, gy - radius), min(gh, gy + radius + 1)):
                for xx in range(max(0, gx - radius), min(gw, gx + radius + 1)):
                    if xx == gx and yy == gy:
                        continue
                    h = grid[yy, xx]
                    if h == -2:
                        continue  # unusable
                    d = _move_delta(indptr, indices, eweight, px, py, g, h, xx, yy)
                    if h >= 0:
                        d += _move_delta(indptr, indices, eweight, px, py, h, g, gx, gy)
                    if d < best - 1e-9:
                        best = d
                        bx = xx
                        by = yy
            if bx >= 0:
                h = grid[by, bx]
                grid[gy, gx] = h
                grid[by, bx] = g
                if h >= 0:
                    px[h] = gx
                    py[h] = gy
                px[g] = bx
                py[g] = by
                moved += 1
        total += moved
        if moved == 0:
            break
    return total


def swap_refine(q: Graph, core: np.ndarray, mesh_w: int, mesh_h: int, *, radius: int = 3,
                sweeps: int = 30, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Hop-cost swap refinement of a placement (nnx, not in the original).

    Every group in turn (random order) looks at each core within ``radius``
    (Chebyshev) and swaps with its group, or moves there when it is free, if
    that lowers the exact hop traffic (sum of w x Manhattan distance over the
    group graph) most; sweeps repeat until nothing moves or ``sweeps``. Unlike
    the original's force-directed step there is no direction restriction and no
    top-5 % selection: on graphs where long-range synapses pull every group
    towards the mesh centre, the net force says little about which swap helps.
    Returns (core per group, moves)."""
    core = np.asarray(core, dtype=np.int64).copy()
    px = core % mesh_w
    py = core // mesh_w
    grid = np.full((mesh_h, mesh_w), -1, dtype=np.int64)
    grid[py, px] = np.arange(q.n)
    perm = rng.permutation(q.n).astype(np.int64)
    moves = _swap_refine(q.indptr, q.indices, q.eweight.astype(np.float64), px, py, grid,
                         int(radius), int(sweeps), perm)
    return py * mesh_w + px, int(moves)


def bisect_on_mesh(g: Graph, capacity: int, k: int, mesh_w: int, mesh_h: int, *,
                   trials: int = 4, refine: str = "fm", imbalance: float = 0.01,
                   frontier_only: bool = True, terminal: bool = True,
                   bias_filter: float = 0.1, rng: np.random.Generator, progress=None):
    """Partition and place at once (nnx, not in the original): the recursive bisection
    of the (coarsest) neuron graph follows the placement's region recursion.

    The original partitions first (S3) and then places the groups by bisecting the
    group graph over the core region (S8). Here the region with k usable cores
    (``choose_region``) is cut at the middle of its longer side, as in S8, and the
    *vertex* set destined for it is bisected at the same time, in proportion to
    the usable cores of the two halves and bounded by their capacity; recursion
    stops at one part per core, which is that part's core. Splits run breadth
    first with terminal propagation (edges to vertices already sent to another
    region pull a vertex towards the nearer half), so a part's neighbours in the
    graph end up on neighbouring cores and groups take the shape of the mesh.
    Returns (part per vertex, number of parts, core index per part)."""
    from collections import deque
    n = g.n
    sg = strong_edges(g, bias_filter)
    rw, rh = choose_region(k, mesh_w, mesh_h)
    usable = np.zeros((rh, rw), dtype=bool)
    usable.reshape(-1)[:k] = True
    label = np.zeros(n, dtype=np.int64)
    loc = np.zeros(n, dtype=np.int64)
    part = np.zeros(n, dtype=np.int64)
    cx = np.full(n, (rw - 1) / 2.0)
    cy = np.full(n, (rh - 1) / 2.0)
    cores: list[int] = []
    queue = deque([(np.arange(n, dtype=np.int64), 0, 0, 0, rw, rh)])
    next_label = 1
    done_w = 0.0
    total_w = float(g.vsize.sum())
    while queue:
        verts, lab, x0, y0, w, h = queue.popleft()
        cnt = int(usable[y0:y0 + h, x0:x0 + w].sum())
        if cnt == 1 or verts.shape[0] <= 1:
            ys, xs = np.nonzero(usable[y0:y0 + h, x0:x0 + w])
            part[verts] = len(cores)
            cores.append(int((y0 + ys[0]) * mesh_w + (x0 + xs[0])))
            done_w += float(g.vsize[verts].sum())
            if progress is not None:
                progress(done_w, total_w)
            continue
        r1, r2 = halve_region(x0, y0, w, h)
        k1 = usable_in(usable, r1)
        k2 = cnt - k1
        if k1 == 0 or k2 == 0:
            queue.append((verts, lab, *(r1 if k1 else r2)))
            continue
        (a1x, a1y), (a2x, a2y) = region_centre(r1), region_centre(r2)
        W = float(g.vsize[verts].sum())
        target = W * k1 / cnt
        slack = imbalance * W + float(g.vsize[verts].max())
        hi1 = min(k1 * capacity, target + slack * k1 / cnt)
        lo1 = max(W - k2 * capacity, target - slack * k2 / cnt)
        if lo1 > hi1:
            lo1 = hi1 = target
        bias = None
        if terminal:
            bias = _terminal_bias(sg.indptr, sg.indices, sg.eweight, verts, label, lab, cx, cy,
                                  a1x, a1y, a2x, a2y)
        side = bisect(g, verts, label, lab, loc, target, lo1, hi1, by_count=False,
                      trials=trials, refine=refine, rng=rng, frontier_only=frontier_only,
                      bias=bias)
        a = verts[side == 1]
        b = verts[side == 0]
        la, lb = next_label, next_label + 1
        next_label += 2
        label[a] = la
        label[b] = lb
        cx[a], cy[a] = a1x, a1y
        cx[b], cy[b] = a2x, a2y
        queue.append((a, la, *r1))
        queue.append((b, lb, *r2))
    return part, len(cores), np.asarray(cores, dtype=np.int64)


@nb.njit(cache=True)
def _anneal(indptr, indices, eweight, px, py, grid, radius, moves, t0, seed):
    np.random.seed(seed)
    k = indptr.shape[0] - 1
    gh, gw = grid.shape
    accepted = 0
    t = t0
    # geometric cooling from t0 to t0 / 1000 over the run
    alpha = np.exp(np.log(1e-3) / max(1, moves))
    for _m in range(moves):
        g = np.random.randint(0, k)
        gx = px[g]
        gy = py[g]
        xx = gx + np.random.randint(-radius, radius + 1)
        yy = gy + np.random.randint(-radius, radius + 1)
        t *= alpha
        if xx < 0 or yy < 0 or xx >= gw or yy >= gh or (xx == gx and yy == gy):
            continue
        h = grid[yy, xx]
        if h == -2:
            continue
        d = _move_delta(indptr, indices, eweight, px, py, g, h, xx, yy)
        if h >= 0:
            d += _move_delta(indptr, indices, eweight, px, py, h, g, gx, gy)
        if d <= 0.0 or np.random.random() < np.exp(-d / t):
            grid[gy, gx] = h
            grid[yy, xx] = g
            if h >= 0:
                px[h] = gx
                py[h] = gy
            px[g] = xx
            py[g] = yy
            accepted += 1
    return accepted


def anneal(q: Graph, core: np.ndarray, mesh_w: int, mesh_h: int, *, moves_per_group: int = 2000,
           radius: int = 3, t_start: float = 0.05, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Simulated annealing of a placement (nnx, not in the original): random swaps or
    moves of a group within Chebyshev ``radius``, exact hop-traffic change on
    ``q`` (meant for the strong-edge group graph), Metropolis acceptance with a
    geometric cooling from ``t_start`` x the mean weighted degree of a group to
    1/1000 of that. The number of moves shrinks when the mean degree exceeds 8
    (the work is moves x degree). Escapes the local minima of the greedy swap refinement (a row of groups
    placed one step off, a mirrored patch). Returns (core per group, accepted)."""
    core = np.asarray(core, dtype=np.int64).copy()
    if q.n < 2 or moves_per_group <= 0:
        return core, 0
    px = core % mesh_w
    py = core // mesh_w
    grid = np.full((mesh_h, mesh_w), -1, dtype=np.int64)
    grid[py, px] = np.arange(q.n)
    t0 = float(q.eweight.sum()) / q.n * t_start
    # a move costs O(degree): bound the work to that of a mean degree of 8
    deg = q.nnz / q.n
    moves = int(moves_per_group * q.n * min(1.0, 8.0 / max(deg, 1.0)))
    acc = _anneal(q.indptr, q.indices, q.eweight.astype(np.float64), px, py, grid, int(radius),
                  moves, t0, int(rng.integers(0, 2**31 - 1)))
    return py * mesh_w + px, int(acc)
