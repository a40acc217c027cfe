"""Backward rules of graph-autodiff by finite differences, one small float64 graph per
case, grouped by rule family (elementwise, nn, tensor, reduce).

Each case is an ONNX graph built with onnx.helper: input X, float64 initializers
(the parameters), output Y. It is imported, `graph-autodiff{loss=mse}` builds the
training step, and each `grad_<name>` is compared with central differences of
mean((Y - T)^2) at a few elements, the forward run by the interpreter on re-imported
models with the parameter perturbed. Also: a model with an op that has no rule fails
with one PassError naming the op.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

from nnx.diagnostics import PassError
from nnx.importer import import_model
from nnx.interp.interpreter import run_module
from nnx.passes.graph_autodiff import GraphAutodiffPass

D = TensorProto.DOUBLE


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _model(nodes, x_shape, y_shape, params: dict[str, np.ndarray], extra_inits=()):
    inits = [numpy_helper.from_array(v, k) for k, v in params.items()] + list(extra_inits)
    g = helper.make_graph(
        nodes, "case", [helper.make_tensor_value_info("X", D, list(x_shape))],
        [helper.make_tensor_value_info("Y", D, list(y_shape))], inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


def _loss(model, x, t):
    y = run_module(import_model(model), {"X": x})["Y"]
    return float(np.mean((y - t) ** 2))


def _check(nodes, x_shape, y_shape, params, extra_inits=(), seed=0, positive_x=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    if positive_x:
        x = np.abs(x) + 0.5
    t = rng.standard_normal(y_shape)
    model = _model(nodes, x_shape, y_shape, params, extra_inits)
    module = import_model(model)
    GraphAutodiffPass(loss="mse").apply(Context(), module)
    module.verify()
    got = run_module(module, {"X": x, "labels": t})
    assert abs(float(got["loss"]) - _loss(model, x, t)) < 1e-9
    assert {k.removeprefix("grad_") for k in got if k != "loss"} == set(params)
    h = 1e-6
    for name, p in params.items():
        g = got[f"grad_{name}"]
        assert g.shape == p.shape
        for flat in rng.choice(p.size, size=min(p.size, 6), replace=False):
            idx = np.unravel_index(flat, p.shape)
            plus, minus = dict(params), dict(params)
            plus[name] = p.copy()
            plus[name][idx] += h
            minus[name] = p.copy()
            minus[name][idx] -= h
            fd = (_loss(_model(nodes, x_shape, y_shape, plus, extra_inits), x, t)
                  - _loss(_model(nodes, x_shape, y_shape, minus, extra_inits), x, t)) / (2 * h)
            assert abs(g[idx] - fd) <= 1e-5 * max(1.0, abs(fd)), (name, idx, g[idx], fd)


def _r(*shape, seed=1, scale=1.0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape) * scale


def _i64(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


N = helper.make_node

# ---- elementwise family ------------------------------------------------------------

ELEMENTWISE = {
    "add_sub_mul_broadcast": ([N("Add", ["X", "A"], ["s"]), N("Mul", ["s", "B"], ["m"]),
                               N("Sub", ["m", "A"], ["Y"])], (2, 3, 4), (2, 3, 4),
                              {"A": _r(3, 1), "B": _r(4)}),
    "div_pow_sqrt": ([N("Mul", ["X", "X"], ["x2"]), N("Add", ["x2", "A"], ["p"]),
                      N("Sqrt", ["p"], ["q"]), N("Div", ["q", "B"], ["d"]),
                      N("Pow", ["d", "E"], ["Y"])], (3, 4), (3, 4),
                     {"A": np.abs(_r(4)) + 1.0, "B": np.abs(_r(3, 1)) + 1.0,
                      "E": np.array([1.5, 2.0, 2.5, 3.0])}),
    "activations": ([N("Mul", ["X", "A"], ["a"]), N("Tanh", ["a"], ["t"]), N("Sigmoid", ["a"], ["s"]),
                     N("Erf", ["a"], ["e"]), N("Gelu", ["a"], ["g"], domain=""),
                     N("HardSwish", ["a"], ["h"]), N("Relu", ["a"], ["r"]),
                     N("LeakyRelu", ["a"], ["l"], alpha=0.1), N("LeakyRelu", ["a"], ["n"], alpha=-0.5),
                     N("Sum", ["t", "s", "e", "g", "h", "r", "l", "n"], ["Y"])], (4, 5), (4, 5),
                    {"A": _r(5, scale=2.0)}),
    "clip_where": ([N("Mul", ["X", "A"], ["a"]), N("Clip", ["a", "lo", "hi"], ["c"]),
                    N("Greater", ["X", "zero"], ["cond"]), N("Where", ["cond", "c", "B"], ["Y"])],
                   (4, 5), (4, 5), {"A": _r(5, scale=2.0), "B": _r(5)}),
}
ELEMENTWISE_INITS = {
    "clip_where": [numpy_helper.from_array(np.array(-0.5), "lo"),
                   numpy_helper.from_array(np.array(0.7), "hi"),
                   numpy_helper.from_array(np.array(0.0), "zero")],
}

# ---- nn family ----------------------------------------------------------------------

NN = {
    "conv_groups_strides_dilations_pads": (
        [N("Conv", ["X", "W", "Bc"], ["Y"], group=2, strides=[2, 1], dilations=[1, 2],
           pads=[1, 2, 0, 1])], (2, 4, 7, 8), (2, 6, 3, 7),
        {"W": _r(6, 2, 3, 3), "Bc": _r(6)}),
    "conv_depthwise_bn_training_relu6": (
        [N("Conv", ["X", "W"], ["c"], group=4, pads=[1, 1, 1, 1]),
         N("BatchNormalization", ["c", "S", "Bb", "rm", "rv"], ["b", "m_out", "v_out"],
           training_mode=1, epsilon=1e-5),
         N("Clip", ["b", "lo", "hi"], ["Y"])], (3, 4, 5, 5), (3, 4, 5, 5),
        {"W": _r(4, 1, 3, 3), "S": np.abs(_r(4)) + 0.5, "Bb": _r(4)}),
    "pools": (
        [N("Conv", ["X", "W"], ["c"], pads=[1, 1, 1, 1]),
         N("MaxPool", ["c"], ["mp"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         N("AveragePool", ["c"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         N("Add", ["mp", "ap"], ["s"]), N("GlobalAveragePool", ["s"], ["Y"])],
        (2, 2, 6, 6), (2, 3, 1, 1), {"W": _r(3, 2, 3, 3)}),
    "matmul_broadcast_softmax_layernorm": (
        [N("MatMul", ["X", "W"], ["m"]), N("Softmax", ["m"], ["s"], axis=-1),
         N("MatMul", ["s", "V"], ["v"]),
         N("LayerNormalization", ["v", "G", "Bl"], ["Y"], axis=-1)],
        (2, 3, 4), (2, 3, 5), {"W": _r(4, 6), "V": _r(2, 6, 5), "G": _r(5), "Bl": _r(5)}),
    "gemm_transB": (
        [N("Gemm", ["X", "W", "Bg"], ["Y"], transB=1, alpha=0.5, beta=2.0)], (3, 4), (3, 5),
        {"W": _r(5, 4), "Bg": _r(5)}),
}
NN_INITS = {
    "conv_depthwise_bn_training_relu6": [
        numpy_helper.from_array(np.zeros(4), "rm"), numpy_helper.from_array(np.ones(4), "rv"),
        numpy_helper.from_array(np.array(0.0), "lo"), numpy_helper.from_array(np.array(1.0), "hi")],
}

# ---- tensor and reduce families -----------------------------------------------------

TENSOR = {
    "reshape_transpose_concat_split_slice": (
        [N("Mul", ["X", "A"], ["a"]), N("Transpose", ["a"], ["t"], perm=[1, 0]),
         N("Concat", ["t", "B"], ["c"], axis=0), N("Split", ["c", "sp"], ["s1", "s2"], axis=0),
         N("Slice", ["s1", "st", "en", "ax"], ["sl"]), N("Reshape", ["sl", "shp"], ["r"]),
         N("Unsqueeze", ["r", "ua"], ["u"]), N("Expand", ["u", "es"], ["Y"])],
        (3, 4), (2, 2, 6), {"A": _r(4), "B": _r(2, 3)}),
    "gather_embedding": (
        # a training-mode Dropout (ratio 0) keeps the Gather over the initializer an op
        [N("Gather", ["E", "ids"], ["g"], axis=0), N("Mul", ["g", "X"], ["m"]),
         N("Dropout", ["m", "ratio", "train"], ["Y"])],
        (2, 3, 4), (2, 3, 4), {"E": _r(5, 4)}),
}
TENSOR_INITS = {
    "reshape_transpose_concat_split_slice": [
        _i64("sp", [4, 2]), _i64("st", [1, 0]), _i64("en", [4, 2]), _i64("ax", [0, 1]),
        _i64("shp", [6]), _i64("ua", [0]), _i64("es", [2, 2, 6])],
    "gather_embedding": [_i64("ids", [[0, 1, 1], [4, 0, 1]]),
                         numpy_helper.from_array(np.array(0.0), "ratio"),
                         numpy_helper.from_array(np.array(True), "train")],
}

REDUCE = {
    "reductions": (
        [N("Mul", ["X", "A"], ["a"]), N("ReduceSum", ["a", "ax1"], ["s"], keepdims=1),
         N("ReduceMean", ["a", "ax1"], ["m"], keepdims=1), N("ReduceMax", ["a", "ax1"], ["x"], keepdims=1),
         N("Sum", ["s", "m", "x"], ["Y"])], (3, 4), (3, 1), {"A": _r(4)}),
}
REDUCE_INITS = {"reductions": [_i64("ax1", [1])]}

CASES = []
for fam, table, inits in (("elementwise", ELEMENTWISE, ELEMENTWISE_INITS), ("nn", NN, NN_INITS),
                          ("tensor", TENSOR, TENSOR_INITS), ("reduce", REDUCE, REDUCE_INITS)):
    for k, v in table.items():
        CASES.append(pytest.param(v, inits.get(k, ()), id=f"{fam}-{k}"))


@pytest.mark.parametrize("case,inits", CASES)
def test_rule_matches_finite_differences(case, inits) -> None:
    nodes, xs, ys, params = case
    _check(nodes, xs, ys, params, inits, positive_x="div_pow" in str(nodes))


def test_op_without_rule_is_one_pass_error() -> None:
    nodes = [N("Mul", ["X", "A"], ["a"]), N("Cos", ["a"], ["Y"], name="the_cos")]
    module = import_model(_model(nodes, (2, 3), (2, 3), {"A": _r(3)}))
    with pytest.raises(PassError) as e:
        GraphAutodiffPass(loss="mse").apply(Context(), module)
    assert "no backward rule for graph.cos" in e.value.message
    assert e.value.op is not None and "the_cos" in str(e.value.op.location)


@pytest.mark.parametrize("optimizer", ["momentum", "adam"])
def test_optimizer_state_arguments(optimizer) -> None:
    """momentum/adam: state in, updated state out, formulas as PyTorch's."""
    import torch

    nodes = [N("Gemm", ["X", "W"], ["Y"], transB=1)]
    w = _r(3, 4)
    module = import_model(_model(nodes, (2, 4), (2, 3), {"W": w}))
    GraphAutodiffPass(loss="mse", optimizer=optimizer, lr=0.1).apply(Context(), module)
    x, t = _r(2, 4, seed=5), _r(2, 3, seed=6)
    feeds = {"X": x, "labels": t}
    pt = torch.nn.Parameter(torch.from_numpy(w.copy()))
    if optimizer == "momentum":
        opt = torch.optim.SGD([pt], lr=0.1, momentum=0.9)
        feeds["velocity_W"] = np.zeros_like(w)
    else:
        opt = torch.optim.Adam([pt], lr=0.1)
        feeds.update(adam_m_W=np.zeros_like(w), adam_v_W=np.zeros_like(w), adam_step=np.array(1.0))
    got = run_module(module, feeds)
    loss = torch.mean((torch.from_numpy(x) @ pt.T - torch.from_numpy(t)) ** 2)
    loss.backward()
    opt.step()
    np.testing.assert_allclose(got["new_W"], pt.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_training_batch_norm_kernel_is_float32_accurate() -> None:
    """Training-mode BatchNormalization on float32 input whose mean is large against its
    spread (8 values per channel): batch statistics in float32 would lose ~1e-3 of the
    normalised output; the kernel's float64 statistics keep it at float32 rounding."""
    from nnx.interp.kernels import run_kernel

    rng = np.random.default_rng(0)
    x = (300.0 + 0.05 * rng.standard_normal((2, 3, 2, 2))).astype(np.float32)
    scale = np.array([1.0, 0.5, 2.0], np.float32)
    bias = np.array([0.1, -0.2, 0.0], np.float32)
    mean, var = np.zeros(3, np.float32), np.ones(3, np.float32)
    y, rm, rv = run_kernel("BatchNormalization", [x, scale, bias, mean, var],
                           {"training_mode": 1, "epsilon": 1e-5, "momentum": 0.9})
    xd = x.astype(np.float64)
    bm, bv = xd.mean(axis=(0, 2, 3)), xd.var(axis=(0, 2, 3))
    sh = (1, 3, 1, 1)
    want = (xd - bm.reshape(sh)) / np.sqrt(bv.reshape(sh) + 1e-5) * scale.reshape(sh) + bias.reshape(sh)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-5)
    np.testing.assert_allclose(rv, 0.9 + 0.1 * bv, rtol=1e-6)
