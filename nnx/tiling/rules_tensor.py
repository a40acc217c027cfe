"""Tiling rules of data-movement ops whose input windows follow from the output tile
(Transpose, Gather, Pad, Resize, Expand), and the kinds deliberately computed as one
whole tile."""

from __future__ import annotations

import numpy as np

from nnx.tiling.boxes import Step
from nnx.tiling.registry import norm_axis, tiling_rule, whole_op
from nnx.tiling.rule import MappedRule, Rule, broadcast_maps

WHOLE_OP_KINDS = (
    "Concat ConstantOfShape ConvTranspose DepthToSpace Einsum Flatten GatherElements "
    "GatherND NonZero Range Reshape ScatterElements ScatterND Shape Size Slice "
    "SpaceToDepth Split Squeeze Tile TopK Trilu Unsqueeze Upsample"
).split()
"""Kinds computed as one tile (the whole op must fit the caches). The lowering moves
Concat/Split/Slice and the view-like ops itself (`CopyRule`, aliases) and uses these
only when it computes them."""

tiling_rule(*WHOLE_OP_KINDS)(whole_op)


@tiling_rule("Transpose")
def transpose_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Every axis; the input window is the output tile permuted back."""
    x = in_shapes[0]
    assert x is not None
    perm = [int(p) for p in attrs.get("perm", list(range(len(x)))[::-1])]
    m = [0] * len(x)
    for j, p in enumerate(perm):
        m[p] = j
    return MappedRule(kind, in_shapes, out_shapes, attrs, [m], range(len(out_shapes[0])))


@tiling_rule("Gather")
def gather_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Every axis; the data is read whole along `axis`, the indices follow the output
    axes they become."""
    x = in_shapes[0]
    assert x is not None and in_shapes[1] is not None
    ax = norm_axis(int(attrs.get("axis", 0)), len(x))
    ri = len(in_shapes[1])
    dm = [i if i < ax else (None if i == ax else i + ri - 1) for i in range(len(x))]
    im = [ax + j for j in range(ri)]
    return MappedRule(kind, in_shapes, out_shapes, attrs, [dm, im], range(len(out_shapes[0])))


@tiling_rule("Pad")
def pad_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """The axes that are not padded; one tile when the pads (or axes) are not
    constants."""
    x = in_shapes[0]
    assert x is not None
    if 1 not in const_inputs:
        return Rule(kind, in_shapes, out_shapes, attrs)
    pads = [int(v) for v in np.asarray(const_inputs[1]).reshape(-1)]
    axes = list(range(len(x)))
    if len(in_shapes) > 3 and in_shapes[3] is not None:
        if 3 not in const_inputs:
            return Rule(kind, in_shapes, out_shapes, attrs)
        axes = [norm_axis(int(v), len(x)) for v in np.asarray(const_inputs[3]).reshape(-1)]
    padded = {a for j, a in enumerate(axes) if pads[j] != 0 or pads[j + len(axes)] != 0}
    m = [None if i in padded else i for i in range(len(x))]
    r = len(out_shapes[0])
    return MappedRule(kind, in_shapes, out_shapes, attrs, [m], [i for i in range(r) if i not in padded])


@tiling_rule("Resize")
def resize_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Batch and channels when they are not resized (the `sizes` input of a tile is
    its own); otherwise, or with `axes` or non-constant sizes, one tile."""
    x = in_shapes[0]
    out = out_shapes[0]
    r = len(out)
    if x is None or len(x) < 3 or out[0] != x[0] or out[1] != x[1]:
        return Rule(kind, in_shapes, out_shapes, attrs)
    sizes_given = len(in_shapes) > 3 and in_shapes[3] is not None
    if (sizes_given and 3 not in const_inputs) or "axes" in attrs:
        return Rule(kind, in_shapes, out_shapes, attrs)
    maps = [[0, 1] + [None] * (r - 2)]

    def consts(o):
        if not sizes_given:
            return {}
        s = np.asarray(const_inputs[3]).copy()
        for a in (0, 1):
            lo, hi = o.get(a, (0, out[a]))
            s[a] = hi - lo
        return {3: s}

    return MappedRule(kind, in_shapes, out_shapes, attrs, maps, [0, 1], consts=consts)


@tiling_rule("Expand")
def expand_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Every axis; the input broadcasts to the tile, whose `shape` input is its own."""
    x = in_shapes[0]
    assert x is not None
    out = out_shapes[0]
    r = len(out)
    maps = broadcast_maps([x], r) + [None]

    def consts(o):
        return {1: np.array([o.get(a, (0, out[a]))[1] - o.get(a, (0, out[a]))[0] for a in range(r)], dtype=np.int64)}

    return MappedRule(kind, in_shapes, out_shapes, attrs, maps, range(r), consts=consts)


@tiling_rule("CompressTensor", "DecompressTensor")
def compression_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Tensor compression (nnx/compression.py): with one i8 scale per channel the
    channels (axis 1) are separable -- each tile reads and writes whole channels and
    their scales; any other granularity (one scale per tensor, per group of
    elements, or f16/bf16 rounding) is one tile."""
    if attrs.get("scales") == "channel" and len(out_shapes[0]) >= 2:
        return ChannelScalesRule(kind, in_shapes, out_shapes, attrs)
    return Rule(kind, in_shapes, out_shapes, attrs)


class ChannelScalesRule(Rule):
    """Compress/DecompressTensor with per-channel scales: tiles over axis 1 of the
    data; the (C,) scale tensor (Compress's second result, Decompress's second
    operand) follows it."""

    def __init__(self, kind, in_shapes, out_shapes, attrs):
        super().__init__(kind, in_shapes, out_shapes, attrs)
        self.axes = [1] if self.out_shape[1] > 1 else []
        self.prefer = list(self.axes)

    def step(self, out, k):
        lo, hi = out.get(1, (0, self.out_shape[1]))
        chan = (lo, hi - lo, 1)

        def box(shape):
            if len(shape) < 2:  # the scales
                return (chan,)
            return tuple(chan if a == 1 else (0, d, 1) for a, d in enumerate(shape))

        return Step([None if s is None else box(s) for s in self.in_shapes],
                    [box(s) for s in self.out_shapes], dict(self.attrs))
