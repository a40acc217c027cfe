"""Shape and index kernels: Reshape, Flatten, Transpose, Concat, Split, Slice,
Gather*, Scatter*, Squeeze/Unsqueeze, Expand, Tile, Pad, Resize, Shape, Size,
ConstantOfShape, Range, NonZero, Trilu, OneHot, EyeLike."""

from __future__ import annotations

import numpy as np

from nnx.interp.kernels import (
    NUM_OUTPUTS_ATTR,
    KernelError,
    ints,
    kernel,
    norm_axis,
    opt,
    scalar,
)


@kernel("Reshape")
def _reshape(inputs, attrs):
    x = inputs[0]
    shape = ints(opt(inputs, 1)) if opt(inputs, 1) is not None else ints(attrs.get("shape"))
    allowzero = int(attrs.get("allowzero", 0))
    new = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            new.append(x.shape[i])
        else:
            new.append(d)
    try:
        return [x.reshape(new)]
    except ValueError as e:
        raise KernelError(f"Reshape: {e}") from None


@kernel("Flatten")
def _flatten(inputs, attrs):
    x = inputs[0]
    axis = int(attrs.get("axis", 1))
    if axis < 0:
        axis += x.ndim
    a = int(np.prod(x.shape[:axis], dtype=np.int64))
    return [x.reshape(a, -1) if x.size else x.reshape(a, int(np.prod(x.shape[axis:])))]


@kernel("Transpose")
def _transpose(inputs, attrs):
    x = inputs[0]
    perm = ints(attrs.get("perm")) or list(reversed(range(x.ndim)))
    return [np.ascontiguousarray(np.transpose(x, perm))]


@kernel("Concat")
def _concat(inputs, attrs):
    xs = [x for x in inputs if x is not None]
    axis = norm_axis(attrs["axis"], xs[0].ndim)
    return [np.concatenate(xs, axis=axis)]


@kernel("Split")
def _split(inputs, attrs):
    x = inputs[0]
    axis = norm_axis(attrs.get("axis", 0), x.ndim)
    sp = opt(inputs, 1)
    sizes = ints(sp) if sp is not None and sp.size else ints(attrs.get("split"))
    dim = x.shape[axis]
    if not sizes:
        n = attrs.get("num_outputs")
        if n is None:
            n = attrs.get(NUM_OUTPUTS_ATTR)
        if n is None:
            raise KernelError("Split: number of outputs unknown")
        n = int(n)
        chunk = -(-dim // n)
        sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
        if sizes[-1] < 0:
            raise KernelError(f"Split: cannot split {dim} into {n}")
    if sum(sizes) != dim:
        raise KernelError(f"Split: sizes {sizes} do not add up to {dim}")
    bounds = np.cumsum(sizes)[:-1]
    return [np.ascontiguousarray(p) for p in np.split(x, bounds, axis=axis)]


def _slice_bounds(start: int, end: int, step: int, dim: int):
    if step == 0:
        raise KernelError("Slice: step 0")
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
        return slice(start, end, step)
    start = min(max(start, 0), dim - 1)
    end = min(max(end, -1), dim - 1)
    return slice(start, None if end < 0 else end, step)


@kernel("Slice")
def _slice(inputs, attrs):
    x = inputs[0]
    if len(inputs) > 1 and inputs[1] is not None:
        starts = ints(inputs[1])
        ends = ints(inputs[2])
        axes = ints(opt(inputs, 3)) if opt(inputs, 3) is not None else list(range(len(starts)))
        steps = ints(opt(inputs, 4)) if opt(inputs, 4) is not None else [1] * len(starts)
    else:
        starts = ints(attrs.get("starts"))
        ends = ints(attrs.get("ends"))
        axes = ints(attrs.get("axes")) or list(range(len(starts)))
        steps = [1] * len(starts)
    sl = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = norm_axis(a, x.ndim)
        sl[a] = _slice_bounds(s, e, st, x.shape[a])
    return [np.ascontiguousarray(x[tuple(sl)])]


def _fix_index(idx: np.ndarray, dim: int) -> np.ndarray:
    idx = idx.astype(np.int64, copy=False)
    if idx.size and idx.min() < 0:
        idx = np.where(idx < 0, idx + dim, idx)
    if idx.size and (idx.min() < 0 or idx.max() >= dim):
        raise KernelError(f"index out of range for dimension of size {dim}")
    return idx


@kernel("Gather")
def _gather(inputs, attrs):
    x, idx = inputs[0], inputs[1]
    axis = norm_axis(attrs.get("axis", 0), x.ndim)
    return [np.take(x, _fix_index(idx, x.shape[axis]), axis=axis)]


@kernel("GatherElements")
def _gather_elements(inputs, attrs):
    x, idx = inputs[0], inputs[1]
    axis = norm_axis(attrs.get("axis", 0), x.ndim)
    return [np.take_along_axis(x, _fix_index(idx, x.shape[axis]), axis=axis)]


@kernel("GatherND")
def _gather_nd(inputs, attrs):
    x, idx = inputs[0], inputs[1]
    b = int(attrs.get("batch_dims", 0))
    idx = idx.astype(np.int64)
    k = idx.shape[-1]
    bshape = x.shape[:b]
    nb = int(np.prod(bshape, dtype=np.int64))
    xb = x.reshape((nb,) + x.shape[b:])
    ib = idx.reshape((nb, -1, k))
    dims = np.array(x.shape[b : b + k], np.int64)
    ib = np.where(ib < 0, ib + dims, ib)
    batch = np.arange(nb).reshape(nb, 1)
    res = xb[(batch,) + tuple(ib[..., j] for j in range(k))]  # (nb, m, *rest)
    out_shape = idx.shape[:-1] + x.shape[b + k :]
    return [np.ascontiguousarray(res).reshape(out_shape)]


_REDUCE_AT = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


@kernel("ScatterND")
def _scatter_nd(inputs, attrs):
    x, idx, upd = inputs[0], inputs[1].astype(np.int64), inputs[2]
    out = x.copy()
    k = idx.shape[-1]
    flat_idx = idx.reshape(-1, k)
    dims = np.array(x.shape[:k], np.int64)
    flat_idx = np.where(flat_idx < 0, flat_idx + dims, flat_idx)
    upd = upd.reshape((flat_idx.shape[0],) + x.shape[k:])
    key = tuple(flat_idx[:, j] for j in range(k))
    red = attrs.get("reduction", "none")
    if red == "none":
        out[key] = upd
    else:
        _REDUCE_AT[red].at(out, key, upd)
    return [out]


@kernel("ScatterElements", "Scatter")
def _scatter_elements(inputs, attrs):
    x, idx, upd = inputs[0], inputs[1], inputs[2]
    axis = norm_axis(attrs.get("axis", 0), x.ndim)
    idx = _fix_index(idx, x.shape[axis])
    out = x.copy()
    grids = list(np.indices(idx.shape, sparse=True))
    grids[axis] = idx
    key = tuple(np.broadcast_arrays(*grids))
    red = attrs.get("reduction", "none")
    if red == "none":
        out[key] = upd
    else:
        _REDUCE_AT[red].at(out, key, upd)
    return [out]


def _axes(inputs, attrs, i: int) -> list[int] | None:
    v = opt(inputs, i)
    if v is not None:
        return ints(v)
    if "axes" in attrs:
        return ints(attrs["axes"])
    return None


@kernel("Squeeze")
def _squeeze(inputs, attrs):
    x = inputs[0]
    axes = _axes(inputs, attrs, 1)
    if axes is None:
        return [x.reshape([d for d in x.shape if d != 1])]
    axes = [norm_axis(a, x.ndim) for a in axes]
    return [x.reshape([d for i, d in enumerate(x.shape) if i not in axes])]


@kernel("Unsqueeze")
def _unsqueeze(inputs, attrs):
    x = inputs[0]
    axes = _axes(inputs, attrs, 1) or []
    r = x.ndim + len(axes)
    axes = sorted(norm_axis(a, r) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return [x.reshape(shape)]


@kernel("Expand")
def _expand(inputs, attrs):
    x = inputs[0]
    shape = tuple(ints(inputs[1]))
    try:
        out = np.broadcast_shapes(x.shape, shape)
    except ValueError:
        raise KernelError(f"Expand: {list(x.shape)} cannot expand to {list(shape)}") from None
    return [np.array(np.broadcast_to(x, out))]


@kernel("Tile")
def _tile(inputs, attrs):
    return [np.tile(inputs[0], ints(inputs[1]))]


@kernel("Shape")
def _shape(inputs, attrs):
    x = inputs[0]
    shape = np.array(x.shape, np.int64)
    r = x.ndim
    start = int(attrs.get("start", 0))
    end = attrs.get("end")
    end = r if end is None else int(end)
    if start < 0:
        start += r
    if end < 0:
        end += r
    start = min(max(start, 0), r)
    end = min(max(end, 0), r)
    return [shape[start:end]]


@kernel("Size")
def _size(inputs, attrs):
    return [np.array(inputs[0].size, np.int64)]


@kernel("ConstantOfShape")
def _constant_of_shape(inputs, attrs):
    shape = ints(inputs[0])
    v = attrs.get("value")
    if v is None:
        v = np.zeros(1, np.float32)
    v = np.asarray(v)
    return [np.full(shape, v.reshape(-1)[0], dtype=v.dtype)]


@kernel("Constant")
def _constant(inputs, attrs):
    for k in ("value", "value_float", "value_int", "value_floats", "value_ints"):
        if k in attrs:
            v = attrs[k]
            if k == "value_float" or k == "value_floats":
                return [np.asarray(v, np.float32)]
            if k == "value_int" or k == "value_ints":
                return [np.asarray(v, np.int64)]
            return [np.asarray(v)]
    raise KernelError("Constant: no value")


@kernel("Range")
def _range(inputs, attrs):
    start, limit, delta = inputs[0], inputs[1], inputs[2]
    dt = start.dtype
    s, l_, d = scalar(start), scalar(limit), scalar(delta)
    n = max(int(np.ceil((l_ - s) / d)), 0)
    return [(s + np.arange(n, dtype=np.float64 if np.issubdtype(dt, np.floating) else np.int64) * d).astype(dt)]


@kernel("NonZero")
def _nonzero(inputs, attrs):
    x = inputs[0]
    if x.ndim == 0:
        return [np.zeros((0, int(bool(x))), np.int64)]
    return [np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)]


@kernel("Trilu")
def _trilu(inputs, attrs):
    x = inputs[0]
    k = int(scalar(opt(inputs, 1), 0))
    if int(attrs.get("upper", 1)):
        return [np.triu(x, k)]
    return [np.tril(x, k)]


@kernel("OneHot")
def _one_hot(inputs, attrs):
    idx, depth, values = inputs[0], inputs[1], inputs[2]
    depth = int(scalar(depth))
    axis = int(attrs.get("axis", -1))
    r = idx.ndim + 1
    if axis < 0:
        axis += r
    ii = idx.astype(np.int64)
    ii = np.where(ii < 0, ii + depth, ii)
    shape = [1] * r
    shape[axis] = depth
    rng = np.arange(depth).reshape(shape)
    hot = np.expand_dims(ii, axis) == rng
    off, on = values.reshape(-1)[0], values.reshape(-1)[1]
    return [np.where(hot, on, off).astype(values.dtype)]


@kernel("EyeLike")
def _eye_like(inputs, attrs):
    x = inputs[0]
    from nnx.interp.kernels_elementwise import onnx_dtype

    dt = onnx_dtype(attrs["dtype"]) if "dtype" in attrs else x.dtype
    return [np.eye(x.shape[0], x.shape[1], k=int(attrs.get("k", 0)), dtype=dt)]


@kernel("Compress")
def _compress(inputs, attrs):
    x, cond = inputs[0], inputs[1].astype(bool)
    if "axis" in attrs:
        axis = norm_axis(attrs["axis"], x.ndim)
        return [np.compress(cond, x, axis=axis)]
    return [np.compress(cond, x.reshape(-1))]


# ---- Pad --------------------------------------------------------------------------------------


@kernel("Pad")
def _pad(inputs, attrs):
    x = inputs[0]
    r = x.ndim
    mode = attrs.get("mode", "constant")
    if opt(inputs, 1) is not None:
        pads = ints(inputs[1])
        cv = opt(inputs, 2)
        value = scalar(cv, 0) if cv is not None else 0
        axes = ints(opt(inputs, 3)) if opt(inputs, 3) is not None else list(range(r))
    else:
        pads = ints(attrs.get("pads"))
        value = attrs.get("value", 0.0)
        axes = list(range(r))
    axes = [norm_axis(a, r) for a in axes]
    na = len(axes)
    pb = [0] * r
    pe = [0] * r
    for i, a in enumerate(axes):
        pb[a] = pads[i]
        pe[a] = pads[na + i]
    # negative pads crop first
    sl = tuple(slice(max(0, -b), x.shape[i] - max(0, -e)) for i, (b, e) in enumerate(zip(pb, pe)))
    x = x[sl]
    width = [(max(0, b), max(0, e)) for b, e in zip(pb, pe)]
    if mode == "constant":
        return [np.pad(x, width, mode="constant", constant_values=np.asarray(value).astype(x.dtype))]
    if mode == "reflect":
        return [np.pad(x, width, mode="reflect")]
    if mode == "edge":
        return [np.pad(x, width, mode="edge")]
    if mode == "wrap":
        return [np.pad(x, width, mode="wrap")]
    raise KernelError(f"Pad: unsupported mode '{mode}'")


# ---- Resize -----------------------------------------------------------------------------------


def _cubic_w(d: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(d)
    d2, d3 = d * d, d * d * d
    w1 = (a + 2) * d3 - (a + 3) * d2 + 1
    w2 = a * d3 - 5 * a * d2 + 8 * a * d - 4 * a
    return np.where(d <= 1, w1, np.where(d < 2, w2, 0.0))


def _resize_axis(data, axis, scale, out_len, attrs, roi_pair):
    in_len = data.shape[axis]
    mode = attrs.get("mode", "nearest")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    antialias = int(attrs.get("antialias", 0))
    out_w = scale * in_len
    y = np.arange(out_len, dtype=np.float64)
    extrap = None
    if ctm == "align_corners":
        x = np.zeros(out_len) if out_w == 1 else y * (in_len - 1) / (out_w - 1)
    elif ctm == "asymmetric":
        x = y / scale
    elif ctm == "tf_crop_and_resize":
        r0, r1 = roi_pair
        if out_w == 1:
            x = np.full(out_len, (r1 - r0) * (in_len - 1) / 2)
        else:
            x = y * (r1 - r0) * (in_len - 1) / (out_w - 1)
        x = x + r0 * (in_len - 1)
        extrap = (x < 0) | (x > in_len - 1)
    elif ctm == "pytorch_half_pixel":
        x = np.full(out_len, -0.5) if out_w == 1 else (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel_symmetric":
        adj = out_len / out_w
        center = in_len / 2
        x = center * (1 - adj) + (y + 0.5) / scale - 0.5
    else:
        raise KernelError(f"Resize: unsupported coordinate_transformation_mode '{ctm}'")
    xi = np.floor(x)
    ratio = np.where(x == xi, 1.0, x - xi)
    if mode == "nearest":
        nm = attrs.get("nearest_mode", "round_prefer_floor")
        integer = x == xi
        if nm == "round_prefer_floor":
            second = ratio > 0.5
        elif nm == "round_prefer_ceil":
            second = ratio >= 0.5
        elif nm == "floor":
            second = np.zeros(out_len, bool)
        elif nm == "ceil":
            second = np.ones(out_len, bool)
        else:
            raise KernelError(f"Resize: unsupported nearest_mode '{nm}'")
        second = second | integer
        # neighbours are (floor, floor+1) for non-integers and (x-1, x) for integers
        first = np.where(integer, xi - 1, xi)
        idx = (first + second).astype(np.int64)
        idx = np.clip(idx, 0, in_len - 1)
        res = np.take(data, idx, axis=axis)
        if extrap is not None and extrap.any():
            shp = [1] * data.ndim
            shp[axis] = out_len
            res = np.where(extrap.reshape(shp), attrs.get("extrapolation_value", 0.0), res)
        return res
    if mode == "linear":
        if antialias and scale < 1:
            s = scale
            start = int(np.floor(-1 / s) + 1)
            n = 2 - 2 * start
            args = (np.arange(start, start + n)[None, :] - ratio[:, None]) * s
            coeffs = np.clip(1 - np.abs(args), 0, 1)
            coeffs = coeffs / coeffs.sum(axis=1, keepdims=True)
        else:
            coeffs = np.stack([1 - ratio, ratio], axis=1)
    elif mode == "cubic":
        a = attrs.get("cubic_coeff_a", -0.75)
        if antialias and scale < 1:
            s = scale
            i_start = int(np.floor(-2 / s) + 1)
            i_end = 2 - i_start
            args = s * (np.arange(i_start, i_end)[None, :] - ratio[:, None])
            coeffs = _cubic_w(args, a)
            coeffs = coeffs / coeffs.sum(axis=1, keepdims=True)
        else:
            r_ = ratio[:, None]
            coeffs = _cubic_w(np.concatenate([r_ + 1, r_, 1 - r_, 2 - r_], axis=1), a)
    else:
        raise KernelError(f"Resize: unsupported mode '{mode}'")
    n = coeffs.shape[1]
    pw = int(np.ceil(n / 2))
    xp = x + pw
    p = np.floor(xp).astype(np.int64)
    frac = xp - p
    if n % 2 == 0:
        off = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        base = -((n - 1) // 2)
        off = np.where(frac <= 0.5, base, base + 1)
    start = p + off
    nb = start[:, None] + np.arange(n)[None, :] - pw
    if int(attrs.get("exclude_outside", 0)):
        outside = (nb < 0) | (nb >= in_len)
        coeffs = np.where(outside, 0.0, coeffs)
        ssum = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(ssum == 0, 1.0, ssum)
    nb = np.clip(nb, 0, in_len - 1)
    # dense (out_len, in_len) interpolation matrix, applied along `axis`
    mat = np.zeros((out_len, in_len), np.float64)
    np.add.at(mat, (np.repeat(np.arange(out_len), n), nb.reshape(-1)), coeffs.reshape(-1))
    moved = np.moveaxis(data, axis, -1)
    res = np.moveaxis(moved @ mat.T, -1, axis)
    if extrap is not None and extrap.any():
        shp = [1] * data.ndim
        shp[axis] = out_len
        res = np.where(extrap.reshape(shp), attrs.get("extrapolation_value", 0.0), res)
    return res


@kernel("Upsample")
def _upsample(inputs, attrs):
    """Upsample (opset 7-9): asymmetric coordinates, nearest rounds down (scales >= 1),
    as onnxruntime; the Resize defaults (half_pixel) do not apply."""
    a = dict(attrs)
    a.setdefault("coordinate_transformation_mode", "asymmetric")
    a.setdefault("nearest_mode", "floor")
    return _resize(inputs, a)


@kernel("Resize")
def _resize(inputs, attrs):
    x = inputs[0]
    r = x.ndim
    roi = opt(inputs, 1)
    scales = opt(inputs, 2)
    sizes = opt(inputs, 3)
    if len(inputs) == 2 and scales is None:  # Resize-10 / Upsample: (X, scales)
        scales, roi = roi, None
    if scales is not None and scales.size == 0:
        scales = None
    if sizes is not None and sizes.size == 0:
        sizes = None
    if scales is None and "scales" in attrs:
        scales = np.asarray(attrs["scales"], np.float32)
    axes = ints(attrs.get("axes")) or list(range(r))
    axes = [norm_axis(a, r) for a in axes]
    if roi is not None and roi.size == 0:
        roi = None
    roi_full = [0.0] * r + [1.0] * r
    if roi is not None:
        rv = roi.astype(np.float64).reshape(-1)
        na = len(axes)
        for i, a in enumerate(axes):
            roi_full[a] = rv[i]
            roi_full[r + a] = rv[na + i]
    scale_f = [1.0] * r
    out_size = list(x.shape)
    if sizes is not None:
        sz = ints(sizes)
        for i, a in enumerate(axes):
            out_size[a] = sz[i]
            scale_f[a] = sz[i] / x.shape[a]
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            sel = [scale_f[a] for a in axes]
            s = min(sel) if policy == "not_larger" else max(sel)
            for a in axes:
                scale_f[a] = s
                out_size[a] = int(s * x.shape[a] + 0.5)
    elif scales is not None:
        sc = [float(v) for v in scales.reshape(-1)]
        for i, a in enumerate(axes):
            scale_f[a] = sc[i]
            out_size[a] = int(x.shape[a] * sc[i])  # floor, as ONNX
    else:
        raise KernelError("Resize: neither scales nor sizes")
    mode = attrs.get("mode", "nearest")
    res = x if mode == "nearest" else x.astype(np.float64)
    for a in axes:
        if scale_f[a] == 1.0 and out_size[a] == x.shape[a] and roi_full[a] == 0.0 and roi_full[r + a] == 1.0:
            continue
        res = _resize_axis(res, a, scale_f[a], out_size[a], attrs, (roi_full[a], roi_full[r + a]))
    if res.dtype != x.dtype:
        if np.issubdtype(x.dtype, np.integer):
            info = np.iinfo(x.dtype)
            res = np.clip(np.round(res), info.min, info.max)
        res = res.astype(x.dtype)
    return [np.ascontiguousarray(res)]
