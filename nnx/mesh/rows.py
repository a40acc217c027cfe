"""Splitting an op's work by output rows (docs/mesh.md, "Compilation", "Row splits").

An op on rank-4 activations (NCHW images, or batch x heads x rows x columns in
attention) -- a convolution of any group, with padding and stride; a max/average
pool (in ceil mode: a max pool, an average pool not counting padding); batch norm;
an elementwise op; LRN; a concat or softmax not along the rows; a batched matmul, by
rows of its left operand -- can compute any band of output rows [lo, hi) (axis 2)
from a band of input rows: for convs and pools the rows its kernel window covers
(the *halo* above and below), with the op's top and bottom padding kept only where
the band touches the image's edge; for the others the same rows. A part of a row
split holds that input window, its output rows and the op's constants whole, so it
suits ops whose activations are larger than their weights (the first layers of a
CNN).

A view or data-movement op -- a reshape, flatten, squeeze or unsqueeze that keeps
the row axis as an axis of its own (only other axes split or merged), a transpose --
passes a row split through: its output row axis is where the input row axis maps
(`mapped_row_axis`), a band of output rows is the op applied to the same band of
input rows, and its result is split along that axis (a channel shuffle's
N,C,H,W -> N,g,C/g,H,W -> transposed -> N,C,H,W stays split by rows).

The window rule is the tiling planner's (`nnx.tiling.rules_nn.window`): one
definition for tiles inside a core and for parts over cores.
"""

from __future__ import annotations

import weakref

import numpy as np
from xdsl.ir import Operation, SSAValue

from nnx.dialects import graph as g
from nnx.dialects.traits import Elementwise, ViewLike
from nnx.graph_queries import constant_op
from nnx.tiling.rules_nn import explicit_pads, window

#: the axis a row split cuts: H of NCHW
ROW_AXIS = 2


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(int(d) for d in v.type.get_shape())


def _is_windowed(op: Operation) -> bool:
    """Conv and pooling: output rows read a kernel window of input rows."""
    return isinstance(op, (g.ConvOp, g.MaxPoolOp, g.AveragePoolOp))


_SPATIAL_PARAMS: "weakref.WeakKeyDictionary[Operation, tuple]" = weakref.WeakKeyDictionary()


def spatial_params(op: Operation) -> tuple[int, int, int, list[int]]:
    """(kernel rows, row stride, row dilation, explicit pads [begins..., ends...]) of a
    conv or pool. Remembered per op (the partitioner asks for every row window it
    tries); the pads list is shared, do not change it."""
    if op not in _SPATIAL_PARAMS:
        _SPATIAL_PARAMS[op] = _spatial_params(op)
    return _SPATIAL_PARAMS[op]


def _spatial_params(op: Operation) -> tuple[int, int, int, list[int]]:
    x = _shape(op.operands[0])
    attrs = op.onnx_attributes()
    nsp = len(x) - 2
    if isinstance(op, g.ConvOp):
        kernel = list(_shape(op.operands[1])[2:])
    else:
        kernel = [int(v) for v in attrs["kernel_shape"]]
    strides = [int(v) for v in attrs.get("strides") or [1] * nsp]
    dils = [int(v) for v in attrs.get("dilations") or [1] * nsp]
    pads = explicit_pads(attrs, list(x[2:]), kernel, strides, dils)
    return kernel[0], strides[0], dils[0], pads


def is_row_view(op: Operation) -> bool:
    """A reshape-like view (its band is the input band reshaped) or a transpose of one
    activation (its other operands constant)."""
    return (op.has_trait(ViewLike) or isinstance(op, g.TransposeOp)) and len(op.results) == 1 \
        and bool(op.operands) and constant_op(op.operands[0]) is None \
        and all(constant_op(v) is not None for v in op.operands[1:])


def mapped_row_axis(op: Operation, in_axis: int) -> int | None:
    """The output axis that axis `in_axis` of a row view's input becomes, with the same
    extent (at least 2), else None: for a transpose, where its permutation moves it;
    for a reshape-like view, the output axis with the same extent and the same
    product of the axes before it (so the axes around it are split or merged, never
    it)."""
    x, out = _shape(op.operands[0]), _shape(op.results[0])
    if not 0 <= in_axis < len(x) or x[in_axis] < 2:
        return None
    if isinstance(op, g.TransposeOp):
        perm_attr = op.attr("perm", None)
        perm = list(range(len(x) - 1, -1, -1)) if perm_attr is None else [int(p) for p in perm_attr]
        return perm.index(in_axis) if in_axis in perm else None
    if int(np.prod(x)) != int(np.prod(out)):
        return None
    before = int(np.prod(x[:in_axis]))
    for o, d in enumerate(out):
        if d == x[in_axis] and int(np.prod(out[:o])) == before:
            return o
    return None


def default_row_axis(v: SSAValue) -> int | None:
    """The row axis of an activation not split by rows: H of NCHW, the second to last
    axis of a rank-3 or larger value (None below rank 3)."""
    n = len(_shape(v))
    return n - 2 if n >= 3 else None


def windowed_operands(op: Operation) -> list[int]:
    """Positions of the activation operands a row part reads a window of (the others
    it reads whole: constants, and broadcast operands with one row)."""
    if is_row_view(op):
        return [0]
    out_rows = _shape(op.results[0])[ROW_AXIS]
    if _is_windowed(op) or isinstance(op, g.MatMulOp):
        return [0]
    return [k for k, v in enumerate(op.operands)
            if constant_op(v) is None and len(_shape(v)) == 4 and _shape(v)[ROW_AXIS] == out_rows]


def can_split_rows(op: Operation) -> bool:
    """May `op` be split by output rows (see the module docstring)? A row view: when
    some input axis maps to an output axis (the partitioner picks the axis)."""
    if is_row_view(op):
        return any(mapped_row_axis(op, a) is not None for a in range(len(_shape(op.operands[0]))))
    if len(op.results) != 1 or len(_shape(op.results[0])) != 4 or _shape(op.results[0])[ROW_AXIS] < 2:
        return False
    out = _shape(op.results[0])
    if isinstance(op, g.ConvOp):
        return constant_op(op.operands[1]) is not None and constant_op(op.operands[0]) is None \
            and all(constant_op(v) is not None for v in op.operands[2:]) and len(_shape(op.operands[0])) == 4
    if isinstance(op, (g.MaxPoolOp, g.AveragePoolOp)):  # ceil mode: `ceil_rows_exact`
        return len(_shape(op.operands[0])) == 4 and (int(op.attr("ceil_mode", 0) or 0) == 0 or ceil_rows_exact(op))
    if isinstance(op, g.LRNOp):  # across channels: rows are independent
        return constant_op(op.operands[0]) is None
    if isinstance(op, g.ConcatOp):  # along another axis: a band is the concat of the bands
        return int(op.attr("axis", 0)) % 4 != ROW_AXIS and all(
            constant_op(v) is None and len(_shape(v)) == 4 and _shape(v)[ROW_AXIS] == out[ROW_AXIS]
            for v in op.operands)
    if isinstance(op, (g.SoftmaxOp, g.LogSoftmaxOp)):  # rows are independent unless it reduces over them
        return constant_op(op.operands[0]) is None and int(op.attr("axis", -1)) % 4 != ROW_AXIS
    if isinstance(op, g.MatMulOp):  # rows of the left operand: the M axis of a batched matmul
        a = op.operands[0]
        return constant_op(a) is None and len(_shape(a)) == 4 and _shape(a)[ROW_AXIS] == out[ROW_AXIS] \
            and len(_shape(op.operands[1])) in (2, 4)
    if isinstance(op, g.BatchNormalizationOp):
        return constant_op(op.operands[0]) is None and all(constant_op(v) is not None for v in op.operands[1:]) \
            and _shape(op.operands[0]) == out
    if op.has_trait(Elementwise):
        acts = [v for v in op.operands if constant_op(v) is None]
        if not acts:
            return False
        for v in op.operands:
            s = _shape(v)
            r = len(out) - len(s)
            if constant_op(v) is not None:
                if ROW_AXIS >= r and s[ROW_AXIS - r] != 1:
                    return False  # a constant varying along the rows: not worth slicing
            elif len(s) != 4 or s[ROW_AXIS] not in (1, out[ROW_AXIS]) or s[0] != out[0]:
                return False
        return bool(windowed_operands(op))
    return False


def ceil_rows_exact(op: Operation) -> bool:
    """Whether a pool in ceil mode computes a band of rows as its whole does: its
    last window may reach below the image and its padding; a band's window reaches
    as far (`row_window`: the band's bottom padding is what lies beyond the image),
    and padding counts for nothing in a max pool, or in an average pool that does
    not count it (count_include_pad 0). Each band's output rows are then exact in
    ceil mode too, the columns keeping it."""
    return isinstance(op, g.MaxPoolOp) or int(op.attr("count_include_pad", 0) or 0) == 0


def row_window(op: Operation, lo: int, hi: int) -> tuple[int, int, int, int]:
    """Input rows [a, b) that output rows [lo, hi) of `op` read, and the band's top
    and bottom padding (0 except at the image's edges)."""
    if not _is_windowed(op):
        return lo, hi, 0, 0
    k, s, d, pads = spatial_params(op)
    size = _shape(op.operands[0])[ROW_AXIS]
    return window(lo, hi, s, k, d, pads[0], size)


def part_attributes(op: Operation, lo: int, hi: int) -> dict:
    """The ONNX attributes of row part [lo, hi) of `op`: explicit pads with the
    band's own top and bottom padding."""
    attrs = dict(op.onnx_attributes())
    if _is_windowed(op):
        _, _, _, pads = spatial_params(op)
        _, _, top, bottom = row_window(op, lo, hi)
        nsp = len(pads) // 2
        pads = list(pads)
        pads[0], pads[nsp] = top, bottom
        attrs.pop("auto_pad", None)
        attrs["pads"] = pads
    return attrs
