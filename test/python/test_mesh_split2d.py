"""2-D splits of lower-to-mesh (docs/mesh.md, "2-D splits"): a conv and a gemm whose
weights need several cores, on a mesh of 32 KiB cores where the op's input alone and
its output alone each exceed the 60 % of a core the partitioner plans to fill, so
that neither a split by output channels (every part holds the whole input) nor a
split along the reduction axis (every part holds a full-size partial output) fits.
The op is split over ki x kj parts (input range i, output piece j, weight block
(j, i)), the partial sums of piece j chained over i; without the 2-D split the same
graph fails to compile. The mesh simulator's outputs match onnxruntime.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from nnx import api
from nnx.mesh import partition, reduction_splits
from nnx.mesh.compile import compile_for_mesh
from nnx.mesh.errors import MeshFitError
from nnx.mesh.partition import MEMORY_FILL, BlockSplit, Split, nbytes
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.target import load_target
from mesh_targets import resized_mesh

HERE = os.path.dirname(__file__)
GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"
CORE_MEMORY = 32768


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _target(tmp_path, width=6, height=6):
    """targets for the tests: `width` x `height` cores of 32 KiB with 8 KiB caches."""
    return resized_mesh(tmp_path, width, height, CORE_MEMORY, cache_bytes=8192)


def _save(path, nodes, inputs, outputs, inits):
    import onnx
    from onnx import helper

    gr = helper.make_graph(nodes, "split2d", inputs, outputs, inits)
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def _conv_model(path):
    """x (1x16x9x9) -> 3x3 conv 16 -> 64 -> relu -> 3x3 conv 64 -> 64 (147 KiB of
    weights; input and output 20.7 KB each) -> relu -> global average pool. The
    first conv is split by output channels into 4 pieces, the big conv in 2-D."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def t(name, *dims, s=0.1):
        return numpy_helper.from_array((rng.standard_normal(dims) * s).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "W1"], ["a"], name="pre", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r"], name="act"),
             helper.make_node("Conv", ["r", "W2", "B2"], ["c"], name="big", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["cr"], name="act2"),
             helper.make_node("GlobalAveragePool", ["cr"], ["y"], name="gap")]
    _save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 9, 9])],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 1, 1])],
          [t("W1", 64, 16, 3, 3), t("W2", 64, 64, 3, 3), t("B2", 64)])
    return {"x": rng.standard_normal((1, 16, 9, 9)).astype(np.float32)}


def _gemm_model(path):
    """x (40x16) -> matmul 16 -> 128 -> relu -> gemm (transB, 128 x 128 weights and
    a bias; input and output 20.5 KB each) -> relu -> matmul 128 -> 4. The first
    matmul is split by output features into pieces the 2-D split's input ranges
    may not line up with (their bands are then sliced where the pieces are); the
    last matmul is split along K, reading the 2-D split's output pieces."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)

    def t(name, *dims, s=0.2):
        return numpy_helper.from_array((rng.standard_normal(dims) * s).astype(np.float32), name)

    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="up"),
             helper.make_node("Relu", ["h"], ["hr"], name="act"),
             helper.make_node("Gemm", ["hr", "W2", "B2"], ["g"], name="big", transB=1, alpha=0.5, beta=2.0),
             helper.make_node("Relu", ["g"], ["gr"], name="act2"),
             helper.make_node("MatMul", ["gr", "W3"], ["y"], name="down")]
    _save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [40, 16])],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [40, 4])],
          [t("W1", 16, 128), t("W2", 128, 128), t("B2", 128), t("W3", 128, 4)])
    return {"x": rng.standard_normal((40, 16)).astype(np.float32)}


def _compile(path, target):
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    return compile_for_mesh(module, target, "bisect", schedule="stages")  # the partitioner's splits, one per core


def _run(comp, target, feeds, tmp_path):
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.asm_mesh import read_mesh_program

    prog = str(tmp_path / "prog.s")
    save_mesh_program(comp, prog)
    return MeshSimulator(read_mesh_program(prog), load_target(target)).run(feeds)


@pytest.mark.parametrize("model, op_name", [(_conv_model, "graph.conv"), (_gemm_model, "graph.gemm")])
def test_op_too_big_both_ways_is_split_in_2d_and_matches_onnxruntime(model, op_name, tmp_path, monkeypatch):
    import onnxruntime as ort

    path = str(tmp_path / "m.onnx")
    feeds = model(path)
    target = _target(tmp_path)
    comp = _compile(path, target)
    plan = comp.plan
    (i,) = [i for i, op in enumerate(plan.ops) if plan.kinds[i] == "block"]
    op, blk = plan.ops[i], plan.blocks[i]
    assert op.name == op_name
    # neither 1-D split fits the plan's budget: the input alone (in every part of an
    # output split) and the output alone (in every part of a reduction split) exceed it
    budget = CORE_MEMORY * MEMORY_FILL
    assert nbytes(op.operands[0]) > budget and nbytes(op.results[0]) > budget
    assert blk.ki >= 2 and blk.kj >= 2
    # consumers see the result split by output channels / features, piece j held by
    # the last part of chain j; every part on a core of its own
    assert plan.splits[i] == blk.outputs and blk.outputs.combine == "concat"
    cores = {plan.where[(i, blk.part(r, j))] for r in range(blk.ki) for j in range(blk.kj)}
    assert len(cores) == blk.ki * blk.kj
    # a running sum passed along chain j is output piece j (stage merging sizes
    # messages by it)
    from nnx.mesh.stage_merge import piece_bytes

    for r in range(blk.ki - 1):
        for j in range(blk.kj):
            frac = (blk.outputs.bounds[j + 1] - blk.outputs.bounds[j]) / blk.outputs.bounds[-1]
            assert piece_bytes(plan, (i, 0, blk.part(r, j))) == int(nbytes(op.results[0]) * frac)
    # every part fits the plan: its input range, weight block and output piece
    assert all(stage.bytes <= budget for stage in plan.stages if any(it[0] == i for it in stage.items))
    got = _run(comp, target, feeds, tmp_path).outputs
    for out, ref in zip(ort.InferenceSession(path).get_outputs(), ort.InferenceSession(path).run(None, feeds)):
        np.testing.assert_allclose(got[out.name], ref, rtol=0, atol=1e-4)
    # the same graph with 1-D splits only does not fit the mesh
    monkeypatch.setattr(reduction_splits, "block_split", lambda *a, **k: None)
    with pytest.raises(MeshFitError):
        _compile(path, target)


def _conv_on_input_model(path):
    """x (1x64x9x9, 20.7 KB: a program input too big for the plan's share of a core)
    -> 3x3 conv 64 -> 64 (147 KiB of weights) -> relu -> global average pool: the
    big conv reads the graph input itself, which no core may hold whole."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    w = numpy_helper.from_array((rng.standard_normal((64, 64, 3, 3)) * 0.1).astype(np.float32), "W")
    b = numpy_helper.from_array((rng.standard_normal(64) * 0.1).astype(np.float32), "B")
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="big", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["cr"], name="act"),
             helper.make_node("GlobalAveragePool", ["cr"], ["y"], name="gap")]
    _save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 9, 9])],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 1, 1])], [w, b])
    return {"x": rng.standard_normal((1, 64, 9, 9)).astype(np.float32)}


def test_op_on_a_program_input_loads_its_input_ranges_alone(tmp_path):
    """A 2-D split whose input is a graph input: every part loads only its input
    channel range from off-chip memory (a sliced `.input`, docs/mesh.md, "Inputs and
    outputs"), so no core holds the whole input; outputs match onnxruntime."""
    import onnxruntime as ort

    from nnx.passes.lower_to_mesh import save_mesh_program

    path = str(tmp_path / "m.onnx")
    feeds = _conv_on_input_model(path)
    target = _target(tmp_path)
    comp = _compile(path, target)
    plan = comp.plan
    (i,) = [i for i, op in enumerate(plan.ops) if plan.kinds[i] == "block"]
    blk = plan.blocks[i]
    assert i in plan.sliced_inputs and blk.ki >= 2
    prog = str(tmp_path / "prog.s")
    save_mesh_program(comp, prog)
    with open(prog) as f:
        inputs = [line.split() for line in f if line.startswith(".input x")]
    # one slice declaration per part: input channel ranges along axis 1
    assert len(inputs) == blk.ki * blk.kj
    assert all("slice=1:" in " ".join(parts) for parts in inputs)
    got = _run(comp, target, feeds, tmp_path).outputs
    sess = ort.InferenceSession(path)
    for out, ref in zip(sess.get_outputs(), sess.run(None, feeds)):
        np.testing.assert_allclose(got[out.name], ref, rtol=0, atol=1e-4)


@pytest.mark.parametrize("model", [_conv_model, _gemm_model])
def test_input_pieces_finer_than_the_ranges_are_multiplied_one_by_one(model, tmp_path, monkeypatch):
    """The producer split into 8 pieces (forced), finer than the 2-D split's input
    ranges: a part multiplies each piece inside its range (and the band of a piece
    only partly inside, sliced by its producer) with the matching weight block and
    sums the products; the outputs still match onnxruntime."""
    import onnxruntime as ort

    monkeypatch.setattr(reduction_splits, "pieces_for_reduction", lambda *a, **k: 8)
    path = str(tmp_path / "m.onnx")
    feeds = model(path)
    target = _target(tmp_path)
    comp = _compile(path, target)
    plan = comp.plan
    (i,) = [i for i in range(len(plan.ops)) if plan.kinds[i] == "block"]
    assert plan.splits[i - 1].k == 8 and plan.blocks[i].ki < 8
    got = _run(comp, target, feeds, tmp_path).outputs
    sess = ort.InferenceSession(path)
    for out, ref in zip(sess.get_outputs(), sess.run(None, feeds)):
        np.testing.assert_allclose(got[out.name], ref, rtol=0, atol=1e-4)


def test_block_part_numbers_put_chain_ends_first():
    """Part (ki - 1, j), the end of chain j, is numbered j (it holds output piece j,
    like part j of an output split); the others follow, each number used once."""
    blk = BlockSplit(Split(1, (0, 3, 6, 9)), Split(1, (0, 2, 4, 6, 8)))
    nums = {(r, j): blk.part(r, j) for r in range(blk.ki) for j in range(blk.kj)}
    assert sorted(nums.values()) == list(range(12))
    assert [nums[(2, j)] for j in range(4)] == [0, 1, 2, 3]
    assert all(blk.coords(n) == rj for rj, n in nums.items())


def test_output_split_needing_more_parts_than_cores_is_split_in_2d(tmp_path, monkeypatch):
    """With 48 KiB cores the big conv's input fits the planned fill, so a split by
    output channels exists, but it needs more parts (3 channels each) than the 16
    cores: the conv is split in 2-D over at most 16 parts instead; with 1-D splits
    only, the plan keeps the output split and its parts outnumber the cores."""
    from nnx.mesh.compile import main_function

    path = str(tmp_path / "m.onnx")
    _conv_model(path)
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    main = main_function(module)
    ops = [op for op in main.body.block.ops if op.name not in ("graph.constant", "func.return")]
    big = next(i for i, op in enumerate(ops) if op.name == "graph.conv" and nbytes(op.operands[1]) > 100000)
    plan = partition.plan_partition(ops, 16, 49152, 1.0, MEMORY_FILL, list(main.body.block.last_op.operands))
    assert nbytes(ops[big].operands[0]) < 49152 * MEMORY_FILL
    assert plan.kinds[big] == "block", plan.kinds
    blk = plan.blocks[big]
    assert blk.ki >= 2 and blk.kj >= 2 and blk.ki * blk.kj <= 16
    monkeypatch.setattr(reduction_splits, "block_split", lambda *a, **k: None)
    plan = partition.plan_partition(ops, 16, 49152, 1.0, MEMORY_FILL, list(main.body.block.last_op.operands))
    assert plan.kinds[big] == "split" and plan.splits[big].k > 16


def _ffn_model(path):
    """x (64x32) -> matmul 32 -> 256 -> relu -> matmul 256 -> 32 (a transformer's
    feed-forward block): the second matmul's input (64 KiB) is too big for the
    planned fill of a 32 KiB core, its output (8 KiB) is not."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)

    def t(name, *dims, s=0.2):
        return numpy_helper.from_array((rng.standard_normal(dims) * s).astype(np.float32), name)

    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="up"),
             helper.make_node("Relu", ["h"], ["hr"], name="act"),
             helper.make_node("MatMul", ["hr", "W2"], ["y"], name="down")]
    _save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 32])],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 32])], [t("W1", 32, 256), t("W2", 256, 32)])
    return {"x": rng.standard_normal((64, 32)).astype(np.float32)}


def test_latency_splits_a_reduction_in_2d_with_a_short_chain(tmp_path):
    """An op whose input is too big for one core: `stages` chains partial sums over
    a reduction split (part i waits for the sum of parts 0..i-1: the parts run one
    after another); the latency schedule, whose parts share cores and should run
    side by side, splits it in 2-D with the shortest chain that fits (and at least
    the parts its cost model asks for), each part planning room for its partial
    product, the running sum and their sum. Both match onnxruntime, and the 2-D
    split's chain is shorter and finishes the inference sooner."""
    import onnxruntime as ort

    path = str(tmp_path / "m.onnx")
    feeds = _ffn_model(path)
    target = _target(tmp_path)
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    stages = compile_for_mesh(module, target, "bisect", schedule="stages")
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    latency = compile_for_mesh(module, target, schedule="latency")
    assert latency.schedule == "latency"
    down = [i for i, op in enumerate(stages.plan.ops) if op.name == "graph.matmul"][-1]
    assert stages.plan.kinds[down] == "reduce"
    chain = stages.plan.reductions[down].k
    assert latency.plan.kinds[down] == "block"
    blk = latency.plan.blocks[down]
    assert 2 <= blk.ki < chain and blk.kj >= 2
    ref = ort.InferenceSession(path).run(None, feeds)[0]
    got = {}
    for name, comp in (("stages", stages), ("latency", latency)):
        res = _run(comp, target, feeds, tmp_path)
        np.testing.assert_allclose(res.outputs["y"], ref, rtol=0, atol=1e-4)
        got[name] = res.latency_cycles
    assert got["latency"] < got["stages"], got
