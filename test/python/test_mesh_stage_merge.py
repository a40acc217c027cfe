"""Stage merging (nnx/mesh/stage_merge.py; docs/mesh.md "Compilation"): unit tests on
hand-built plans (the merged stage graph stays acyclic and topologically numbered,
items stay in graph order, memory is respected, producer -> consumer pairs merge
first) and a differential test: a real model on a mesh with fewer cores than its
plan has stages, compiled and simulated, against onnxruntime."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from nnx.mesh.partition import RETURN, Plan, Stage
from nnx.mesh.stage_merge import item_order, merge_stages


def _plan(items_per_stage, bytes_=None, costs=None):
    """A plan of hand-made stages (no ops: merging looks only at stages and edges)."""
    stages, where = [], {}
    for s, items in enumerate(items_per_stage):
        stages.append(Stage(s, list(items), (bytes_ or [10] * len(items_per_stage))[s],
                            (costs or [1.0] * len(items_per_stage))[s]))
        for it in items:
            where[it] = s
    return Plan([], [], {}, stages, where)


def _old_to_new(plan, merged):
    return {s.index: merged.where[s.items[0]] for s in plan.stages}


def _merged_edges(plan, merged, edges):
    m = _old_to_new(plan, merged)
    return {(m[a], m[b]) for a, b in edges if m[a] != m[b]}


def _check_merged(plan, merged, edges, ncores, budget):
    """The invariants of every merged plan."""
    assert len(merged.stages) <= ncores
    # every item exactly once, where[] pointing at the stage holding it
    items = [it for s in merged.stages for it in s.items]
    assert sorted(items, key=item_order) == sorted((it for s in plan.stages for it in s.items), key=item_order)
    for s in merged.stages:
        assert s.index == merged.stages.index(s)
        assert s.items == sorted(s.items, key=item_order)  # graph order, RETURN last
        for it in s.items:
            assert merged.where[it] == s.index
        assert s.bytes <= budget
    # topologically numbered, hence acyclic
    for a, b in _merged_edges(plan, merged, edges):
        assert a < b, (a, b)


def test_fitting_plan_is_unchanged():
    plan = _plan([[(0, None)], [(1, None)]])
    assert merge_stages(plan, 2, 100, {(0, 1): 5}) is plan


def test_producer_consumer_pair_merges_before_siblings():
    # 0 -> 1 exchange 50 bytes; 2 is independent and cheap: merging 0 and 1 costs no
    # parallelism (1 waits for 0 anyway) and removes their message
    plan = _plan([[(0, None)], [(1, None)], [(2, None)]], costs=[5.0, 5.0, 0.1])
    edges = {(0, 1): 5}
    merged = merge_stages(plan, 2, 100, edges)
    _check_merged(plan, merged, edges, 2, 100)
    m = _old_to_new(plan, merged)
    assert m[0] == m[1] != m[2]
    assert merged.stages[m[0]].bytes == 10 + 10 - 5  # the message is held once


def test_no_merge_through_a_third_stage():
    # diamond 0 -> {1, 2} -> 3: merging 0 and 3 alone would make a cycle 0+3 -> 1 -> 0+3
    plan = _plan([[(0, None)], [(1, 0)], [(1, 1)], [(2, None)]], bytes_=[10, 60, 60, 10], costs=[1, 9, 9, 1])
    edges = {(0, 1): 1, (0, 2): 1, (1, 3): 1, (2, 3): 1}
    # budget 70: 1 and 2 can each take 0 or 3, but not each other; 3 stages needed
    merged = merge_stages(plan, 3, 70, edges)
    _check_merged(plan, merged, edges, 3, 70)
    m = _old_to_new(plan, merged)
    assert m[0] != m[3]


def test_crossing_sibling_merges_do_not_make_a_cycle():
    # a -> c and d -> b: {a, b} and {c, d} are each valid alone, together a cycle
    plan = _plan([[(0, None)], [(3, None)], [(1, None)], [(2, None)]])  # a, b, c, d
    edges = {(0, 2): 10, (3, 1): 10}
    merged = merge_stages(plan, 2, 100, edges)
    _check_merged(plan, merged, edges, 2, 100)
    m = _old_to_new(plan, merged)
    assert {frozenset(k for k in m if m[k] == v) for v in set(m.values())} == {frozenset({0, 2}), frozenset({3, 1})}


def test_items_in_graph_order_return_last():
    # stage 0 holds op 5 and the graph output assembly, stage 1 op 2: merged, op 2 first
    plan = _plan([[(5, 1), (RETURN, 0)], [(2, None)]])
    merged = merge_stages(plan, 1, 100, {})
    assert merged.stages[0].items == [(2, None), (5, 1), (RETURN, 0)]


def test_memory_budget_is_respected_or_none():
    plan = _plan([[(i, None)] for i in range(4)], bytes_=[60] * 4)
    assert merge_stages(plan, 2, 100, {}) is None  # no two stages fit one core
    merged = merge_stages(plan, 2, 120, {})
    _check_merged(plan, merged, {}, 2, 120)
    assert [s.bytes for s in merged.stages] == [120, 120]


def test_reduction_alias_in_where_follows_its_stage():
    # a reduction's (op, None) entry aliases its last part's stage
    plan = _plan([[(0, 0)], [(0, 1)], [(1, None)]])
    plan.where[(0, None)] = 1
    edges = {(0, 1): 8, (1, 2): 8}
    merged = merge_stages(plan, 2, 100, edges)
    _check_merged(plan, merged, edges, 2, 100)
    assert merged.where[(0, None)] == merged.where[(0, 1)]


@pytest.mark.parametrize("seed", range(20))
def test_random_dags_stay_acyclic_and_within_memory(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 60))
    edges = {}
    for b in range(1, n):  # edges from earlier to later stages only: a DAG
        for a in rng.choice(b, size=min(b, int(rng.integers(1, 4))), replace=False):
            edges[(int(a), b)] = int(rng.integers(1, 100))
    bytes_ = [int(x) for x in rng.integers(5, 20, n)]
    plan = _plan([[(s, None)] for s in range(n)], bytes_=bytes_, costs=[float(x) for x in rng.random(n)])
    ncores = max(1, n // 3)
    merged = merge_stages(plan, ncores, 100, edges)
    _check_merged(plan, merged, edges, ncores, 100)


def test_mesh_with_fewer_cores_than_stages_matches_onnxruntime(tmp_path):
    """tiny_resnet on 3 x 1 cores of 192 KiB: its plans need 4 stages (checked), the
    merged program on 3 cores gives onnxruntime's outputs."""
    import onnxruntime as ort
    from xdsl.dialects import func

    import model_zoo
    from nnx import api
    from nnx.dialects.graph import ConstantOp
    from nnx.mesh.compile import PACKING, compile_for_mesh, main_function
    from nnx.mesh.partition import plan_partition
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.target import load_target

    here = os.path.dirname(__file__)
    with open(os.path.join(here, "..", "passes", "lower-to-mesh", "Inputs", "mesh4x4.toml"), encoding="utf-8") as f:
        text = f.read()
    for key, value in (("width", 3), ("height", 1), ("core_memory_bytes", 196608)):
        text = re.sub(rf"(?m)^{key} = \d+", f"{key} = {value}", text)
    target = tmp_path / "mesh3x1.toml"
    target.write_text(text)
    name = "tiny_resnet"
    shapes = {k: s for k, (s, _) in model_zoo.MODEL_INPUTS[name].items()}
    module = api.import_onnx(model_zoo.get_model(name), shapes, 1)
    api.run_pipeline(module, "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)", verify_each=False)
    comp = compile_for_mesh(module, str(target), "bisect")
    assert len(comp.plan.stages) <= 3
    # merging was needed: at the fill that compiled, no packing plans 3 stages or fewer
    main = main_function(module)
    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    returned = list(main.body.block.last_op.operands)
    before = [len(plan_partition(ops, 3, 196608, pack, comp.fill, returned).stages) for pack in PACKING]
    assert min(before) > 3, before
    assert any(len(s.items) > 1 and len({i for i, _ in s.items}) > 1 for s in comp.plan.stages)
    save_mesh_program(comp, str(tmp_path / "prog.s"))
    feeds = model_zoo.sample_inputs(name)
    res = MeshSimulator(read_mesh_program(str(tmp_path / "prog.s")), load_target(str(target))).run(feeds)
    sess = ort.InferenceSession(str(model_zoo.get_model(name)))
    for out, ref in zip(sess.get_outputs(), sess.run(None, feeds)):
        np.testing.assert_allclose(res.outputs[out.name], ref, rtol=0, atol=1e-4)
    assert res.cycles > 0 and res.noc_byte_hops > 0


def _band_and_whole_pair(plan, returned):
    """Two stages holding parts of one op that read the same piece of its input from
    a third stage, one whole and one a band of it (the halo), or None."""
    from nnx.mesh.core_graph import stage_io

    ios = stage_io(plan, returned, [""] * len(returned))
    whole_readers = {}
    for s, io in enumerate(ios):
        for pc in io.recv:
            if len(pc) == 3:
                whole_readers.setdefault(pc, set()).add(s)
    for s, io in enumerate(ios):
        for pc, src in io.recv.items():
            if len(pc) == 4:
                for t in sorted(whole_readers.get(pc[:3], set()) - {s, src}):
                    return s, t
    return None


def test_row_split_cnn_merged_to_fewer_cores_matches_onnxruntime(tmp_path, monkeypatch):
    """The row-split CNN of test_lower_to_mesh.py (halo bands, strided and padded
    windows, a row-split graph output), its plan for the test target's 512 KiB cores
    changed: first two stages merged whose parts read one piece of their input, one
    whole and one a band of it (received once, the band sliced locally), then the
    stages merged to half their number. The program, on cores of 2 MiB that hold
    the merged stages, gives onnxruntime's outputs."""
    import onnxruntime as ort
    from test_lower_to_mesh import GRAPH_PASSES, TARGET, _row_split_cnn

    from nnx import api
    from nnx.mesh import compile as mesh_compile
    from nnx.mesh.stage_merge import _renumbered, _StageGraph, stage_edges
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.target import load_target

    unmerged = mesh_compile.plan_for_mesh
    seen = {}

    def merged_plan(main, ncores, core_memory, fill=0.6, stage_storage=None, saving=1.0, share=None):
        plan = unmerged(main, ncores, 524288, fill)
        returned = list(main.body.block.last_op.operands)
        edges = stage_edges(plan, returned)
        pair = _band_and_whole_pair(plan, returned)
        assert pair is not None
        gr = _StageGraph(plan, edges)
        assert gr.can_merge(*pair)
        gr.merge(*pair)
        first = _renumbered(plan, gr)
        seen["before"] = len(plan.stages)
        merged = merge_stages(first, len(first.stages) // 2, 1 << 20, stage_edges(first, returned))
        assert merged is not None
        return merged

    monkeypatch.setattr(mesh_compile, "plan_for_mesh", merged_plan)
    path = str(tmp_path / "rows.onnx")
    _row_split_cnn(path)
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    with open(TARGET, encoding="utf-8") as f:
        text = re.sub(r"(?m)^core_memory_bytes = \d+", "core_memory_bytes = 2097152", f.read())
    target = tmp_path / "mesh4x4_2m.toml"
    target.write_text(text)
    comp = mesh_compile.compile_for_mesh(module, str(target), "bisect", schedule="stages")
    assert seen["before"] >= 6 and len(comp.plan.stages) <= (seen["before"] - 1) // 2, seen
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 128, 128)).astype(np.float32)}
    save_mesh_program(comp, str(tmp_path / "prog.s"))
    got = MeshSimulator(read_mesh_program(str(tmp_path / "prog.s")), load_target(str(target))).run(feeds).outputs
    for name, ref in zip(["res", "y"], ort.InferenceSession(path).run(["res", "y"], feeds)):
        np.testing.assert_allclose(got[name], ref, rtol=0, atol=1e-4)


def test_saving_counts_a_fraction_of_the_estimated_savings():
    # 0 -> 1 send 40 bytes: merged, 60 + 60 - 40 = 80 fits 90; counting half the
    # saving (60 + 60 - 20 = 100) it does not
    plan = _plan([[(0, None)], [(1, None)]], bytes_=[60, 60])
    edges = {(0, 1): 40}
    merged = merge_stages(plan, 1, 90, edges)
    assert [s.bytes for s in merged.stages] == [80]
    assert merge_stages(plan, 1, 90, edges, saving=0.5) is None
    assert [s.bytes for s in merge_stages(plan, 1, 100, edges, saving=0.5).stages] == [100]


@pytest.mark.parametrize("seed", range(30))
def test_may_fit_never_rejects_a_plan_that_merges(seed, monkeypatch):
    """`may_fit` (the O(stages) pre-check of merge_stages) is a necessary condition:
    on random stage DAGs whose stages each send one piece to all their consumers
    (so consumers share inputs), and random budgets, every plan that merges with the
    pre-check switched off passes it, and the merged stages' bytes are at least the
    bytes less every byte received (the bound it rests on)."""
    import nnx.mesh.stage_merge as sm

    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(6, 40))
    piece = [int(x) for x in rng.integers(1, 30, n)]  # the bytes of what stage a sends
    receipts = [{} for _ in range(n)]
    edges = {}
    for b in range(1, n):
        for a in rng.choice(b, size=min(b, int(rng.integers(1, 4))), replace=False):
            receipts[b][(int(a), 0, None)] = (piece[a], int(a))
            edges[(int(a), b)] = piece[a]
    bytes_ = [int(x) for x in rng.integers(20, 60, n)]
    plan = _plan([[(s, None)] for s in range(n)], bytes_=bytes_, costs=[float(x) for x in rng.random(n)])
    ncores = max(1, n // int(rng.integers(2, 5)))
    budget = float(rng.integers(40, 300))
    verdict = sm.may_fit(plan, ncores, budget, edges, receipts=receipts)
    monkeypatch.setattr(sm, "may_fit", lambda *a, **k: True)
    merged = merge_stages(plan, ncores, budget, edges, receipts=receipts)
    if merged is not None:
        assert verdict
        assert sum(s.bytes for s in merged.stages) >= sum(bytes_) - sum(edges.values())


def test_merged_2d_split_parts_follow_their_chains():
    """When a merge puts several parts of one 2-D split on one core, they run in chain
    order (input range r before r + 1), although the last part of chain j is
    numbered j, below the others: a part must not read its predecessor's running sum
    before it is computed (a tiny MobileNetV2 on 2 x 1 cores of 6 KiB once read it as
    a program input)."""
    from nnx.mesh.partition import BlockSplit, Split

    blk = BlockSplit(Split(1, (0, 16, 32, 48)), Split(1, (0, 4, 8)))  # ki = 3, kj = 2
    plan = _plan([[(0, p) for p in range(6)], [(RETURN, 0)]])
    plan.blocks[0] = blk
    merged = merge_stages(plan, 1, 1000, {(0, 1): 5})
    parts = [p for i, p in merged.stages[0].items if i == 0]
    for j in range(2):
        chain = [blk.coords(p)[0] for p in parts if blk.coords(p)[1] == j]
        assert chain == [0, 1, 2]
    assert merged.stages[0].items[-1] == (RETURN, 0)
