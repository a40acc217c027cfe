"""Backward rules of data-movement ops: Reshape/Flatten/Squeeze/Unsqueeze (reshape
back), Transpose (inverse permutation), Expand (sum back), Concat (Slice the pieces),
Split (Concat the pieces, zeros where no gradient flows), Slice (Pad with zeros),
Pad (Slice), and Gather, whose gradient is a ScatterND with reduction=add into zeros
(an embedding's rows accumulate every position that looked them up).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from nnx.autodiff.emitter import Emitter, EmitError, dtype_of
from nnx.autodiff.rules import backward
from nnx.types import shape_of


def _sh(v: SSAValue) -> tuple[int, ...]:
    return tuple(shape_of(v.type))


def _none_rest(op, first):
    return [first] + [None] * (len(op.onnx_inputs()) - 1)


@backward("Reshape", "Flatten", "Squeeze", "Unsqueeze", inputs=(0,))
def _reshape(em: Emitter, op, dys, wanted):
    return _none_rest(op, em.reshape(dys[0], _sh(op.onnx_inputs()[0])))


@backward("Transpose", inputs=(0,))
def _transpose(em: Emitter, op, dys, wanted):
    r = len(_sh(op.onnx_inputs()[0]))
    perm = op.attr("perm") or list(range(r - 1, -1, -1))
    inv = [0] * r
    for i, p in enumerate(perm):
        inv[int(p)] = i
    return [em.transpose(dys[0], inv)]


@backward("Expand", inputs=(0,))
def _expand(em: Emitter, op, dys, wanted):
    return _none_rest(op, em.sum_to_shape(dys[0], _sh(op.onnx_inputs()[0])))


@backward("Concat")
def _concat(em: Emitter, op, dys, wanted):
    xs = op.onnx_inputs()
    g = dys[0]
    a = int(op.attr("axis"))
    a = a + len(_sh(g)) if a < 0 else a
    out: list[SSAValue | None] = []
    start = 0
    for x, w in zip(xs, wanted):
        n = _sh(x)[a]
        out.append(
            em.emit("Slice", [g, em.ints([start]), em.ints([start + n]), em.ints([a])]) if w else None
        )
        start += n
    return out


@backward("Split", inputs=(0,))
def _split(em: Emitter, op, dys, wanted):
    x = op.onnx_inputs()[0]
    ys = op.onnx_outputs()
    parts = [g if g is not None else em.zeros_like(y) for g, y in zip(dys, ys)]
    a = int(op.attr("axis", 0))
    a = a + len(_sh(x)) if a < 0 else a
    full = parts[0] if len(parts) == 1 else em.emit("Concat", parts, {"axis": a})
    return _none_rest(op, full)


def _const_ints(op, v: SSAValue | None, attr: str) -> list[int] | None:
    if v is None:
        a = op.attr(attr)
        return None if a is None else [int(t) for t in a]
    val = op.const_value(v)
    if val is None:
        raise EmitError(f"{op.ONNX_TYPE}: '{attr}' must be a constant to differentiate")
    return [int(t) for t in np.asarray(val).reshape(-1)]


@backward("Slice", inputs=(0,))
def _slice(em: Emitter, op, dys, wanted):
    """Unit steps: the gradient is dY padded with zeros back to X's shape."""
    ins = list(op.onnx_inputs()) + [None] * 5
    x = ins[0]
    shape = _sh(x)
    starts = _const_ints(op, ins[1], "starts")
    ends = _const_ints(op, ins[2], "ends")
    axes = _const_ints(op, ins[3], "axes") or list(range(len(starts)))
    steps = _const_ints(op, ins[4], "steps") or [1] * len(starts)
    r = len(shape)
    before, after = [0] * r, [0] * r
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = a + r if a < 0 else a
        if st != 1:
            raise EmitError(f"Slice: only unit steps are differentiable (axis {a} has step {st})")
        lo, hi, _ = slice(s, e, 1).indices(shape[a])
        hi = max(hi, lo)
        before[a], after[a] = lo, shape[a] - hi
    pads = em.ints(before + after)
    return _none_rest(op, em.emit("Pad", [dys[0], pads], {"mode": "constant"}))


@backward("Pad", inputs=(0,))
def _pad(em: Emitter, op, dys, wanted):
    """Constant-mode Pad: the gradient is the interior of dY."""
    ins = list(op.onnx_inputs()) + [None] * 4
    x = ins[0]
    if (op.attr("mode", "constant") or "constant") != "constant":
        raise EmitError(f"Pad: mode '{op.attr('mode')}' is not differentiable (constant only)")
    pads = _const_ints(op, ins[1], "pads")
    r = len(_sh(x))
    axes = _const_ints(op, ins[3], "axes") if ins[3] is not None else list(range(r))
    axes = [a + r if a < 0 else a for a in axes]
    k = len(axes)
    starts = [pads[i] for i in range(k)]
    ends = [pads[i] + _sh(x)[a] for i, a in enumerate(axes)]
    return _none_rest(op, em.emit("Slice", [dys[0], em.ints(starts), em.ints(ends), em.ints(axes)]))


@backward("Gather", inputs=(0,))
def _gather(em: Emitter, op, dys, wanted):
    """ScatterND(zeros, indices[..., None], dY, reduction=add) along the gathered axis
    (moved to the front and back when it is not axis 0)."""
    data, idx = op.onnx_inputs()[:2]
    g = dys[0]
    ds, isx = _sh(data), _sh(idx)
    r = len(ds)
    a = int(op.attr("axis", 0))
    a = a + r if a < 0 else a
    q = len(isx)
    # g dims: data[:a] + idx + data[a+1:]; bring idx dims first
    perm = list(range(a, a + q)) + list(range(a)) + list(range(a + q, len(_sh(g))))
    gt = em.transpose(g, perm)
    moved = (ds[a], *ds[:a], *ds[a + 1 :])
    zeros = em.expand(em.const(0.0, dtype_of(g)), moved)
    idx64 = idx if dtype_of(idx) == np.int64 else em.cast(idx, 7)
    nd = em.reshape(idx64, (*isx, 1))
    acc = em.emit("ScatterND", [zeros, nd, gt], {"reduction": "add"})
    back = list(range(1, a + 1)) + [0] + list(range(a + 1, r))
    return [em.transpose(acc, back), None]
