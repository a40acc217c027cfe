"""The reduced dependency DAG of `nnx.lowering.deps.DependencyTracker` against the full
one (`reduce=False`): every reduced edge is a full edge, the transitive closures are
equal, and the list scheduler and `sync_tokens` give identical results from both --
on random access streams (overlapping cache ranges, boxes of shared buffers,
storage granules, three units) and on lowered programs."""

from __future__ import annotations

import random

import pytest

from nnx.lowering.deps import dependencies, sync_tokens
from nnx.schedule import best_order, list_schedule

UNITS = ("DAU0", "MPU0", "VPU0")


def _random_program(rng: random.Random, n: int):
    """n instructions with random reads and writes: plain cache ranges, boxes of a few
    resident buffers (two at the same address: their boxes never cover each other's
    records, the case that makes the full set quadratic) and storage tensors."""
    buffers = [(0, (4, 8)), (0, (8, 4)), (64, (4, 8))]  # (base, shape), 4-byte elements

    def box():
        base, shape = rng.choice(buffers)
        bounds = []
        for d in shape:
            s = rng.randrange(d)
            bounds.append((s, rng.randrange(s + 1, d + 1)))
        lo = base + 4 * (bounds[0][0] * shape[1] + bounds[1][0])
        hi = base + 4 * ((bounds[0][1] - 1) * shape[1] + bounds[1][1])
        return ("O", lo, hi, (base, shape, tuple(bounds)))

    def access():
        k = rng.random()
        if k < 0.45:
            return box()
        if k < 0.8:
            lo = rng.randrange(0, 192, 4)
            return (rng.choice("NO"), lo, lo + rng.randrange(4, 64, 4))
        return ("S", rng.choice(["a", "b", (0, 64)]))

    prog = []
    for _ in range(n):
        reads = [access() for _ in range(rng.randrange(0, 4))]
        writes = [access() for _ in range(rng.randrange(1, 3))]
        prog.append((reads, writes))
    units = [rng.choice(UNITS) for _ in range(n)]
    return prog, units


def _closure(preds):
    anc = []
    for ps in preds:
        a = 0
        for p in ps:
            a |= anc[p] | (1 << p)
        anc.append(a)
    return anc


def _random_topological(rng, preds):
    n = len(preds)
    succs = [[] for _ in range(n)]
    indeg = [len(ps) for ps in preds]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    ready = [i for i in range(n) if indeg[i] == 0]
    order = []
    while ready:
        i = ready.pop(rng.randrange(len(ready)))
        order.append(i)
        for s in succs[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    return order


def _check_equivalent(prog, units, cost, rng):
    full = dependencies(prog, units, reduce=False)
    red = dependencies(prog, units)
    assert all(set(r) <= set(f) for r, f in zip(red, full))
    assert _closure(red) == _closure(full)
    assert best_order(units, cost, red) == best_order(units, cost, full)
    assert list_schedule(units, cost, red) == list_schedule(units, cost, full)
    orders = [list(range(len(units))), best_order(units, cost, full)[0]]
    orders += [_random_topological(rng, full) for _ in range(3)]
    for order in orders:
        assert sync_tokens(units, red, order) == sync_tokens(units, full, order)
    return sum(map(len, full)), sum(map(len, red))


@pytest.mark.parametrize("seed", range(12))
def test_reduced_dependencies_schedule_and_synchronise_like_the_full_ones(seed):
    rng = random.Random(seed)
    prog, units = _random_program(rng, 120)
    cost = [rng.choice([0, 1, 5, 20]) for _ in units]  # zero costs: ties in the scheduler
    n_full, n_red = _check_equivalent(prog, units, cost, rng)
    assert n_red < n_full  # something was dropped (the test can tell the two apart)


@pytest.mark.parametrize("name", ["chain.mlir", "transpose-view.mlir", "matmul-acc-init.mlir", "gather.mlir"])
def test_reduced_dependencies_of_lowered_programs(name):
    # the accesses chip-lower emitted for test/passes/lower-to-chip inputs
    from test_schedule import _lowered

    from nnx.schedule import estimate_cycles
    from nnx.target import load_target

    prog, entries = _lowered(name)
    units = [op.unit.data for op in prog.instructions()]
    target = load_target(None)
    cost = [estimate_cycles(target, ins) for ins, _, _ in entries]
    _check_equivalent([(r, w) for _, r, w in entries], units, cost, random.Random(0))


def _flat_full_dependencies(prog):
    """The full dependency set by its definition, over one flat list of records per
    cache space (every record compared with every access): the tracker groups the
    records by buffer and skips groups whose byte span an access misses."""
    from nnx.lowering.deps import _box_covers, _boxes_overlap

    recs = {"N": [], "W": [], "O": []}  # [lo, hi, writer, readers, box]
    s_recs: dict = {}
    out = []
    for i, (reads, writes) in enumerate(prog):
        deps = set()
        for a in reads:
            if a[0] == "S":
                rec = s_recs.setdefault(a[1], [None, []])
                if rec[0] is not None:
                    deps.add(rec[0])
                rec[1].append(i)
                continue
            bx = a[3] if len(a) > 3 else None
            for rec in recs[a[0]]:
                if rec[0] < a[2] and a[1] < rec[1] and _boxes_overlap(rec[4], bx):
                    if rec[2] is not None:
                        deps.add(rec[2])
                    rec[3].append(i)
        for a in writes:
            if a[0] == "S":
                rec = s_recs.get(a[1])
                if rec is not None:
                    deps.update(([rec[0]] if rec[0] is not None else []) + rec[1])
                s_recs[a[1]] = [i, []]
                continue
            lo, hi = a[1], a[2]
            bx = a[3] if len(a) > 3 else None
            kept = []
            for rec in recs[a[0]]:
                if not (rec[0] < hi and lo < rec[1] and _boxes_overlap(rec[4], bx)):
                    kept.append(rec)
                    continue
                deps.update(([rec[2]] if rec[2] is not None else []) + rec[3])
                if bx is not None:  # a box kills only the records of its buffer it covers
                    if not _box_covers(bx, rec[4]):
                        kept.append(rec)
                    continue
                if rec[0] < lo:
                    kept.append([rec[0], lo, rec[2], list(rec[3]), rec[4]])
                if hi < rec[1]:
                    kept.append([hi, rec[1], rec[2], list(rec[3]), rec[4]])
            recs[a[0]] = kept + [[lo, hi, i, [], bx]]
        deps.discard(i)
        out.append(sorted(deps))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_grouped_records_give_the_definition(seed):
    """The tracker's full set (reduce=False) equals the definition over a flat record
    list, on random programs whose buffers share and overlap addresses."""
    rng = random.Random(100 + seed)
    prog, units = _random_program(rng, 150)
    want = _flat_full_dependencies(prog)
    assert dependencies(prog, units, reduce=False) == want
    assert sum(map(len, want)) > len(prog)  # dependencies to compare
