"""What the throughput search counts of the inputs a core receives from outside its
group (docs/mesh.md, "Schedules", the cost and memory models;
nnx/mesh/pipeline_search.py).

`RECEIVED_ONCE`: the memory model counts a received input once where the
lowering receives its pieces in place. A CNN ending in a 1x1 conv
of 1 MiB of weights split by output channels, which reads the whole 128 KiB
result of the conv before it, on the 4 x 4 test mesh with cores of 384 KiB: the
first model counted that input twice, so the conv's group needed 15 of the 16
cores and the rest of the network ran on one; counted once, the conv takes 12
and the layers before it 4. Both pipelines compile, every inference of a stream
matches onnxruntime, and the new plan streams faster.

`RECEIVE_EXPOSED`: the stage time counts the link time of the bytes received from
outside the group on top of the work (the core waits for them). A CNN of three
convs at 16 x 16 on cores of 256 KiB: the first model planned one group of all 16
cores (each 1x1 conv's whole input gathered inside it) at 4,338 cycles, which
streamed at 5,881; counting the receives, two groups of 8 at 4,642, which stream
at 4,086: faster, and the planned time nearer the simulated one."""

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


def _cnn(path, c0=C0, hw=HW, c1=C1, c2=C2) -> None:
    """x (1, c0, hw, hw) -> 3x3 conv to c1 -> relu -> 1x1 conv to c2 -> relu -> 1x1
    conv c2 -> c2 -> relu (by default 16 x 8 x 8 in, the last conv 1 MiB of
    weights); random weights, ONNX opset 17."""
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
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c0, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c2, hw, hw])],
                              [w("w1", c1, c0, 3, 3), w("w2", c2, c1, 1, 1), w("w3", c2, c2, 1, 1)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _streams(tmp_path, monkeypatch, path, target, x, rule, values):
    """For each value of pipeline_search.`rule`: the throughput program compiled,
    a stream of len(x) inferences simulated, each checked against onnxruntime;
    (pipeline, cycles per inference) per value."""
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(str(path))
    refs = [sess.run(None, {"x": x[k]})[0] for k in range(len(x))]
    out = []
    for v in values:
        monkeypatch.setattr(pipeline_search, rule, v)
        module = api.import_onnx(str(path), None, 1)
        api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
        comp = compile_for_mesh(module, target, "bisect", schedule="throughput")
        assert comp.schedule == "throughput"
        asm = str(tmp_path / f"p{rule}{v}.s")
        save_mesh_program(comp, asm)
        res = MeshSimulator(read_mesh_program(asm), load_target(target)).run({"x": x}, stream=len(x))
        for k in range(len(x)):
            np.testing.assert_allclose(res.outputs["y"][k], refs[k], rtol=0, atol=1e-4)
        out.append((comp.pipeline, res.cycles_per_inference))
    return out


def test_received_input_counted_once_streams_faster(tmp_path, monkeypatch):
    path = tmp_path / "cnn.onnx"
    _cnn(path)
    target = resized_mesh(tmp_path, 4, 4, 384 * 1024, 8192)
    x = np.random.default_rng(1).standard_normal((3, 1, C0, HW, HW)).astype(np.float32)
    (once, fast), (twice, slow) = _streams(tmp_path, monkeypatch, path, target, x, "RECEIVED_ONCE", (True, False))
    # the last conv's group: fewer cores when its input is held once, the others more
    assert once.groups[-1][2] < twice.groups[-1][2]
    assert once.bottleneck < twice.bottleneck
    assert fast < slow, (fast, slow)


def test_received_bytes_waited_for_stream_faster_and_as_planned(tmp_path, monkeypatch):
    path = tmp_path / "cnn.onnx"
    _cnn(path, 32, 16, 64, 128)
    target = resized_mesh(tmp_path, 4, 4, 256 * 1024, 8192)
    x = np.random.default_rng(1).standard_normal((4, 1, 32, 16, 16)).astype(np.float32)
    (first, slow), (waits, fast) = _streams(tmp_path, monkeypatch, path, target, x, "RECEIVE_EXPOSED", (0.0, 1.0))
    assert len(waits.groups) > len(first.groups)
    assert fast < slow, (fast, slow)
    # the planned bottleneck is nearer the simulated cycles per inference
    assert abs(waits.bottleneck - fast) / fast < abs(first.bottleneck - slow) / slow
