"""Backward rules of reductions: ReduceSum/Mean/SumSquare/L2/Max/Min. The gradient is
dY reshaped to keepdims form and expanded over the reduced dims (Max/Min: onto the
elements equal to the extreme, every tie receiving it)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from nnx.autodiff.emitter import Emitter, EmitError, dtype_of
from nnx.autodiff.rules import backward
from nnx.types import shape_of


def _sh(v: SSAValue) -> tuple[int, ...]:
    return tuple(shape_of(v.type))


def _axes(op, x: SSAValue) -> list[int]:
    ins = op.onnx_inputs()
    r = len(_sh(x))
    if len(ins) > 1 and ins[1] is not None:
        val = op.const_value(ins[1])
        if val is None:
            raise EmitError(f"{op.ONNX_TYPE}: axes must be a constant to differentiate")
        axes = [int(t) for t in np.asarray(val).reshape(-1)]
    else:
        axes = [int(t) for t in (op.attr("axes") or [])]
    if not axes:
        return [] if int(op.attr("noop_with_empty_axes", 0)) else list(range(r))
    return sorted(a + r if a < 0 else a for a in axes)


def _spread(em: Emitter, op, g: SSAValue, x: SSAValue) -> tuple[SSAValue, list[int]]:
    """g in keepdims shape, expanded to x's shape; and the reduced axes."""
    axes = _axes(op, x)
    kshape = [1 if i in axes else d for i, d in enumerate(_sh(x))]
    return em.expand(em.reshape(g, kshape), _sh(x)), axes


@backward("ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL2", "ReduceMax", "ReduceMin", inputs=(0,))
def _reduce(em: Emitter, op, dys, wanted):
    x, y, g = op.onnx_inputs()[0], op.onnx_outputs()[0], dys[0]
    t = op.ONNX_TYPE
    gx, axes = _spread(em, op, g, x)
    extra = [None] * (len(op.onnx_inputs()) - 1)
    if t == "ReduceSum":
        return [gx] + extra
    if t == "ReduceMean":
        n = float(np.prod([_sh(x)[a] for a in axes])) if axes else 1.0
        return [em.scale(gx, 1.0 / n)] + extra
    if t == "ReduceSumSquare":
        return [em.mul(gx, em.scale(x, 2.0))] + extra
    yk, _ = _spread(em, op, y, x)
    if t == "ReduceL2":
        return [em.div(em.mul(gx, x), yk)] + extra
    zero = em.const(0.0, dtype_of(g))
    return [em.where(em.emit("Equal", [x, yk]), gx, zero)] + extra
