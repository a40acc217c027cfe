"""Choosing a tiling: `plan` (halve the axis that best relieves the overflowing cache
until every tile fits) and `plan_cost` (the cheapest fitting tiling of an MPU op under
a DMA/compute pipeline cost model, `Cost`), over the steps `enumerate_steps` lists.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

from nnx.tiling.boxes import Box, Range, Step, TilingError
from nnx.tiling.rule import Rule



def enumerate_steps(rule: Rule, sizes: dict[int, int], kchunk: int) -> list[Step]:
    """Every step of a tiling, loops in the rule's axis order, reduction chunks inner."""
    segs = [rule.segments(a, sizes[a]) for a in rule.axes]
    ks: list[Range | None]
    if rule.k_extent and kchunk < rule.k_extent:
        ks = [(s, min(s + kchunk, rule.k_extent)) for s in range(0, rule.k_extent, kchunk)]
    else:
        ks = [None]
    steps = []
    for combo in itertools.product(*segs):
        out = dict(zip(rule.axes, combo))
        for k in ks:
            steps.append(rule.step(out, k))
    return steps


def _samples(rule: Rule, sizes: dict[int, int], kchunk: int) -> list[Step]:
    """The steps that bound the footprint: first and second tile along every axis."""
    picks = []
    for a in rule.axes:
        segs = rule.segments(a, sizes[a])
        picks.append(segs[:2])
    ks: list[Range | None] = [None]
    if rule.k_extent and kchunk < rule.k_extent:
        ks = [(0, kchunk), (kchunk, min(2 * kchunk, rule.k_extent))]
    out = []
    for which in (0, 1):
        o = {a: (p[which] if len(p) > which else p[0]) for a, p in zip(rule.axes, picks)}
        for k in ks:
            out.append(rule.step(o, k))
    return out


def plan(
    rule: Rule,
    need: Callable[[list[Step]], dict[str, int]],
    capacity: dict[str, int],
    soft_elems: int = 0,
) -> list[Step]:
    """Tile sizes for `rule` such that `need(steps)` (bytes per cache space for the
    worst of the steps) fits `capacity`; raises TilingError when even minimal tiles do
    not fit. `soft_elems` > 0 further splits outputs larger than that many elements
    (so that DMA and compute of successive tiles overlap)."""
    sizes = {a: rule.out_shape[a] for a in rule.axes}
    kchunk = rule.k_extent or 0

    def over(steps: list[Step]) -> float:
        n = need(steps)
        return max((n.get(s, 0) / capacity[s]) for s in capacity) if capacity else 0.0

    cur = over(_samples(rule, sizes, kchunk))
    guard = 0
    while cur > 1.0:
        guard += 1
        if guard > 400:
            break
        best = None
        cands: list[tuple[str, int, int]] = []
        for a in rule.prefer + [x for x in rule.axes if x not in rule.prefer]:
            ns = rule.shrink(a, sizes[a])
            if ns is not None and ns < sizes[a]:
                cands.append(("axis", a, ns))
        if rule.k_extent and kchunk > 1:
            cands.append(("k", -1, (kchunk + 1) // 2))
        for c in cands:
            s2 = dict(sizes)
            k2 = kchunk
            if c[0] == "axis":
                s2[c[1]] = c[2]
            else:
                k2 = c[2]
            v = over(_samples(rule, s2, k2))
            # prefer splitting output axes over the reduction (no re-accumulation)
            score = v * (1.02 if c[0] == "k" else 1.0)
            if best is None or score < best[0] - 1e-12:
                best = (score, v, s2, k2)
        if best is None:
            break  # every axis and the reduction are at their minimum
        _, cur, sizes, kchunk = best
    steps = enumerate_steps(rule, sizes, kchunk)
    if over(steps) > 1.0:
        n = need(steps)
        worst = max(capacity, key=lambda s: n.get(s, 0) / capacity[s])
        raise TilingError(
            f"even the smallest tile needs {n.get(worst, 0)} bytes of the "
            f"{worst} cache ({capacity[worst]} bytes)"
        )
    if soft_elems > 0:
        while True:
            elems = math.prod(sizes[a] for a in rule.axes) if rule.axes else 0
            rest = math.prod(d for i, d in enumerate(rule.out_shape) if i not in sizes)
            if not rule.axes or elems * rest <= soft_elems:
                break
            moved = False
            for a in rule.prefer:
                ns = rule.shrink(a, sizes[a])
                if ns is not None and ns < sizes[a]:
                    sizes[a] = ns
                    moved = True
                    break
            if not moved:
                break
        steps = enumerate_steps(rule, sizes, kchunk)
    return steps


# --------------------------------------------------------------------------------------
# Cost-based planning (MPU ops): fewest DMA cycles + best overlap
# --------------------------------------------------------------------------------------


@dataclass
class Cost:
    """What `plan_cost` needs to time a tiling (the DMA and compute time of one op).

    `in_bytes(j, box)` / `out_bytes(j, box)`: bytes one DMA of that box moves (0: not
    loaded); `transfer` the fixed cycles of one DMA; `bw` bytes per cycle over all DMA
    queues; `step` the fixed cycles of one compute instruction and `work` the compute
    cycles of the whole op on one unit; `units` the compute units the output tiles are
    spread over."""

    in_bytes: Callable[[int, Box], float]
    out_bytes: Callable[[int, Box], float]
    transfer: float
    bw: float
    step: float
    work: float
    dma_queues: int = 1
    units: int = 1
    # mapping-unit cycles to prepare one load of that input box (sparse weights whose
    # stride index is converted to the direct one): a third pipeline stage
    map_cycles: Callable[[int, Box], float] | None = None


def _chain(rule: Rule, a: int) -> list[int]:
    out = [rule.out_shape[a]]
    while True:
        ns = rule.shrink(a, out[-1])
        if ns is None or ns >= out[-1]:
            return out
        out.append(ns)


def _relevance(rule: Rule) -> tuple[list[set], int]:
    """For every input: the output axes (and -1: the reduction) whose change changes
    its box (probed with minimal tiles)."""
    base = {a: rule.segments(a, rule.min_size(a))[0] for a in rule.axes}
    kk = None
    if rule.k_extent > 1:
        kk = (0, 1)
    s0 = rule.step(base, kk)
    rel: list[set] = [set() for _ in s0.inputs]
    for a in rule.axes:
        segs = rule.segments(a, rule.min_size(a))
        if len(segs) < 2:
            continue
        o = dict(base)
        o[a] = segs[1]
        s1 = rule.step(o, kk)
        for j, (b0, b1) in enumerate(zip(s0.inputs, s1.inputs)):
            if b0 != b1:
                rel[j].add(a)
    if kk is not None:
        s1 = rule.step(base, (1, 2))
        for j, (b0, b1) in enumerate(zip(s0.inputs, s1.inputs)):
            if b0 != b1:
                rel[j].add(-1)
    return rel, len(s0.outputs)


def plan_cost(
    rule: Rule,
    need: Callable[[list[Step]], dict[str, int]],
    capacity: dict[str, int],
    cost: Cost,
    orders: list[list[int]] | None = None,
    max_candidates: int = 6000,
    kmin: int = 1,
    amin: dict[int, int] | None = None,
) -> list[Step] | None:
    """The tiling (tile sizes, reduction chunk and loop order) with the smallest
    estimated time among those that fit: DMA time = transfers x fixed cost + bytes /
    bandwidth, where an input is reloaded only when its box changes between
    consecutive steps (so the loop order decides which operand stays resident);
    compute time = steps x fixed cost + work; time = max(DMA, compute) + min(...)/steps
    (the pipeline's fill). With `cost.map_cycles` the mapping unit is a third stage M:
    time = max(D, M, C) + (D + M + C - max) / steps. Reduction chunks are at least
    `kmin` long (fewer, larger MPU instructions). Of equal times the first candidate
    (sizes, then chunk, then loop order, in enumeration order) wins. None when
    nothing fits (the caller falls back to `plan`). Sets `rule.axes` to the chosen
    loop order. (`CostPlan`: the same choice for any capacity.)"""
    return CostPlan(rule, cost, orders, max_candidates, kmin, amin).choose(rule, need, capacity, cost)


class CostPlan:
    """`plan_cost` of one rule and cost as a function of the capacity: the candidate
    tilings and their lower bounds on the time are listed once; a candidate's
    footprint and times are computed when a capacity first needs them and kept, so
    that the same op planned again with other free cache bytes (topo-reorder lowers
    a model in many orders) reuses them. `choose` returns exactly what `plan_cost`
    returns for that capacity: the candidates are visited by their compute-time
    bound (a candidate's time is never below it), every candidate whose bound is
    not above the best fitting time so far is evaluated, and ties go to the first
    in enumeration order. `need` and `cost` passed to `choose` must be those the
    plan was listed with (equal closures of an equal op); the plan holds only plain
    data (picklable)."""

    def __init__(self, rule: Rule, cost: Cost, orders: list[list[int]] | None = None,
                 max_candidates: int = 6000, kmin: int = 1, amin: dict[int, int] | None = None):
        axes = list(rule.axes)
        self.cands: list[tuple[float, int, dict[int, int], int, int, int]] | None = None
        self.evals: dict[int, tuple[dict[str, int], float, int]] = {}
        self.chosen: dict[tuple[int, int], tuple[list[Step], dict[str, int]]] = {}
        self.by_capacity: dict[tuple, tuple[float, int, int] | None] = {}  # the choice per capacity met
        self.orders = [list(o) for o in (orders or [axes])]
        if not axes and not rule.k_extent:
            return
        self.rel, _ = _relevance(rule)
        chains = {a: _chain(rule, a) for a in axes}
        for a, m in (amin or {}).items():
            if a in chains:
                keep = [c for c in chains[a] if c >= m]
                chains[a] = keep or chains[a][:1]
        kchain = [rule.k_extent]
        if rule.k_extent:
            while kchain[-1] > 1 and (kchain[-1] + 1) // 2 >= kmin:
                kchain.append((kchain[-1] + 1) // 2)
        combos: list[dict[int, int]] = [{}]
        for i, a in enumerate(axes):
            nxt = []
            for c in combos:
                for sz in chains[a]:
                    d = dict(c)
                    d[a] = sz
                    nxt.append(d)
            combos = nxt
            if len(combos) * len(kchain) > max_candidates:
                break
        if len(combos) * len(kchain) > max_candidates:
            return
        n_seg = {a: {sz: len(rule.segments(a, sz)) for sz in chains[a]} for a in axes}
        cands = []
        for sizes in combos:
            for kc in kchain:
                nk = -(-rule.k_extent // kc) if rule.k_extent else 1
                counts = {a: n_seg[a][sizes[a]] for a in axes}
                T = math.prod(counts.values()) * nk
                # compute: output tiles spread over `units` compute units (reduction
                # chunks of one output tile stay on its unit); a lower bound on the time
                par = max(1, min(cost.units, T // nk))
                C = (T * cost.step + cost.work) / par
                cands.append((C, len(cands), sizes, kc, nk, T))
        self.cands = sorted(cands, key=lambda c: (c[0], c[1]))
        self.counts = {c[1]: {a: n_seg[a][c[2][a]] for a in axes} for c in cands}

    def _evaluate(self, rule: Rule, need, cost: Cost, cand) -> tuple[dict[str, int], float, int]:
        """(footprint of the sample steps, best time, index of its loop order)."""
        C, seq, sizes, kc, nk, T = cand
        samples = _samples(rule, sizes, kc if rule.k_extent else 0)
        foot = need(samples)
        counts = self.counts[seq]
        rel = self.rel
        s0 = samples[0]
        best_t, best_o = None, -1
        for oi, order in enumerate(self.orders):
            pos = {a: i for i, a in enumerate(order)}
            D = 0.0
            M = 0.0
            for j, box in enumerate(s0.inputs):
                if box is None:
                    continue
                b = cost.in_bytes(j, box)
                if b <= 0:
                    continue
                mc = cost.map_cycles(j, box) if cost.map_cycles is not None else 0.0
                r = rel[j] if j < len(rel) else set()
                if -1 in r and nk > 1:
                    loads = T  # the reduction loop is innermost
                else:
                    last = max((pos[a] for a in r if a >= 0), default=-1)
                    loads = math.prod(counts[order[i]] for i in range(last + 1))
                D += loads * (cost.transfer + b / cost.bw)
                M += loads * mc
            ntiles = T // nk
            for j, box in enumerate(s0.outputs):
                D += ntiles * (cost.transfer + cost.out_bytes(j, box) / cost.bw)
            D /= cost.dma_queues
            if M > 0:
                top = max(D, M, C)
                t = top + (D + M + C - top) / T
            else:
                t = max(D, C) + min(D, C) / T
            if best_t is None or t < best_t:
                best_t, best_o = t, oi
        return foot, best_t, best_o

    def choose(self, rule: Rule, need, capacity: dict[str, int], cost: Cost) -> list[Step] | None:
        """`plan_cost`'s tiling for `capacity` (sets `rule.axes` to its loop order)."""
        if self.cands is None:
            return None

        def over(n: dict[str, int]) -> float:
            return max((n.get(s, 0) / capacity[s]) for s in capacity)

        ckey = tuple(sorted(capacity.items()))
        if ckey in self.by_capacity:
            best = self.by_capacity[ckey]
        else:
            best = None  # (time, enumeration index, loop order index)
            for cand in self.cands:
                if best is not None and cand[0] > best[0]:
                    break
                ev = self.evals.get(cand[1])
                if ev is None:
                    ev = self.evals[cand[1]] = self._evaluate(rule, need, cost, cand)
                if over(ev[0]) > 1.0:
                    continue
                key = (ev[1], cand[1], ev[2])
                if best is None or key < best:
                    best = key
            self.by_capacity[ckey] = best
        if best is None:
            return None
        _, seq, oi = best
        rule.axes = list(self.orders[oi])
        got = self.chosen.get((seq, oi))
        if got is None:
            cand = next(c for c in self.cands if c[1] == seq)
            steps = enumerate_steps(rule, cand[2], cand[3] if rule.k_extent else 0)
            got = self.chosen[(seq, oi)] = (steps, need(steps))
        if over(got[1]) > 1.0:
            return None
        return got[0]
