"""Real exports (issue 2): distinct architectures and exporters through nnx-import +
nnx-run --interpret, within 1e-4 relative of onnxruntime.

A subset of the sweep in bench/real_exports.py (all models: bench/RESULTS.md), chosen
for the op patterns each brings:

* llama (dynamo, opset 18)   RMSNorm (Pow/ReduceMean/Sqrt), rotary embeddings (Slice/
                              Neg/Concat, Cos/Sin), SiLU-gated MLP, GQA Expand, padded mask
* llama (dynamo, opset 23)   the same as opset-23 RMSNormalization/RotaryEmbedding/
                              Attention nodes, expanded from their ONNX function bodies
* roberta (TorchScript 17)   CumSum position ids, -inf attention mask constants (a padded
                              tail), scaled_dot_product_attention decomposition
* swin (TorchScript 17)      window partition/roll (Slice+Concat), relative position
                              bias Gather, 6-d Reshape/Transpose, patch merging
* wav2vec2 (TorchScript 17)  Conv1d feature extractor, GroupNorm, grouped positional
                              Conv1d, dynamic sample axis fixed at import
* unet (TorchScript 13)      ConvTranspose, Concat skips, bilinear and nearest Resize
* yolo_head (dynamo 18)      Split, Sigmoid, Pow, grid arithmetic, 5-d Reshape/Transpose

Exports are cached in cache/models/ (test/python/model_zoo.py); the test skips with the
reason when torch, transformers or onnxscript (dynamo exporter) are missing.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_zoo  # noqa: E402

BIN = Path(sys.executable).parent
TOL = 1e-4

CASES = [
    ("llama", "dynamo", 18),
    ("llama", "dynamo", 23),
    ("roberta", "ts", 17),
    ("swin", "ts", 17),
    ("wav2vec2", "ts", 17),
    ("unet", "ts", 13),
    ("yolo_head", "dynamo", 18),
]


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _rel_err(a: np.ndarray, b: np.ndarray) -> float:
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.array_equal(np.isfinite(a), np.isfinite(b))
    m = np.isfinite(b)
    denom = float(np.max(np.abs(b[m]))) if m.any() else 0.0
    diff = float(np.max(np.abs(a[m].astype(np.float64) - b[m]))) if m.any() else 0.0
    return diff / denom if denom > 0 else diff


@pytest.mark.parametrize("name,exporter,opset", CASES, ids=[f"{n}-{e}{o}" for n, e, o in CASES])
def test_real_export_matches_onnxruntime(name, exporter, opset, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    path = model_zoo.get_export(name, exporter, opset)
    feeds = model_zoo.sweep_inputs(name)
    shape_args, input_args = [], []
    for k, v in feeds.items():
        shape_args += ["--input-shape", f"{k}={'x'.join(map(str, v.shape))}"]
        np.save(tmp_path / f"{k}.npy", v)
        input_args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    mlir = tmp_path / "model.mlir"
    r = subprocess.run([str(BIN / "nnx-import"), str(path), "-o", str(mlir), *shape_args],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    r = subprocess.run([str(BIN / "nnx-run"), "--interpret", str(mlir), *input_args,
                        "--output-dir", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    assert tuple(names) == model_zoo.SWEEP[name].outputs
    for n, ref in zip(names, sess.run(None, feeds)):
        got = np.load(out / (re.sub(r"[^A-Za-z0-9_.-]", "_", n) + ".npy"))
        err = _rel_err(got, ref)
        assert err <= TOL, f"{name} ({exporter} opset {opset}) output {n}: max rel err {err:.2e}"


# ---- regressions found by the sweep (hand-built models, no torch needed) ---------------

from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402


def _import_and_run(model, feeds, tmp_path):
    import onnx

    p = tmp_path / "m.onnx"
    onnx.save(model, str(p))
    args = []
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    r = subprocess.run([str(BIN / "nnx-import"), str(p), "-o", str(tmp_path / "m.mlir")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(BIN / "nnx-run"), "--interpret", str(tmp_path / "m.mlir"), *args,
                        "--output-dir", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return {o.name: np.load(tmp_path / "out" / f"{o.name}.npy") for o in model.graph.output}


def _ort(model, feeds):
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


def test_nonfinite_constants_survive_the_text_round_trip(tmp_path):
    """-inf/NaN constants (attention masks: Where(mask, -inf, 0)) were printed by xDSL
    as dense<0xff800000> and parsed back as the integer 4286578688."""
    ninf = nh.from_array(np.array([-np.inf], np.float32), "ninf")
    nan = nh.from_array(np.array([np.nan, 1.0], np.float32), "nan")
    zero = nh.from_array(np.array([0.0], np.float32), "zero")
    g = h.make_graph(
        [h.make_node("Where", ["m", "zero", "ninf"], ["bias"]),
         h.make_node("Add", ["x", "bias"], ["s"]),
         h.make_node("Softmax", ["s"], ["y"], axis=-1),
         h.make_node("Add", ["x2", "nan"], ["z"])],
        "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 4]),
              h.make_tensor_value_info("m", T.BOOL, [2, 4]),
              h.make_tensor_value_info("x2", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 4]), h.make_tensor_value_info("z", T.FLOAT, [2])],
        [ninf, nan, zero])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=10)
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4),
             "m": np.array([[1, 1, 0, 0], [1, 0, 1, 0]], bool), "x2": np.ones(2, np.float32)}
    got, ref = _import_and_run(model, feeds, tmp_path), _ort(model, feeds)
    np.testing.assert_allclose(got["y"], ref["y"], rtol=1e-6)
    np.testing.assert_array_equal(np.isnan(got["z"]), [True, False])


def test_outputs_that_fold_to_constants_and_scalars(tmp_path):
    """A graph output computed from constants only keeps its type; 0-d outputs stay 0-d
    in nnx-run's files."""
    c = nh.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "c")
    g = h.make_graph(
        [h.make_node("Gather", ["c", "i"], ["folded"], axis=0),
         h.make_node("Add", ["x", "folded"], ["y"]),
         h.make_node("ReduceSum", ["x"], ["total"], keepdims=0)],
        "g", [h.make_tensor_value_info("x", T.FLOAT, [3])],
        [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("folded", T.FLOAT, None),
         h.make_tensor_value_info("total", T.FLOAT, None)],
        [c, nh.from_array(np.array(1, np.int64), "i")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=10)
    feeds = {"x": np.array([1, 2, 3], np.float32)}
    got, ref = _import_and_run(model, feeds, tmp_path), _ort(model, feeds)
    for k in ("y", "folded", "total"):
        assert got[k].shape == ref[k].shape, k
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-6)


def test_opset23_composites_expand_from_their_function_bodies(tmp_path):
    """RMSNormalization, RotaryEmbedding and Attention (opset 23, emitted by the dynamo
    exporter) import through their ONNX function definitions."""
    rng = np.random.default_rng(0)
    b, heads, s, d = 1, 2, 5, 8
    cos = np.cos(rng.standard_normal((s, d // 2))).astype(np.float32)
    sin = np.sin(rng.standard_normal((s, d // 2))).astype(np.float32)
    g = h.make_graph(
        [h.make_node("RMSNormalization", ["x", "w"], ["n"], axis=-1, epsilon=1e-6),
         h.make_node("RotaryEmbedding", ["n", "cos", "sin", "pos"], ["r"]),
         h.make_node("Attention", ["r", "r", "n", "mask"], ["y"], is_causal=0)],
        "g", [h.make_tensor_value_info("x", T.FLOAT, [b, heads, s, d]),
              h.make_tensor_value_info("mask", T.BOOL, [s, s])],
        [h.make_tensor_value_info("y", T.FLOAT, [b, heads, s, d])],
        [nh.from_array(rng.uniform(0.5, 1.5, d).astype(np.float32), "w"),
         nh.from_array(cos, "cos"), nh.from_array(sin, "sin"),
         nh.from_array(np.arange(s, dtype=np.int64)[None].repeat(b, 0), "pos")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 23)], ir_version=10)
    mask = np.tril(np.ones((s, s), bool))
    feeds = {"x": rng.standard_normal((b, heads, s, d)).astype(np.float32), "mask": mask}
    got, ref = _import_and_run(model, feeds, tmp_path), _ort(model, feeds)
    np.testing.assert_allclose(got["y"], ref["y"], rtol=1e-4, atol=1e-5)


def test_if_with_a_constant_condition_is_replaced_by_its_branch(tmp_path):
    """TorchScript's LocalResponseNorm exports `If(Equal(rank, 3))`: after folding the
    condition is a constant and the taken branch (using outer values) is inlined; an If
    on data stays unsupported, with one clear line."""
    then_g = h.make_graph(
        [h.make_node("Constant", [], ["two"], value=nh.from_array(np.array(2.0, np.float32))),
         h.make_node("Mul", ["x", "two"], ["t_out"])],
        "then", [], [h.make_tensor_value_info("t_out", T.FLOAT, None)])
    else_g = h.make_graph([h.make_node("Neg", ["x"], ["e_out"])], "else", [],
                          [h.make_tensor_value_info("e_out", T.FLOAT, None)])
    nodes = [h.make_node("Shape", ["x"], ["shp"]), h.make_node("Size", ["shp"], ["rank"]),
             h.make_node("Equal", ["rank", "three"], ["cond"]),
             h.make_node("If", ["cond"], ["r"], then_branch=then_g, else_branch=else_g),
             h.make_node("Add", ["r", "x"], ["y"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)],
                     [nh.from_array(np.array(2, np.int64), "three")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=10)
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4)}
    got, ref = _import_and_run(model, feeds, tmp_path), _ort(model, feeds)
    np.testing.assert_allclose(got["y"], ref["y"])

    import onnx

    nodes[2] = h.make_node("ReduceMax", ["x"], ["m"], keepdims=0)
    nodes.insert(3, h.make_node("Greater", ["m", "zero"], ["cond"]))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)],
                     [nh.from_array(np.array(2, np.int64), "three"),
                      nh.from_array(np.array(0.0, np.float32), "zero")])
    p = tmp_path / "dyn.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=10), str(p))
    r = subprocess.run([str(BIN / "nnx-import"), str(p), "-o", str(tmp_path / "dyn.mlir")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "control flow" in r.stderr and "If" in r.stderr
    assert not (tmp_path / "dyn.mlir").exists()


@pytest.mark.parametrize("op,opset", [("Resize", 10), ("Upsample", 9)])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scale", [0.6, 1.5, 2.0])
def test_opset9_10_resize_semantics(op, opset, mode, scale, tmp_path):
    """TorchScript exports at opset 9/10 (Upsample, 2-input Resize-10): `scales` is the
    second input (it used to be taken for `roi`), coordinates are asymmetric and nearest
    rounds like onnxruntime (down when upsampling, up when downsampling)."""
    if op == "Upsample" and scale < 1:
        pytest.skip("onnxruntime's Upsample rejects scales < 1")
    s = np.array([1, 1, scale, scale], np.float32)
    g = h.make_graph([h.make_node(op, ["x", "s"], ["y"], mode=mode)], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 2, 5, 5])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], [nh.from_array(s, "s")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=8)
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32)}
    got, ref = _import_and_run(model, feeds, tmp_path), _ort(model, feeds)
    assert got["y"].shape == ref["y"].shape
    np.testing.assert_allclose(got["y"], ref["y"], rtol=1e-5, atol=1e-6)


def test_negative_axis_in_an_old_opset(tmp_path):
    """TorchScript writes Concat(axis=-1) at opset 10 (llama/gpt-neox rotate_half), where
    ONNX allowed only non-negative axes and its shape inference gives up; onnxruntime
    runs it, so the importer canonicalises the axis once the rank is known."""
    g = h.make_graph(
        [h.make_node("Neg", ["x"], ["n"]), h.make_node("Concat", ["n", "x"], ["y"], axis=-1)],
        "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, None)])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 10)], ir_version=8)
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)}
    got, ref = _import_and_run(model, feeds, tmp_path), _ort(model, feeds)
    np.testing.assert_array_equal(got["y"], ref["y"])
