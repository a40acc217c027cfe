"""Backward rules of the neural-network ops: Conv, BatchNormalization, pooling,
Softmax/LogSoftmax, LayerNormalization, MatMul and Gemm.

A conv's input gradient is an ONNX ConvTranspose with the conv's strides, pads,
dilations and groups (output_padding restores the rows a strided conv dropped); its
weight gradient is `graph.conv_weight_grad` and the pools' gradients
`graph.max_pool_grad` / `graph.average_pool_grad` (dialects/graph_training.py).
Normalisations recompute their statistics from X with ReduceMean.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from nnx.autodiff.emitter import Emitter, dtype_of
from nnx.autodiff.rules import backward
from nnx.types import shape_of


def _sh(v: SSAValue) -> tuple[int, ...]:
    return tuple(shape_of(v.type))


def _c(em: Emitter, v: SSAValue, k: float) -> SSAValue:
    return em.const(k, dtype_of(v))


def _window_attrs(op, x: SSAValue, y: SSAValue, kernel: list[int]) -> dict:
    """strides, dilations and explicit pads of a window op (auto_pad resolved)."""
    r = len(kernel)
    strides = op.attr("strides") or [1] * r
    dil = op.attr("dilations") or [1] * r
    pads = op.attr("pads") or [0] * (2 * r)
    auto = op.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto == "VALID":
        pads = [0] * (2 * r)
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        xs, ys = _sh(x)[2:], _sh(y)[2:]
        total = [max(0, (o - 1) * s + (k - 1) * d + 1 - i) for i, o, s, k, d in zip(xs, ys, strides, kernel, dil)]
        small = [t // 2 for t in total]
        big = [t - t // 2 for t in total]
        pads = small + big if auto == "SAME_UPPER" else big + small
    return {"strides": list(strides), "dilations": list(dil), "pads": list(pads)}


@backward("Conv")
def _conv(em: Emitter, op, dys, wanted):
    ins = op.onnx_inputs()
    x, w = ins[0], ins[1]
    y, g = op.onnx_outputs()[0], dys[0]
    kernel = list(_sh(w)[2:])
    win = _window_attrs(op, x, y, kernel)
    group = int(op.attr("group", 1))
    out: list[SSAValue | None] = [None] * len(ins)
    if wanted[0]:
        s, d, p = win["strides"], win["dilations"], win["pads"]
        r = len(kernel)
        opad = [
            _sh(x)[2 + i] + p[i] + p[r + i] - (kernel[i] - 1) * d[i] - 1 - (_sh(y)[2 + i] - 1) * s[i]
            for i in range(r)
        ]
        attrs = dict(win, group=group, kernel_shape=kernel)
        if any(opad):
            attrs["output_padding"] = opad
        out[0] = em.emit("ConvTranspose", [g, w], attrs)
    if wanted[1]:
        out[1] = em.emit("ConvWeightGrad", [x, g], dict(win, group=group, kernel_shape=kernel))
    if len(ins) > 2 and ins[2] is not None and wanted[2]:
        axes = [0] + list(range(2, len(_sh(g))))
        out[2] = em.reduce_sum(g, axes, keepdims=False)
    return out


@backward("BatchNormalization", inputs=(0, 1, 2))
def _batch_norm(em: Emitter, op, dys, wanted):
    """Training mode (batch statistics, biased variance):
    dX = scale * rstd * (g - mean(g) - xhat * mean(g * xhat)), dscale = sum(g * xhat),
    dB = sum(g), sums/means over every dim but 1. Inference mode: the running
    statistics are constants, dX = g * scale * rstd."""
    x, scale = op.onnx_inputs()[:2]
    mean_in, var_in = op.onnx_inputs()[3:5]
    g = dys[0]
    rank = len(_sh(x))
    c = _sh(x)[1]
    axes = [0] + list(range(2, rank))
    bshape = [1, c] + [1] * (rank - 2)
    eps = _c(em, x, float(op.attr("epsilon", 1e-5)))
    if int(op.attr("training_mode", 0)):
        mean = em.reduce_mean(x, axes)
        xc = em.sub(x, mean)
        var = em.reduce_mean(em.mul(xc, xc), axes)
    else:
        xc = em.sub(x, em.reshape(mean_in, bshape))
        var = em.reshape(var_in, bshape)
    rstd = em.emit("Reciprocal", [em.emit("Sqrt", [em.add(var, eps)])])
    xhat = em.mul(xc, rstd)
    sum_g = em.reduce_sum(g, axes)
    sum_gx = em.reduce_sum(em.mul(g, xhat), axes)
    out: list[SSAValue | None] = [None] * len(op.onnx_inputs())
    if wanted[0]:
        k = em.mul(em.reshape(scale, bshape), rstd)
        if int(op.attr("training_mode", 0)):
            n = float(np.prod([_sh(x)[a] for a in axes]))
            inner = em.sub(em.sub(g, em.scale(sum_g, 1.0 / n)), em.mul(xhat, em.scale(sum_gx, 1.0 / n)))
            out[0] = em.mul(k, inner)
        else:
            out[0] = em.mul(g, k)
    if wanted[1]:
        out[1] = em.reshape(sum_gx, [c])
    if wanted[2]:
        out[2] = em.reshape(sum_g, [c])
    return out



@backward("MaxPool", inputs=(0,))
def _max_pool(em: Emitter, op, dys, wanted):
    x, y = op.onnx_inputs()[0], op.onnx_outputs()[0]
    kernel = list(op.attr("kernel_shape"))
    attrs = dict(_window_attrs(op, x, y, kernel), kernel_shape=kernel,
                 ceil_mode=int(op.attr("ceil_mode", 0)))
    return [em.emit("MaxPoolGrad", [x, dys[0]], attrs)]


@backward("AveragePool", inputs=(0,))
def _average_pool(em: Emitter, op, dys, wanted):
    x, y = op.onnx_inputs()[0], op.onnx_outputs()[0]
    kernel = list(op.attr("kernel_shape"))
    attrs = dict(_window_attrs(op, x, y, kernel), kernel_shape=kernel,
                 ceil_mode=int(op.attr("ceil_mode", 0)),
                 count_include_pad=int(op.attr("count_include_pad", 0)))
    if (op.attr("auto_pad", "NOTSET") or "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        attrs["count_include_pad"] = 0  # ONNX: SAME padding is never counted
    return [em.emit("AveragePoolGrad", [x, dys[0]], attrs)]


@backward("GlobalAveragePool", inputs=(0,))
def _global_average_pool(em: Emitter, op, dys, wanted):
    x, g = op.onnx_inputs()[0], dys[0]
    n = float(np.prod(_sh(x)[2:]))
    return [em.expand(em.scale(g, 1.0 / n), _sh(x))]


@backward("GlobalMaxPool", inputs=(0,))
def _global_max_pool(em: Emitter, op, dys, wanted):
    x, y, g = op.onnx_inputs()[0], op.onnx_outputs()[0], dys[0]
    hit = em.emit("Equal", [x, y])
    return [em.where(hit, em.expand(g, _sh(x)), _c(em, g, 0.0))]


def _axis(op, rank: int, default: int) -> int:
    a = int(op.attr("axis", default))
    return a + rank if a < 0 else a


@backward("Softmax", inputs=(0,))
def _softmax(em: Emitter, op, dys, wanted):
    y, g = op.onnx_outputs()[0], dys[0]
    a = _axis(op, len(_sh(y)), -1)
    s = em.reduce_sum(em.mul(g, y), [a])
    return [em.mul(y, em.sub(g, s))]


@backward("LogSoftmax", inputs=(0,))
def _log_softmax(em: Emitter, op, dys, wanted):
    y, g = op.onnx_outputs()[0], dys[0]
    a = _axis(op, len(_sh(y)), -1)
    return [em.sub(g, em.mul(em.emit("Exp", [y]), em.reduce_sum(g, [a])))]


@backward("LayerNormalization", inputs=(0, 1, 2))
def _layer_norm(em: Emitter, op, dys, wanted):
    """Over the dims [axis, rank): dX = rstd * (dxh - mean(dxh) - xhat * mean(dxh * xhat)),
    dxh = g * Scale; dScale = sum(g * xhat), dB = sum(g) over the other dims."""
    ins = op.onnx_inputs()
    x, scale = ins[0], ins[1]
    g = dys[0]
    rank = len(_sh(x))
    axes = list(range(_axis(op, rank, -1), rank))
    mean = em.reduce_mean(x, axes)
    xc = em.sub(x, mean)
    var = em.reduce_mean(em.mul(xc, xc), axes)
    eps = _c(em, x, float(op.attr("epsilon", 1e-5)))
    rstd = em.emit("Reciprocal", [em.emit("Sqrt", [em.add(var, eps)])])
    xhat = em.mul(xc, rstd)
    out: list[SSAValue | None] = [None] * len(ins)
    if wanted[0]:
        dxh = em.mul(g, scale)
        inner = em.sub(em.sub(dxh, em.reduce_mean(dxh, axes)), em.mul(xhat, em.reduce_mean(em.mul(dxh, xhat), axes)))
        out[0] = em.mul(rstd, inner)
    if wanted[1]:
        out[1] = em.sum_to_shape(em.mul(g, xhat), _sh(scale))
    if len(ins) > 2 and ins[2] is not None and wanted[2]:
        out[2] = em.sum_to_shape(g, _sh(ins[2]))
    return out


def _t(em: Emitter, v: SSAValue) -> SSAValue:
    """Swap the last two dims."""
    r = len(_sh(v))
    return em.transpose(v, list(range(r - 2)) + [r - 1, r - 2])


@backward("MatMul")
def _matmul(em: Emitter, op, dys, wanted):
    """numpy matmul semantics: 1-d operands get a unit dim; batch dims broadcast and
    their gradients are summed back."""
    a, b = op.onnx_inputs()[:2]
    g = dys[0]
    sa, sb = _sh(a), _sh(b)
    a2 = em.reshape(a, (1, sa[0])) if len(sa) == 1 else a
    b2 = em.reshape(b, (sb[0], 1)) if len(sb) == 1 else b
    s2a, s2b = _sh(a2), _sh(b2)
    batch = np.broadcast_shapes(s2a[:-2], s2b[:-2])
    g2 = em.reshape(g, (*batch, s2a[-2], s2b[-1]))
    out: list[SSAValue | None] = [None, None]
    if wanted[0]:
        out[0] = em.reshape(em.sum_to_shape(em.emit("MatMul", [g2, _t(em, b2)]), s2a), sa)
    if wanted[1]:
        out[1] = em.reshape(em.sum_to_shape(em.emit("MatMul", [_t(em, a2), g2]), s2b), sb)
    return out


@backward("Gemm")
def _gemm(em: Emitter, op, dys, wanted):
    """Y = alpha A' B' + beta C (A' = A^T when transA, B' likewise)."""
    ins = op.onnx_inputs()
    a, b = ins[0], ins[1]
    g = dys[0]
    alpha, beta = float(op.attr("alpha", 1.0)), float(op.attr("beta", 1.0))
    ta, tb = int(op.attr("transA", 0)), int(op.attr("transB", 0))
    ap = em.transpose(a, [1, 0]) if ta else a
    bp = em.transpose(b, [1, 0]) if tb else b
    ga = g if alpha == 1.0 else em.scale(g, alpha)
    out: list[SSAValue | None] = [None] * len(ins)
    if wanted[0]:
        d = em.emit("MatMul", [ga, em.transpose(bp, [1, 0])])
        out[0] = em.transpose(d, [1, 0]) if ta else d
    if wanted[1]:
        d = em.emit("MatMul", [em.transpose(ap, [1, 0]), ga])
        out[1] = em.transpose(d, [1, 0]) if tb else d
    if len(ins) > 2 and ins[2] is not None and wanted[2]:
        gc = g if beta == 1.0 else em.scale(g, beta)
        out[2] = em.sum_to_shape(gc, _sh(ins[2]))
    return out


