"""Kernels of the gradient ops (dialects/graph_training.py), keyed by their `ONNX_TYPE`.

They define what the ops compute: the gradients of Conv (weight), MaxPool and
AveragePool that ONNX has no operator for (graph-autodiff, docs/training.md). Window
attributes have ONNX Conv/MaxPool/AveragePool meanings and defaults; only explicit
pads (auto_pad NOTSET or VALID) reach them.
"""

from __future__ import annotations

import numpy as np

from nnx.interp.kernels import KernelError, ints, kernel


def _window(x: np.ndarray, out: tuple[int, ...], attrs) -> tuple:
    """(kernel, strides, dilations, pads begin, pads end) of a window op over x."""
    r = x.ndim - 2
    K = ints(attrs.get("kernel_shape"))
    if len(K) != r:
        raise KernelError(f"kernel_shape {K} does not match {r} spatial dims")
    s = ints(attrs.get("strides")) or [1] * r
    d = ints(attrs.get("dilations")) or [1] * r
    pads = ints(attrs.get("pads")) or [0] * (2 * r)
    if (attrs.get("auto_pad") or "NOTSET") == "VALID":
        pads = [0] * (2 * r)
    return K, s, d, pads[:r], pads[r:]


def _padded(x: np.ndarray, out, K, s, d, pb, pe, fill: float) -> np.ndarray:
    """x padded by pb/pe, and at the end further as far as the last window reaches
    (ceil_mode), with `fill`."""
    r = x.ndim - 2
    widths = [(0, 0), (0, 0)]
    for i in range(r):
        need = (out[i] - 1) * s[i] + (K[i] - 1) * d[i] + 1
        have = x.shape[2 + i] + pb[i] + pe[i]
        widths.append((pb[i], pe[i] + max(0, need - have)))
    return np.pad(x, widths, constant_values=fill)


def _window_slice(kidx, s, d, out) -> tuple:
    return tuple(slice(k * dd, k * dd + (o - 1) * ss + 1, ss) for k, dd, o, ss in zip(kidx, d, out, s))


@kernel("ConvWeightGrad")
def _conv_weight_grad(inputs, attrs):
    """dW of Conv(X, W): per kernel offset, a batched matmul of dY with the strided
    window of the padded X, per group."""
    x, dy = inputs[0], inputs[1]
    out = dy.shape[2:]
    K, s, d, pb, pe = _window(x, out, attrs)
    g = int(attrs.get("group", 1))
    n, c = x.shape[:2]
    m = dy.shape[1]
    cg, mg = c // g, m // g
    xp = _padded(x, out, K, s, d, pb, pe, 0.0)
    xg = xp.reshape(n, g, cg, *xp.shape[2:])
    p = int(np.prod(out, dtype=np.int64))
    # (g, mg, n*P)
    dyg = dy.reshape(n, g, mg, p).transpose(1, 2, 0, 3).reshape(g, mg, n * p)
    dw = np.zeros((g, mg, cg, *K), dtype=dy.dtype)
    for kidx in np.ndindex(*K):
        patch = xg[(slice(None),) * 3 + _window_slice(kidx, s, d, out)]
        patch = patch.reshape(n, g, cg, p).transpose(1, 0, 3, 2).reshape(g, n * p, cg)
        dw[(slice(None),) * 3 + kidx] = np.matmul(dyg, patch)
    return [dw.reshape(m, cg, *K)]


@kernel("MaxPoolGrad")
def _max_pool_grad(inputs, attrs):
    """dX of MaxPool: dY scattered (added) to the first maximum of each window."""
    x, dy = inputs[0], inputs[1]
    out = dy.shape[2:]
    K, s, d, pb, pe = _window(x, out, attrs)
    xp = _padded(x, out, K, s, d, pb, pe, -np.inf)
    offsets = list(np.ndindex(*K))
    stack = np.stack([xp[(slice(None),) * 2 + _window_slice(k, s, d, out)] for k in offsets])
    arg = np.argmax(stack, axis=0)  # first maximum in row-major window order
    kpos = np.asarray(offsets, dtype=np.int64)[arg]  # (n, c, *out, r)
    r = x.ndim - 2
    n, c = x.shape[:2]
    idx = (np.arange(n).reshape((n, 1) + (1,) * r) * c + np.arange(c).reshape((1, c) + (1,) * r))
    for i in range(r):
        o = np.arange(out[i]).reshape((1, 1) + tuple(out[i] if j == i else 1 for j in range(r)))
        pos = o * s[i] + kpos[..., i] * d[i] - pb[i]
        idx = idx * x.shape[2 + i] + pos
    dx = np.zeros(x.size, dtype=dy.dtype)
    np.add.at(dx, idx.reshape(-1), dy.reshape(-1))
    return [dx.reshape(x.shape)]


@kernel("AveragePoolGrad")
def _average_pool_grad(inputs, attrs):
    """dX of AveragePool: dY / divisor added to every element of X in the window."""
    x, dy = inputs[0], inputs[1]
    out = dy.shape[2:]
    K, s, d, pb, pe = _window(x, out, attrs)
    r = x.ndim - 2
    include_pad = bool(int(attrs.get("count_include_pad", 0)))
    # validity of each window element, per dim: inside the padded input (count_include_pad)
    # or inside X itself
    def valid(i: int, k: int) -> np.ndarray:
        p = np.arange(out[i]) * s[i] + k * d[i]
        lo, hi = (0, x.shape[2 + i] + pb[i] + pe[i]) if include_pad else (pb[i], pb[i] + x.shape[2 + i])
        v = ((p >= lo) & (p < hi)).astype(dy.dtype)
        return v.reshape(tuple(out[i] if j == i else 1 for j in range(r)))

    masks = {}
    count = np.zeros(out, dtype=dy.dtype)
    for kidx in np.ndindex(*K):
        m = np.ones((1,) * r, dtype=dy.dtype)
        for i, k in enumerate(kidx):
            m = m * valid(i, k)
        masks[kidx] = m
        count = count + m
    g = dy / np.maximum(count, 1)
    dxp = np.zeros_like(_padded(np.zeros(x.shape, dy.dtype), out, K, s, d, pb, pe, 0.0))
    for kidx, m in masks.items():
        dxp[(slice(None),) * 2 + _window_slice(kidx, s, d, out)] += g * m
    crop = tuple(slice(pb[i], pb[i] + x.shape[2 + i]) for i in range(r))
    return [np.ascontiguousarray(dxp[(slice(None),) * 2 + crop])]
