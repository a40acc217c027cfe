"""Program packages (docs/subgraph-split-fuse.md, "Program packages"): a model larger
than the mesh compiles (`nnx-compile --target`) to a manifest plus one mesh program
per subgraph, and `nnx-run` runs them in order with weight loads and parked outputs;
outputs match onnxruntime within 1e-4. Greedy fusion gives at most one program more
than the optimal dynamic program; an op that cannot fit the mesh alone is one line,
exit 1, no files.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import model_zoo
from nnx import api
from nnx.split_fuse.fit import FitChecker, split_until_fit
from nnx.split_fuse.fuse import Fuser, FusionWindow, fuse_chain

HERE = os.path.dirname(__file__)
BASE_TARGET = os.path.join(HERE, "..", "passes", "lower-to-mesh", "Inputs", "mesh4x4.toml")
GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"


def _mesh_target(tmp_path, width, height, core_memory):
    """The 4 x 4 test mesh resized to width x height cores of `core_memory` bytes."""
    text = open(BASE_TARGET).read()
    text = re.sub(r"width = \d+", f"width = {width}", text)
    text = re.sub(r"height = \d+", f"height = {height}", text)
    text = re.sub(r"core_memory_bytes = \d+", f"core_memory_bytes = {core_memory}", text)
    path = tmp_path / f"mesh{width}x{height}.toml"
    path.write_text(text)
    return str(path)


def _mlp_model(path, layers=8, width=256, every=2):
    """Gemm+Relu layers of width x width f32 weights (256 KiB each); every `every`-th
    hidden state is also a model output (a target node)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, outs = [], [], []
    x = "x"
    for k in range(layers):
        w = numpy_helper.from_array((rng.standard_normal((width, width)) / 16).astype(np.float32), f"W{k}")
        inits.append(w)
        nodes.append(helper.make_node("Gemm", [x, f"W{k}"], [f"g{k}"], name=f"gemm{k}"))
        nodes.append(helper.make_node("Relu", [f"g{k}"], [f"h{k}"], name=f"relu{k}"))
        x = f"h{k}"
        if k % every == every - 1 or k == layers - 1:
            outs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, width]))
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return layers * width * width * 4


def _compile_and_run(tmp_path, model, target, feeds, extra=()):
    from nnx.tools.nnx_compile import main as compile_main
    from nnx.tools.nnx_run import main as run_main

    prog = tmp_path / "prog.s"
    assert compile_main([str(model), "--target", target, "-o", str(prog), *extra]) == 0
    args = [str(prog), "--target", target, "--output-dir", str(tmp_path / "out"), "--report", str(tmp_path / "r.json")]
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    assert run_main(args) == 0
    return prog, json.loads((tmp_path / "r.json").read_text())


def _check_outputs(tmp_path, model, feeds):
    import onnxruntime as ort

    sess = ort.InferenceSession(str(model))
    for out, ref in zip(sess.get_outputs(), sess.run(None, feeds)):
        got = np.load(tmp_path / "out" / f"{out.name}.npy")
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4)


def test_mlp_runs_as_a_package_on_a_quarter_of_its_weights(tmp_path):
    model = tmp_path / "mlp.onnx"
    weight_bytes = _mlp_model(model, layers=12)  # 3 MiB of weights
    target = _mesh_target(tmp_path, 3, 2, 131072)  # 768 KiB of core memory in all
    assert 6 * 131072 <= weight_bytes // 4
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 256)).astype(np.float32)}
    prog, report = _compile_and_run(tmp_path, model, target, feeds)
    assert open(prog).readline().startswith(".package")
    assert report["programs"] >= 4  # at least 3 MiB / 768 KiB
    per = report["per_program"]
    assert report["cycles"] == sum(p["cycles"] for p in per)
    assert all(p["weight_load_bytes"] > 0 and p["host_in_bytes"] > 0 and p["host_out_bytes"] > 0 for p in per)
    assert sum(p["weight_load_bytes"] for p in per) >= weight_bytes
    _check_outputs(tmp_path, model, feeds)


def test_bert_runs_as_a_package(tmp_path):
    model = model_zoo.get_model("bert_2layer")
    target = _mesh_target(tmp_path, 2, 2, 262144)  # does not hold the whole model
    feeds = model_zoo.sample_inputs("bert_2layer")
    _, report = _compile_and_run(tmp_path, model, target, feeds, model_zoo.input_shape_args("bert_2layer"))
    assert report["programs"] >= 2
    _check_outputs(tmp_path, model, feeds)


def test_greedy_within_one_program_of_optimal(tmp_path):
    from nnx.split_fuse.chain import main_function

    model = tmp_path / "mlp.onnx"
    _mlp_model(model, layers=6, every=1)
    module = api.import_onnx(str(model), None, None)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    check = FitChecker(main_function(module, "test"), _mesh_target(tmp_path, 3, 2, 131072))
    # from one op per program: every fusion has something to do
    chain = split_until_fit(check, [(i, i + 1) for i in range(len(check.ops))], "key-nodes", "test")
    counts = {}
    for strategy in ("pairwise", "greedy", "bidirectional", "optimal"):
        out = fuse_chain(Fuser(check, FusionWindow()), chain, strategy)
        assert [r for r in out if not check.fits(r)] == []
        assert out[0][0] == 0 and out[-1][1] == len(check.ops)
        assert all(a[1] == b[0] for a, b in zip(out, out[1:]))
        counts[strategy] = len(out)
    assert counts["optimal"] <= min(counts.values())
    assert counts["greedy"] <= counts["optimal"] + 1
    assert counts["optimal"] < len(chain)
    # least estimated time: never worse than greedy's chain by the same estimate
    from nnx.split_fuse.fuse import program_time

    fuser = Fuser(check, FusionWindow())
    timed = fuse_chain(fuser, chain, "optimal", objective="time")
    greedy = fuse_chain(fuser, chain, "greedy")
    assert all(check.fits(r) for r in timed)
    assert sum(program_time(fuser, r) for r in timed) <= sum(program_time(fuser, r) for r in greedy)
    # key-nodes splitting of the whole function reaches chains that compile too
    whole = split_until_fit(check, [(0, len(check.ops))], "key-nodes", "test")
    assert all(check.fits(r) for r in whole) and len(whole) >= counts["optimal"]


def test_op_too_big_for_the_mesh_is_one_line_exit_1_no_files(tmp_path, capsys):
    from nnx.tools.nnx_compile import main as compile_main

    model = tmp_path / "mlp.onnx"
    _mlp_model(model, layers=2, width=1024)  # 4 MiB per Gemm
    target = _mesh_target(tmp_path, 2, 2, 131072)
    prog = tmp_path / "prog.s"
    assert compile_main([str(model), "--target", target, "-o", str(prog)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not fit the whole mesh" in err and "gemm" in err, err
    assert not any(p.name.startswith("prog") for p in tmp_path.iterdir())
