"""The throughput search's memory model counts a received input once where the
lowering receives its pieces in place (docs/mesh.md, "Schedules", the memory
model; nnx/mesh/pipeline_search.py, `RECEIVED_ONCE`). A CNN ending in a 1x1 conv
of 1 MiB of weights split by output channels, which reads the whole 128 KiB
result of the conv before it, on the 4 x 4 test mesh with cores of 384 KiB: the
first model counted that input twice, so the conv's group needed 15 of the 16
cores and the rest of the network ran on one; counted once, the conv takes 12
and the layers before it 4. Both pipelines compile, every inference of a stream
matches onnxruntime, and the new plan streams faster."""

from __future__ import annotations

import numpy as np
import pytest

from mesh_targets import resized_mesh
from nnx import api
from nnx.mesh import pipeline_search
from nnx.mesh.compile import compile_for_mesh
from nnx.passes.lower_to_mesh import save_mesh_program
from nnx.sim.asm_mesh import read_mesh_program
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.target import load_target
from test_lower_to_mesh import GRAPH_PASSES

C0, HW, C1, C2 = 16, 8, 64, 512


def _cnn(path) -> None:
    """x (1, 16, 8, 8) -> 3x3 conv to 64 -> relu -> 1x1 conv to 512 -> relu -> 1x1
    conv 512 -> 512 (1 MiB of weights) -> relu; random weights, ONNX opset 17."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def w(name, *dims):
        return numpy_helper.from_array((rng.standard_normal(dims) / np.sqrt(np.prod(dims[1:]))).astype(np.float32),
                                       name)

    n = helper.make_node
    nodes = [n("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]), n("Relu", ["a"], ["b"]),
             n("Conv", ["b", "w2"], ["c"]), n("Relu", ["c"], ["d"]),
             n("Conv", ["d", "w3"], ["e"]), n("Relu", ["e"], ["y"])]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C0, HW, HW])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C2, HW, HW])],
                              [w("w1", C1, C0, 3, 3), w("w2", C2, C1, 1, 1), w("w3", C2, C2, 1, 1)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def test_received_input_counted_once_streams_faster(tmp_path, monkeypatch):
    ort = pytest.importorskip("onnxruntime")
    path = tmp_path / "cnn.onnx"
    _cnn(path)
    target = resized_mesh(tmp_path, 4, 4, 384 * 1024, 8192)
    x = np.random.default_rng(1).standard_normal((3, 1, C0, HW, HW)).astype(np.float32)
    sess = ort.InferenceSession(str(path))
    refs = [sess.run(None, {"x": x[k]})[0] for k in range(3)]

    def stream(rule):
        monkeypatch.setattr(pipeline_search, "RECEIVED_ONCE", rule)
        module = api.import_onnx(str(path), None, 1)
        api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
        comp = compile_for_mesh(module, target, "bisect", schedule="throughput")
        assert comp.schedule == "throughput"
        asm = str(tmp_path / f"p{rule}.s")
        save_mesh_program(comp, asm)
        res = MeshSimulator(read_mesh_program(asm), load_target(target)).run({"x": x}, stream=3)
        for k in range(3):
            np.testing.assert_allclose(res.outputs["y"][k], refs[k], rtol=0, atol=1e-4)
        return comp.pipeline, res.cycles_per_inference

    once, fast = stream(True)
    twice, slow = stream(False)
    # the last conv's group: fewer cores when its input is held once, the others more
    assert once.groups[-1][2] < twice.groups[-1][2]
    assert once.bottleneck < twice.bottleneck
    assert fast < slow, (fast, slow)
