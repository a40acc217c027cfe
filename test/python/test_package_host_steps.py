"""Ops larger than the mesh (docs/subgraph-split-fuse.md, "Ops larger than the mesh"):
a conv net whose activations exceed the whole mesh compiles into a package whose ops
are split over several programs, with the joins run as host steps; `nnx-run` runs
it and its outputs match onnxruntime within 1e-4. The split is bit-identical in the
interpreter; a manifest naming a missing or broken host step is one line, exit 1.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mesh_targets import resized_mesh
from nnx import api

GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"
KIB = 1024


def _conv_net(path, channels=128, hw=16):
    """Conv(3 -> channels, 3x3) + Relu + MaxPool 2x2 + Conv 1x1 -> 16 + global pool +
    Gemm: the first conv's output (channels x hw x hw f32, 128 KiB) alone fills the
    2 x 2 x 32 KiB test mesh."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((channels, 3, 3, 3)) / 4).astype(np.float32), "W1"),
             numpy_helper.from_array((rng.standard_normal((channels,)) / 4).astype(np.float32), "B1"),
             numpy_helper.from_array((rng.standard_normal((16, channels, 1, 1)) / 8).astype(np.float32), "W2"),
             numpy_helper.from_array((rng.standard_normal((10, 16)) / 4).astype(np.float32), "W3")]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
             helper.make_node("Conv", ["p1", "W2"], ["c2"], name="conv2"),
             helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "W3"], ["y"], transB=1, name="fc")]
    g = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return {"x": np.random.default_rng(1).standard_normal((1, 3, hw, hw)).astype(np.float32)}


def _tiny_mesh(tmp_path):
    """2 x 2 cores of 32 KiB (caches of 4 KiB): 128 KiB in all."""
    return resized_mesh(tmp_path, 2, 2, 32 * KIB, 4 * KIB)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """The conv net compiled with nnx-compile and run with nnx-run (report, plot)."""
    from nnx.tools.nnx_compile import main as compile_main
    from nnx.tools.nnx_run import main as run_main

    d = tmp_path_factory.mktemp("host_steps")
    model = d / "conv.onnx"
    feeds = _conv_net(model)
    target = _tiny_mesh(d)
    prog = d / "prog.s"
    assert compile_main([str(model), "--target", target, "-o", str(prog)]) == 0
    args = [str(prog), "--target", target, "--output-dir", str(d / "out"), "--report", str(d / "r.json"),
            "--plot", str(d / "t.png"), "--trace", str(d / "t.json")]
    for k, v in feeds.items():
        np.save(d / f"{k}.npy", v)
        args += ["--input", f"{k}={d / f'{k}.npy'}"]
    assert run_main(args) == 0
    return d, model, feeds, target, prog, json.loads((d / "r.json").read_text())


def test_activation_larger_than_the_mesh_runs_as_programs_and_host_steps(package):
    import onnxruntime as ort

    d, model, feeds, target, prog, report = package
    manifest = prog.read_text().splitlines()
    # the first conv's output (128 KiB + its input) exceeds the 128 KiB mesh: split
    assert any(line.startswith(".host_step ") for line in manifest)
    assert report["programs"] >= 3 and report["host_steps"] >= 1
    ref = ort.InferenceSession(str(model)).run(None, feeds)[0]
    np.testing.assert_allclose(np.load(d / "out" / "y.npy"), ref, rtol=0, atol=1e-4)


def test_host_step_cost_is_its_tensors_over_the_host_link(package):
    """Each host step costs one host-link transfer per tensor read and written, and
    sits on the time line between the programs; total cycles include it."""
    from nnx.ir_io import read_module
    from nnx.target import load_target

    d, _, _, target, prog, report = package
    link = load_target(target).host_link
    steps = [line.split()[1] for line in prog.read_text().splitlines() if line.startswith(".host_step ")]
    assert [h["step"] for h in report["per_host_step"]] == steps
    for h in report["per_host_step"]:
        f = next(iter(read_module(str(d / h["step"])).ops))
        ins = [int(np.prod(t.get_shape())) * 4 for t in f.function_type.inputs.data]
        outs = [int(np.prod(t.get_shape())) * 4 for t in f.function_type.outputs.data]
        assert (h["bytes_read"], h["bytes_written"]) == (sum(ins), sum(outs))
        assert h["cycles"] == sum(link.transfer_cycles(n) for n in ins + outs)
    spans = sorted([(p["start_cycle"], p["end_cycle"]) for p in report["per_program"]]
                   + [(h["start_cycle"], h["end_cycle"]) for h in report["per_host_step"]])
    assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert report["cycles"] == spans[-1][1]
    assert report["host_step_cycles"] == sum(h["cycles"] for h in report["per_host_step"])


def test_plot_draws_host_steps(package):
    from test_figures import bar_spans

    from nnx.sim.package import HostStepRun
    from nnx.sim.package_plot import package_figure

    report = package[-1]
    hosts = [HostStepRun(h["step"], h["start_cycle"], h["bytes_read"], h["bytes_written"], h["cycles"])
             for h in report["per_host_step"]]
    (ax,) = package_figure([], "host steps", host_steps=hosts).axes
    (steps,) = [c for c in ax.collections if c.get_label() == "host step"]
    assert bar_spans(steps) == sorted((h.start_cycle, h.end_cycle) for h in hosts)
    assert (package[0] / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trace_has_the_host_steps(package):
    d, *_, report = package
    events = json.loads((d / "t.json").read_text())["traceEvents"]
    steps = [e for e in events if e.get("cat") == "host_step"]
    assert [e["args"]["step"] for e in steps] == [h["step"] for h in report["per_host_step"]]
    assert [e["args"]["cycles"] for e in steps] == [h["cycles"] for h in report["per_host_step"]]


def test_presplit_is_bit_identical_in_the_interpreter(tmp_path):
    """Splitting the ops larger than the mesh (pieces, joins, folded slices,
    interleaved pieces) does not change any output bit."""
    from nnx.split_fuse.chain import main_function, scheduled_ops
    from nnx.split_fuse.oversized import mesh_bytes, op_data_bytes, presplit
    from nnx.target import load_target

    feeds = _conv_net(tmp_path / "conv.onnx")
    module = api.import_onnx(tmp_path / "conv.onnx")
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    before = api.interpret(module, feeds)
    target = load_target(_tiny_mesh(tmp_path))
    f = main_function(module, "test")
    n = len(scheduled_ops(f.body.block))
    assert presplit(f, target) >= 2  # the conv, the relu, the pool
    ops = scheduled_ops(f.body.block)
    assert len(ops) > n
    from nnx.split_fuse.oversized import is_host_op
    # what remains larger than the mesh only moves data (joins and slices: host steps)
    assert all(is_host_op(op) for op in ops if op_data_bytes(op) > mesh_bytes(target))
    module.verify()
    after = api.interpret(module, feeds)
    assert before.keys() == after.keys()
    for k in before:
        assert np.array_equal(before[k], after[k]), k


def _run_error(args, capsys) -> str:
    from nnx.tools.nnx_run import main as run_main

    try:
        rc = run_main(args)
    except SystemExit as e:
        rc = e.code
    assert rc == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


def test_missing_host_step_file_is_one_line(tmp_path, capsys):
    prog = tmp_path / "prog.s"
    prog.write_text(".package 0\n.outputs y\n# the join\n.host_step prog.h0.mlir\n")
    np.save(tmp_path / "x.npy", np.zeros(4, np.float32))
    line = _run_error([str(prog), "--input", f"x={tmp_path / 'x.npy'}"], capsys)
    assert f"{prog}:4: host step file 'prog.h0.mlir' not found" in line


def test_broken_host_step_file_is_one_line(package, tmp_path, capsys):
    """A host step that does not parse names the manifest line and the step."""
    import shutil

    d, _, feeds, target, prog, _ = package
    copy = tmp_path / "pkg"
    shutil.copytree(d, copy, ignore=shutil.ignore_patterns("out", "*.png", "*.json"))
    manifest = (copy / prog.name).read_text().splitlines()
    n, step = next((i + 1, line.split()[1]) for i, line in enumerate(manifest) if line.startswith(".host_step "))
    (copy / step).write_text("builtin.module {\n  func.func @main( oops\n}\n")
    np.save(tmp_path / "x.npy", feeds["x"])
    line = _run_error([str(copy / prog.name), "--target", target, "--input", f"x={tmp_path / 'x.npy'}"], capsys)
    assert f"{copy / prog.name}:{n}: host step {step}:" in line


def test_ops_that_fit_the_mesh_memory_but_do_not_compile_are_retried(tmp_path):
    """With 96 channels the first conv's data (109 KiB) are under the mesh's 128 KiB
    but the cores' caches leave less: ops found by compiling (not by size) are made
    host steps (the slices of the conv output, 128 KiB with one slice) or split,
    and the package still matches onnxruntime."""
    import onnxruntime as ort

    from nnx.tools.nnx_compile import main as compile_main
    from nnx.tools.nnx_run import main as run_main

    model = tmp_path / "conv96.onnx"
    feeds = _conv_net(model, channels=96)
    target = _tiny_mesh(tmp_path)
    prog = tmp_path / "prog.s"
    assert compile_main([str(model), "--target", target, "-o", str(prog)]) == 0
    assert ".host_step " in prog.read_text()
    np.save(tmp_path / "x.npy", feeds["x"])
    assert run_main([str(prog), "--target", target, "--output-dir", str(tmp_path / "out"),
                     "--input", f"x={tmp_path / 'x.npy'}"]) == 0
    ref = ort.InferenceSession(str(model)).run(None, feeds)[0]
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), ref, rtol=0, atol=1e-4)
