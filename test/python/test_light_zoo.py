"""The onnx wheel's classic model zoo: nine real CNNs (IR version 3, opset 9).

These models list every initializer as a graph input too, make their weights with
ConstantOfShape and use opset-9 Dropout (with a mask output nobody reads) and Caffe's
1x1000x1x1 Softmax. Each must import, run in the interpreter and match

* its bundled expected output (`light_NAME_output_0.pb`, on ONNX's arange input),
* onnxruntime on the same input, and, because every weight is 0.02 (a wrong axis or
  a wrong stride can hide behind uniform weights),
* onnxruntime on *intermediate* tensors for a random input: a copy of the model
  whose graph outputs are the results of its Conv/Pool/Concat/Add/... nodes.

The whole file runs in well under a minute (the interpreter does VGG-19 at 224x224
in ~3 s).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_zoo  # noqa: E402

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from nnx.importer import UserError, import_model, import_onnx  # noqa: E402
from nnx.interp.interpreter import run_module  # noqa: E402

BIN = Path(sys.executable).parent
TOL = 1e-4

INTERMEDIATE_OPS = {
    "Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "Concat", "Add", "Sum",
    "BatchNormalization", "Relu", "LRN", "Gemm", "Reshape", "Transpose", "Dropout",
}
"""Node kinds whose results the intermediate test compares."""


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _rel_err(a: np.ndarray, b: np.ndarray) -> float:
    assert a.shape == b.shape, (a.shape, b.shape)
    denom = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(a.astype(np.float64) - b))) / denom


def _ort_run(model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def _softmax_logits(model) -> str | None:
    """The name of the logits when the model's output is a Softmax of them, else None."""
    out = model.graph.output[0].name
    producer = next((n for n in model.graph.node if out in n.output), None)
    return producer.input[0] if producer is not None and producer.op_type == "Softmax" else None


def _softmax_within(got: np.ndarray, want: np.ndarray, logits: np.ndarray) -> bool:
    """Whether the softmax output `got` is within what float32 rounding of the logits
    explains. Logits known to `TOL * max|z|` (absolute) move each probability p by at
    most `p * expm1(2 * TOL * max|z|)`: with logits of order 10 that is ~2e-3 of p,
    with the light zoo's SqueezeNet (uniform weights 0.02, logits ~1e10, one float32
    step ~1000) it is unbounded, and which classes come out bit-equal depends on the
    BLAS kernel's summation order (docs/architecture.md, "Numerical tolerances")."""
    dz = TOL * float(np.max(np.abs(logits)))
    bound = want.astype(np.float64) * np.expm1(min(2.0 * dz, 80.0))
    bound = np.maximum(bound, TOL * float(np.max(np.abs(want))))
    return bool(np.all(np.abs(got.astype(np.float64) - want) <= bound))


@pytest.mark.parametrize("name", model_zoo.LIGHT_MODELS)
def test_light_model_matches_bundled_output_and_onnxruntime(name):
    """The logits (the input of a final Softmax) match onnxruntime to TOL relative to
    their magnitude; the output matches the bundled output and onnxruntime within
    what float32 rounding of those logits explains (`_softmax_within`)."""
    path = model_zoo.light_model_path(name)
    x, expected = model_zoo.light_reference(name)
    module = import_onnx(str(path))
    got = list(run_module(module, [x]).values())
    assert len(got) == 1
    model = onnx.load(str(path))
    inits = {t.name for t in model.graph.initializer}
    in_name = next(i.name for i in model.graph.input if i.name not in inits)
    ref = list(_ort_run(model, {in_name: x}).values())[0]
    logits_name = _softmax_logits(model)
    if logits_name is None:
        assert _rel_err(got[0], expected) <= TOL
        assert _rel_err(got[0], ref) <= TOL
        return
    assert np.all(got[0] >= 0) and abs(float(got[0].sum()) - 1.0) <= 1e-5
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.append(
        onnx.helper.make_tensor_value_info(logits_name, onnx.TensorProto.FLOAT, None))
    ref_logits = _ort_run(probe, {in_name: x})[logits_name]
    got_logits = run_module(import_model(probe, path=str(path)), [x])[logits_name]
    assert _rel_err(got_logits, ref_logits) <= TOL
    assert _softmax_within(got[0], expected, ref_logits)
    assert _softmax_within(got[0], ref, ref_logits)


def _with_intermediate_outputs(model, limit: int | None):
    """A copy of `model` whose outputs also are the results of INTERMEDIATE_OPS nodes
    (every `stride`-th one when `limit` caps their count)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    names = [n.output[0] for n in m.graph.node if n.op_type in INTERMEDIATE_OPS]
    if limit is not None and len(names) > limit:
        stride = -(-len(names) // limit)
        names = names[::stride]
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(
                onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None)
            )
    return m, names


# VGG-19/AlexNet/ZFNet are chains of a few big layers: every node is cheap to check;
# DenseNet-121/Inception have hundreds: a spread of 40 of them is checked
@pytest.mark.parametrize("name", model_zoo.LIGHT_MODELS)
def test_light_model_intermediates_match_onnxruntime(name):
    path = model_zoo.light_model_path(name)
    model = onnx.load(str(path))
    probe, names = _with_intermediate_outputs(model, limit=40)
    assert len(names) >= 5
    x, _ = model_zoo.light_reference(name)
    rng = np.random.default_rng(7)
    xr = rng.standard_normal(x.shape).astype(np.float32)
    inits = {t.name for t in model.graph.initializer}
    in_name = next(i.name for i in model.graph.input if i.name not in inits)
    ref = _ort_run(probe, {in_name: xr})
    got = run_module(import_model(probe, path=str(path)), [xr])
    for n in names:
        assert n in got, f"intermediate '{n}' is not a result of the imported model"
        assert _rel_err(got[n], ref[n]) <= TOL, n


def test_keep_initializer_inputs_makes_weights_arguments():
    """With keep_initializer_inputs the IR-3 initializer inputs are runtime inputs: the
    biases (static shapes) become arguments, and the weights' ConstantOfShape shapes
    become dynamic: the error names the input that decides them."""
    path = model_zoo.light_model_path("squeezenet")
    with pytest.raises(UserError) as e:
        import_onnx(str(path), keep_initializer_inputs=True)
    msg = str(e.value)
    assert "__SHAPE" in msg and "--const-input" in msg and "FILE.npy" in msg

    # a tiny IR-3 model: y = x + b, b an initializer listed as a graph input
    h = onnx.helper
    b = onnx.numpy_helper.from_array(np.arange(4, dtype=np.float32), "b")
    g = h.make_graph(
        [h.make_node("Add", ["x", "b"], ["y"])], "g",
        [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4]),
         h.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [4])],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])], [b],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 9)])
    model.ir_version = 3
    x = np.ones(4, np.float32)
    default = run_module(import_model(model), [x])
    assert np.array_equal(list(default.values())[0], x + np.arange(4))
    kept = import_model(model, keep_initializer_inputs=True)
    out = run_module(kept, {"x": x, "b": np.full(4, 5, np.float32)})
    assert np.array_equal(list(out.values())[0], x + 5)


def test_nnx_import_cli_option_and_dynamic_shape_hint(tmp_path):
    path = model_zoo.light_model_path("squeezenet")
    out = tmp_path / "sq.mlir"
    r = subprocess.run([str(BIN / "nnx-import"), str(path), "-o", str(out),
                        "--keep-initializer-inputs"], capture_output=True, text=True)
    assert r.returncode == 1
    assert not out.exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--const-input" in lines[0] and "graph input" in lines[0]
    r = subprocess.run([str(BIN / "nnx-import"), str(path), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "func.func @main" in out.read_text()[:4000]
