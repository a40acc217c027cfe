"""topo-reorder's direct timing of a candidate order (nnx/topo_order/cost.direct_instrs,
docs/topological-order.md "Cost of a candidate order") against the full path: the
order lowered by `lower-to-chip` on chip IR and timed by nnx/sim/timing.replay.

On random topological orders of small branchy models (convolution branches; an
attention block with MatMul, Transpose, Softmax and residual Adds), for
schedule=false, schedule=true and schedule=true with keep-faster, the direct path
must give the same cycles, per-unit busy cycles, cost-model cycles and instruction
count, with and without the MPU tile-plan memo shared across the orders.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_topo_reorder import _branchy_wide_model  # noqa: E402


def _attention_model():
    """One attention block on [16, 32] tokens: Q/K/V projections with biases, Q x K^T,
    Softmax, x V, an output projection and a residual Add; a parallel MLP branch."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    inits = []

    def w(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name))
        return name

    nodes = []
    for p in "qkv":
        nodes.append(helper.make_node("MatMul", ["x", w(f"w{p}", 32, 32)], [f"{p}0"]))
        nodes.append(helper.make_node("Add", [f"{p}0", w(f"b{p}", 32)], [p]))
    nodes += [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Softmax", ["s"], ["a"], axis=-1),
        helper.make_node("MatMul", ["a", "v"], ["o0"]),
        helper.make_node("MatMul", ["o0", w("wo", 32, 32)], ["o"]),
        helper.make_node("MatMul", ["x", w("w1", 32, 64)], ["h0"]),
        helper.make_node("Relu", ["h0"], ["h1"]),
        helper.make_node("MatMul", ["h1", w("w2", 64, 32)], ["h"]),
        helper.make_node("Add", ["o", "x"], ["r0"]),
        helper.make_node("Add", ["r0", "h"], ["y"]),
    ]
    g = helper.make_graph(nodes, "attn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 32])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


MODELS = {"wide": _branchy_wide_model, "attention": _attention_model}
MODES = [(False, False), (True, False), (True, True)]  # (schedule, keep_faster)


def _orders(module, count: int, seed: int):
    from nnx.topo_order import orders as O
    from nnx.topo_order.dag import build_dag

    dag = build_dag(next(iter(module.body.block.ops)).body.block)
    onnx = tuple(range(len(dag)))
    rng = random.Random(seed)
    out = [onnx] + [O.random_order(onnx, dag.preds, rng) for _ in range(count)]
    return list(dict.fromkeys(out))


def _timed(instrs, target):
    from nnx.sim.timing import replay
    from nnx.topo_order.cost import model_cycles

    r = replay(instrs, target)
    return r.cycles, r.busy, model_cycles(instrs, target), len(instrs)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_direct_timing_equals_lowering_and_replay_on_random_orders(name):
    from nnx.importer import import_model
    from nnx.lowering.plan_memo import plan_memo
    from nnx.target import load_target
    from nnx.topo_order.cost import compile_instrs, direct_instrs
    from nnx.topo_order.extract import ordered_clone

    target = load_target()
    m = import_model(MODELS[name]())
    fname = next(iter(m.body.block.ops)).sym_name.data
    orders = _orders(m, 6, seed=11)
    assert len(orders) >= 5
    seen_cycles = set()
    with plan_memo() as memo:  # one memo across every order and mode, as the search does
        for o in orders:
            for schedule, keep_faster in MODES:
                full = _timed(compile_instrs(ordered_clone(m, fname, o), "", schedule, keep_faster), target)
                memoized = _timed(direct_instrs(ordered_clone(m, fname, o), "", schedule, keep_faster), target)
                assert memoized == full, (o, schedule, keep_faster)
                seen_cycles.add(full[0])
        assert memo  # MPU plans were memoized
    # without the memo too
    for o in orders[:2]:
        for schedule, keep_faster in MODES:
            full = _timed(compile_instrs(ordered_clone(m, fname, o), "", schedule, keep_faster), target)
            assert _timed(direct_instrs(ordered_clone(m, fname, o), "", schedule, keep_faster), target) == full
    assert len(seen_cycles) > 1  # the orders differ in cycles: the comparison means something


def test_plan_memo_hits_on_a_second_lowering_and_is_off_by_default():
    """The same order lowered again takes every MPU plan from the memo (no new
    entry); outside `plan_memo()` nothing is memoized (lower-to-chip alone)."""
    from nnx.importer import import_model
    from nnx.lowering import plan_memo as PM
    from nnx.topo_order.compile_cache import measure
    from nnx.topo_order.cost import direct_instrs
    from nnx.topo_order.extract import ordered_clone

    m = import_model(_branchy_wide_model())
    o = _orders(m, 1, seed=3)[-1]
    assert not PM.enabled()
    PM.take_new()
    direct_instrs(ordered_clone(m, "main", o), "", False)
    assert PM.take_new() == []
    with PM.plan_memo() as memo:
        a = measure(ordered_clone(m, "main", o), "", False, direct=True)
        first = len(memo)
        assert first > 0 and len(PM.take_new()) == first
        b = measure(ordered_clone(m, "main", o), "", False, direct=True)
        assert PM.take_new() == [] and len(memo) == first
    assert a == b == measure(ordered_clone(m, "main", o), "", False)
    assert not PM.enabled()


def test_compile_cache_direct_and_ir_agree_in_worker_processes():
    """The compile cache's two timings (direct with memo, workers sending their plans
    back; ir) give the same measurements for a batch compiled by two processes."""
    from nnx.importer import import_model
    from nnx.topo_order.compile_cache import CompileCache
    from nnx.topo_order.extract import ordered_clone

    m = import_model(_branchy_wide_model())
    orders = _orders(m, 3, seed=7)
    direct = CompileCache("", False, 2, True)
    ir = CompileCache("", False, 2, False)
    got = direct.measure_all([ordered_clone(m, "main", o) for o in orders])
    assert direct.plans  # the workers' plans reached the parent
    assert got == ir.measure_all([ordered_clone(m, "main", o) for o in orders])
    assert not ir.plans


def test_timeline_forked_after_a_prefix_equals_the_whole_estimate():
    """The search times a subgraph's candidates from the graph-level timeline after
    the chosen prefix (`cost.Timeline.copy().run`): the same cycles as
    `estimate_order(prefix + order)` from scratch, on random orders split anywhere."""
    from nnx.importer import import_model
    from nnx.target import load_target
    from nnx.topo_order.cost import Timeline, estimate_order, op_cost
    from nnx.topo_order.dag import build_dag
    from nnx.topo_order.search import _producers

    target = load_target()
    m = import_model(_branchy_wide_model())
    dag = build_dag(next(iter(m.body.block.ops)).body.block)
    costs = [op_cost(op, target) for op in dag.ops]
    prods = _producers(dag)
    rng = random.Random(2)
    seen = set()
    for o in _orders(m, 8, seed=5):
        cut = rng.randrange(len(o) + 1)
        base = Timeline(dag.preds, costs, target, prods).run(o[:cut])
        fork = base.copy()
        want = estimate_order(o, dag.preds, costs, target, prods)
        assert fork.run(o[cut:]).cycles() == want
        # the fork did not change the base: timing it again gives the same
        assert base.copy().run(o[cut:]).cycles() == want
        seen.add(want)
    assert len(seen) > 1


@pytest.mark.parametrize("jobs", [1, 2])
def test_measure_until_streams_the_same_measurements_and_stops(jobs):
    """`CompileCache.measure_until` (the whole-model check's stream of orders through
    one pool): the same measurements as `measure_all`, cached ones at once; nothing
    new after the deadline; `keep_going` saying no stops the stream early."""
    import time

    from nnx.importer import import_model
    from nnx.topo_order.compile_cache import CompileCache
    from nnx.topo_order.extract import ordered_clone

    m = import_model(_branchy_wide_model())
    orders = _orders(m, 5, seed=11)
    want = CompileCache("", False, 1, True).measure_all([ordered_clone(m, "main", o) for o in orders])
    c = CompileCache("", False, jobs, True)
    got = c.measure_until([ordered_clone(m, "main", o) for o in orders], float("inf"))
    assert got == want and len(c.seconds) == c.compiled == len(set(orders))
    # cached: returned even after the deadline; not cached: None
    fresh = _orders(m, 3, seed=12)[-1]
    late = c.measure_until([ordered_clone(m, "main", orders[0]), ordered_clone(m, "main", fresh)],
                           time.monotonic() - 1)
    assert late == [want[0], None]
    # a stream told to stop after its first module compiles no more than one per worker
    more = [o for o in _orders(m, 8, seed=13) if o not in orders and o != fresh]
    c2 = CompileCache("", False, jobs, True)
    got2 = c2.measure_until([ordered_clone(m, "main", o) for o in more], float("inf"), lambda s, left: False)
    assert 1 <= sum(g is not None for g in got2) <= jobs < len(more)
