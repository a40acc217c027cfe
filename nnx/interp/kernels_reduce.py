"""Reductions: Reduce* (axes as attribute or input), ArgMax/ArgMin, TopK, CumSum."""

from __future__ import annotations

import numpy as np

from nnx.interp.kernels import ints, kernel, norm_axis, opt, scalar


def _reduce_axes(x, inputs, attrs):
    """Normalised axes tuple, or None for "no-op" (empty axes + noop_with_empty_axes)."""
    v = opt(inputs, 1)
    if v is not None:
        axes = ints(v)
    elif "axes" in attrs:
        axes = ints(attrs["axes"])
    else:
        axes = []
    if not axes:
        if int(attrs.get("noop_with_empty_axes", 0)):
            return None
        return tuple(range(x.ndim))
    return tuple(sorted({norm_axis(a, x.ndim) for a in axes}))


def _reducer(fn):
    def k(inputs, attrs):
        x = inputs[0]
        axes = _reduce_axes(x, inputs, attrs)
        if axes is None:
            return [x.copy()]
        keep = bool(int(attrs.get("keepdims", 1)))
        with np.errstate(all="ignore"):
            r = fn(x, axes, keep)
        return [np.asarray(r).astype(x.dtype, copy=False)]

    return k


def _extreme(x, axes, keep, fn, big):
    if x.size == 0 or any(x.shape[a] == 0 for a in axes):
        if np.issubdtype(x.dtype, np.floating):
            init = -np.inf if big else np.inf
        elif x.dtype == np.bool_:
            init = False if big else True
        else:
            info = np.iinfo(x.dtype)
            init = info.min if big else info.max
        return fn(x, axis=axes, keepdims=keep, initial=init)
    return fn(x, axis=axes, keepdims=keep)


kernel("ReduceSum")(_reducer(lambda x, a, k: np.sum(x, axis=a, keepdims=k)))
kernel("ReduceMean")(_reducer(lambda x, a, k: np.mean(x, axis=a, keepdims=k)))
kernel("ReduceMax")(_reducer(lambda x, a, k: _extreme(x, a, k, np.max, True)))
kernel("ReduceMin")(_reducer(lambda x, a, k: _extreme(x, a, k, np.min, False)))
kernel("ReduceProd")(_reducer(lambda x, a, k: np.prod(x, axis=a, keepdims=k)))
kernel("ReduceSumSquare")(_reducer(lambda x, a, k: np.sum(np.square(x), axis=a, keepdims=k)))
kernel("ReduceL1")(_reducer(lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k)))
kernel("ReduceL2")(
    _reducer(lambda x, a, k: np.sqrt(np.sum(np.square(x.astype(np.float64)), axis=a, keepdims=k)))
)
kernel("ReduceLogSum")(_reducer(lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k))))


def _logsumexp(x, a, k):
    x = x.astype(np.float64)
    if x.size == 0 or any(x.shape[i] == 0 for i in a):
        return np.log(np.sum(np.exp(x), axis=a, keepdims=k))
    m = np.max(x, axis=a, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(x - m), axis=a, keepdims=True)) + m
    return r if k else np.squeeze(r, axis=a)


kernel("ReduceLogSumExp")(_reducer(_logsumexp))


def _arg(fn, flipfn):
    def k(inputs, attrs):
        x = inputs[0]
        axis = norm_axis(attrs.get("axis", 0), x.ndim)
        keep = int(attrs.get("keepdims", 1))
        if int(attrs.get("select_last_index", 0)):
            xf = np.flip(x, axis=axis)
            r = x.shape[axis] - 1 - fn(xf, axis=axis)
        else:
            r = fn(x, axis=axis)
        r = r.astype(np.int64)
        if keep:
            r = np.expand_dims(r, axis)
        return [r]

    return k


kernel("ArgMax")(_arg(np.argmax, None))
kernel("ArgMin")(_arg(np.argmin, None))


@kernel("TopK")
def _topk(inputs, attrs):
    x = inputs[0]
    k = int(scalar(opt(inputs, 1))) if opt(inputs, 1) is not None else int(attrs["k"])
    axis = norm_axis(attrs.get("axis", -1), x.ndim)
    largest = int(attrs.get("largest", 1))
    if largest:
        # stable descending: sort by negated key; ties keep the lower index
        if np.issubdtype(x.dtype, np.unsignedinteger):
            key = -(x.astype(np.int64))
        elif x.dtype == np.bool_:
            key = ~x
        else:
            key = -x
    else:
        key = x
    idx = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(idx, np.arange(k), axis=axis)
    vals = np.take_along_axis(x, idx, axis=axis)
    return [vals, idx.astype(np.int64)]


@kernel("CumSum")
def _cumsum(inputs, attrs):
    x = inputs[0]
    axis = norm_axis(int(scalar(inputs[1])), x.ndim)
    excl = int(attrs.get("exclusive", 0))
    rev = int(attrs.get("reverse", 0))
    y = np.flip(x, axis) if rev else x
    c = np.cumsum(y, axis=axis, dtype=x.dtype)
    if excl:
        c = np.concatenate(
            [np.zeros_like(np.take(c, [0], axis=axis)), np.take(c, np.arange(c.shape[axis] - 1), axis=axis)],
            axis=axis,
        )
    if rev:
        c = np.flip(c, axis)
    return [np.ascontiguousarray(c)]
