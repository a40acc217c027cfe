"""The plan memo's `CostPlan` (nnx/tiling/plan.py) against the definition of
`plan_cost`, for any capacity.

topo-reorder lowers a model in many orders (docs/topological-order.md, "Cost of a
candidate order"); an MPU op is met again with other free cache bytes, and the memo
keeps its candidate tilings (`CostPlan`) instead of one plan per byte count. One
`CostPlan` asked for many capacities in a random order, and a fresh `plan_cost` per
capacity, must both give exactly the steps and loop order of the original pruned
search (`_reference_plan_cost`, the definition, written out here), including "nothing
fits" (None).
"""

from __future__ import annotations

import copy
import math
import random

import pytest

from nnx.tiling import Cost, CostPlan, box_shape, enumerate_steps, plan_cost, rule_for
from nnx.tiling.plan import _chain, _relevance, _samples
from test_tiling import _need


def _reference_plan_cost(rule, need, capacity, cost, orders=None, max_candidates=6000, kmin=1, amin=None):
    """`plan_cost` as first written (candidates in enumeration order, pruned by the
    compute bound against the best so far): the definition `CostPlan` must match."""
    axes = list(rule.axes)
    if not axes and not rule.k_extent:
        return None
    orders = orders or [axes]
    rel, nout = _relevance(rule)
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
        return None
    n_seg = {a: {sz: len(rule.segments(a, sz)) for sz in chains[a]} for a in axes}

    def over(steps) -> float:
        n = need(steps)
        return max((n.get(s, 0) / capacity[s]) for s in capacity)

    best = None
    for sizes in combos:
        for kc in kchain:
            nk = -(-rule.k_extent // kc) if rule.k_extent else 1
            counts = {a: n_seg[a][sizes[a]] for a in axes}
            T = math.prod(counts.values()) * nk
            # compute: output tiles spread over `units` compute units (reduction chunks
            # of one output tile stay on its unit); a cheap lower bound on the time
            # before the footprint check
            par = max(1, min(cost.units, T // nk))
            C = (T * cost.step + cost.work) / par
            if best is not None and C >= best[0]:
                continue
            samples = _samples(rule, sizes, kc if rule.k_extent else 0)
            if over(samples) > 1.0:
                continue
            s0 = samples[0]
            for order in orders:
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
                if best is None or t < best[0]:
                    best = (t, dict(sizes), kc, list(order))
    if best is None:
        return None
    _, sizes, kc, order = best
    rule.axes = order
    steps = enumerate_steps(rule, sizes, kc if rule.k_extent else 0)
    if over(steps) > 1.0:
        return None
    return steps



# (kind, input shapes, output shapes, attrs): MPU ops of the shapes the models have
OPS = [
    ("Conv", [(1, 8, 14, 14), (16, 8, 3, 3), (16,)], [(1, 16, 14, 14)],
     {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),
    ("Conv", [(1, 32, 7, 7), (24, 32, 1, 1)], [(1, 24, 7, 7)], {"kernel_shape": [1, 1]}),
    ("Gemm", [(8, 128), (128, 48), (48,)], [(8, 48)], {}),
    ("MatMul", [(2, 2, 16, 12), (2, 2, 12, 16)], [(2, 2, 16, 16)], {}),
]


def _cost(units: int, fixed: float) -> Cost:
    return Cost(in_bytes=lambda j, b: 4 * math.prod(box_shape(b)),
                out_bytes=lambda j, b: 4 * math.prod(box_shape(b)),
                transfer=fixed, bw=8, step=10, work=5000, units=units)


@pytest.mark.parametrize("op", range(len(OPS)))
@pytest.mark.parametrize("kmin,amin", [(1, None), (4, {1: 8})])
def test_cost_plan_equals_the_definition_for_any_capacity(op, kmin, amin):
    kind, ins, outs, attrs = OPS[op]
    rule = rule_for(kind, ins, outs, attrs, {})
    whole = _need(enumerate_steps(rule, {a: rule.out_shape[a] for a in rule.axes}, rule.k_extent or 0))
    rng = random.Random(op)
    # capacities from "nothing fits" to "everything fits", asked in a random order
    caps = [{s: max(1, int(v * f)) for s, v in whole.items()} for f in [0, 0.05, 0.2, 0.5, 1.0, 1.5]]
    caps += [{s: max(1, int(v * rng.uniform(0.02, 1.2))) for s, v in whole.items()} for _ in range(8)]
    caps += caps[:4]  # capacities met again: the plan's choice per capacity
    rng.shuffle(caps)
    for units, fixed in ((1, 20.0), (4, 300.0)):
        cost = _cost(units, fixed)
        axes = list(rule.axes)
        orders = [axes] + [[b for b in axes if b != a] + [a] for a in axes[:-1]]
        shared = CostPlan(copy.deepcopy(rule), cost, orders, kmin=kmin, amin=amin)
        outcomes = set()
        for cap in caps:
            r_ref, r_fresh, r_shared = (copy.deepcopy(rule) for _ in range(3))
            want = _reference_plan_cost(r_ref, _need, cap, cost, orders, kmin=kmin, amin=amin)
            got = plan_cost(r_fresh, _need, cap, cost, orders, kmin=kmin, amin=amin)
            again = shared.choose(r_shared, _need, cap, cost)
            assert got == want and again == want, (kind, cap)
            if want is not None:
                assert r_fresh.axes == r_ref.axes == r_shared.axes
            outcomes.add(None if want is None else (len(want), tuple(r_ref.axes)))
        # the capacities make a difference: several tilings, and "nothing fits"
        assert None in outcomes and len(outcomes) >= 3, outcomes
        assert shared.evals  # candidates evaluated once, kept for the next capacity
        assert len(shared.by_capacity) < len(caps)  # a capacity met again is looked up
