"""topo-reorder and its parts (nnx/topo_order/), each checked against an oracle:

* key nodes (dominators on a virtual source/sink) == the intersection of all
  input-to-output paths, enumerated by brute force on small random DAGs;
* subgraphs: every whole-graph topological order is the concatenation of one order
  per subgraph (the number of orders is the product of the subgraphs' counts);
* the timing replay == the reference simulator's cycles on a compiled model;
* the pass: interpreter outputs bit-identical after reordering a branchy real model,
  the verifier passes, and with the whole-model check the result is never slower
  than the ONNX, HEFT and best random orders measured in the same run.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_zoo  # noqa: E402

from nnx.topo_order import orders as O  # noqa: E402
from nnx.topo_order.key_nodes import key_nodes  # noqa: E402
from nnx.topo_order.subgraphs import merge_small, split_at_key_nodes  # noqa: E402


def _random_dag(rng: random.Random, n: int, p: float):
    preds = []
    for v in range(n):
        ps = [u for u in range(v) if rng.random() < p]
        if v and not ps and rng.random() < 0.7:
            ps = [rng.randrange(v)]
        preds.append(tuple(ps))
    has_succ = {u for ps in preds for u in ps}
    sinks = frozenset(v for v in range(n) if v not in has_succ)
    return preds, sinks


def _all_paths_intersection(preds, sinks):
    n = len(preds)
    succs = [[] for _ in range(n)]
    for v, ps in enumerate(preds):
        for p in ps:
            succs[p].append(v)
    inter = None
    sources = [v for v in range(n) if not preds[v]]

    def walk(v, path):
        nonlocal inter
        path = path + [v]
        if v in sinks:
            inter = set(path) if inter is None else inter & set(path)
        for s in succs[v]:
            walk(s, path)

    for s in sources:
        walk(s, [])
    return sorted(inter or [])


def _count_orders(nodes, preds):
    res = O.all_orders(nodes, preds, 100000)
    assert res is not None
    return len(res)


@pytest.mark.parametrize("seed", range(40))
def test_key_nodes_are_on_every_path(seed):
    rng = random.Random(seed)
    preds, sinks = _random_dag(rng, rng.randint(1, 9), rng.choice([0.2, 0.4, 0.6]))
    assert key_nodes(preds, sinks) == _all_paths_intersection(preds, sinks)


def test_key_nodes_of_shapes():
    # chain: every node; diamond: the fork and the join; two separate chains: none
    assert key_nodes([(), (0,), (1,)], {2}) == [0, 1, 2]
    assert key_nodes([(), (0,), (0,), (1, 2)], {3}) == [0, 3]
    assert key_nodes([(), (), (0,), (1,)], {2, 3}) == []


@pytest.mark.parametrize("seed", range(30))
def test_subgraph_orders_compose_the_whole_graph_orders(seed):
    rng = random.Random(100 + seed)
    n = rng.randint(2, 8)
    preds, sinks = _random_dag(rng, n, 0.35)
    parts = split_at_key_nodes(n, key_nodes(preds, sinks), preds)
    assert sorted(v for p in parts for v in p) == list(range(n))
    for merged in (parts, merge_small(parts, 3)):
        prod = 1
        for p in merged:
            prod *= _count_orders(p, preds)
        assert prod == _count_orders(list(range(n)), preds)
        # any concatenation of per-part orders is a topological order
        order = [v for p in merged for v in O.random_order(p, preds, rng)]
        pos = {v: k for k, v in enumerate(order)}
        assert all(pos[u] < pos[v] for v in range(n) for u in preds[v])


def test_random_beam_and_heft_orders_are_topological():
    rng = random.Random(3)
    preds, _ = _random_dag(rng, 12, 0.3)
    nodes = list(range(12))
    succs = [[v for v in range(12) if u in preds[v]] for u in range(12)]
    rank = O.upward_ranks(12, succs, [rng.randint(1, 9) for _ in range(12)])
    cands = O.random_orders(nodes, preds, 10, rng) + [
        O.heft_order(nodes, preds, rank), O.beam_order(nodes, preds, 3, lambda o: sum(o[:3]))]
    for order in cands:
        pos = {v: k for k, v in enumerate(order)}
        assert sorted(order) == nodes
        assert all(pos[u] < pos[v] for v in nodes for u in preds[v])
    heft = O.heft_order(nodes, preds, rank)
    ready0 = [v for v in nodes if not preds[v]]
    assert heft[0] == max(ready0, key=lambda v: (rank[v], -v))


def _light(name: str):
    from nnx.importer import import_onnx

    return import_onnx(str(model_zoo.light_model_path(name)))


def test_replay_matches_the_simulator():
    """The search's timing replay gives the reference simulator's cycles."""
    import tempfile

    from nnx.sim.asm import parse_program
    from nnx.sim.simulator import Simulator
    from nnx.target import load_target
    from nnx.tools.nnx_translate import translate
    from nnx.sim.timing import replay

    target = load_target()
    from nnx.dialects.chip import ProgramOp
    from nnx.ir_io import make_context
    from nnx.passes.lower_to_chip import LowerToChipPass

    m = _light("squeezenet")
    LowerToChipPass(schedule=True).apply(make_context(), m)
    prog_op = next(op for op in m.walk() if isinstance(op, ProgramOp))
    instrs = [op.to_instr() for op in prog_op.instructions()]
    with tempfile.TemporaryDirectory() as d:
        text, data = translate(m, f"{d}/p.s", target)
        Path(f"{d}/p.data").write_bytes(data)
        sim = Simulator(parse_program(text, f"{d}/p.s"), target, record_events=False).run(None)
    r = replay(instrs, target)
    assert r.cycles == sim.cycles
    assert r.busy == {u: b for u, b in sim.unit_busy.items()}


def test_reordered_inception_is_bit_identical_and_verifies():
    """A random subgraph order (cost=estimate: no compilation) changes the block of
    a real branchy model; the interpreter's outputs stay bit-identical."""
    from nnx.interp.interpreter import run_module
    from nnx.ir_io import make_context
    from nnx.passes.topo_reorder import TopoReorderPass
    from nnx.topo_order.dag import build_dag

    m = _light("inception_v1")
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    before = run_module(m, [x])
    f = next(iter(m.body.block.ops))
    names_before = [op.name for op in build_dag(f.body.block).ops]
    TopoReorderPass(search="random", cost="estimate", seed=5, verify=False).apply(make_context(), m)
    m.verify()
    names_after = [op.name for op in build_dag(f.body.block).ops]
    assert names_after != names_before and sorted(names_after) == sorted(names_before)
    after = run_module(m, [x])
    for k in before:
        assert np.array_equal(before[k], after[k])


def _branchy_block_model():
    """An Inception-like block at 28x28: 1x1, 1x1->3x3, 3x3 pool->1x1, concat."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"]),
        helper.make_node("Conv", ["x", "w2"], ["b0"]),
        helper.make_node("Relu", ["b0"], ["b1"]),
        helper.make_node("Conv", ["b1", "w3"], ["b"], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["x"], ["c0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c0", "w4"], ["c"]),
        helper.make_node("Concat", ["a", "b", "c"], ["y0"], axis=1),
        helper.make_node("Relu", ["y0"], ["y"]),
    ]
    inits = [w("w1", 32, 64, 1, 1), w("w2", 48, 64, 1, 1), w("w3", 64, 48, 3, 3), w("w4", 32, 64, 1, 1)]
    g = helper.make_graph(nodes, "block",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128, 28, 28])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


@pytest.mark.parametrize("schedule", [False, True])
def test_never_slower_than_the_baselines(schedule):
    from nnx.importer import import_model
    from nnx.interp.interpreter import run_module
    from nnx.ir_io import make_context
    from nnx.target import load_target
    from nnx.topo_order.compile_cache import measure
    from nnx.topo_order.search import SearchOptions, search_order

    m = import_model(_branchy_block_model())
    x = np.random.default_rng(0).standard_normal((1, 64, 28, 28)).astype(np.float32)
    opts = SearchOptions(schedule=schedule, jobs=1, merge_below=1)
    res = search_order(m, "main", opts, load_target())
    assert res.keys and len(res.subgraphs) >= 1
    if res.whole:
        best = res.whole[res.chosen]
        assert best <= min(res.whole.values())
        assert best <= res.whole["onnx"] and best <= res.whole["heft"]
    from nnx.passes.topo_reorder import TopoReorderPass

    m2 = import_model(_branchy_block_model())
    ref = run_module(m2, [x])
    # the default pipeline (lower-to-chip keep-faster): topo-reorder + it is never
    # slower than it alone
    base = measure(import_model(_branchy_block_model()), "", schedule, keep_faster=schedule).simulate
    TopoReorderPass(schedule=schedule, jobs=1, merge_below=1).apply(make_context(), m2)
    m2.verify()
    got = run_module(m2, [x])
    assert all(np.array_equal(ref[k], got[k]) for k in ref)
    assert measure(m2, "", schedule, keep_faster=schedule).simulate <= base


def _branchy_wide_model():
    """Two stacked blocks of four parallel 1x1/3x3 branches: many topological orders."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    nodes, inits, src = [], [], "x"
    for b in range(2):
        outs = []
        for k in range(4):
            wname, o = f"w{b}{k}", f"c{b}{k}"
            ks = 3 if k % 2 else 1
            inits.append(numpy_helper.from_array(
                (rng.standard_normal((16, 32, ks, ks)) * 0.1).astype(np.float32), wname))
            nodes.append(helper.make_node("Conv", [src, wname], [o], pads=[ks // 2] * 4))
            nodes.append(helper.make_node("Relu", [o], [o + "r"]))
            outs.append(o + "r")
        src = f"cat{b}"
        nodes.append(helper.make_node("Concat", outs, ["cat_pre" + str(b)], axis=1))
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((32, 64, 1, 1)) * 0.1).astype(np.float32), f"p{b}"))
        nodes.append(helper.make_node("Conv", ["cat_pre" + str(b), f"p{b}"], [src]))
    g = helper.make_graph(nodes, "wide",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 28, 28])],
                          [helper.make_tensor_value_info(src, TensorProto.FLOAT, [1, 32, 28, 28])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def test_default_never_slower_than_the_best_of_the_random_whole_orders():
    """With the default options the whole-model check compiles all `baseline-random`
    random whole orders (a small model fits the time limit): the result is never
    slower than any of them, each compiled and simulated here independently."""
    from nnx.importer import import_model
    from nnx.target import load_target
    from nnx.topo_order.compile_cache import measure
    from nnx.topo_order.dag import build_dag
    from nnx.topo_order.extract import ordered_clone
    from nnx.topo_order.search import SearchOptions, composed_cost, search_order

    m = import_model(_branchy_wide_model())
    opts = SearchOptions(schedule=False, jobs=1)
    res = search_order(m, "main", opts, load_target())
    dag = build_dag(next(iter(m.body.block.ops)).body.block)
    rng = random.Random(opts.seed)
    rand = list(dict.fromkeys(O.random_order(tuple(range(len(dag))), dag.preds, rng)
                              for _ in range(opts.baseline_random)))
    assert len(rand) > 3
    assert res.verified_random == len(rand)
    got = measure(ordered_clone(m, "main", res.order), "", False).simulate
    each = [measure(ordered_clone(m, "main", o), "", False).simulate for o in rand]
    assert got <= min(each)
    assert got <= measure(m.clone(), "", False).simulate


def test_composed_cost_sums_the_parts_and_needs_every_part():
    """A whole order's composed cost is the sum of its parts' compiled costs (single-op
    parts have one order and cost nothing extra); a part not compiled makes it None."""
    from nnx.topo_order.search import composed_cost

    parts = [[0, 1, 2], [3], [4, 5]]
    costs = [{(0, 1, 2): 10, (1, 0, 2): 7}, {}, {(4, 5): 3, (5, 4): 5}]
    assert composed_cost((1, 0, 2, 3, 5, 4), parts, costs) == 12
    assert composed_cost((0, 1, 2, 3, 4, 5), parts, costs) == 13
    assert composed_cost((0, 2, 1, 3, 4, 5), parts, costs) is None
