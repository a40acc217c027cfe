"""The throughput schedule's layer pipeline on a transformer encoder block
(docs/mesh.md, "Schedules", `throughput`): its LayerNorms and residual adds run
whole on one core, which the search must count so (nnx/mesh/pipeline.py,
`FOLLOW_AS_PARTITIONED`, and the rules beside it). A BERT-like block (sequence 32,
width 64, 4 heads, FFN 256) on the 4 x 4 test mesh with cores of 72 KiB: the first
search planned pipelines whose cores overflowed, and the graph fell back to
`stages`; now it compiles a pipeline whose every inference of a stream matches
onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from mesh_targets import resized_mesh
from nnx import api
from nnx.mesh import pipeline, pipeline_search, reduction_splits
from nnx.mesh.compile import compile_for_mesh
from nnx.passes.lower_to_mesh import save_mesh_program
from nnx.sim.asm_mesh import read_mesh_program
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.target import load_target
from test_lower_to_mesh import GRAPH_PASSES

SEQ, WIDTH, HEADS, FFN = 32, 64, 4, 256

#: the rules of the search that model what the partitioner makes of a transformer
RULES = ((pipeline, "FOLLOW_AS_PARTITIONED"), (pipeline, "ROW_VIEWS_MAPPED"), (pipeline, "INPUT_AS_PARTITIONED"),
         (pipeline, "WHOLE_STAGES_BY_GROUP"), (pipeline_search, "FOLLOWERS_IN_PLACE"),
         (pipeline_search, "WHOLE_IN_PLACE"), (pipeline_search, "SPARE_TO_GAINING"),
         (reduction_splits, "PIPELINE_BLOCK_PARTS"), (pipeline_search, "RECEIVED_ONCE"),
         (pipeline_search, "RECEIVE_EXPOSED"))


def _encoder_block(path) -> None:
    """One post-LayerNorm encoder block as BERT exports it (Q, K, V projections,
    heads by reshape and transpose, scaled softmax attention, output projection,
    residual add and LayerNorm, a ReLU FFN, residual add and LayerNorm), random
    weights, saved as ONNX opset 17."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def t(name, *dims, scale=None):
        s = 1.0 / np.sqrt(dims[0]) if scale is None else scale
        return numpy_helper.from_array((rng.standard_normal(dims) * s).astype(np.float32), name)

    def norm(name):
        return [numpy_helper.from_array((1 + 0.1 * rng.standard_normal(WIDTH)).astype(np.float32), f"g{name}"),
                numpy_helper.from_array((0.1 * rng.standard_normal(WIDTH)).astype(np.float32), f"e{name}")]

    dh = WIDTH // HEADS
    inits = [t(f"W{w}", WIDTH, WIDTH) for w in "qkvo"] + [t(f"b{w}", WIDTH, scale=0.1) for w in "qkvo"]
    inits += [t("W1", WIDTH, FFN), t("b1", FFN, scale=0.1), t("W2", FFN, WIDTH), t("b2", WIDTH, scale=0.1)]
    inits += norm("1") + norm("2") + [
        numpy_helper.from_array(np.array([1, SEQ, HEADS, dh], np.int64), "heads"),
        numpy_helper.from_array(np.array([1, SEQ, WIDTH], np.int64), "rows"),
        numpy_helper.from_array(np.array(1 / np.sqrt(dh), np.float32), "scale")]
    n = helper.make_node
    nodes = []
    for w in "qkv":
        nodes += [n("MatMul", ["x", f"W{w}"], [f"{w}m"]), n("Add", [f"{w}m", f"b{w}"], [f"{w}a"]),
                  n("Reshape", [f"{w}a", "heads"], [f"{w}r"])]
    nodes += [n("Transpose", ["qr"], ["qt"], perm=[0, 2, 1, 3]), n("Transpose", ["kr"], ["kt"], perm=[0, 2, 3, 1]),
              n("Transpose", ["vr"], ["vt"], perm=[0, 2, 1, 3]), n("MatMul", ["qt", "kt"], ["s"]),
              n("Mul", ["s", "scale"], ["ss"]), n("Softmax", ["ss"], ["p"], axis=-1), n("MatMul", ["p", "vt"], ["c"]),
              n("Transpose", ["c"], ["ct"], perm=[0, 2, 1, 3]), n("Reshape", ["ct", "rows"], ["cr"]),
              n("MatMul", ["cr", "Wo"], ["om"]), n("Add", ["om", "bo"], ["oa"]), n("Add", ["oa", "x"], ["r1"]),
              n("LayerNormalization", ["r1", "g1", "e1"], ["l1"], axis=-1, epsilon=1e-12),
              n("MatMul", ["l1", "W1"], ["f1"]), n("Add", ["f1", "b1"], ["f1b"]), n("Relu", ["f1b"], ["f1r"]),
              n("MatMul", ["f1r", "W2"], ["f2"]), n("Add", ["f2", "b2"], ["f2b"]), n("Add", ["f2b", "l1"], ["r2"]),
              n("LayerNormalization", ["r2", "g2", "e2"], ["y"], axis=-1, epsilon=1e-12)]
    graph = helper.make_graph(nodes, "encoder_block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, SEQ, WIDTH])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, SEQ, WIDTH])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _compiled(path, target, schedule):
    module = api.import_onnx(str(path), None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    return compile_for_mesh(module, target, "bisect", schedule=schedule)


def test_encoder_block_pipelines_and_matches_onnxruntime(tmp_path, monkeypatch):
    """The block on 4 x 4 cores of 72 KiB: the throughput schedule compiles a layer
    pipeline (with the first rules it fell back to `stages`), every inference of a
    stream of 3 distinct inputs within 1e-4 of onnxruntime, an inference every
    fewer cycles than the `stages` program streams them; the LayerNorms run whole,
    as the search planned them."""
    ort = pytest.importorskip("onnxruntime")
    path = tmp_path / "block.onnx"
    _encoder_block(path)
    target = resized_mesh(tmp_path, 4, 4, 72 * 1024, 8192)
    x = np.random.default_rng(1).standard_normal((3, 1, SEQ, WIDTH)).astype(np.float32)
    sess = ort.InferenceSession(str(path))
    refs = [sess.run(None, {"x": x[k]})[0] for k in range(3)]

    def stream(comp, name):
        asm = str(tmp_path / f"{name}.s")
        save_mesh_program(comp, asm)
        res = MeshSimulator(read_mesh_program(asm), load_target(target)).run({"x": x}, stream=3)
        for k in range(3):
            np.testing.assert_allclose(res.outputs["y"][k], refs[k], rtol=0, atol=1e-4)
        return res.cycles_per_inference

    comp = _compiled(path, target, "throughput")
    assert comp.schedule == "throughput" and comp.pipeline is not None
    pipe = stream(comp, "throughput")
    norms = [i for i, op in enumerate(comp.plan.ops) if op.name == "graph.layer_normalization"]
    assert len(norms) == 2 and all(comp.plan.kinds[i] == "whole" for i in norms)
    assert all(comp.pipeline.parts[i] == 1 for i in norms)
    stages = stream(_compiled(path, target, "stages"), "stages")
    assert pipe < stages, (pipe, stages)
    for module, rule in RULES:  # the first rules: no pipeline fits, the graph is compiled as `stages`
        monkeypatch.setattr(module, rule, False)
    assert _compiled(path, target, "throughput").schedule == "stages"
