"""Backward rules of element-wise ops: arithmetic with numpy broadcasting (a gradient
is summed back to its operand's shape), activations, Where, Cast, Identity/Dropout.

Derivatives follow PyTorch's conventions where they differ at a point: Relu, Clip and
LeakyRelu have gradient 0 (Clip) or the left slope at their kinks, Clip's range is
open (hardtanh/ReLU6), HardSwish's middle piece covers [-3, 3].
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from nnx.autodiff.emitter import Emitter, dtype_of
from nnx.autodiff.rules import backward
from nnx.types import NP_TO_ONNX, shape_of


def _sh(v: SSAValue) -> tuple[int, ...]:
    return tuple(shape_of(v.type))


def _binary(em: Emitter, op, ga, gb, wanted):
    a, b = op.onnx_inputs()[:2]
    return [
        em.sum_to_shape(ga(), _sh(a)) if wanted[0] else None,
        em.sum_to_shape(gb(), _sh(b)) if wanted[1] else None,
    ]


@backward("Add")
def _add(em: Emitter, op, dys, wanted):
    g = dys[0]
    return _binary(em, op, lambda: g, lambda: g, wanted)


@backward("Sub")
def _sub(em: Emitter, op, dys, wanted):
    g = dys[0]
    return _binary(em, op, lambda: g, lambda: em.neg(g), wanted)


@backward("Mul")
def _mul(em: Emitter, op, dys, wanted):
    g = dys[0]
    a, b = op.onnx_inputs()[:2]
    return _binary(em, op, lambda: em.mul(g, b), lambda: em.mul(g, a), wanted)


@backward("Div")
def _div(em: Emitter, op, dys, wanted):
    g = dys[0]
    a, b = op.onnx_inputs()[:2]
    y = op.onnx_outputs()[0]
    return _binary(em, op, lambda: em.div(g, b), lambda: em.neg(em.div(em.mul(g, y), b)), wanted)


@backward("Pow")
def _pow(em: Emitter, op, dys, wanted):
    """d(a^b)/da = b a^(b-1); d(a^b)/db = a^b ln a."""
    g = dys[0]
    a, b = op.onnx_inputs()[:2]
    y = op.onnx_outputs()[0]
    bf = b if dtype_of(b) == dtype_of(a) else em.cast(b, NP_TO_ONNX[dtype_of(a)])

    def ga():
        bm1 = em.sub(bf, em.const(1.0, dtype_of(a)))
        return em.mul(g, em.mul(bf, em.emit("Pow", [a, bm1])))

    return _binary(em, op, ga, lambda: em.mul(g, em.mul(y, em.emit("Log", [a]))), wanted)


@backward("Sum", "Mean")
def _sum(em: Emitter, op, dys, wanted):
    xs = op.onnx_inputs()
    g = dys[0]
    if op.ONNX_TYPE == "Mean":
        g = em.scale(g, 1.0 / len(xs))
    return [em.sum_to_shape(g, _sh(x)) if w else None for x, w in zip(xs, wanted)]


def _unary(fn):
    """A rule for a one-input op: fn(em, x, y, g) -> dx."""

    def rule(em: Emitter, op, dys, wanted):
        x = op.onnx_inputs()[0]
        y = op.onnx_outputs()[0]
        return [fn(em, x, y, dys[0])] + [None] * (len(op.onnx_inputs()) - 1)

    return rule


def _c(em: Emitter, v: SSAValue, k: float) -> SSAValue:
    return em.const(k, dtype_of(v))


backward("Neg", inputs=(0,))(_unary(lambda em, x, y, g: em.neg(g)))
backward("Identity", "Dropout", inputs=(0,))(_unary(lambda em, x, y, g: g))
backward("Sqrt", inputs=(0,))(_unary(lambda em, x, y, g: em.div(em.scale(g, 0.5), y)))
backward("Exp", inputs=(0,))(_unary(lambda em, x, y, g: em.mul(g, y)))
backward("Log", inputs=(0,))(_unary(lambda em, x, y, g: em.div(g, x)))
backward("Reciprocal", inputs=(0,))(_unary(lambda em, x, y, g: em.neg(em.mul(g, em.mul(y, y)))))
backward("Tanh", inputs=(0,))(
    _unary(lambda em, x, y, g: em.mul(g, em.sub(_c(em, y, 1.0), em.mul(y, y))))
)
backward("Sigmoid", inputs=(0,))(
    _unary(lambda em, x, y, g: em.mul(g, em.mul(y, em.sub(_c(em, y, 1.0), y))))
)
backward("Softplus", inputs=(0,))(_unary(lambda em, x, y, g: em.mul(g, em.emit("Sigmoid", [x]))))
# The mask comes from the output: y > 0 exactly when x > 0, and the output is kept for
# the next layer's backward anyway, so the input need not stay alive (as PyTorch's
# ReLU saves its result; docs/tensor-timing-and-swapping.md, "Calibration against PyTorch").
backward("Relu", inputs=(0,))(
    _unary(lambda em, x, y, g: em.where(em.emit("Greater", [y, _c(em, y, 0.0)]), g, _c(em, g, 0.0)))
)
backward("Erf", inputs=(0,))(
    _unary(
        lambda em, x, y, g: em.mul(
            g, em.scale(em.emit("Exp", [em.neg(em.mul(x, x))]), 2.0 / math.sqrt(math.pi))
        )
    )
)


@backward("LeakyRelu", inputs=(0,))
def _leaky_relu(em: Emitter, op, dys, wanted):
    x = op.onnx_inputs()[0]
    alpha = float(op.attr("alpha", 0.01))
    g = dys[0]
    return [em.where(em.emit("Greater", [x, _c(em, x, 0.0)]), g, em.scale(g, alpha))]


@backward("Clip", inputs=(0,))
def _clip(em: Emitter, op, dys, wanted):
    """Gradient where min < x < max (the open range, as PyTorch's hardtanh/ReLU6)."""
    ins = op.onnx_inputs()
    x, g = ins[0], dys[0]
    lo = ins[1] if len(ins) > 1 else None
    hi = ins[2] if len(ins) > 2 else None
    if lo is None and op.attr("min") is not None:
        lo = _c(em, x, float(op.attr("min")))
    if hi is None and op.attr("max") is not None:
        hi = _c(em, x, float(op.attr("max")))
    keep = None
    for bound, cmp in ((lo, "Greater"), (hi, "Less")):
        if bound is not None:
            c = em.emit(cmp, [x, bound])
            keep = c if keep is None else em.emit("And", [keep, c])
    if keep is None:
        return [g]
    return [em.where(keep, g, _c(em, g, 0.0))] + [None] * (len(ins) - 1)


@backward("HardSigmoid", inputs=(0,))
def _hard_sigmoid(em: Emitter, op, dys, wanted):
    x, g = op.onnx_inputs()[0], dys[0]
    alpha, beta = float(op.attr("alpha", 0.2)), float(op.attr("beta", 0.5))
    t = em.add(em.scale(x, alpha), _c(em, x, beta))
    inside = em.emit("And", [em.emit("Greater", [t, _c(em, x, 0.0)]), em.emit("Less", [t, _c(em, x, 1.0)])])
    return [em.where(inside, em.scale(g, alpha), _c(em, g, 0.0))]


@backward("HardSwish", inputs=(0,))
def _hard_swish(em: Emitter, op, dys, wanted):
    """x * relu6(x + 3) / 6: 0 below -3, g (x/3 + 1/2) on [-3, 3], g above."""
    x, g = op.onnx_inputs()[0], dys[0]
    mid = em.mul(g, em.add(em.scale(x, 1.0 / 3.0), _c(em, x, 0.5)))
    upper = em.where(em.emit("LessOrEqual", [x, _c(em, x, 3.0)]), mid, g)
    return [em.where(em.emit("Less", [x, _c(em, x, -3.0)]), _c(em, g, 0.0), upper)]


@backward("Gelu", inputs=(0,))
def _gelu(em: Emitter, op, dys, wanted):
    """Exact: Phi(x) + x phi(x). tanh: 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2),
    t = tanh(c (x + k x^3)), c = sqrt(2/pi), k = 0.044715."""
    x, g = op.onnx_inputs()[0], dys[0]
    one = _c(em, x, 1.0)
    if op.attr("approximate", "none") == "tanh":
        c, k = math.sqrt(2.0 / math.pi), 0.044715
        x2 = em.mul(x, x)
        inner = em.scale(em.add(x, em.scale(em.mul(x2, x), k)), c)
        t = em.emit("Tanh", [inner])
        left = em.scale(em.add(one, t), 0.5)
        dinner = em.scale(em.add(one, em.scale(x2, 3 * k)), c)
        right = em.mul(em.scale(em.mul(x, em.sub(one, em.mul(t, t))), 0.5), dinner)
        return [em.mul(g, em.add(left, right))]
    cdf = em.scale(em.add(one, em.emit("Erf", [em.scale(x, 1.0 / math.sqrt(2.0))])), 0.5)
    pdf = em.scale(em.emit("Exp", [em.scale(em.mul(x, x), -0.5)]), 1.0 / math.sqrt(2 * math.pi))
    return [em.mul(g, em.add(cdf, em.mul(x, pdf)))]


@backward("Where", inputs=(1, 2))
def _where(em: Emitter, op, dys, wanted):
    c, a, b = op.onnx_inputs()[:3]
    g = dys[0]
    zero = _c(em, g, 0.0)
    return [
        None,
        em.sum_to_shape(em.where(c, g, zero), _sh(a)) if wanted[1] else None,
        em.sum_to_shape(em.where(c, zero, g), _sh(b)) if wanted[2] else None,
    ]


@backward("Cast", "CastLike", inputs=(0,))
def _cast(em: Emitter, op, dys, wanted):
    """Float -> float casts pass the gradient back in the input's type."""
    x, g = op.onnx_inputs()[0], dys[0]
    if dtype_of(g) == dtype_of(x):
        return [g] + [None] * (len(op.onnx_inputs()) - 1)
    out = em.cast(g, NP_TO_ONNX[np.dtype(dtype_of(x))])
    return [out] + [None] * (len(op.onnx_inputs()) - 1)
