"""Shape rules of ONNX operators, shared by the graph-dialect verifier and others.

Pure functions over tuples of ints. They raise `ShapeError` (a `VerifyException`
and a `ValueError`) with a message that says what is wrong, with numbers; the graph
verifier prefixes the op name. The importer and interpreter may use them too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.utils.exceptions import VerifyException

Shape = tuple[int, ...]


class ShapeError(VerifyException, ValueError):
    """Operand shapes or attributes that the operator does not accept."""


def fmt(shape: Sequence[int]) -> str:
    """`[1, 3, 224, 224]`-style rendering used in messages."""
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


# --------------------------------------------------------------------------------------
# Axes
# --------------------------------------------------------------------------------------


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """ONNX axis in [-rank, rank-1] -> [0, rank-1]."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_axes(axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    """A list of ONNX axes -> non-negative, checked for range and duplicates."""
    out = [normalize_axis(int(a), rank, what) for a in axes]
    if len(set(out)) != len(out):
        raise ShapeError(f"{what} {list(axes)} contain a duplicate")
    return out


# --------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------


def broadcast_shapes(*shapes: Sequence[int]) -> Shape:
    """ONNX (numpy) multidirectional broadcasting."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s):
            j = rank - len(s) + i
            if d == out[j] or d == 1:
                continue
            if out[j] == 1:
                out[j] = int(d)
            else:
                raise ShapeError(
                    "shapes " + ", ".join(fmt(s) for s in shapes) + " do not broadcast"
                )
    return tuple(out)


def unidirectional_broadcast(shape: Sequence[int], target: Sequence[int], what: str) -> None:
    """Check that `shape` broadcasts to `target` (PRelu's slope, Gemm's C)."""
    if len(shape) > len(target) or any(
        d not in (1, t) for d, t in zip(reversed(shape), reversed(target))
    ):
        raise ShapeError(f"{what} shape {fmt(shape)} does not broadcast to {fmt(target)}")


# --------------------------------------------------------------------------------------
# Convolution and pooling
# --------------------------------------------------------------------------------------


def _spatial_attr(
    values: Sequence[int] | None, n: int, default: int, what: str
) -> list[int]:
    if values is None:
        return [default] * n
    vals = [int(v) for v in values]
    if len(vals) != n:
        raise ShapeError(f"{what} has {len(vals)} values, expected {n}")
    return vals


def window_output_shape(
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
) -> Shape:
    """Output spatial size of Conv / MaxPool / AveragePool (ONNX reference rules)."""
    n = len(spatial)
    kernel = _spatial_attr(kernel, n, 1, "kernel_shape")
    strides_ = _spatial_attr(strides, n, 1, "strides")
    dil = _spatial_attr(dilations, n, 1, "dilations")
    pads_ = _spatial_attr(pads, 2 * n, 0, "pads")
    if any(s <= 0 for s in strides_):
        raise ShapeError(f"strides {strides_} must be positive")
    if any(d <= 0 for d in dil):
        raise ShapeError(f"dilations {dil} must be positive")
    if any(p < 0 for p in pads_):
        raise ShapeError(f"pads {pads_} must be non-negative")
    out = []
    for i in range(n):
        ek = (kernel[i] - 1) * dil[i] + 1
        size = spatial[i]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-size // strides_[i])
        elif auto_pad == "VALID":
            if size < ek:
                raise ShapeError(
                    f"kernel extent {ek} exceeds input size {size} in spatial dim {i}"
                )
            o = (size - ek) // strides_[i] + 1
        elif auto_pad in ("NOTSET", ""):
            padded = size + pads_[i] + pads_[i + n]
            if padded < ek:
                raise ShapeError(
                    f"kernel extent {ek} exceeds padded input size {padded} in "
                    f"spatial dim {i}"
                )
            if ceil_mode:
                o = -(-(padded - ek) // strides_[i]) + 1
                if (o - 1) * strides_[i] >= size + pads_[i]:
                    o -= 1
            else:
                o = (padded - ek) // strides_[i] + 1
        else:
            raise ShapeError(f"auto_pad '{auto_pad}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID")
        out.append(int(o))
    return tuple(out)


def conv_transpose_output_shape(
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    output_padding: Sequence[int] | None = None,
    output_shape: Sequence[int] | None = None,
    auto_pad: str = "NOTSET",
) -> Shape:
    """Output spatial size of ConvTranspose."""
    n = len(spatial)
    kernel = _spatial_attr(kernel, n, 1, "kernel_shape")
    strides_ = _spatial_attr(strides, n, 1, "strides")
    dil = _spatial_attr(dilations, n, 1, "dilations")
    opad = _spatial_attr(output_padding, n, 0, "output_padding")
    if output_shape is not None:
        os_ = [int(v) for v in output_shape]
        if len(os_) == n + 2:
            os_ = os_[2:]
        if len(os_) != n:
            raise ShapeError(f"output_shape has {len(os_)} values, expected {n}")
        return tuple(os_)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return tuple(int(spatial[i] * strides_[i]) for i in range(n))
    pads_ = _spatial_attr(pads, 2 * n, 0, "pads")
    if auto_pad == "VALID":
        pads_ = [0] * (2 * n)
    out = []
    for i in range(n):
        o = (
            strides_[i] * (spatial[i] - 1)
            + opad[i]
            + (kernel[i] - 1) * dil[i]
            + 1
            - pads_[i]
            - pads_[i + n]
        )
        if o <= 0:
            raise ShapeError(f"output size {o} in spatial dim {i} is not positive")
        out.append(int(o))
    return tuple(out)


# --------------------------------------------------------------------------------------
# Linear algebra
# --------------------------------------------------------------------------------------


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> Shape:
    """numpy.matmul result shape (1-D operands promoted then squeezed)."""
    if len(a) == 0 or len(b) == 0:
        raise ShapeError("operands must have rank >= 1")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise ShapeError(
            f"inner dimensions differ: A {fmt(a)} has {a2[-1]}, B {fmt(b)} has {b2[-2]}"
        )
    try:
        batch = broadcast_shapes(a2[:-2], b2[:-2])
    except ShapeError:
        raise ShapeError(
            f"batch dimensions of A {fmt(a)} and B {fmt(b)} do not broadcast"
        ) from None
    out = [*batch]
    if len(a) != 1:
        out.append(a2[-2])
    if len(b) != 1:
        out.append(b2[-1])
    return tuple(out)


def gemm_shape(a: Sequence[int], b: Sequence[int], trans_a: int, trans_b: int) -> Shape:
    if len(a) != 2 or len(b) != 2:
        raise ShapeError(f"A {fmt(a)} and B {fmt(b)} must be 2-D")
    m, ka = (a[1], a[0]) if trans_a else (a[0], a[1])
    kb, n = (b[1], b[0]) if trans_b else (b[0], b[1])
    if ka != kb:
        raise ShapeError(
            f"A {fmt(a)} (transA={trans_a}) has K={ka}, B {fmt(b)} "
            f"(transB={trans_b}) has K={kb}"
        )
    return (int(m), int(n))


def einsum_shape(equation: str, shapes: Sequence[Sequence[int]]) -> Shape:
    """Result shape of numpy.einsum for `equation` (with `...` and implicit output)."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ShapeError(
            f"equation '{equation}' has {len(terms)} operands, got {len(shapes)}"
        )
    sizes: dict[str, int] = {}
    ell_shapes = []
    counts: dict[str, int] = {}
    for term, shape in zip(terms, shapes):
        letters = term.replace("...", "")
        if "..." in term:
            n_ell = len(shape) - len(letters)
            if n_ell < 0:
                raise ShapeError(f"term '{term}' has more labels than rank {len(shape)}")
            pre = term.index("...")
            ell_shapes.append(tuple(shape[pre : pre + n_ell]))
            dims = list(shape[:pre]) + list(shape[pre + n_ell :])
        else:
            if len(letters) != len(shape):
                raise ShapeError(
                    f"term '{term}' has {len(letters)} labels, operand rank {len(shape)}"
                )
            dims = list(shape)
        for ch, d in zip(letters, dims):
            counts[ch] = counts.get(ch, 0) + 1
            if ch in sizes and sizes[ch] != d and 1 not in (sizes[ch], d):
                raise ShapeError(f"label '{ch}' has sizes {sizes[ch]} and {d}")
            sizes[ch] = max(sizes.get(ch, d), d) if 1 in (sizes.get(ch, d), d) else d
    ell = broadcast_shapes(*ell_shapes) if ell_shapes else ()
    if rhs is None:
        rhs = ("..." if ell_shapes else "") + "".join(
            sorted(c for c, k in counts.items() if k == 1)
        )
    out: list[int] = []
    i = 0
    while i < len(rhs):
        if rhs.startswith("...", i):
            out.extend(ell)
            i += 3
            continue
        ch = rhs[i]
        if ch not in sizes:
            raise ShapeError(f"output label '{ch}' does not appear in the inputs")
        out.append(sizes[ch])
        i += 1
    return tuple(int(d) for d in out)


# --------------------------------------------------------------------------------------
# Reductions and shape manipulation
# --------------------------------------------------------------------------------------


def reduce_shape(
    shape: Sequence[int],
    axes: Sequence[int] | None,
    keepdims: int = 1,
    noop_with_empty_axes: int = 0,
) -> Shape:
    """Result shape of Reduce*: axes None/empty = all (or none with noop_with_empty_axes)."""
    rank = len(shape)
    if not axes:
        if noop_with_empty_axes:
            return tuple(shape)
        red = set(range(rank))
    else:
        red = set(normalize_axes(axes, rank))
    if keepdims:
        return tuple(1 if i in red else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in red)


def reshape_shape(shape: Sequence[int], target: Sequence[int], allowzero: int = 0) -> Shape:
    """Reshape's output shape from the `shape` operand value (0 copies, -1 infers)."""
    total = int(np.prod(shape, dtype=np.int64))
    out = [int(d) for d in target]
    if out.count(-1) > 1:
        raise ShapeError(f"shape {fmt(out)} has more than one -1")
    for i, d in enumerate(out):
        if d == 0 and not allowzero:
            if i >= len(shape):
                raise ShapeError(f"shape {fmt(target)}: 0 at index {i} but input rank {len(shape)}")
            out[i] = shape[i]
        elif d < -1:
            raise ShapeError(f"shape {fmt(target)} has a negative size {d}")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        if known == 0 or total % known:
            raise ShapeError(f"cannot reshape {fmt(shape)} ({total} elements) to {fmt(target)}")
        out[out.index(-1)] = total // known
    if int(np.prod(out, dtype=np.int64)) != total:
        raise ShapeError(f"cannot reshape {fmt(shape)} ({total} elements) to {fmt(target)}")
    return tuple(out)


def squeeze_shape(shape: Sequence[int], axes: Sequence[int] | None) -> Shape:
    if axes is None:
        return tuple(d for d in shape if d != 1)
    ax = normalize_axes(axes, len(shape))
    for a in ax:
        if shape[a] != 1:
            raise ShapeError(f"cannot squeeze axis {a} of size {shape[a]} (shape {fmt(shape)})")
    return tuple(d for i, d in enumerate(shape) if i not in ax)


def unsqueeze_shape(shape: Sequence[int], axes: Sequence[int]) -> Shape:
    rank = len(shape) + len(axes)
    ax = set(normalize_axes(axes, rank))
    it = iter(shape)
    return tuple(1 if i in ax else next(it) for i in range(rank))


def flatten_shape(shape: Sequence[int], axis: int) -> Shape:
    rank = len(shape)
    if not -rank <= axis <= rank:
        raise ShapeError(f"axis {axis} is out of range for rank {rank}")
    if axis < 0:
        axis += rank
    return (
        int(np.prod(shape[:axis], dtype=np.int64)),
        int(np.prod(shape[axis:], dtype=np.int64)),
    )


def transpose_shape(shape: Sequence[int], perm: Sequence[int] | None) -> Shape:
    rank = len(shape)
    if perm is None:
        return tuple(reversed(shape))
    p = [int(v) for v in perm]
    if sorted(normalize_axis(v, rank, "perm") for v in p) != list(range(rank)):
        raise ShapeError(f"perm {p} is not a permutation of {rank} axes")
    return tuple(shape[normalize_axis(v, rank)] for v in p)


def concat_shape(shapes: Sequence[Sequence[int]], axis: int) -> Shape:
    if not shapes:
        raise ShapeError("needs at least one input")
    rank = len(shapes[0])
    ax = normalize_axis(axis, rank)
    total = 0
    for k, s in enumerate(shapes):
        if len(s) != rank:
            raise ShapeError(f"input #{k} has rank {len(s)}, input #0 has rank {rank}")
        for i in range(rank):
            if i != ax and s[i] != shapes[0][i]:
                raise ShapeError(
                    f"input #{k} {fmt(s)} differs from input #0 {fmt(shapes[0])} "
                    f"outside axis {ax}"
                )
        total += s[ax]
    out = list(shapes[0])
    out[ax] = total
    return tuple(out)


def split_sizes(dim: int, n_outputs: int, split: Sequence[int] | None) -> list[int]:
    """Sizes of Split's outputs along the axis (explicit `split` or equal parts)."""
    if split is not None:
        sizes = [int(s) for s in split]
        if len(sizes) != n_outputs:
            raise ShapeError(f"split {sizes} has {len(sizes)} sizes for {n_outputs} outputs")
        if sum(sizes) != dim:
            raise ShapeError(f"split {sizes} sums to {sum(sizes)}, axis has size {dim}")
        return sizes
    if n_outputs <= 0:
        raise ShapeError("needs at least one output")
    chunk = -(-dim // n_outputs)
    sizes = [chunk] * (n_outputs - 1) + [dim - chunk * (n_outputs - 1)]
    if sizes[-1] < 0:
        raise ShapeError(f"cannot split size {dim} into {n_outputs} outputs")
    return sizes


def slice_shape(
    shape: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None = None,
    steps: Sequence[int] | None = None,
) -> Shape:
    rank = len(shape)
    if len(starts) != len(ends):
        raise ShapeError(f"starts has {len(starts)} values, ends {len(ends)}")
    ax = normalize_axes(axes, rank) if axes is not None else list(range(len(starts)))
    st = [1] * len(starts) if steps is None else [int(s) for s in steps]
    if len(ax) != len(starts) or len(st) != len(starts):
        raise ShapeError(
            f"starts/ends/axes/steps lengths differ: {len(starts)}, {len(ends)}, "
            f"{len(ax)}, {len(st)}"
        )
    out = list(shape)
    for a, s, e, k in zip(ax, starts, ends, st):
        if k == 0:
            raise ShapeError(f"step of axis {a} is 0")
        out[a] = len(range(*slice(int(s), int(e), int(k)).indices(int(shape[a]))))
    return tuple(out)


def pad_shape(shape: Sequence[int], pads: Sequence[int], axes: Sequence[int] | None) -> Shape:
    rank = len(shape)
    ax = normalize_axes(axes, rank) if axes is not None else list(range(rank))
    if len(pads) != 2 * len(ax):
        raise ShapeError(f"pads has {len(pads)} values, expected {2 * len(ax)}")
    out = list(shape)
    n = len(ax)
    for i, a in enumerate(ax):
        out[a] = shape[a] + int(pads[i]) + int(pads[i + n])
        if out[a] < 0:
            raise ShapeError(f"padding makes axis {a} negative ({out[a]})")
    return tuple(out)


def tile_shape(shape: Sequence[int], repeats: Sequence[int]) -> Shape:
    if len(repeats) != len(shape):
        raise ShapeError(f"repeats has {len(repeats)} values, input rank is {len(shape)}")
    return tuple(int(d) * int(r) for d, r in zip(shape, repeats))


def resize_shape(
    shape: Sequence[int],
    scales: Sequence[float] | None,
    sizes: Sequence[int] | None,
    axes: Sequence[int] | None = None,
    keep_aspect_ratio_policy: str = "stretch",
) -> Shape:
    """Resize's output shape from `scales` (floor(d * s)) or `sizes`."""
    rank = len(shape)
    ax = normalize_axes(axes, rank) if axes is not None else list(range(rank))
    out = list(shape)
    if sizes is not None and len(sizes):
        if len(sizes) != len(ax):
            raise ShapeError(f"sizes has {len(sizes)} values, expected {len(ax)}")
        if keep_aspect_ratio_policy in ("not_larger", "not_smaller"):
            ratios = [sizes[i] / shape[a] for i, a in enumerate(ax)]
            r = min(ratios) if keep_aspect_ratio_policy == "not_larger" else max(ratios)
            for a in ax:
                out[a] = int(math.floor(shape[a] * r + 0.5))
        else:
            for i, a in enumerate(ax):
                out[a] = int(sizes[i])
    elif scales is not None and len(scales):
        if len(scales) != len(ax):
            raise ShapeError(f"scales has {len(scales)} values, expected {len(ax)}")
        for i, a in enumerate(ax):
            out[a] = int(math.floor(shape[a] * float(scales[i])))
    else:
        raise ShapeError("needs scales or sizes")
    return tuple(out)


def range_count(start: float, limit: float, delta: float) -> int:
    if delta == 0:
        raise ShapeError("delta is 0")
    return max(int(math.ceil((limit - start) / delta)), 0)


def gather_shape(data: Sequence[int], indices: Sequence[int], axis: int) -> Shape:
    ax = normalize_axis(axis, len(data))
    return (*data[:ax], *indices, *data[ax + 1 :])


def gather_nd_shape(data: Sequence[int], indices: Sequence[int], batch_dims: int) -> Shape:
    b = batch_dims
    if len(indices) < 1:
        raise ShapeError("indices must have rank >= 1")
    k = indices[-1]
    if b + k > len(data):
        raise ShapeError(
            f"indices last dimension {k} + batch_dims {b} exceeds data rank {len(data)}"
        )
    if tuple(data[:b]) != tuple(indices[:b]):
        raise ShapeError(
            f"first {b} (batch) dimensions differ: data {fmt(data)}, indices {fmt(indices)}"
        )
    return (*indices[:-1], *data[b + k :])
