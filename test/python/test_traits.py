"""dialects/traits.py: the nnx op traits mean what the passes assume, checked on the
interpreter kernels (which define the ops) with random inputs.

* `Elementwise`: the kernel commutes with slicing (any output window is the op on the
  matching, broadcast-aware input windows);
* `ViewLike`: result 0 has operand 0's bytes, in order;
* `DataMovement`: every result element is an element of a data operand (or the pad
  value);
* `Reduction`: slicing a kept axis commutes with the op;
* `ShapeQuery`: the result does not depend on the operand's values;
* `MatrixCompute`: exactly the graph and sparse ops the MPU computes.
"""

from __future__ import annotations

import numpy as np
import pytest

from nnx.dialects.graph import ONNX_OPS
from nnx.dialects.traits import DataMovement, Elementwise, MatrixCompute, Reduction, ShapeQuery, ViewLike
from nnx.interp.kernels import run_kernel

RNG = np.random.default_rng(1)
SHAPE = (3, 4, 5)


def _u(*shape, lo=0.1, hi=0.9):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def _b(*shape):
    return RNG.random(shape) > 0.5


_UNARY = """Abs Acos Asin Asinh Atan Atanh Ceil Celu Cos Cosh Elu Erf Exp Floor Gelu
HardSigmoid HardSwish IsInf IsNaN LeakyRelu Log Mish Neg Reciprocal Relu Round Selu Shrink
Sigmoid Sign Sin Sinh Softplus Softsign Sqrt Tan Tanh ThresholdedRelu Identity""".split()
_BINARY = "Add Sub Mul Div Equal Greater GreaterOrEqual Less LessOrEqual".split()


def _elementwise_case(kind: str):
    """(inputs, attrs) of an Elementwise op: operand 0 full shape, others broadcast."""
    if kind in _UNARY:
        return [_u(*SHAPE, lo=-0.9) if kind not in ("Log", "Sqrt", "Acos", "Asin") else _u(*SHAPE)], {}
    if kind == "Acosh":
        return [_u(*SHAPE, lo=1.1, hi=3.0)], {}
    if kind in _BINARY:
        return [_u(*SHAPE, lo=-1.0), _u(4, 1, lo=-1.0)], {}
    if kind == "Pow":
        return [_u(*SHAPE), _u(1, 5, lo=-2.0, hi=2.0)], {}
    if kind == "Mod":
        return [_u(*SHAPE, lo=-5, hi=5), _u(5, lo=0.5, hi=2.0)], {"fmod": 1}
    if kind in ("Max", "Min", "Sum", "Mean"):
        return [_u(*SHAPE, lo=-1.0), _u(4, 1, lo=-1.0), _u(1, 1, 5, lo=-1.0)], {}
    if kind in ("And", "Or", "Xor"):
        return [_b(*SHAPE), _b(1, 5)], {}
    if kind == "Not":
        return [_b(*SHAPE)], {}
    if kind == "PRelu":
        return [_u(*SHAPE, lo=-1.0), _u(5)], {}
    if kind == "Where":
        return [_b(*SHAPE), _u(4, 1, lo=-1.0), _u(*SHAPE, lo=-1.0)], {}
    if kind == "Clip":
        return [_u(*SHAPE, lo=-1.0), np.array(-0.3, np.float32), np.array(0.4, np.float32)], {}
    if kind == "Cast":
        return [_u(*SHAPE, lo=-5.0, hi=5.0)], {"to": 6}  # int32
    if kind == "CastLike":
        return [_u(*SHAPE, lo=-5.0, hi=5.0), np.zeros((), np.float64)], {}
    raise KeyError(kind)


def _window(x: np.ndarray, win: list[slice], out_rank: int) -> np.ndarray:
    """The broadcast-aware window of operand `x` (axes of size 1 are read whole)."""
    off = out_rank - x.ndim
    return x[tuple(slice(None) if x.shape[i] == 1 else win[off + i] for i in range(x.ndim))]


def _commutes_with_slicing(kind, inputs, attrs, trials=4) -> bool:
    want = run_kernel(kind, inputs, dict(attrs))[0]
    for _ in range(trials):
        win = []
        for d in want.shape:
            lo = int(RNG.integers(0, d))
            win.append(slice(lo, int(RNG.integers(lo + 1, d + 1))))
        part = run_kernel(kind, [x if x.ndim == 0 else _window(x, win, want.ndim) for x in inputs], dict(attrs))[0]
        if part.shape != want[tuple(win)].shape or not np.allclose(part, want[tuple(win)], equal_nan=True):
            return False
    return True


ELEMENTWISE = sorted(k for k, c in ONNX_OPS.items() if c.has_trait(Elementwise))


@pytest.mark.parametrize("kind", ELEMENTWISE)
def test_elementwise_ops_commute_with_slicing(kind):
    inputs, attrs = _elementwise_case(kind)
    assert _commutes_with_slicing(kind, inputs, attrs)


@pytest.mark.parametrize("kind, inputs, attrs", [
    ("Softmax", [_u(*SHAPE, lo=-1.0)], {"axis": 1}),
    ("CumSum", [_u(*SHAPE), np.array(2)], {}),
    ("Transpose", [_u(4, 4)], {}),
    ("LRN", [_u(1, 6, 3, 3)], {"size": 3}),
])
def test_non_elementwise_ops_do_not_commute(kind, inputs, attrs):
    """The slicing check tells elementwise ops from others (it can fail), and these
    ops do not carry the trait."""
    assert not ONNX_OPS[kind].has_trait(Elementwise)
    assert not _commutes_with_slicing(kind, inputs, attrs, trials=12)


def _view_case(kind: str):
    x = _u(2, 1, 6, 1, lo=-1.0)
    return {
        "Reshape": ([x, np.array([3, 4], np.int64)], {}),
        "Flatten": ([x], {"axis": 2}),
        "Squeeze": ([x, np.array([1, 3], np.int64)], {}),
        "Unsqueeze": ([x, np.array([0, 5], np.int64)], {}),
        "Identity": ([x], {}),
        "Dropout": ([x], {}),
    }[kind]


VIEWS = sorted(k for k, c in ONNX_OPS.items() if c.has_trait(ViewLike))


def test_view_like_ops_are_the_alias_kinds():
    assert VIEWS == ["Dropout", "Flatten", "Identity", "Reshape", "Squeeze", "Unsqueeze"]


@pytest.mark.parametrize("kind", VIEWS)
def test_view_like_ops_keep_the_bytes(kind):
    inputs, attrs = _view_case(kind)
    y = run_kernel(kind, inputs, attrs)[0]
    assert y.dtype == inputs[0].dtype
    assert y.tobytes() == np.ascontiguousarray(inputs[0]).tobytes()


def test_transpose_is_not_view_like():
    x = _u(3, 4)
    assert not ONNX_OPS["Transpose"].has_trait(ViewLike)
    assert run_kernel("Transpose", [x], {})[0].tobytes() != x.tobytes()


def _movement_case(kind: str):
    x = (np.arange(2 * 3 * 4 * 4, dtype=np.float32) + 1).reshape(2, 3, 4, 4)
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    return {
        "Transpose": ([x], {"perm": [0, 2, 3, 1]}),
        "Concat": ([x, -x], {"axis": 1}),
        "Split": ([x, i64(1, 2)], {"axis": 1}),
        "Slice": ([x, i64(1), i64(4), i64(2)], {}),
        "Gather": ([x, i64(2, 0, 2)], {"axis": 1}),
        "Expand": ([x[:, :1], i64(2, 3, 4, 4)], {}),
        "Tile": ([x, i64(1, 2, 1, 1)], {}),
        "Pad": ([x, i64(0, 0, 1, 1, 0, 0, 1, 1)], {"mode": "constant"}),
        "DepthToSpace": ([np.concatenate([x, -x, x + 100, x + 200], 1)], {"blocksize": 2}),
        "SpaceToDepth": ([x], {"blocksize": 2}),
    }.get(kind) or (_view_case(kind) if kind in VIEWS else None)


MOVERS = sorted(k for k, c in ONNX_OPS.items() if c.has_trait(DataMovement))


@pytest.mark.parametrize("kind", MOVERS)
def test_data_movement_ops_only_move_elements(kind):
    inputs, attrs = _movement_case(kind)
    data = ONNX_OPS[kind].get_trait(DataMovement).data_operands
    pos = range(len(inputs)) if data is None else data
    allowed = set(np.concatenate([inputs[j].reshape(-1) for j in pos]).tolist()) | {0.0}
    attrs = dict(attrs)
    attrs["_num_outputs"] = 2 if kind == "Split" else 1
    for y in run_kernel(kind, inputs, attrs)[:1 if kind == "Dropout" else None]:
        assert set(y.reshape(-1).tolist()) <= allowed, kind


def test_data_movement_check_can_fail():
    x = _u(3, 4)
    assert not ONNX_OPS["Softmax"].has_trait(DataMovement)
    assert not set(run_kernel("Softmax", [x], {"axis": 1})[0].reshape(-1).tolist()) <= set(x.reshape(-1).tolist())


REDUCTIONS = sorted(k for k, c in ONNX_OPS.items() if c.has_trait(Reduction))


@pytest.mark.parametrize("kind", REDUCTIONS)
def test_reductions_commute_with_slicing_kept_axes(kind):
    """Reducing axis 1 of a (4, 5, 6) input: slicing axes 0 and 2 before or after
    gives the same result; slicing the reduced axis does not."""
    x = _u(4, 5, 6, lo=0.5, hi=2.0)
    if kind.startswith("Arg"):
        inputs, attrs = [x], {"axis": 1, "keepdims": 1}
    else:
        inputs, attrs = [x, np.array([1], np.int64)], {"keepdims": 1}
    want = run_kernel(kind, inputs, dict(attrs))[0]
    win = (slice(1, 3), slice(None), slice(2, 6))
    got = run_kernel(kind, [x[win]] + inputs[1:], dict(attrs))[0]
    np.testing.assert_allclose(got, want[win], rtol=1e-6)
    cut = run_kernel(kind, [x[:, :2]] + inputs[1:], dict(attrs))[0]
    assert not np.allclose(cut, want), f"{kind} does not reduce axis 1"


@pytest.mark.parametrize("kind", sorted(k for k, c in ONNX_OPS.items() if c.has_trait(ShapeQuery)))
def test_shape_queries_ignore_values(kind):
    a, b = _u(2, 3, 4), _u(2, 3, 4, lo=5.0, hi=9.0)
    np.testing.assert_array_equal(run_kernel(kind, [a], {})[0], run_kernel(kind, [b], {})[0])


def test_matrix_compute_ops_are_the_mpu_kinds():
    from nnx.dialects import sparse
    from nnx.sim.isa import MPU_KINDS

    graph = {k for k, c in ONNX_OPS.items() if c.has_trait(MatrixCompute)}
    assert graph == {"Conv", "ConvTranspose", "MatMul", "Gemm"}
    assert graph <= MPU_KINDS
    assert all(c.has_trait(MatrixCompute) for c in (sparse.FcOp, sparse.MatMulOp, sparse.ConvOp))
    assert not sparse.ConnectOp.has_trait(MatrixCompute)
