"""Graph inputs and outputs too big for one core (docs/mesh.md, "Inputs and
outputs"): the row parts of the first op load only their window of the input from
off-chip memory, and the pieces of a split output are written to their slices of it
by their own cores. Checked against onnxruntime on a mesh program and on a package
whose programs pass such tensors through host memory."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from nnx import api
from nnx.mesh.compile import compile_for_mesh
from nnx.sim.asm_mesh import io_slice, read_mesh_program
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.target import load_target
from mesh_targets import resized_mesh

HERE = os.path.dirname(__file__)
GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _mesh_target(tmp_path, width, height, core_memory):
    return resized_mesh(tmp_path, width, height, core_memory)


def _cnn(path, layers=1, channels=(4, 8), hw=96):
    """`layers` 3x3 convs (padding 1) + relu on a channels[0] x hw x hw image, random
    weights; the last relu is the output."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    cin = channels[0]
    for k in range(layers):
        cout = channels[min(k + 1, len(channels) - 1)]
        scale = np.sqrt(2.0 / (cin * 9))  # activations keep their magnitude layer after layer
        inits += [numpy_helper.from_array((rng.standard_normal((cout, cin, 3, 3)) * scale).astype(np.float32), f"W{k}"),
                  numpy_helper.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), f"B{k}")]
        nodes += [helper.make_node("Conv", [x, f"W{k}", f"B{k}"], [f"c{k}"], name=f"conv{k}", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{k}"], [f"r{k}"], name=f"relu{k}")]
        x, cin = f"r{k}", cout
    f = TensorProto.FLOAT
    gr = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", f, [1, channels[0], hw, hw])],
                           [helper.make_tensor_value_info(x, f, [1, cin, hw, hw])], inits)
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


def test_input_and_output_bigger_than_a_core_are_loaded_and_written_in_slices(tmp_path):
    import onnxruntime as ort

    from nnx.passes.lower_to_mesh import save_mesh_program

    model = str(tmp_path / "cnn.onnx")
    _cnn(model)  # x: 1x4x96x96 (144 KiB), y: 1x8x96x96 (288 KiB)
    core_memory = 131072
    target = _mesh_target(tmp_path, 4, 4, core_memory)
    module = api.import_onnx(model, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    comp = compile_for_mesh(module, target, "bisect")
    assert comp.plan.sliced_inputs and comp.plan.sliced_outputs
    save_mesh_program(comp, str(tmp_path / "prog.s"))
    prog = read_mesh_program(str(tmp_path / "prog.s"))
    x_bytes = 4 * 96 * 96 * 4
    ins = [s for sec in prog.cores.values() for s in sec.program.inputs if s.name == "x"]
    outs = [s for sec in prog.cores.values() for s in sec.program.outputs if s.name == "r0"]
    # no core holds the whole input or the whole output: each has its band of rows
    assert len(ins) >= 2 and all(io_slice(s) is not None and s.tile.nbytes < x_bytes for s in ins)
    assert len(outs) >= 2 and all(io_slice(s) is not None and io_slice(s).axis == 2 for s in outs)
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 4, 96, 96)).astype(np.float32)}
    run = MeshSimulator(prog, load_target(target)).run(feeds)
    ref = ort.InferenceSession(model).run(None, feeds)[0]
    np.testing.assert_allclose(run.outputs["r0"], ref, rtol=0, atol=1e-4)
    # the off-chip traffic is the slices: the input's bands (with their halo rows) once
    # each, the output exactly once
    assert x_bytes <= run.offchip_bytes["inputs"] < 2 * x_bytes
    assert run.offchip_bytes["outputs"] == ref.nbytes


def test_package_passes_a_tensor_bigger_than_a_core_between_programs(tmp_path):
    import json

    import onnxruntime as ort

    from nnx.tools.nnx_compile import main as compile_main
    from nnx.tools.nnx_run import main as run_main

    model = tmp_path / "cnn.onnx"
    _cnn(model, layers=6, channels=(16,), hw=48)  # every activation 1x16x48x48: 144 KiB
    core_memory = 131072
    target = _mesh_target(tmp_path, 2, 2, core_memory)
    prog = tmp_path / "prog.s"
    assert compile_main([str(model), "--target", target, "-o", str(prog)]) == 0
    assert open(prog, encoding="utf-8").readline().startswith(".package")
    feeds = {"x": np.random.default_rng(2).standard_normal((1, 16, 48, 48)).astype(np.float32)}
    np.save(tmp_path / "x.npy", feeds["x"])
    assert run_main([str(prog), "--target", target, "--input", f"x={tmp_path / 'x.npy'}",
                     "--output-dir", str(tmp_path / "out"), "--report", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["programs"] >= 2
    # a tensor parked between two programs is bigger than a core: the first program
    # writes it in slices, the next loads slices of it
    programs = sorted(tmp_path.glob("prog.p*.s"))
    texts = [p.read_text() for p in programs]
    assert any(re.search(r"^\.output t\S* \S+ slice=", t, re.M) for t in texts[:-1])
    assert any(re.search(r"^\.input t\S* \S+ slice=", t, re.M) for t in texts[1:])
    ref = ort.InferenceSession(str(model)).run(None, feeds)[0]
    np.testing.assert_allclose(np.load(tmp_path / "out" / "r5.npy"), ref, rtol=0, atol=1e-4)


def test_the_simulator_feeds_slices_and_checks_the_whole_shape():
    import pytest

    from nnx.sim.asm_mesh import parse_mesh_program
    from nnx.sim.memory import SimError

    text = """.mesh 2x2
.core 0
.storage 128
.input  x S:0x0<4x3xf32> slice=1:0:3 of 4x4
.output y S:0x0<4x3xf32> slice=1:0:3 of 4x4
.text
.core 2
.storage 128
.input  x S:0x0<4x2xf32> slice=1:2:4 of 4x4
.output y S:0x20<4x1xf32> slice=1:3:4 of 4x4
.text
DAU0 LOAD N:0x0<4x1xf32> <- S:0x4<4x1xf32>[2,1]
DAU0 STORE S:0x20<4x1xf32> <- N:0x0<4x1xf32>
"""
    target = load_target(os.path.join(HERE, "..", "sim", "Inputs", "mesh2x2.toml"))
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    # columns 0..2 of y are core 0's slice of x as loaded, column 3 core 2's copy of x's
    run = MeshSimulator(parse_mesh_program(text, "p.s"), target).run({"x": x})
    np.testing.assert_array_equal(run.outputs["y"], x)
    assert run.offchip_bytes == {"weights": 0, "inputs": 4 * (3 + 2) * 4, "outputs": 4 * 4 * 4}
    with pytest.raises(SimError, match="input 'x' has shape 4x3, the program expects 4x4"):
        MeshSimulator(parse_mesh_program(text, "p.s"), target).run({"x": x[:, :3]})
