"""Differential tests of the `sparsify` pass (docs/sparse-mapping.md, section 4).

A small ONNX model (conv -> relu -> reshape -> gemm -> relu -> matmul) is imported and
interpreted before and after `sparsify`:

* threshold 0.0: the outputs equal the dense model's (summation order aside: the sparse
  ops accumulate in float64, so within 1e-5 relative); with a `min-sparsity` that no op
  reaches, nothing is rewritten and the outputs are bit-identical;
* threshold t (and group pruning): the outputs equal the dense model with the weights
  pruned by numpy, and onnxruntime on the pruned ONNX model (1e-4 relative).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx import numpy_helper as nh

from nnx.diagnostics import PassError
from nnx.importer import import_model
from nnx.interp import interpreter
from nnx.ir_io import make_context, module_to_text, parse_module_text
from nnx.passes.sparsify import SparsifyPass

ort = pytest.importorskip("onnxruntime")

WEIGHTS = ("W1", "W2", "W3")


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def small_model(
    weights: dict[str, np.ndarray] | None = None, seed: int = 0, neuron_threshold: float | None = None
) -> onnx.ModelProto:
    """The test model; `neuron_threshold` zeroes gemm/matmul inputs with |x| <= it."""
    rng = np.random.default_rng(seed)
    w = {
        "W1": rng.standard_normal((8, 3, 3, 3)).astype(np.float32),  # conv [Cout, Cin, kh, kw]
        "B1": rng.standard_normal(8).astype(np.float32),
        "W2": rng.standard_normal((16, 128)).astype(np.float32),  # gemm transB=1: [N, K]
        "B2": rng.standard_normal(16).astype(np.float32),
        "W3": rng.standard_normal((16, 10)).astype(np.float32),  # matmul B: [K, N]
        "shape": np.array([1, -1], np.int64),
    }
    w.update(weights or {})
    f, h = "f", "h"
    extra = []
    if neuron_threshold is not None:
        w["tn"] = np.array(neuron_threshold, np.float32)
        w["zero"] = np.array(0.0, np.float32)
        for v in ("f", "h"):
            extra.append(
                [
                    oh.make_node("Abs", [v], [v + "_abs"]),
                    oh.make_node("Greater", [v + "_abs", "tn"], [v + "_keep"]),
                    oh.make_node("Where", [v + "_keep", v, "zero"], [v + "_t"]),
                ]
            )
        f, h = "f_t", "h_t"
    nodes = [
        oh.make_node("Conv", ["x", "W1", "B1"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        oh.make_node("Relu", ["c"], ["r"]),
        oh.make_node("Reshape", ["r", "shape"], ["f"]),
        *(extra[0] if extra else []),
        oh.make_node("Gemm", [f, "W2", "B2"], ["g"], transB=1),
        oh.make_node("Relu", ["g"], ["h"]),
        *(extra[1] if extra else []),
        oh.make_node("MatMul", [h, "W3"], ["y"]),
    ]
    graph = oh.make_graph(
        nodes,
        "small",
        [oh.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
        [oh.make_tensor_value_info("y", TP.FLOAT, [1, 10])],
        [nh.from_array(a, n) for n, a in w.items()],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)], ir_version=10)


def weights_of(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {i.name: nh.to_array(i) for i in model.graph.initializer}


def run(module, x: np.ndarray) -> np.ndarray:
    """The model's output from the interpreter (graph and sparse ops)."""
    return next(iter(interpreter.run_module(module, {"x": x}).values()))


def sparsified(model: onnx.ModelProto, **options):
    module = import_model(model)
    SparsifyPass(**options).apply(make_context(), module)
    module.verify()
    # the printed IR parses back (custom form) and stays valid
    parse_module_text(module_to_text(module)).verify()
    return module


def onnxruntime_run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.fixture(scope="module")
def model():
    return small_model()


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)


def op_names(module) -> list[str]:
    func = interpreter.find_function(module)
    return [op.name for op in func.body.block.ops]


# --------------------------------------------------------------------------------------


def test_threshold_zero_keeps_outputs(model, x):
    dense = run(import_model(model), x)
    for form in ("direct", "stride"):
        for order in ("per-output", "per-input"):
            m = sparsified(model, weight_threshold=0.0, index_form=form, weight_order=order)
            names = op_names(m)
            assert {"sparse.conv", "sparse.fc", "sparse.matmul"} <= set(names)
            assert not {"graph.conv", "graph.gemm", "graph.matmul"} & set(names)
            np.testing.assert_allclose(run(m, x), dense, rtol=1e-5, atol=1e-5)


def test_min_sparsity_not_reached_is_identity(model, x):
    dense = run(import_model(model), x)
    m = import_model(model)
    before = module_to_text(m)
    SparsifyPass(weight_threshold=0.0, min_sparsity=0.01).apply(make_context(), m)
    assert module_to_text(m) == before
    assert np.array_equal(run(m, x), dense)


def _pruned_model(model, t: float) -> onnx.ModelProto:
    w = weights_of(model)
    return small_model({k: np.where(np.abs(w[k]) > t, w[k], 0).astype(np.float32) for k in WEIGHTS})


@pytest.mark.parametrize("form,order", [("direct", "per-output"), ("stride", "per-input")])
def test_threshold_equals_numpy_pruned_and_onnxruntime(model, x, form, order):
    t = 0.7
    m = sparsified(model, weight_threshold=t, index_form=form, weight_order=order)
    got = run(m, x)
    pruned = _pruned_model(model, t)
    want_interp = run(import_model(pruned), x)
    want_ort = onnxruntime_run(pruned, x)
    np.testing.assert_allclose(got, want_interp, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, want_ort, rtol=1e-4, atol=1e-4)
    # and it really differs from the unpruned model
    assert not np.allclose(got, onnxruntime_run(model, x), rtol=1e-3, atol=1e-3)
    # the pruned fraction is reported on every sparse op
    text = module_to_text(m)
    assert text.count("nnx.sparsity") == 3


def test_neuron_threshold_zero_is_lossless(model, x):
    # neurons after ReLU: zeros drop out, so the output is the weight-pruned model's
    t = 0.5
    m = sparsified(model, weight_threshold=t, neuron_threshold=0.0, index_form="stride")
    names = op_names(m)
    assert names.count("sparse.combine") == 2  # gemm and matmul; conv stays weight-only
    want = onnxruntime_run(_pruned_model(model, t), x)
    np.testing.assert_allclose(run(m, x), want, rtol=1e-4, atol=1e-4)


def test_neuron_threshold_positive_prunes_activations(model, x):
    # a lossy neuron threshold: equal to the dense model where |activation| <= tn is 0
    tn = 0.8
    m = sparsified(model, weight_threshold=-1.0, neuron_threshold=tn, weight_order="per-input")
    assert "sparse.convert" in op_names(m)
    want = onnxruntime_run(small_model(neuron_threshold=tn), x)
    got = run(m, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert not np.allclose(got, onnxruntime_run(model, x), rtol=1e-3, atol=1e-3)


def _ref_group_keep(flat: np.ndarray, groups: int, t: float, count: int) -> np.ndarray:
    """Group pruning with loops: element keep-mask of a row-major weight sequence."""
    n = flat.size
    keep = np.ones(n, bool)
    start = 0
    for g in range(groups):
        size = n // groups + (1 if g < n % groups else 0)
        small = sum(1 for k in range(start, start + size) if abs(flat[k]) <= t)
        if small > count:
            keep[start : start + size] = False
        start += size
    return keep


def test_weight_group_pruning_equals_numpy(model, x):
    groups, gt, gc = 160, 0.1, 0  # keeps 91%, 38% and 94% of W1, W2, W3
    m = sparsified(
        model,
        weight_threshold=0.0,
        weight_groups=groups,
        weight_group_threshold=gt,
        weight_group_count=gc,
    )
    w = weights_of(model)
    pruned = {}
    for k in WEIGHTS:
        # per-output order: the [out, in] matrix (one row per output neuron), row-major
        out_in = w[k].reshape(w[k].shape[0], -1) if k != "W3" else w[k].T
        keep = _ref_group_keep(out_in.reshape(-1), groups, gt, gc).reshape(out_in.shape)
        assert 0 < keep.sum() < keep.size  # the case prunes something, not everything
        # per-input order would group differently: the option must matter
        if k == "W2":
            per_in = _ref_group_keep(out_in.T.reshape(-1), groups, gt, gc).reshape(out_in.T.shape)
            assert not np.array_equal(per_in.T, keep)
        p = np.where(keep, out_in, 0).astype(np.float32)
        pruned[k] = p.reshape(w[k].shape) if k != "W3" else p.T
    want = onnxruntime_run(small_model(pruned), x)
    np.testing.assert_allclose(run(m, x), want, rtol=1e-4, atol=1e-4)


def test_gemm_variants_not_matched():
    # alpha != 1 and a non-constant B are left alone
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    nodes = [
        oh.make_node("Gemm", ["x", "A"], ["g"], alpha=2.0),
        oh.make_node("Gemm", ["g", "x2"], ["y"], transB=1),
    ]
    graph = oh.make_graph(
        nodes,
        "g",
        [
            oh.make_tensor_value_info("x", TP.FLOAT, [2, 4]),
            oh.make_tensor_value_info("x2", TP.FLOAT, [3, 6]),
        ],
        [oh.make_tensor_value_info("y", TP.FLOAT, [2, 3])],
        [nh.from_array(a, "A")],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)], ir_version=10)
    m = import_model(model)
    before = module_to_text(m)
    SparsifyPass(weight_threshold=0.5).apply(make_context(), m)
    assert module_to_text(m) == before


@pytest.mark.parametrize(
    "options,message",
    [
        ({"index_form": "csr"}, "index-form"),
        ({"weight_order": "rows"}, "weight-order"),
        ({"min_sparsity": 2.0}, "min-sparsity"),
        ({"weight_groups": -1}, "weight-groups"),
        ({"weight_groups": 100000}, "weight-groups"),
        ({"neuron_groups": 1000, "neuron_threshold": 0.0}, "neuron-groups"),
    ],
)
def test_bad_options_are_diagnosed(model, options, message):
    m = import_model(model)
    with pytest.raises(PassError, match=message):
        SparsifyPass(**options).apply(make_context(), m)


def test_neuron_group_pruning(model, x):
    m = sparsified(
        model,
        weight_threshold=0.0,
        neuron_groups=4,
        neuron_group_threshold=0.0,
        neuron_group_count=1000,  # never deletes: lossless
    )
    assert op_names(m).count("sparse.group_prune") == 2
    np.testing.assert_allclose(run(m, x), run(import_model(model), x), rtol=1e-5, atol=1e-5)
