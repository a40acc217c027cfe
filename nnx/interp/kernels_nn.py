"""Neural-network kernels: Conv, ConvTranspose, Gemm, MatMul, pooling, Softmax
family, normalisations, LRN, Einsum.

Conv, Gemm and MatMul compute their matrix products with `blocked_matmul`
(blocked_matmul.py): one BLAS call per fixed-size block of the result, so that an
output element does not depend on the batch size, the groups or the output
channels/rows/columns around it (what `op-split` relies on; docs/topological-order.md,
"Operator splitting"). Conv is an im2col per image (a strided window view copied once
into a contiguous (C*K, O) matrix; 1x1 convolutions skip it) followed by one blocked
product per group; convolutions with one input channel per group (depthwise)
accumulate one multiply-add per kernel tap over the whole output. Pooling also
accumulates per kernel tap. Python loops run over images, groups and blocks of
channels, never over pixels.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from nnx.interp.blocked_matmul import batched_blocked_matmul, blocked_matmul
from nnx.interp.kernels import NUM_OUTPUTS_ATTR, KernelError, ints, kernel, norm_axis, opt


# ---- padding / output-size rules shared by Conv and pooling ----------------------------


def _conv_geometry(attrs, in_shape, kernel_shape, pool: bool):
    """(strides, dilations, pads_begin, pads_end, out_shape) for Conv-like ops."""
    r = len(in_shape)
    strides = ints(attrs.get("strides")) or [1] * r
    dil = ints(attrs.get("dilations")) or [1] * r
    auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    if isinstance(auto_pad, bytes):
        auto_pad = auto_pad.decode()
    dk = [(k - 1) * d + 1 for k, d in zip(kernel_shape, dil)]
    ceil_mode = int(attrs.get("ceil_mode", 0)) if pool else 0
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-i // s) for i, s in zip(in_shape, strides)]
        total = [max(0, (o - 1) * s + k - i) for o, s, k, i in zip(out, strides, dk, in_shape)]
        if auto_pad == "SAME_UPPER":
            pb = [t // 2 for t in total]
        else:
            pb = [t - t // 2 for t in total]
        pe = [t - b for t, b in zip(total, pb)]
    elif auto_pad == "VALID":
        pb = [0] * r
        pe = [0] * r
        out = [(i - k) // s + 1 for i, k, s in zip(in_shape, dk, strides)]
    elif auto_pad == "NOTSET":
        pads = ints(attrs.get("pads")) or [0] * (2 * r)
        pb, pe = pads[:r], pads[r:]
        out = []
        for i in range(r):
            span = in_shape[i] + pb[i] + pe[i] - dk[i]
            if ceil_mode:
                o = -(-span // strides[i]) + 1
                if (o - 1) * strides[i] >= in_shape[i] + pb[i]:
                    o -= 1
            else:
                o = span // strides[i] + 1
            out.append(o)
    else:
        raise KernelError(f"unsupported auto_pad '{auto_pad}'")
    return strides, dil, list(pb), list(pe), out


def _pad_spatial(x: np.ndarray, pb, pe, fill) -> np.ndarray:
    """Pad the spatial dims (2..) of x: begin pb, end pe (negative crops)."""
    if not any(pb) and not any(pe):
        return x
    r = len(pb)
    shape = list(x.shape[:2]) + [x.shape[2 + i] + pb[i] + pe[i] for i in range(r)]
    out = np.full(shape, fill, dtype=x.dtype)
    dst = [slice(None), slice(None)]
    src = [slice(None), slice(None)]
    for i in range(r):
        b, e, n = pb[i], pe[i], x.shape[2 + i]
        src.append(slice(max(0, -b), n - max(0, -e)))
        dst.append(slice(max(0, b), max(0, b) + n - max(0, -b) - max(0, -e)))
    out[tuple(dst)] = x[tuple(src)]
    return out


def _tap_slices(offsets, strides, dil, out):
    """Slices picking, for one kernel tap, the input element of every output position."""
    return tuple(
        slice(k * d, k * d + (o - 1) * s + 1, s) for k, d, s, o in zip(offsets, dil, strides, out)
    )


# ---- Conv ---------------------------------------------------------------------------------------


def _im2col(xp: np.ndarray, K, strides, dil, out) -> np.ndarray:
    """Windows of xp (N, C, *S) as a (C, *K, N, *O) view."""
    r = len(K)
    dk = [(k - 1) * d + 1 for k, d in zip(K, dil)]
    win = sliding_window_view(xp, dk, axis=tuple(range(2, 2 + r)))
    sl = [slice(None), slice(None)]
    sl += [slice(0, (o - 1) * s + 1, s) for o, s in zip(out, strides)]
    sl += [slice(None, None, d) for d in dil]
    win = win[tuple(sl)]  # (N, C, *O, *K)
    perm = [1] + list(range(2 + r, 2 + 2 * r)) + [0] + list(range(2, 2 + r))
    return win.transpose(perm)


def conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, attrs) -> np.ndarray:
    """Conv of x (N, C, *S) with w (M, C/group, *K). Every output element is computed
    independently of the batch size, of the output channels around it and of the
    groups around it: convolutions with one input channel per group (depthwise) sum
    their taps one multiply-add at a time, elementwise; the others run one
    `blocked_matmul` per image and group, (its output channels, C/group*K) x
    (C/group*K, output positions), in ROW_BLOCK-channel calls. So `op-split` may cut
    the batch, whole groups, or the output channels at multiples of ROW_BLOCK and get
    the same bits (docs/topological-order.md, "Operator splitting")."""
    if x.dtype == np.float16:  # accumulate in float32, round once
        b32 = None if b is None else b.astype(np.float32)
        return conv(x.astype(np.float32), w.astype(np.float32), b32, attrs).astype(np.float16)
    n, c = x.shape[:2]
    m = w.shape[0]
    r = x.ndim - 2
    K = ints(attrs.get("kernel_shape")) or list(w.shape[2:])
    g = int(attrs.get("group", 1))
    if c % g or m % g or w.shape[1] * g != c:
        raise KernelError(f"Conv: {c} input channels, group {g}, weight {list(w.shape)}")
    strides, dil, pb, pe, out = _conv_geometry(attrs, list(x.shape[2:]), K, pool=False)
    cg, mg = c // g, m // g
    dt = np.result_type(x.dtype, w.dtype)
    x = x.astype(dt, copy=False)
    w = w.astype(dt, copy=False)
    n_out = int(np.prod(out))
    if cg == 1:
        # one input channel per group (depthwise, channel multiplier mg): one
        # multiply-add per kernel tap over the whole output
        xp = _pad_spatial(x, pb, pe, 0)
        if mg > 1:
            xp = np.repeat(xp, mg, axis=1)
        wt = w.reshape(m, -1)
        y = np.zeros((n, m) + tuple(out), dt)
        tmp = np.empty_like(y)
        bshape = (1, m) + (1,) * r
        for t, offs in enumerate(itertools.product(*[range(k) for k in K])):
            tap = xp[(slice(None), slice(None)) + _tap_slices(offs, strides, dil, out)]
            np.multiply(tap, wt[:, t].reshape(bshape), out=tmp)
            y += tmp
    else:
        kk = int(np.prod(K))
        wm = w.reshape(g, mg, cg * kk)
        y = np.empty((n, m, n_out), dt)
        one_by_one = all(k == 1 for k in K)
        xp = _pad_spatial(x, pb, pe, 0)
        for i in range(n):
            if one_by_one:
                sel = tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, strides))
                cols = np.ascontiguousarray(xp[(i, slice(None)) + sel]).reshape(g, cg, n_out)
            else:
                win = _im2col(xp[i : i + 1], K, strides, dil, out)  # (C, *K, 1, *O)
                cols = np.ascontiguousarray(win).reshape(g, cg * kk, n_out)
            for gi in range(g):
                blocked_matmul(wm[gi], cols[gi], out=y[i, gi * mg : (gi + 1) * mg], col_block=None)
        y = y.reshape((n, m) + tuple(out))
    if b is not None:
        y = y + b.astype(dt).reshape((1, m) + (1,) * r)
    return y


@kernel("Conv")
def _conv(inputs, attrs):
    return [conv(inputs[0], inputs[1], opt(inputs, 2), attrs)]


@kernel("ConvTranspose")
def _conv_transpose(inputs, attrs):
    x, w, b = inputs[0], inputs[1], opt(inputs, 2)
    n, c = x.shape[:2]
    r = x.ndim - 2
    g = int(attrs.get("group", 1))
    mg = w.shape[1]
    m = mg * g
    cg = c // g
    K = ints(attrs.get("kernel_shape")) or list(w.shape[2:])
    strides = ints(attrs.get("strides")) or [1] * r
    dil = ints(attrs.get("dilations")) or [1] * r
    opad = ints(attrs.get("output_padding")) or [0] * r
    in_s = list(x.shape[2:])
    full = [(i - 1) * s + (k - 1) * d + 1 + op for i, s, k, d, op in zip(in_s, strides, K, dil, opad)]
    auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    out_shape = ints(attrs.get("output_shape"))
    if out_shape and len(out_shape) > r:
        out_shape = out_shape[-r:]
    if out_shape or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if not out_shape:
            out_shape = [i * s for i, s in zip(in_s, strides)]
        total = [f - o for f, o in zip(full, out_shape)]
        if auto_pad == "SAME_UPPER":
            pb = [t // 2 for t in total]
        else:
            pb = [t - t // 2 for t in total]
        pe = [t - b_ for t, b_ in zip(total, pb)]
    else:
        pads = ints(attrs.get("pads")) or [0] * (2 * r)
        if auto_pad == "VALID":
            pads = [0] * (2 * r)
        pb, pe = pads[:r], pads[r:]
    out = [f - b_ - e for f, b_, e in zip(full, pb, pe)]
    dt = np.result_type(x.dtype, w.dtype)
    # cols[g, mg*K, n*I] = W[g]^T @ x[g]
    xm = x.astype(dt, copy=False).reshape(n, g, cg, -1).transpose(1, 2, 0, 3).reshape(g, cg, -1)
    wm = w.astype(dt, copy=False).reshape(g, cg, mg * int(np.prod(K)))
    cols = np.matmul(wm.transpose(0, 2, 1), xm)  # (g, mg*K, n*I)
    cols = cols.reshape((g, mg) + tuple(K) + (n,) + tuple(in_s))
    lo = [max(0, -b_) for b_ in pb]
    buf = np.zeros((n, g, mg) + tuple(f + l_ + max(0, -e) for f, l_, e in zip(full, lo, pe)), dt)
    for offs in itertools.product(*[range(k) for k in K]):
        dst = tuple(
            slice(l_ + k * d, l_ + k * d + (i - 1) * s + 1, s)
            for l_, k, d, i, s in zip(lo, offs, dil, in_s, strides)
        )
        v = cols[(slice(None), slice(None)) + offs]  # (g, mg, n, *I)
        buf[(slice(None), slice(None), slice(None)) + dst] += np.moveaxis(v, 2, 0)
    crop = tuple(slice(l_ + b_, l_ + b_ + o) for l_, b_, o in zip(lo, pb, out))
    y = buf[(slice(None), slice(None), slice(None)) + crop].reshape((n, m) + tuple(out))
    if b is not None:
        y = y + b.astype(dt).reshape((1, m) + (1,) * r)
    return [np.ascontiguousarray(y)]


# ---- Gemm / MatMul / Einsum -------------------------------------------------------------------


@kernel("Gemm")
def _gemm(inputs, attrs):
    """alpha * A' @ B' + beta * C, the product by `blocked_matmul`: an element does not
    depend on the rows and columns around it when they are cut at the blocks."""
    a, b, c = inputs[0], inputs[1], opt(inputs, 2)
    if int(attrs.get("transA", 0)):
        a = a.T
    if int(attrs.get("transB", 0)):
        b = b.T
    alpha = attrs.get("alpha", 1.0)
    beta = attrs.get("beta", 1.0)
    y = blocked_matmul(a, b)
    if alpha != 1.0:
        y = y * np.asarray(alpha, y.dtype)
    if c is not None and beta != 0.0:
        y = y + (c if beta == 1.0 else c * np.asarray(beta, c.dtype))
    return [y.astype(a.dtype, copy=False)]


@kernel("MatMul")
def _matmul(inputs, attrs):
    """numpy.matmul, every 2-D product by `batched_blocked_matmul`: an element depends
    on neither the other matrices of the batch nor, when cut at the blocks, the rows
    and columns around it."""
    a, b = inputs[0], inputs[1]
    if a.dtype == np.float16:
        return [batched_blocked_matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)]
    return [batched_blocked_matmul(a, b)]


@kernel("Einsum")
def _einsum(inputs, attrs):
    eq = attrs["equation"].replace(" ", "")
    return [np.asarray(np.einsum(eq, *inputs, optimize=len(inputs) > 2))]


# ---- pooling -----------------------------------------------------------------------------------


def _pool_setup(x, attrs):
    K = ints(attrs["kernel_shape"])
    strides, dil, pb, pe, out = _conv_geometry(attrs, list(x.shape[2:]), K, pool=True)
    # padded extent actually read: (o-1)*s + dk, possibly past the explicit end pad
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, strides, K, dil)]
    ext = [nd - i - b for nd, i, b in zip(need, x.shape[2:], pb)]  # end padding incl. ceil
    return K, strides, dil, pb, pe, out, ext


@kernel("MaxPool")
def _max_pool(inputs, attrs):
    x = inputs[0]
    K, strides, dil, pb, pe, out, ext = _pool_setup(x, attrs)
    if np.issubdtype(x.dtype, np.floating):
        fill = -np.inf
    else:
        fill = np.iinfo(x.dtype).min
    xp = _pad_spatial(x, pb, ext, fill)
    y = None
    want_idx = int(attrs.get(NUM_OUTPUTS_ATTR, 1)) > 1
    arg = None
    for t, offs in enumerate(itertools.product(*[range(k) for k in K])):
        tap = xp[(slice(None), slice(None)) + _tap_slices(offs, strides, dil, out)]
        if y is None:
            y = tap.copy()
            if want_idx:
                arg = np.zeros(y.shape, np.int64)
        else:
            if want_idx:
                better = tap > y
                arg[better] = t
            np.maximum(y, tap, out=y)
    outs = [y]
    if want_idx:
        # flat index of the winning element in the unpadded input
        r = len(K)
        taps = np.array(list(itertools.product(*[range(k) for k in K])), np.int64)  # (T, r)
        spatial = list(x.shape[2:])
        flat = np.zeros(y.shape, np.int64)
        storage = int(attrs.get("storage_order", 0))
        coords = []
        for i in range(r):
            pos = np.arange(out[i], dtype=np.int64) * strides[i] - pb[i]
            pos = pos.reshape((1, 1) + tuple(out[i] if j == i else 1 for j in range(r)))
            coords.append(pos + taps[arg, i] * dil[i])
        if storage == 0:
            for i in range(r):
                flat = flat * spatial[i] + coords[i]
        else:
            for i in reversed(range(r)):
                flat = flat * spatial[i] + coords[i]
        nc = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[0], x.shape[1])
        flat += nc.reshape(nc.shape + (1,) * r) * int(np.prod(spatial))
        outs.append(flat)
    return outs




@kernel("AveragePool")
def _average_pool(inputs, attrs):
    x = inputs[0]
    K, strides, dil, pb, pe, out, ext = _pool_setup(x, attrs)
    include_pad = int(attrs.get("count_include_pad", 0))
    acc_dt = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    xp = _pad_spatial(x.astype(acc_dt, copy=False), pb, ext, 0)
    # counting mask over the padded spatial extent
    spatial = list(x.shape[2:])
    mask = np.zeros([pb_ + s + e for pb_, s, e in zip(pb, spatial, ext)], np.float64)
    if include_pad:
        inner = tuple(slice(0, pb_ + s + pe_) for pb_, s, pe_ in zip(pb, spatial, pe))
    else:
        inner = tuple(slice(pb_, pb_ + s) for pb_, s in zip(pb, spatial))
    mask[inner] = 1.0
    y = np.zeros(x.shape[:2] + tuple(out), acc_dt)
    cnt = np.zeros(tuple(out), np.float64)
    for offs in itertools.product(*[range(k) for k in K]):
        sl = _tap_slices(offs, strides, dil, out)
        y += xp[(slice(None), slice(None)) + sl]
        cnt += mask[sl]
    with np.errstate(all="ignore"):
        y = y / cnt.astype(acc_dt)
    return [y.astype(x.dtype, copy=False)]


@kernel("LpPool")
def _lp_pool(inputs, attrs):
    x = inputs[0]
    p = int(attrs.get("p", 2))
    K, strides, dil, pb, pe, out, ext = _pool_setup(x, attrs)
    xp = _pad_spatial(np.abs(x) ** p, pb, ext, 0)
    y = np.zeros(x.shape[:2] + tuple(out), x.dtype)
    for offs in itertools.product(*[range(k) for k in K]):
        y += xp[(slice(None), slice(None)) + _tap_slices(offs, strides, dil, out)]
    return [(y ** (1.0 / p)).astype(x.dtype)]


@kernel("GlobalAveragePool")
def _global_average_pool(inputs, attrs):
    x = inputs[0]
    axes = tuple(range(2, x.ndim))
    return [np.mean(x, axis=axes, keepdims=True, dtype=np.float64 if x.dtype != np.float32 else np.float32).astype(x.dtype)]


@kernel("GlobalMaxPool")
def _global_max_pool(inputs, attrs):
    x = inputs[0]
    return [np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True)]


@kernel("GlobalLpPool")
def _global_lp_pool(inputs, attrs):
    x = inputs[0]
    p = int(attrs.get("p", 2))
    axes = tuple(range(2, x.ndim))
    return [(np.sum(np.abs(x) ** p, axis=axes, keepdims=True) ** (1.0 / p)).astype(x.dtype)]


# ---- softmax family --------------------------------------------------------------------------


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = x - np.max(x, axis=axis, keepdims=True)
    np.exp(e, out=e)
    e /= np.sum(e, axis=axis, keepdims=True)
    return e


@kernel("Softmax")
def _softmax(inputs, attrs):
    x = inputs[0]
    axis = norm_axis(attrs.get("axis", -1), x.ndim)
    with np.errstate(all="ignore"):
        return [softmax(x, axis).astype(x.dtype, copy=False)]


@kernel("LogSoftmax")
def _log_softmax(inputs, attrs):
    x = inputs[0]
    axis = norm_axis(attrs.get("axis", -1), x.ndim)
    with np.errstate(all="ignore"):
        s = x - np.max(x, axis=axis, keepdims=True)
        y = s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))
    return [y.astype(x.dtype, copy=False)]


@kernel("Hardmax")
def _hardmax(inputs, attrs):
    x = inputs[0]
    axis = norm_axis(attrs.get("axis", -1), x.ndim)
    idx = np.argmax(x, axis=axis)
    y = np.zeros_like(x)
    np.put_along_axis(y, np.expand_dims(idx, axis), 1, axis=axis)
    return [y]


# ---- normalisation --------------------------------------------------------------------------


@kernel("LayerNormalization")
def _layer_norm(inputs, attrs):
    x, scale, bias = inputs[0], inputs[1], opt(inputs, 2)
    axis = norm_axis(attrs.get("axis", -1), x.ndim)
    eps = attrs.get("epsilon", 1e-5)
    axes = tuple(range(axis, x.ndim))
    stash = int(attrs.get("stash_type", 1))
    cdt = np.float32 if stash == 1 and x.dtype != np.float64 else x.dtype
    xc = x.astype(cdt, copy=False)
    mean = np.mean(xc, axis=axes, keepdims=True)
    d = xc - mean
    var = np.mean(np.square(d), axis=axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + np.asarray(eps, cdt))
    y = d * inv
    y *= scale.astype(cdt, copy=False)
    if bias is not None:
        y += bias.astype(cdt, copy=False)
    return [y.astype(x.dtype, copy=False), mean.astype(cdt), inv.astype(cdt)]


@kernel("RMSNormalization")
def _rms_norm(inputs, attrs):
    x, scale = inputs[0], inputs[1]
    axis = norm_axis(attrs.get("axis", -1), x.ndim)
    eps = attrs.get("epsilon", 1e-5)
    axes = tuple(range(axis, x.ndim))
    xc = x.astype(np.float32 if x.dtype != np.float64 else x.dtype)
    rms = np.sqrt(np.mean(np.square(xc), axis=axes, keepdims=True) + eps)
    return [(xc / rms * scale).astype(x.dtype)]


@kernel("BatchNormalization")
def _batch_norm(inputs, attrs):
    x, scale, b, mean, var = inputs[:5]
    eps = attrs.get("epsilon", 1e-5)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if int(attrs.get("training_mode", 0)):
        mom = attrs.get("momentum", 0.9)
        axes = (0,) + tuple(range(2, x.ndim))
        # statistics and normalisation in float64 (two-pass variance): the batch mean
        # and variance of a small batch are ill-conditioned in float32
        xd = x.astype(np.float64)
        bm = xd.mean(axis=axes)
        bv = xd.var(axis=axes)
        y = (xd - bm.reshape(shape)) / np.sqrt(bv.reshape(shape) + eps) * scale.reshape(shape) + b.reshape(shape)
        rm = mean * mom + bm * (1 - mom)
        rv = var * mom + bv * (1 - mom)
        return [y.astype(x.dtype), rm.astype(mean.dtype), rv.astype(var.dtype)]
    dt = x.dtype
    inv = (scale / np.sqrt(var.astype(np.float64) + eps)).astype(dt)
    shift = (b - mean * inv).astype(dt)
    y = x * inv.reshape(shape)
    y += shift.reshape(shape)
    return [y]


@kernel("InstanceNormalization")
def _instance_norm(inputs, attrs):
    x, scale, b = inputs[:3]
    eps = attrs.get("epsilon", 1e-5)
    axes = tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + np.asarray(eps, x.dtype)) * scale.reshape(shape) + b.reshape(shape)
    return [y.astype(x.dtype)]


@kernel("GroupNormalization")
def _group_norm(inputs, attrs):
    x, scale, b = inputs[:3]
    eps = attrs.get("epsilon", 1e-5)
    ng = int(attrs["num_groups"])
    n, c = x.shape[:2]
    xg = x.reshape(n, ng, -1).astype(np.float32 if x.dtype != np.float64 else x.dtype)
    mean = xg.mean(axis=2, keepdims=True)
    var = xg.var(axis=2, keepdims=True)
    y = ((xg - mean) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if scale.shape[0] == c:
        y = y * scale.reshape(shape) + b.reshape(shape)
    else:
        rep = c // ng
        y = y * np.repeat(scale, rep).reshape(shape) + np.repeat(b, rep).reshape(shape)
    return [y.astype(x.dtype)]


@kernel("LRN")
def _lrn(inputs, attrs):
    x = inputs[0]
    alpha = attrs.get("alpha", 1e-4)
    beta = attrs.get("beta", 0.75)
    bias = attrs.get("bias", 1.0)
    size = int(attrs["size"])
    c = x.shape[1]
    sq = np.square(x.astype(np.float64))
    lo = (size - 1) // 2
    hi = size - 1 - lo  # ceil((size-1)/2)
    csum = np.cumsum(np.pad(sq, [(0, 0), (1, 0)] + [(0, 0)] * (x.ndim - 2)), axis=1)
    idx = np.arange(c)
    a = np.clip(idx - lo, 0, c)
    bnd = np.clip(idx + hi + 1, 0, c)
    s = np.take(csum, bnd, axis=1) - np.take(csum, a, axis=1)
    y = x / (bias + alpha / size * s) ** beta
    return [y.astype(x.dtype)]


@kernel("LpNormalization")
def _lp_norm(inputs, attrs):
    x = inputs[0]
    axis = norm_axis(attrs.get("axis", -1), x.ndim)
    p = int(attrs.get("p", 2))
    if p == 1:
        nrm = np.sum(np.abs(x), axis=axis, keepdims=True)
    else:
        nrm = np.sqrt(np.sum(np.square(x), axis=axis, keepdims=True))
    with np.errstate(all="ignore"):
        return [np.where(nrm == 0, 0, x / nrm).astype(x.dtype)]


@kernel("MeanVarianceNormalization")
def _mvn(inputs, attrs):
    x = inputs[0]
    axes = tuple(norm_axis(a, x.ndim) for a in (ints(attrs.get("axes")) or [0, 2, 3]))
    mean = x.mean(axis=axes, keepdims=True)
    std = np.sqrt(np.mean(np.square(x - mean), axis=axes, keepdims=True))
    return [((x - mean) / (std + 1e-9)).astype(x.dtype)]


@kernel("DepthToSpace")
def _depth_to_space(inputs, attrs):
    x = inputs[0]
    bs = int(attrs["blocksize"])
    n, c, h, w = x.shape
    if attrs.get("mode", "DCR") == "DCR":
        t = x.reshape(n, bs, bs, c // (bs * bs), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (bs * bs), bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
    return [t.reshape(n, c // (bs * bs), h * bs, w * bs)]


@kernel("SpaceToDepth")
def _space_to_depth(inputs, attrs):
    x = inputs[0]
    bs = int(attrs["blocksize"])
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // bs, bs, w // bs, bs)
    if attrs.get("mode", "DCR") == "CRD":
        t = t.transpose(0, 1, 3, 5, 2, 4)
    else:
        t = t.transpose(0, 3, 5, 1, 2, 4)
    return [t.reshape(n, c * bs * bs, h // bs, w // bs)]

