"""End to end: ONNX -> nnx-compile -> nnx-run (the reference simulator) vs onnxruntime.

* small models (examples/tiny_cnn.onnx, an MLP, a transformer block built with
  onnx.helper, and the model zoo's real exports when torch is installed) match
  onnxruntime within 1e-4 relative, on the default target and on a tiny-cache target
  that forces tiling (test/passes/lower-to-chip/Inputs/tiny.toml);
* a 90%-pruned model compiled with `--sparsify` equals onnxruntime on the pruned
  model, runs in <= 0.35x the cycles of the dense lowering and reports skipped MACs;
* the Perfetto trace is valid JSON (Trace Event Format) with units overlapping;
* nnx-compile's pipeline options and its one-line errors.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "test" / "passes" / "lower-to-chip" / "Inputs" / "tiny.toml"
sys.path.insert(0, str(Path(__file__).resolve().parent))

ort = pytest.importorskip("onnxruntime")


# --------------------------------------------------------------------------------------
# helpers (bench/sim_sparsity.py uses them too)
# --------------------------------------------------------------------------------------


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def compile_model(model: str | Path, out: Path, *args: str) -> int:
    from nnx.tools.nnx_compile import main

    return main([str(model), "-o", str(out), *args])


def simulate(prog: Path, feeds: dict[str, np.ndarray], *args: str) -> tuple[dict[str, np.ndarray], dict]:
    """Run PROG.s with nnx-run (simulator mode); outputs by name and the report."""
    d = prog.parent
    argv = [str(prog)]
    for k, v in feeds.items():
        p = d / f"input_{k}.npy"
        np.save(p, v)
        argv += ["--input", f"{k}={p}"]
    outdir = d / f"{prog.stem}_out"
    rep = d / f"{prog.stem}_report.json"
    argv += ["--output-dir", str(outdir), "--report", str(rep), *args]
    from nnx.tools.nnx_run import main as run_main
    rc = run_main(argv)
    assert rc == 0, f"nnx-run failed on {prog}"
    outs = {p.stem: np.load(p) for p in outdir.glob("*.npy")}
    return outs, json.loads(rep.read_text())


def ort_run(model: str | Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(str(model))
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def safe(name: str) -> str:
    import re

    s = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    return s if s and (s[0].isalpha() or s[0] == "_") else "_" + s


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    want = np.asarray(want, np.float64)
    return float(np.max(np.abs(np.asarray(got, np.float64) - want)) / (np.max(np.abs(want)) + 1e-30))


def check_model(model, feeds, tmp: Path, *args: str, tol: float = 1e-4, sim_args=()) -> dict:
    prog = tmp / "prog.s"
    assert compile_model(model, prog, *args) == 0
    got, report = simulate(prog, feeds, *sim_args)
    want = ort_run(model, feeds)
    for name, w in want.items():
        g = got[safe(name)]
        assert g.shape == w.shape, name
        assert rel_err(g, w) <= tol, (name, rel_err(g, w))
    return report


def prune_model(src: str | Path, dst: Path, fraction: float) -> None:
    """Zero the `fraction` smallest-magnitude weights of every Conv/Gemm/MatMul weight
    initializer (what `sparsify` would prune), per tensor."""
    m = onnx.load(str(src))
    inits = {i.name: i for i in m.graph.initializer}
    for node in m.graph.node:
        if node.op_type not in ("Conv", "Gemm", "MatMul") or len(node.input) < 2:
            continue
        init = inits.get(node.input[1])
        if init is None:
            continue
        w = numpy_helper.to_array(init)
        if w.ndim < 2:
            continue
        t = np.quantile(np.abs(w), fraction)
        w = np.where(np.abs(w) <= t, np.zeros((), w.dtype), w).astype(w.dtype)
        init.CopyFrom(numpy_helper.from_array(w, init.name))
    onnx.save(m, str(dst))


def _model(nodes, inputs, outputs, inits, path: Path, opset: int = 17) -> Path:
    g = helper.make_graph(nodes, path.stem, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return path


def _init(name: str, a: np.ndarray):
    return numpy_helper.from_array(np.asarray(a), name)


def make_mlp(path: Path, d_in=64, hidden=128, d_out=10, batch=4, seed=0) -> Path:
    rng = np.random.default_rng(seed)
    f = TensorProto.FLOAT
    inits = [
        _init("w1", (rng.standard_normal((d_in, hidden)) / np.sqrt(d_in)).astype(np.float32)),
        _init("b1", (0.1 * rng.standard_normal(hidden)).astype(np.float32)),
        _init("w2", (rng.standard_normal((d_out, hidden)) / np.sqrt(hidden)).astype(np.float32)),
        _init("b2", (0.1 * rng.standard_normal(d_out)).astype(np.float32)),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", f, [batch, d_in])],
        [helper.make_tensor_value_info("probs", f, [batch, d_out])],
        inits,
        path,
    )


def make_transformer_block(path: Path, seq=8, d=32, heads=4, ff=64, seed=0) -> Path:
    """Pre-LN block: LayerNorm, Q/K/V projections, multi-head attention (reshape,
    transpose, scaled QK^T, softmax, attention x V), output projection, residual,
    LayerNorm, GELU (Erf form) MLP, residual."""
    rng = np.random.default_rng(seed)
    f = TensorProto.FLOAT
    hd = d // heads
    w = lambda *s: (rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)  # noqa: E731
    inits = [
        _init("g1", (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)),
        _init("be1", (0.1 * rng.standard_normal(d)).astype(np.float32)),
        _init("g2", (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)),
        _init("be2", (0.1 * rng.standard_normal(d)).astype(np.float32)),
        _init("wq", w(d, d)), _init("wk", w(d, d)), _init("wv", w(d, d)), _init("wo", w(d, d)),
        _init("bq", (0.1 * rng.standard_normal(d)).astype(np.float32)),
        _init("w1", w(d, ff)), _init("b1", (0.1 * rng.standard_normal(ff)).astype(np.float32)),
        _init("w2", w(ff, d)), _init("b2", (0.1 * rng.standard_normal(d)).astype(np.float32)),
        _init("heads_shape", np.array([1, seq, heads, hd], np.int64)),
        _init("flat_shape", np.array([1, seq, d], np.int64)),
        _init("scale", np.array(1.0 / np.sqrt(hd), np.float32)),
        _init("half", np.array(0.5, np.float32)),
        _init("one", np.array(1.0, np.float32)),
        _init("rsqrt2", np.array(1 / np.sqrt(2), np.float32)),
    ]
    N = helper.make_node
    nodes = [
        N("LayerNormalization", ["x", "g1", "be1"], ["ln1"], axis=-1, epsilon=1e-5),
        N("MatMul", ["ln1", "wq"], ["q0"]), N("Add", ["q0", "bq"], ["q"]),
        N("MatMul", ["ln1", "wk"], ["k"]), N("MatMul", ["ln1", "wv"], ["v"]),
        N("Reshape", ["q", "heads_shape"], ["qh"]), N("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
        N("Reshape", ["k", "heads_shape"], ["kh"]), N("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
        N("Reshape", ["v", "heads_shape"], ["vh"]), N("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3]),
        N("MatMul", ["qt", "kt"], ["s0"]), N("Mul", ["s0", "scale"], ["s"]),
        N("Softmax", ["s"], ["p"], axis=-1),
        N("MatMul", ["p", "vt"], ["a"]), N("Transpose", ["a"], ["at"], perm=[0, 2, 1, 3]),
        N("Reshape", ["at", "flat_shape"], ["af"]), N("MatMul", ["af", "wo"], ["o"]),
        N("Add", ["x", "o"], ["r1"]),
        N("LayerNormalization", ["r1", "g2", "be2"], ["ln2"], axis=-1, epsilon=1e-5),
        N("MatMul", ["ln2", "w1"], ["f0"]), N("Add", ["f0", "b1"], ["f1"]),
        N("Mul", ["f1", "rsqrt2"], ["e0"]), N("Erf", ["e0"], ["e1"]), N("Add", ["e1", "one"], ["e2"]),
        N("Mul", ["f1", "e2"], ["e3"]), N("Mul", ["e3", "half"], ["gelu"]),
        N("MatMul", ["gelu", "w2"], ["f2"]), N("Add", ["f2", "b2"], ["f3"]),
        N("Add", ["r1", "f3"], ["y"]),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", f, [1, seq, d])],
        [helper.make_tensor_value_info("y", f, [1, seq, d])],
        inits,
        path,
    )


def make_conv_net(path: Path, cin=64, c=128, hw=16, seed=0) -> Path:
    """Compute-heavy CNN (MPU-bound): two 3x3 convs with bias + ReLU, a 1x1 conv,
    global average pool and a linear layer."""
    rng = np.random.default_rng(seed)
    f = TensorProto.FLOAT
    w = lambda *s: (rng.standard_normal(s) / np.sqrt(np.prod(s[1:]))).astype(np.float32)  # noqa: E731
    inits = [
        _init("c1w", w(c, cin, 3, 3)), _init("c1b", (0.1 * rng.standard_normal(c)).astype(np.float32)),
        _init("c2w", w(c, c, 3, 3)), _init("c2b", (0.1 * rng.standard_normal(c)).astype(np.float32)),
        _init("c3w", w(c, c, 1, 1)),
        _init("fcw", w(10, c)), _init("fcb", (0.1 * rng.standard_normal(10)).astype(np.float32)),
    ]
    N = helper.make_node
    nodes = [
        N("Conv", ["x", "c1w", "c1b"], ["a1"], pads=[1, 1, 1, 1]), N("Relu", ["a1"], ["r1"]),
        N("Conv", ["r1", "c2w", "c2b"], ["a2"], pads=[1, 1, 1, 1]), N("Relu", ["a2"], ["r2"]),
        N("Conv", ["r2", "c3w"], ["a3"]),
        N("GlobalAveragePool", ["a3"], ["g"]), N("Flatten", ["g"], ["fl"], axis=1),
        N("Gemm", ["fl", "fcw", "fcb"], ["y"], transB=1),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", f, [1, cin, hw, hw])],
        [helper.make_tensor_value_info("y", f, [1, 10])],
        inits,
        path,
    )


def _feeds(model: Path, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sess = ort.InferenceSession(str(model))
    return {
        i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
        for i in sess.get_inputs()
    }


# --------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------


def test_tiny_cnn_default_target_and_trace(tmp_path):
    model = ROOT / "examples" / "tiny_cnn.onnx"
    feeds = {"image": np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    trace = tmp_path / "trace.json"
    report = check_model(model, feeds, tmp_path, "--batch", "1", sim_args=("--trace", str(trace)))
    assert report["cycles"] > 0 and report["macs"] > 0 and report["macs_skipped"] == 0
    data = json.loads(trace.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    spans: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("ph") == "X":
            spans.setdefault(str(e.get("tid", e.get("pid"))), []).append((e["ts"], e["ts"] + e.get("dur", 0)))
    assert len(spans) >= 2
    # at least two units busy at the same time
    tracks = [sorted(v) for v in spans.values()]
    overlap = any(
        a0 < b1 and b0 < a1
        for i, ta in enumerate(tracks)
        for tb in tracks[i + 1 :]
        for a0, a1 in ta
        for b0, b1 in tb
        if a1 > a0 and b1 > b0
    )
    assert overlap, "no two units overlap in time"


def test_tiny_cnn_tiny_caches_same_outputs(tmp_path):
    model = ROOT / "examples" / "tiny_cnn.onnx"
    feeds = {"image": np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    report = check_model(model, feeds, tmp_path, "--batch", "1", "--target", str(TINY), sim_args=("--target", str(TINY)))
    assert report["units"]["DAU0"]["instructions"] > 100  # tiled


@pytest.mark.parametrize("tiny", [False, True], ids=["default", "tiny-caches"])
def test_mlp(tmp_path, tiny):
    model = make_mlp(tmp_path / "mlp.onnx")
    args = ("--target", str(TINY)) if tiny else ()
    check_model(model, _feeds(model), tmp_path, *args, sim_args=args)


@pytest.mark.parametrize("tiny", [False, True], ids=["default", "tiny-caches"])
def test_transformer_block(tmp_path, tiny):
    model = make_transformer_block(tmp_path / "block.onnx")
    args = ("--target", str(TINY)) if tiny else ()
    check_model(model, _feeds(model), tmp_path, *args, sim_args=args)


@pytest.mark.parametrize("name", ["tiny_resnet", "mobilenet_v2", "bert_2layer", "gpt2_2layer"])
def test_model_zoo(tmp_path, name):
    import model_zoo as mz

    path = mz.get_model(name)  # skips without torch/transformers
    check_model(path, mz.sample_inputs(name), tmp_path, *mz.input_shape_args(name))


def dense_and_sparse_90(model: Path, tmp_path: Path) -> tuple[dict, dict]:
    """Reports of the 90 %-pruned model compiled dense and with sparsify, both checked
    against onnxruntime on the pruned model."""
    pruned = tmp_path / "pruned90.onnx"
    prune_model(model, pruned, 0.9)
    feeds = _feeds(pruned)
    (tmp_path / "d").mkdir()
    (tmp_path / "s").mkdir()
    dense = check_model(pruned, feeds, tmp_path / "d")
    sparse = check_model(pruned, feeds, tmp_path / "s", "--sparsify", "weight-threshold=0.0")
    return dense, sparse


def test_pruned_90_sparsify(tmp_path):
    dense_model = make_conv_net(tmp_path / "cnn.onnx")
    dense, sparse = dense_and_sparse_90(dense_model, tmp_path)
    assert sparse["macs_skipped"] > 0.8 * (sparse["macs"] + sparse["macs_skipped"])
    assert sparse["units"]["MAP0"]["instructions"] > 0
    assert sparse["cycles"] <= 0.35 * dense["cycles"], (sparse["cycles"], dense["cycles"])


def _multi_unit_target(tmp_path: Path, mpus: int = 2, vpus: int = 2, daus: int = 1) -> Path:
    import re

    text = (ROOT / "targets" / "default.toml").read_text()
    for unit, n in (("MPU", mpus), ("VPU", vpus), ("DAU", daus)):
        text = re.sub(rf"(\[units\.{unit}\][^\[]*?count = )\d+", rf"\g<1>{n}", text, flags=re.S)
    path = tmp_path / "two.toml"
    path.write_text(text)
    return path


def test_two_mpus_same_results_fewer_cycles(tmp_path):
    """Every unit instance the target declares is used: tiles go round-robin over MPU0/1
    (and VPU0/1), synchronised by tokens; the outputs are identical, the cycles drop."""
    model = make_conv_net(tmp_path / "cnn.onnx", cin=64, c=128, hw=16)
    feeds = _feeds(model)
    two = _multi_unit_target(tmp_path)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    p1, p2 = tmp_path / "one" / "prog.s", tmp_path / "two" / "prog.s"
    assert compile_model(model, p1) == 0
    assert compile_model(model, p2, "--target", str(two)) == 0
    o1, r1 = simulate(p1, feeds)
    o2, r2 = simulate(p2, feeds, "--target", str(two))
    for k in o1:
        np.testing.assert_array_equal(o1[k], o2[k])
    assert r2["units"]["MPU1"]["instructions"] > 0 and r2["units"]["MPU0"]["instructions"] > 0
    assert r2["cycles"] < 0.8 * r1["cycles"], (r2["cycles"], r1["cycles"])
    # two DMA queues as well (double the bandwidth): still identical
    three = _multi_unit_target(tmp_path / "one", daus=2)
    p3 = tmp_path / "one" / "prog3.s"
    assert compile_model(model, p3, "--target", str(three)) == 0
    o3, r3 = simulate(p3, feeds, "--target", str(three))
    for k in o1:
        np.testing.assert_array_equal(o1[k], o3[k])
    assert r3["units"]["DAU1"]["instructions"] > 0 and r3["cycles"] < r1["cycles"]


@pytest.mark.parametrize("name", ["mobilenet_v2", "bert_2layer"])
def test_zoo_sparse_90(tmp_path, name):
    """MobileNetV2 (depthwise convs included) and a BERT at 90% pruned weights through
    sparsify: equal to onnxruntime on the pruned model, MACs skipped, fewer cycles.
    (These are tiny: their time is activation DMA, so the ratio is not the 0.35 of the
    compute-bound models; see bench/sim_sparsity.py for full sizes.)"""
    import model_zoo as mz

    path = mz.get_model(name)
    pruned = tmp_path / "pruned.onnx"
    prune_model(path, pruned, 0.9)
    feeds = mz.sample_inputs(name)
    args = mz.input_shape_args(name)
    (tmp_path / "d").mkdir()
    (tmp_path / "s").mkdir()
    dense = check_model(pruned, feeds, tmp_path / "d", *args)
    sparse = check_model(pruned, feeds, tmp_path / "s", *args, "--sparsify", "weight-threshold=0.0")
    assert sparse["macs_skipped"] > 0.8 * (sparse["macs"] + sparse["macs_skipped"])
    assert sparse["cycles"] < dense["cycles"]


def test_transformer_block_sparse_90(tmp_path):
    model = make_transformer_block(tmp_path / "block.onnx", seq=32, d=64, ff=256)
    dense, sparse = dense_and_sparse_90(model, tmp_path)
    assert sparse["macs_skipped"] > 0
    assert sparse["cycles"] < dense["cycles"]


def test_sparsify_stride_and_neurons(tmp_path):
    """Stride-index weights and ReLU neuron connection data (lossless at threshold 0)."""
    model = make_mlp(tmp_path / "mlp.onnx", d_in=64, hidden=128, batch=8)
    pruned = tmp_path / "mlp_pruned.onnx"
    prune_model(model, pruned, 0.8)
    rep = check_model(pruned, _feeds(pruned), tmp_path, "--sparsify", "weight-threshold=0.0 index-form=stride neuron-threshold=0.0")
    assert rep["macs_skipped"] > 0


def test_sparsify_tiny_caches(tmp_path):
    model = make_mlp(tmp_path / "mlp.onnx")
    pruned = tmp_path / "mlp_pruned.onnx"
    prune_model(model, pruned, 0.9)
    args = ("--target", str(TINY))
    rep = check_model(pruned, _feeds(pruned), tmp_path, *args, "--sparsify", "weight-threshold=0.0", sim_args=args)
    assert rep["macs_skipped"] > 0


# ---- the driver ------------------------------------------------------------------------


def test_print_pipeline(capsys):
    from nnx.tools.nnx_compile import main

    assert main(["--print-pipeline"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce,lower-to-chip)"
    assert main(["--print-pipeline", "--sparsify", "weight-threshold=0.0"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce,sparsify{weight-threshold=0.0},lower-to-chip)"
    assert main(["--print-pipeline", "--pipeline", "builtin.module(canonicalize)", "--target", str(TINY)]) == 0
    out = capsys.readouterr().out.strip()
    assert out == f'builtin.module(canonicalize,lower-to-chip{{target="{TINY}"}})'


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.onnx"], "missing.onnx"),
        (["{model}", "--input-shape", "image=1xAx3"], "--input-shape 'image=1xAx3'"),
        (["{model}", "--pipeline", "builtin.module(nope)"], "unknown pass 'nope'"),
        (["{model}", "--pipeline", "canonicalize(("], "--pipeline"),
        (["{model}", "--sparsify", "weight-threshold=abc"], "sparsify"),
        (["{model}", "--target", "/nonexistent.toml"], "nonexistent.toml"),
        (["{model}", "--batch", "1", "--target", "{micro}"], "does not fit the caches"),
    ],
)
def test_errors_one_line(tmp_path, capsys, args, message):
    from nnx.tools.nnx_compile import main

    model = str(ROOT / "examples" / "tiny_cnn.onnx")
    micro = str(ROOT / "test" / "passes" / "lower-to-chip" / "Inputs" / "micro.toml")
    prog = tmp_path / "p.s"
    argv = [a.format(model=model, micro=micro) for a in args] + ["-o", str(prog)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err and "Traceback" not in err, err
    assert not os.listdir(tmp_path), "partial output left behind"


# --------------------------------------------------------------------------------------
# on-chip chaining (lower-to-chip keeps results resident in the caches between ops)
# --------------------------------------------------------------------------------------


def make_inverted_residual(path: Path, c=16, t=6, hw=16, seed=0) -> Path:
    """MobileNetV2-like block: 1x1 expand + ReLU6, depthwise 3x3 + ReLU6, 1x1 project,
    residual add; then a 1x1 conv and global pooling."""
    rng = np.random.default_rng(seed)
    f = TensorProto.FLOAT
    e = c * t
    w = lambda *s: (rng.standard_normal(s) / np.sqrt(np.prod(s[1:]))).astype(np.float32)  # noqa: E731
    b = lambda n: (0.1 * rng.standard_normal(n)).astype(np.float32)  # noqa: E731
    inits = [
        _init("we", w(e, c, 1, 1)), _init("be", b(e)), _init("wd", w(e, 1, 3, 3)), _init("bd", b(e)),
        _init("wp", w(c, e, 1, 1)), _init("bp", b(c)), _init("wh", w(2 * c, c, 1, 1)),
        _init("lo", np.array(0.0, np.float32)), _init("hi", np.array(6.0, np.float32)),
    ]
    N = helper.make_node
    nodes = [
        N("Conv", ["x", "we", "be"], ["e0"]), N("Clip", ["e0", "lo", "hi"], ["e1"]),
        N("Conv", ["e1", "wd", "bd"], ["d0"], group=e, pads=[1, 1, 1, 1]), N("Clip", ["d0", "lo", "hi"], ["d1"]),
        N("Conv", ["d1", "wp", "bp"], ["p0"]), N("Add", ["x", "p0"], ["r"]),
        N("Conv", ["r", "wh"], ["h"]), N("GlobalAveragePool", ["h"], ["y"]),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", f, [1, c, hw, hw])],
        [helper.make_tensor_value_info("y", f, [1, 2 * c, 1, 1])],
        inits,
        path,
    )


PER_OP = "builtin.module(graph-fold-constants,canonicalize,dce,lower-to-chip{chain=false})"


@pytest.mark.parametrize("maker", [make_inverted_residual, make_transformer_block], ids=["inverted-residual", "transformer"])
def test_chaining_moves_fewer_bytes(tmp_path, maker):
    """Chained (default) vs the per-op STORE/LOAD path: both match onnxruntime, the
    chained program reads intermediate results from the caches (fewer DMA bytes, fewer
    cycles) and leaves no intermediate STORE behind."""
    model = maker(tmp_path / "m.onnx")
    feeds = _feeds(model)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ra = check_model(model, feeds, tmp_path / "a")
    rb = check_model(model, feeds, tmp_path / "b", "--pipeline", PER_OP)
    assert ra["bytes_moved"] < 0.8 * rb["bytes_moved"], (ra["bytes_moved"], rb["bytes_moved"])
    assert ra["cycles"] < rb["cycles"], (ra["cycles"], rb["cycles"])
    text = (tmp_path / "a" / "prog.s").read_text()
    stores = [ln for ln in text.splitlines() if " STORE " in ln]
    assert len(stores) == 1, stores  # only the graph output reaches storage
    assert any(ln.split()[1:2] in (["Conv"], ["MatMul"]) and "<- O:" in ln for ln in text.splitlines())


def test_chaining_tiny_caches_falls_back(tmp_path):
    """Results that do not fit a tiny target's caches take the per-op path."""
    model = make_inverted_residual(tmp_path / "m.onnx")
    args = ("--target", str(TINY))
    report = check_model(model, _feeds(model), tmp_path, *args, sim_args=args)
    assert report["units"]["DAU0"]["instructions"] > 100


def test_group_chaining_large_block(tmp_path):
    """An inverted-residual block whose expanded tensor (96x56x56 f32, 1.2 MB) exceeds the
    output cache: lowered per group of expanded channels, nothing but the graph output
    is stored, and it matches onnxruntime and the per-op path."""
    model = make_inverted_residual(tmp_path / "m.onnx", hw=56)
    feeds = _feeds(model)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ra = check_model(model, feeds, tmp_path / "a")
    rb = check_model(model, feeds, tmp_path / "b", "--pipeline", PER_OP)
    assert ra["bytes_moved"] < 0.5 * rb["bytes_moved"], (ra["bytes_moved"], rb["bytes_moved"])
    text = (tmp_path / "a" / "prog.s").read_text()
    assert len([ln for ln in text.splitlines() if " STORE " in ln]) == 1
    assert any(" Conv " in ln and ", acc" in ln for ln in text.splitlines())  # C's reduction chunks
    # the same with 90 % pruned sparse weights (packed values + connection data per group)
    pruned = tmp_path / "p.onnx"
    prune_model(model, pruned, 0.9)
    (tmp_path / "c").mkdir()
    (tmp_path / "d").mkdir()
    rc = check_model(pruned, feeds, tmp_path / "c", "--sparsify", "weight-threshold=0.0")
    rd = check_model(pruned, feeds, tmp_path / "d")
    assert rc["macs_skipped"] > 0 and rc["cycles"] < 0.8 * rd["cycles"], (rc["cycles"], rd["cycles"])
    assert len([ln for ln in (tmp_path / "c" / "prog.s").read_text().splitlines() if " STORE " in ln]) == 1


def test_chaining_output_also_consumed(tmp_path):
    """A graph output that later ops also read stays resident for them and is written
    back once (and an alias of a resident tensor that is evicted reads storage)."""
    rng = np.random.default_rng(0)
    f = TensorProto.FLOAT
    N = helper.make_node
    model = _model(
        [N("MatMul", ["x", "w1"], ["m"]), N("Relu", ["m"], ["h"]),
         N("Reshape", ["h", "shp"], ["hr"]), N("MatMul", ["hr", "w2"], ["y"])],
        [helper.make_tensor_value_info("x", f, [8, 16])],
        [helper.make_tensor_value_info("h", f, [8, 32]), helper.make_tensor_value_info("y", f, [8, 8])],
        [_init("w1", rng.standard_normal((16, 32)).astype(np.float32)),
         _init("w2", rng.standard_normal((32, 8)).astype(np.float32)),
         _init("shp", np.array([8, 32], np.int64))],
        tmp_path / "m.onnx",
    )
    check_model(model, _feeds(model), tmp_path)
    lines = (tmp_path / "prog.s").read_text().splitlines()
    assert len([ln for ln in lines if " STORE " in ln]) == 2
    assert any(" MatMul " in ln and "<- O:" in ln for ln in lines)


def make_embedding(path: Path, vocab=3000, d=96, batch=2, seq=40, seed=0) -> Path:
    """Embedding lookup + positional add + LayerNorm: Gather of a 1.1 MB table by
    runtime token ids (larger than the weight cache's working space)."""
    rng = np.random.default_rng(seed)
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["e"], axis=0),
        helper.make_node("Add", ["e", "pos"], ["h"]),
        helper.make_node("LayerNormalization", ["h", "g", "b"], ["y"], axis=-1),
    ]
    inits = [
        _init("table", rng.standard_normal((vocab, d)).astype(np.float32)),
        _init("pos", rng.standard_normal((seq, d)).astype(np.float32)),
        _init("g", rng.standard_normal(d).astype(np.float32)),
        _init("b", rng.standard_normal(d).astype(np.float32)),
    ]
    ins = [helper.make_tensor_value_info("ids", TensorProto.INT64, [batch, seq])]
    outs = [helper.make_tensor_value_info("y", f, [batch, seq, d])]
    return _model(nodes, ins, outs, inits, path)


@pytest.mark.parametrize("args", [(), ("--pipeline", "builtin.module(graph-fold-constants,lower-to-chip{chain=false})")])
def test_embedding_gather_moves_only_rows(tmp_path, args):
    """An embedding Gather becomes indirect DMA (GATHER) of the named rows: outputs equal
    onnxruntime's (negative ids included) and the DMA moves far less than the table."""
    model = make_embedding(tmp_path / "emb.onnx")
    ids = np.random.default_rng(1).integers(-3000, 3000, (2, 40)).astype(np.int64)
    report = check_model(model, {"ids": ids}, tmp_path, *args)
    prog = (tmp_path / "prog.s").read_text()
    assert "GATHER" in prog
    table_bytes = 3000 * 96 * 4
    assert report["dma"]["gather"] == 2 * 40 * 96 * 4
    assert report["bytes_moved"] < table_bytes / 4


@pytest.mark.parametrize("form", ["torch", "half_first", "half_on_a"])
def test_written_out_gelu_fused(tmp_path, form):
    """Exact GELU spelled out with Div/Erf/Add/Mul (pre-opset-20 exports) becomes one
    VPU Gelu (graph-fuse in the default pipeline); outputs equal onnxruntime's on
    the unfused model, and the fused program takes fewer VPU cycles than the one
    without the fusion."""
    rng = np.random.default_rng(3)
    N = helper.make_node
    nodes = [N("MatMul", ["x", "w"], ["f"])]
    if form == "torch":
        nodes += [N("Div", ["f", "s2"], ["d"]), N("Erf", ["d"], ["e"]), N("Add", ["e", "one"], ["a"]),
                  N("Mul", ["f", "a"], ["m"]), N("Mul", ["m", "half"], ["y"])]
    elif form == "half_first":
        nodes += [N("Mul", ["half", "f"], ["fh"]), N("Mul", ["f", "r2"], ["d"]), N("Erf", ["d"], ["e"]),
                  N("Add", ["one", "e"], ["a"]), N("Mul", ["fh", "a"], ["y"])]
    else:
        nodes += [N("Div", ["f", "s2"], ["d"]), N("Erf", ["d"], ["e"]), N("Add", ["e", "one"], ["a"]),
                  N("Mul", ["a", "half"], ["ah"]), N("Mul", ["f", "ah"], ["y"])]
    inits = [_init("w", rng.standard_normal((32, 64)).astype(np.float32)),
             _init("s2", np.float32(np.sqrt(2.0))), _init("r2", np.float32(np.sqrt(0.5))),
             _init("one", np.float32(1.0)), _init("half", np.float32(0.5))]
    f = TensorProto.FLOAT
    model = _model(nodes, [helper.make_tensor_value_info("x", f, [16, 32])],
                   [helper.make_tensor_value_info("y", f, [16, 64])], inits, tmp_path / "g.onnx")
    feeds = {"x": rng.standard_normal((16, 32)).astype(np.float32)}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    fused = check_model(model, feeds, tmp_path / "a")
    text = (tmp_path / "a" / "prog.s").read_text()
    assert " Gelu " in text and " Erf " not in text
    plain = check_model(model, feeds, tmp_path / "b", "--pipeline",
                        "builtin.module(graph-fold-constants,canonicalize,dce,lower-to-chip)")
    assert fused["units"]["VPU0"]["busy_cycles"] < 0.5 * plain["units"]["VPU0"]["busy_cycles"]


@pytest.mark.parametrize("opset", [13, 18])
def test_written_out_layernorm_fused(tmp_path, opset):
    """LayerNorm spelled out (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add, as
    exporters write it before opset 17; axes as attribute or input) becomes one VPU
    LayerNormalization; outputs equal onnxruntime's on the unfused model."""
    rng = np.random.default_rng(4)
    N = helper.make_node
    if opset < 18:
        rm1 = N("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1)
        rm2 = N("ReduceMean", ["p"], ["v"], axes=[-1], keepdims=1)
    else:
        rm1 = N("ReduceMean", ["x", "ax"], ["m"], keepdims=1)
        rm2 = N("ReduceMean", ["p", "ax"], ["v"], keepdims=1)
    nodes = [rm1, N("Sub", ["x", "m"], ["d"]), N("Pow", ["d", "two"], ["p"]), rm2,
             N("Add", ["v", "eps"], ["ve"]), N("Sqrt", ["ve"], ["s"]), N("Div", ["d", "s"], ["n"]),
             N("Mul", ["n", "g"], ["y0"]), N("Add", ["y0", "b"], ["y"])]
    inits = [_init("g", rng.standard_normal(48).astype(np.float32)), _init("b", rng.standard_normal(48).astype(np.float32)),
             _init("two", np.float32(2.0)), _init("eps", np.float32(1e-5)), _init("ax", np.array([-1], np.int64))]
    f = TensorProto.FLOAT
    model = _model(nodes, [helper.make_tensor_value_info("x", f, [2, 24, 48])],
                   [helper.make_tensor_value_info("y", f, [2, 24, 48])], inits, tmp_path / "ln.onnx", opset=opset)
    feeds = {"x": (3 + 2 * rng.standard_normal((2, 24, 48))).astype(np.float32)}
    check_model(model, feeds, tmp_path)
    text = (tmp_path / "prog.s").read_text()
    assert " LayerNormalization " in text and " ReduceMean " not in text and " Sqrt " not in text


def test_output_names_kept_when_constants_want_them(tmp_path):
    """Graph outputs keep their names although the lowering's own constants (packed
    sparse weights 'wpk', their connection data 'wconn') would be named alike."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((32, 16)).astype(np.float32)
    w[np.abs(w) < 1.0] = 0.0
    f = TensorProto.FLOAT
    model = _model([helper.make_node("MatMul", ["x", "w"], ["wpk"]), helper.make_node("Relu", ["wpk"], ["wconn"])],
                   [helper.make_tensor_value_info("x", f, [4, 32])],
                   [helper.make_tensor_value_info("wpk", f, [4, 16]), helper.make_tensor_value_info("wconn", f, [4, 16])],
                   [_init("w", w)], tmp_path / "names.onnx")
    check_model(model, {"x": rng.standard_normal((4, 32)).astype(np.float32)}, tmp_path, "--sparsify", "weight-threshold=0.0")
    assert ".output wpk " in (tmp_path / "prog.s").read_text()
