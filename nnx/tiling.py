"""Tiling rules of `lower-to-chip`: which output axes of an ONNX op can be cut into
tiles, and which input window each output tile needs.

Seed 000 (paras. 88-98) splits an operator whose data (inputs, parameters, outputs)
exceed a threshold derived from the chip memory into same-type operators over slices,
choosing the split dimension by the op type: conv/fc/depthwise prefer the frame
(batch) dimension, then the channels (para. 90, 97); other operators never split a
dimension they reduce (para. 98: resize/pooling split batch or channel; a transpose
over C and W splits batch or H). Seed 004's device (claims 1-4) then runs each slice
out of its input neuron cache, weight cache and output cache. Here a "slice" is a
*tile*: the output box it computes, the input boxes (windows) it reads from the
storage unit, and the ONNX attributes of the tile-local operation (e.g. conv pads at
the tile edges).

Rules, by ONNX kind (`rule_for`):

* elementwise / broadcast ops: every output axis; inputs follow by broadcasting;
* BatchNormalization, InstanceNormalization: every axis / N and C, params by channel;
* reductions, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, LayerNormalization, norms,
  CumSum, LRN, global pools, Resize: every axis that is not reduced (para. 98);
* Conv: N, output channels (group-aware: a tile holds whole groups or lies inside
  one group), output rows/columns with their input halo (tile-local pads), and the
  input channels as a reduction split accumulated in the output cache (`acc`);
* MaxPool/AveragePool/LpPool: N, C, and output rows/columns with halo (ceil_mode 0);
* MatMul/Gemm: batch axes, M, N, and K as an accumulated reduction split;
* Transpose, Gather, Pad, Slice, Concat, Split, Expand: computed input windows;
* anything else: one tile (the whole op), which must fit.

`plan(rule, need, capacity)` picks tile sizes: it starts from the whole output and
halves the axis (or the reduction split) that best reduces the overflowing cache, in
the rule's preference order on ties, until every tile fits. When even the minimal
tile (every separable axis 1, reduction chunk 1) does not fit it raises
`TilingError`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# (start, size, step) per axis
Box = tuple[tuple[int, int, int], ...]
Range = tuple[int, int]  # [start, stop)


class TilingError(Exception):
    """Even the smallest tile of an op does not fit the caches."""


def full_box(shape: Sequence[int]) -> Box:
    return tuple((0, int(d), 1) for d in shape)


def box_shape(box: Box) -> tuple[int, ...]:
    return tuple(s for _, s, _ in box)


@dataclass
class Step:
    """One tile of one op: the input boxes it loads, the output boxes it writes."""

    inputs: list[Box | None]
    outputs: list[Box]
    attrs: dict[str, Any]
    consts: dict[int, np.ndarray] = field(default_factory=dict)  # per-tile input values
    acc: bool = False  # accumulate into the output tile (reduction chunk > 0)
    last: bool = True  # last reduction chunk of this output tile (store after it)
    drop: tuple[int, ...] = ()  # inputs not passed on this chunk (bias after chunk 0)


# --------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------


class Rule:
    """Base rule: the whole op is one tile."""

    def __init__(
        self,
        kind: str,
        in_shapes: Sequence[tuple[int, ...] | None],
        out_shapes: Sequence[tuple[int, ...]],
        attrs: dict[str, Any],
    ):
        self.kind = kind
        self.in_shapes = list(in_shapes)
        self.out_shapes = [tuple(s) for s in out_shapes]
        self.attrs = dict(attrs)
        self.out_shape = self.out_shapes[0] if self.out_shapes else ()
        #: separable output axes, loop order outer -> inner
        self.axes: list[int] = []
        #: halving preference (first = preferred on ties)
        self.prefer: list[int] = []
        #: reduction length that may be split into accumulated chunks (0: none)
        self.k_extent = 0

    # per axis segmentation of the output
    def segments(self, axis: int, size: int) -> list[Range]:
        n = self.out_shape[axis]
        return [(s, min(s + size, n)) for s in range(0, n, size)]

    def min_size(self, axis: int) -> int:
        return 1

    def shrink(self, axis: int, size: int) -> int | None:
        """The next smaller tile size along `axis` (None: cannot shrink)."""
        if size <= self.min_size(axis):
            return None
        return max(self.min_size(axis), (size + 1) // 2)

    def step(self, out: dict[int, Range], k: Range | None) -> Step:
        return Step(
            [None if s is None else full_box(s) for s in self.in_shapes],
            [full_box(s) for s in self.out_shapes],
            dict(self.attrs),
        )

    # helpers
    def out_box(self, out: dict[int, Range], shape: Sequence[int] | None = None) -> Box:
        shape = self.out_shape if shape is None else shape
        res = []
        for a, d in enumerate(shape):
            if a in out and d == self.out_shape[a]:
                lo, hi = out[a]
                res.append((lo, hi - lo, 1))
            else:
                res.append((0, d, 1))
        return tuple(res)

    def out_boxes(self, out: dict[int, Range]) -> list[Box]:
        boxes = []
        for s in self.out_shapes:
            if len(s) == len(self.out_shape):
                boxes.append(self.out_box(out, s))
            else:
                boxes.append(full_box(s))
        return boxes


class MappedRule(Rule):
    """Inputs follow the output through per-input axis maps.

    `maps[j][i]` is the output axis that input j's axis i follows (broadcast when the
    input dimension is 1 and the output's is not), or None: the axis is read whole."""

    def __init__(self, kind, in_shapes, out_shapes, attrs, maps, axes, prefer=None, consts=None):
        super().__init__(kind, in_shapes, out_shapes, attrs)
        self.maps = maps
        self.axes = [a for a in axes if self.out_shape[a] > 1]
        self.prefer = list(prefer) if prefer is not None else list(self.axes)
        self.prefer = [a for a in self.prefer if a in self.axes]
        self.consts_fn = consts

    def step(self, out, k):
        ins: list[Box | None] = []
        for j, shape in enumerate(self.in_shapes):
            if shape is None:
                ins.append(None)
                continue
            m = self.maps[j] if j < len(self.maps) else None
            box = []
            for i, d in enumerate(shape):
                a = None if m is None else m[i]
                if a is None or a not in out:
                    box.append((0, d, 1))
                elif d == 1 and self.out_shape[a] != 1:
                    box.append((0, 1, 1))
                else:
                    lo, hi = out[a]
                    box.append((lo, hi - lo, 1))
            ins.append(tuple(box))
        st = Step(ins, self.out_boxes(out), dict(self.attrs))
        if self.consts_fn is not None:
            st.consts = self.consts_fn(out)
        return st


def broadcast_maps(in_shapes, out_rank: int) -> list[list[int | None] | None]:
    maps: list[list[int | None] | None] = []
    for s in in_shapes:
        if s is None:
            maps.append(None)
            continue
        off = out_rank - len(s)
        maps.append([off + i for i in range(len(s))])
    return maps


def window(o0: int, o1: int, stride: int, kernel: int, dil: int, pad: int, size: int):
    """Input window [lo, hi) of output positions [o0, o1) and its tile-local pads."""
    a = o0 * stride - pad
    e = (o1 - 1) * stride - pad + (kernel - 1) * dil + 1
    lo, hi = max(a, 0), min(e, size)
    if hi <= lo:  # the tile lies in the padding only: read one element, pad around it
        lo = min(max(a, 0), size - 1)
        hi = lo + 1
    return lo, hi, lo - a, e - hi


def explicit_pads(attrs, in_sizes, kernel, strides, dils) -> list[int]:
    k = len(in_sizes)
    auto = attrs.get("auto_pad", "NOTSET")
    if isinstance(auto, bytes):
        auto = auto.decode()
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pb, pe = [], []
        for i in range(k):
            out = -(-in_sizes[i] // strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dils[i] + 1 - in_sizes[i], 0)
            small, big = total // 2, total - total // 2
            pb.append(small if auto == "SAME_UPPER" else big)
            pe.append(big if auto == "SAME_UPPER" else small)
        return pb + pe
    if auto == "VALID":
        return [0] * (2 * k)
    pads = attrs.get("pads")
    return [int(p) for p in pads] if pads is not None else [0] * (2 * k)


class SpatialRule(Rule):
    """Conv and pooling: N, (output) channels, spatial axes with halo; Conv also splits
    the input channels (group 1) into accumulated chunks."""

    def __init__(self, kind, in_shapes, out_shapes, attrs, spatial_ok: bool = True):
        super().__init__(kind, in_shapes, out_shapes, attrs)
        x = in_shapes[0]
        self.conv = kind == "Conv"
        k = len(x) - 2
        if self.conv:
            w = in_shapes[1]
            self.kernel = list(w[2:])
            self.group = int(attrs.get("group", 1))
            self.m_per_group = w[0] // self.group
            self.c_per_group = w[1]
        else:
            self.kernel = [int(v) for v in attrs["kernel_shape"]]
            self.group = 0
        self.strides = [int(v) for v in attrs.get("strides", [1] * k)] or [1] * k
        self.dils = [int(v) for v in attrs.get("dilations", [1] * k)] or [1] * k
        self.pads = explicit_pads(attrs, list(x[2:]), self.kernel, self.strides, self.dils)
        self.nsp = k
        axes = [0, 1] + ([2 + i for i in range(k)] if spatial_ok else [])
        self.axes = [a for a in axes if self.out_shape[a] > 1]
        # seed 000 para. 90: frame (batch) first, then channels, then rows
        self.prefer = list(self.axes)
        if self.conv and self.group == 1 and x[1] > 1:
            self.k_extent = x[1]

    def segments(self, axis, size):
        n = self.out_shape[axis]
        if axis == 1 and self.conv and self.group > 1:
            mg = self.m_per_group
            if size >= mg:
                size -= size % mg
                return [(s, min(s + size, n)) for s in range(0, n, size)]
            return [(g * mg + s, g * mg + min(s + size, mg)) for g in range(self.group) for s in range(0, mg, size)]
        return [(s, min(s + size, n)) for s in range(0, n, size)]

    def shrink(self, axis, size):
        if axis == 1 and self.conv and self.group > 1 and size > self.m_per_group:
            groups = size // self.m_per_group
            if groups > 1:
                return ((groups + 1) // 2) * self.m_per_group
            return max(1, (self.m_per_group + 1) // 2) if self.m_per_group > 1 else None
        return super().shrink(axis, size)

    def step(self, out, k):
        x = self.in_shapes[0]
        n0, n1 = out.get(0, (0, self.out_shape[0]))
        c0, c1 = out.get(1, (0, self.out_shape[1]))
        attrs = {a: v for a, v in self.attrs.items() if a != "auto_pad"}
        xb = [(n0, n1 - n0, 1)]
        # channels
        if self.conv:
            if self.group == 1:
                kc0, kc1 = k if k is not None else (0, x[1])
                xb.append((kc0, kc1 - kc0, 1))
                wb = [(c0, c1 - c0, 1), (kc0, kc1 - kc0, 1)]
            else:
                mg, cg = self.m_per_group, self.c_per_group
                g0, g1 = c0 // mg, (c1 - 1) // mg + 1
                xb.append((g0 * cg, (g1 - g0) * cg, 1))
                wb = [(c0, c1 - c0, 1), (0, cg, 1)]
                attrs["group"] = g1 - g0
                if g1 - g0 == 1:
                    attrs.pop("group", None)
        else:
            xb.append((c0, c1 - c0, 1))
        pb, pe = [], []
        for i in range(self.nsp):
            o0, o1 = out.get(2 + i, (0, self.out_shape[2 + i]))
            lo, hi, p0, p1 = window(o0, o1, self.strides[i], self.kernel[i], self.dils[i], self.pads[i], x[2 + i])
            xb.append((lo, hi - lo, 1))
            pb.append(p0)
            pe.append(p1)
        attrs["pads"] = pb + pe
        ins: list[Box | None] = [tuple(xb)]
        drop: tuple[int, ...] = ()
        if self.conv:
            w = self.in_shapes[1]
            ins.append(tuple(wb) + tuple((0, d, 1) for d in w[2:]))
            if len(self.in_shapes) > 2 and self.in_shapes[2] is not None:
                ins.append(((c0, c1 - c0, 1),))
                if k is not None and k[0] > 0:
                    drop = (2,)
        else:
            ins += [None if s is None else full_box(s) for s in self.in_shapes[1:]]
        acc = k is not None and k[0] > 0
        last = k is None or k[1] >= x[1]
        return Step(ins, self.out_boxes(out), attrs, acc=acc, last=last, drop=drop)


class MatMulRule(Rule):
    """ONNX MatMul (ranks >= 2): batch axes, M, N; K accumulated; an optional third
    input C (the MPU's accumulator initial value, broadcast like Gemm's C)."""

    def __init__(self, kind, in_shapes, out_shapes, attrs):
        super().__init__(kind, in_shapes, out_shapes, attrs)
        a, b = in_shapes[0], in_shapes[1]
        r = len(self.out_shape)
        self.axes = [i for i in range(r) if self.out_shape[i] > 1]
        # N outer, M inner: the B tile is reused along M
        order = list(range(r - 2)) + [r - 1, r - 2]
        self.axes = [i for i in order if self.out_shape[i] > 1]
        self.prefer = [i for i in list(range(r - 2)) + [r - 2, r - 1] if i in self.axes]
        self.k_extent = a[-1]

    def step(self, out, k):
        a, b = self.in_shapes[0], self.in_shapes[1]
        r = len(self.out_shape)
        k0, k1 = k if k is not None else (0, a[-1])

        def batch(shape):
            off = r - len(shape)
            box = []
            for i in range(len(shape) - 2):
                d = shape[i]
                oa = off + i
                if d == 1 and self.out_shape[oa] != 1 or oa not in out:
                    box.append((0, d, 1))
                else:
                    lo, hi = out[oa]
                    box.append((lo, hi - lo, 1))
            return box

        m0, m1 = out.get(r - 2, (0, self.out_shape[r - 2]))
        n0, n1 = out.get(r - 1, (0, self.out_shape[r - 1]))
        ab = tuple(batch(a) + [(m0, m1 - m0, 1), (k0, k1 - k0, 1)])
        bb = tuple(batch(b) + [(k0, k1 - k0, 1), (n0, n1 - n0, 1)])
        ins: list[Box | None] = [ab, bb]
        drop: tuple[int, ...] = ()
        if len(self.in_shapes) > 2 and self.in_shapes[2] is not None:
            # C (the accumulators' initial value, broadcast to the output): only on
            # the first reduction chunk
            c = self.in_shapes[2]
            off = r - len(c)
            cb = []
            for i, d in enumerate(c):
                lo, hi = out.get(off + i, (0, self.out_shape[off + i]))
                cb.append((0, 1, 1) if d == 1 and self.out_shape[off + i] != 1 else (lo, hi - lo, 1))
            ins.append(tuple(cb))
            if k0 > 0:
                drop = (2,)
        return Step(ins, self.out_boxes(out), dict(self.attrs), acc=k0 > 0, last=k1 >= a[-1], drop=drop)


class GemmRule(Rule):
    """ONNX Gemm: M, N; K accumulated (C and beta only on the first chunk)."""

    def __init__(self, kind, in_shapes, out_shapes, attrs):
        super().__init__(kind, in_shapes, out_shapes, attrs)
        self.ta = int(attrs.get("transA", 0))
        self.tb = int(attrs.get("transB", 0))
        self.axes = [i for i in (1, 0) if self.out_shape[i] > 1]
        self.prefer = [i for i in (0, 1) if i in self.axes]
        a = in_shapes[0]
        self.k_extent = a[0] if self.ta else a[1]

    def step(self, out, k):
        m0, m1 = out.get(0, (0, self.out_shape[0]))
        n0, n1 = out.get(1, (0, self.out_shape[1]))
        k0, k1 = k if k is not None else (0, self.k_extent)
        mb, nb, kb = (m0, m1 - m0, 1), (n0, n1 - n0, 1), (k0, k1 - k0, 1)
        ab = (kb, mb) if self.ta else (mb, kb)
        bb = (nb, kb) if self.tb else (kb, nb)
        ins: list[Box | None] = [ab, bb]
        drop: tuple[int, ...] = ()
        if len(self.in_shapes) > 2 and self.in_shapes[2] is not None:
            c = self.in_shapes[2]
            cb = []
            off = 2 - len(c)
            for i, d in enumerate(c):
                lo, hi = (m0, m1) if off + i == 0 else (n0, n1)
                cb.append((0, 1, 1) if d == 1 and self.out_shape[off + i] != 1 else (lo, hi - lo, 1))
            ins.append(tuple(cb))
            if k0 > 0:
                drop = (2,)
        return Step(ins, self.out_boxes(out), dict(self.attrs), acc=k0 > 0, last=k1 >= self.k_extent, drop=drop)


class CopyRule(Rule):
    """A pure data movement: output box -> input box by per-axis offset and step
    (Slice with positive steps, one input of Concat, one output of Split)."""

    def __init__(self, shape, src_offset, src_step, dst_offset):
        super().__init__("Copy", [None], [tuple(shape)], {})
        self.src_offset = list(src_offset)
        self.src_step = list(src_step)
        self.dst_offset = list(dst_offset)
        self.axes = [a for a in range(len(shape)) if shape[a] > 1]
        self.prefer = list(self.axes)

    def step(self, out, k):
        src, dst = [], []
        for a, d in enumerate(self.out_shape):
            lo, hi = out.get(a, (0, d))
            src.append((self.src_offset[a] + lo * self.src_step[a], hi - lo, self.src_step[a]))
            dst.append((self.dst_offset[a] + lo, hi - lo, 1))
        return Step([tuple(src)], [tuple(dst)], {})


# --------------------------------------------------------------------------------------
# Rule selection
# --------------------------------------------------------------------------------------

ELEMENTWISE = frozenset(
    """Abs Acos Acosh Add And Asin Asinh Atan Atanh BitShift BitwiseAnd BitwiseNot
    BitwiseOr BitwiseXor Cast CastLike Ceil Celu Clip Cos Cosh Div Elu Equal Erf Exp
    Floor Gelu Greater GreaterOrEqual HardSigmoid HardSwish Identity IsInf IsNaN
    LeakyRelu Less LessOrEqual Log Max Mean Min Mish Mod Mul Neg Not Or PRelu Pow
    Reciprocal Relu Round Selu Shrink Sigmoid Sign Sin Sinh Softplus Softsign Sqrt Sub
    Sum Swish Tan Tanh ThresholdedRelu Where Xor Dropout""".split()
)
REDUCE = frozenset(
    """ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin
    ReduceProd ReduceSum ReduceSumSquare""".split()
)


def _norm(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def rule_for(
    kind: str,
    in_shapes: Sequence[tuple[int, ...] | None],
    out_shapes: Sequence[tuple[int, ...]],
    attrs: dict[str, Any],
    const_inputs: dict[int, np.ndarray],
) -> Rule:
    """The tiling rule of one op (`const_inputs`: values of its constant inputs)."""
    in_shapes = [None if s is None else tuple(s) for s in in_shapes]
    out_shapes = [tuple(s) for s in out_shapes]
    if not out_shapes:
        return Rule(kind, in_shapes, out_shapes, attrs)
    out = out_shapes[0]
    r = len(out)
    x = in_shapes[0] if in_shapes else None
    same_rank_outs = all(len(s) == r for s in out_shapes)
    try:
        if kind in ELEMENTWISE and same_rank_outs:
            if kind == "Dropout" and len(out_shapes) > 1:
                return Rule(kind, in_shapes, out_shapes, attrs)
            maps = broadcast_maps(in_shapes, r)
            if kind == "Dropout":
                maps = maps[:1] + [None] * (len(in_shapes) - 1)
            return MappedRule(kind, in_shapes, out_shapes, attrs, maps, range(r))
        if kind == "BatchNormalization" and len(out_shapes) == 1:
            maps = [list(range(r))] + [[1] for _ in in_shapes[1:]]
            return MappedRule(kind, in_shapes, out_shapes, attrs, maps, range(r))
        if kind == "InstanceNormalization":
            maps = [[0, 1] + [None] * (r - 2), [1], [1]]
            return MappedRule(kind, in_shapes, out_shapes, attrs, maps, [0, 1])
        if kind in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "LRN"):
            if kind == "LRN":
                maps = [[0, None] + list(range(2, r))]
                return MappedRule(kind, in_shapes, out_shapes, attrs, maps, [0] + list(range(2, r)))
            maps = [[0, 1] + [None] * (r - 2)]
            return MappedRule(kind, in_shapes, out_shapes, attrs, maps, [0, 1])
        if kind in ("Softmax", "LogSoftmax", "Hardmax", "LpNormalization", "CumSum"):
            if kind == "CumSum":
                ax = _norm(int(np.asarray(const_inputs[1]).reshape(-1)[0]), r)
            else:
                ax = _norm(int(attrs.get("axis", -1)), r)
            m = [None if i == ax else i for i in range(r)]
            return MappedRule(kind, in_shapes, out_shapes, attrs, [m], [i for i in range(r) if i != ax])
        if kind in ("LayerNormalization", "RMSNormalization", "MeanVarianceNormalization", "GroupNormalization"):
            if kind == "MeanVarianceNormalization":
                red = {_norm(a, r) for a in attrs.get("axes", [0, 2, 3])}
                m = [None if i in red else i for i in range(r)]
                return MappedRule(kind, in_shapes, out_shapes, attrs, [m], [i for i in range(r) if i not in red])
            if kind == "GroupNormalization":
                return MappedRule(kind, in_shapes, out_shapes[:1], attrs, [[0] + [None] * (r - 1)], [0]) if len(out_shapes) == 1 else Rule(kind, in_shapes, out_shapes, attrs)
            ax = _norm(int(attrs.get("axis", -1)), r)
            m = [i if i < ax else None for i in range(r)]
            if not same_rank_outs:
                return Rule(kind, in_shapes, out_shapes, attrs)
            return MappedRule(kind, in_shapes, out_shapes, attrs, [m], list(range(ax)))
        if kind in REDUCE or kind in ("ArgMax", "ArgMin"):
            assert x is not None
            xr = len(x)
            keep = int(attrs.get("keepdims", 1))
            if kind in ("ArgMax", "ArgMin"):
                red = {_norm(int(attrs.get("axis", 0)), xr)}
            else:
                if len(in_shapes) > 1 and in_shapes[1] is not None:
                    if 1 not in const_inputs:
                        return Rule(kind, in_shapes, out_shapes, attrs)
                    axes = [int(v) for v in np.asarray(const_inputs[1]).reshape(-1)]
                else:
                    axes = [int(v) for v in attrs.get("axes", [])]
                if not axes:
                    if int(attrs.get("noop_with_empty_axes", 0)):
                        return MappedRule(kind, in_shapes, out_shapes, attrs, [list(range(xr))], range(r))
                    axes = list(range(xr))
                red = {_norm(a, xr) for a in axes}
            m: list[int | None] = []
            o = 0
            for i in range(xr):
                if i in red:
                    m.append(None)
                    if keep:
                        o += 1
                else:
                    m.append(o)
                    o += 1
            sep = [a for a in m if a is not None]
            return MappedRule(kind, in_shapes, out_shapes, attrs, [m], sep)
        if kind == "Conv" and x is not None and len(x) in (3, 4, 5) and in_shapes[1] is not None:
            return SpatialRule(kind, in_shapes, out_shapes, attrs)
        if kind in ("MaxPool", "AveragePool", "LpPool") and x is not None and len(x) >= 3:
            if len(out_shapes) > 1:
                return Rule(kind, in_shapes, out_shapes, attrs)
            ok = int(attrs.get("ceil_mode", 0)) == 0
            return SpatialRule(kind, in_shapes, out_shapes, attrs, spatial_ok=ok)
        if kind in ("MatMul",) and x is not None and len(x) >= 2 and in_shapes[1] is not None and len(in_shapes[1]) >= 2:
            return MatMulRule(kind, in_shapes, out_shapes, attrs)
        if kind == "Gemm":
            return GemmRule(kind, in_shapes, out_shapes, attrs)
        if kind == "Transpose":
            assert x is not None
            perm = [int(p) for p in attrs.get("perm", list(range(len(x)))[::-1])]
            m = [0] * len(x)
            for j, p in enumerate(perm):
                m[p] = j
            return MappedRule(kind, in_shapes, out_shapes, attrs, [m], range(r))
        if kind == "Gather":
            assert x is not None
            ax = _norm(int(attrs.get("axis", 0)), len(x))
            ri = len(in_shapes[1])  # type: ignore[arg-type]
            dm = [i if i < ax else (None if i == ax else i + ri - 1) for i in range(len(x))]
            im = [ax + j for j in range(ri)]
            return MappedRule(kind, in_shapes, out_shapes, attrs, [dm, im], range(r))
        if kind == "Pad" and 1 in const_inputs:
            assert x is not None
            pads = [int(v) for v in np.asarray(const_inputs[1]).reshape(-1)]
            axes = list(range(len(x)))
            if len(in_shapes) > 3 and in_shapes[3] is not None:
                if 3 not in const_inputs:
                    return Rule(kind, in_shapes, out_shapes, attrs)
                axes = [_norm(int(v), len(x)) for v in np.asarray(const_inputs[3]).reshape(-1)]
            padded = {a for j, a in enumerate(axes) if pads[j] != 0 or pads[j + len(axes)] != 0}
            m = [None if i in padded else i for i in range(len(x))]
            return MappedRule(kind, in_shapes, out_shapes, attrs, [m], [i for i in range(r) if i not in padded])
        if kind == "Resize" and x is not None and len(x) >= 3:
            # batch and channels (seed 000 para. 98), when they are not resized
            if out[0] != x[0] or out[1] != x[1]:
                return Rule(kind, in_shapes, out_shapes, attrs)
            maps = [[0, 1] + [None] * (r - 2)]
            sizes_given = len(in_shapes) > 3 and in_shapes[3] is not None
            if sizes_given and 3 not in const_inputs:
                return Rule(kind, in_shapes, out_shapes, attrs)
            if "axes" in attrs:
                return Rule(kind, in_shapes, out_shapes, attrs)

            def consts(o, _sz=sizes_given):
                if not _sz:
                    return {}
                s = np.asarray(const_inputs[3]).copy()
                for a in (0, 1):
                    lo, hi = o.get(a, (0, out[a]))
                    s[a] = hi - lo
                return {3: s}

            return MappedRule(kind, in_shapes, out_shapes, attrs, maps, [0, 1], consts=consts)
        if kind == "Expand" and x is not None:
            maps = broadcast_maps([x], r) + [None]

            def consts(o):
                return {1: np.array([o.get(a, (0, out[a]))[1] - o.get(a, (0, out[a]))[0] for a in range(r)], dtype=np.int64)}

            return MappedRule(kind, in_shapes, out_shapes, attrs, maps, range(r), consts=consts)
    except (KeyError, IndexError, TypeError, ValueError):
        pass
    return Rule(kind, in_shapes, out_shapes, attrs)


# --------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------


def enumerate_steps(rule: Rule, sizes: dict[int, int], kchunk: int) -> list[Step]:
    """Every step of a tiling, loops in the rule's axis order, reduction chunks inner."""
    segs = [rule.segments(a, sizes[a]) for a in rule.axes]
    ks: list[Range | None]
    if rule.k_extent and kchunk < rule.k_extent:
        ks = [(s, min(s + kchunk, rule.k_extent)) for s in range(0, rule.k_extent, kchunk)]
    else:
        ks = [None]
    steps = []
    for combo in itertools.product(*segs):
        out = dict(zip(rule.axes, combo))
        for k in ks:
            steps.append(rule.step(out, k))
    return steps


def _samples(rule: Rule, sizes: dict[int, int], kchunk: int) -> list[Step]:
    """The steps that bound the footprint: first and second tile along every axis."""
    picks = []
    for a in rule.axes:
        segs = rule.segments(a, sizes[a])
        picks.append(segs[:2])
    ks: list[Range | None] = [None]
    if rule.k_extent and kchunk < rule.k_extent:
        ks = [(0, kchunk), (kchunk, min(2 * kchunk, rule.k_extent))]
    out = []
    for which in (0, 1):
        o = {a: (p[which] if len(p) > which else p[0]) for a, p in zip(rule.axes, picks)}
        for k in ks:
            out.append(rule.step(o, k))
    return out


def plan(
    rule: Rule,
    need: Callable[[list[Step]], dict[str, int]],
    capacity: dict[str, int],
    soft_elems: int = 0,
) -> list[Step]:
    """Tile sizes for `rule` such that `need(steps)` (bytes per cache space for the
    worst of the steps) fits `capacity`; raises TilingError when even minimal tiles do
    not fit. `soft_elems` > 0 further splits outputs larger than that many elements
    (so that DMA and compute of successive tiles overlap)."""
    sizes = {a: rule.out_shape[a] for a in rule.axes}
    kchunk = rule.k_extent or 0

    def over(steps: list[Step]) -> float:
        n = need(steps)
        return max((n.get(s, 0) / capacity[s]) for s in capacity) if capacity else 0.0

    cur = over(_samples(rule, sizes, kchunk))
    guard = 0
    while cur > 1.0:
        guard += 1
        if guard > 400:
            break
        best = None
        cands: list[tuple[str, int, int]] = []
        for a in rule.prefer + [x for x in rule.axes if x not in rule.prefer]:
            ns = rule.shrink(a, sizes[a])
            if ns is not None and ns < sizes[a]:
                cands.append(("axis", a, ns))
        if rule.k_extent and kchunk > 1:
            cands.append(("k", -1, (kchunk + 1) // 2))
        for c in cands:
            s2 = dict(sizes)
            k2 = kchunk
            if c[0] == "axis":
                s2[c[1]] = c[2]
            else:
                k2 = c[2]
            v = over(_samples(rule, s2, k2))
            # prefer splitting output axes over the reduction (no re-accumulation)
            score = v * (1.02 if c[0] == "k" else 1.0)
            if best is None or score < best[0] - 1e-12:
                best = (score, v, s2, k2)
        if best is None:
            break  # every axis and the reduction are at their minimum
        _, cur, sizes, kchunk = best
    steps = enumerate_steps(rule, sizes, kchunk)
    if over(steps) > 1.0:
        n = need(steps)
        worst = max(capacity, key=lambda s: n.get(s, 0) / capacity[s])
        raise TilingError(
            f"even the smallest tile needs {n.get(worst, 0)} bytes of the "
            f"{worst} cache ({capacity[worst]} bytes)"
        )
    if soft_elems > 0:
        while True:
            elems = math.prod(sizes[a] for a in rule.axes) if rule.axes else 0
            rest = math.prod(d for i, d in enumerate(rule.out_shape) if i not in sizes)
            if not rule.axes or elems * rest <= soft_elems:
                break
            moved = False
            for a in rule.prefer:
                ns = rule.shrink(a, sizes[a])
                if ns is not None and ns < sizes[a]:
                    sizes[a] = ns
                    moved = True
                    break
            if not moved:
                break
        steps = enumerate_steps(rule, sizes, kchunk)
    return steps


# --------------------------------------------------------------------------------------
# Cost-based planning (MPU ops): fewest DMA cycles + best overlap
# --------------------------------------------------------------------------------------


@dataclass
class Cost:
    """What `plan_cost` needs to time a tiling (seed 000's T1/T2 per op).

    `in_bytes(j, box)` / `out_bytes(j, box)`: bytes one DMA of that box moves (0: not
    loaded); `transfer` the fixed cycles of one DMA; `bw` bytes per cycle over all DMA
    queues; `step` the fixed cycles of one compute instruction and `work` the compute
    cycles of the whole op on one unit; `units` the compute units the output tiles are
    spread over."""

    in_bytes: Callable[[int, Box], float]
    out_bytes: Callable[[int, Box], float]
    transfer: float
    bw: float
    step: float
    work: float
    dma_queues: int = 1
    units: int = 1
    # mapping-unit cycles to prepare one load of that input box (sparse weights whose
    # stride index is converted to the direct one): a third pipeline stage
    map_cycles: Callable[[int, Box], float] | None = None


def _chain(rule: Rule, a: int) -> list[int]:
    out = [rule.out_shape[a]]
    while True:
        ns = rule.shrink(a, out[-1])
        if ns is None or ns >= out[-1]:
            return out
        out.append(ns)


def _relevance(rule: Rule) -> tuple[list[set], int]:
    """For every input: the output axes (and -1: the reduction) whose change changes
    its box (probed with minimal tiles)."""
    base = {a: rule.segments(a, rule.min_size(a))[0] for a in rule.axes}
    kk = None
    if rule.k_extent > 1:
        kk = (0, 1)
    s0 = rule.step(base, kk)
    rel: list[set] = [set() for _ in s0.inputs]
    for a in rule.axes:
        segs = rule.segments(a, rule.min_size(a))
        if len(segs) < 2:
            continue
        o = dict(base)
        o[a] = segs[1]
        s1 = rule.step(o, kk)
        for j, (b0, b1) in enumerate(zip(s0.inputs, s1.inputs)):
            if b0 != b1:
                rel[j].add(a)
    if kk is not None:
        s1 = rule.step(base, (1, 2))
        for j, (b0, b1) in enumerate(zip(s0.inputs, s1.inputs)):
            if b0 != b1:
                rel[j].add(-1)
    return rel, len(s0.outputs)


def plan_cost(
    rule: Rule,
    need: Callable[[list[Step]], dict[str, int]],
    capacity: dict[str, int],
    cost: Cost,
    orders: list[list[int]] | None = None,
    max_candidates: int = 6000,
    kmin: int = 1,
    amin: dict[int, int] | None = None,
) -> list[Step] | None:
    """The tiling (tile sizes, reduction chunk and loop order) with the smallest
    estimated time among those that fit: DMA time = transfers x fixed cost + bytes /
    bandwidth, where an input is reloaded only when its box changes between
    consecutive steps (so the loop order decides which operand stays resident);
    compute time = steps x fixed cost + work; time = max(DMA, compute) + min(...)/steps
    (the pipeline's fill). With `cost.map_cycles` the mapping unit is a third stage M:
    time = max(D, M, C) + (D + M + C - max) / steps. Reduction chunks are at least
    `kmin` long (fewer, larger MPU instructions). None when nothing fits (the caller
    falls back to `plan`)."""
    axes = list(rule.axes)
    if not axes and not rule.k_extent:
        return None
    orders = orders or [axes]
    rel, nout = _relevance(rule)
    chains = {a: _chain(rule, a) for a in axes}
    for a, m in (amin or {}).items():
        if a in chains:
            keep = [c for c in chains[a] if c >= m]
            chains[a] = keep or chains[a][:1]
    kchain = [rule.k_extent]
    if rule.k_extent:
        while kchain[-1] > 1 and (kchain[-1] + 1) // 2 >= kmin:
            kchain.append((kchain[-1] + 1) // 2)
    combos: list[dict[int, int]] = [{}]
    for i, a in enumerate(axes):
        nxt = []
        for c in combos:
            for sz in chains[a]:
                d = dict(c)
                d[a] = sz
                nxt.append(d)
        combos = nxt
        if len(combos) * len(kchain) > max_candidates:
            break
    if len(combos) * len(kchain) > max_candidates:
        return None
    n_seg = {a: {sz: len(rule.segments(a, sz)) for sz in chains[a]} for a in axes}

    def over(steps: list[Step]) -> float:
        n = need(steps)
        return max((n.get(s, 0) / capacity[s]) for s in capacity)

    best = None
    for sizes in combos:
        for kc in kchain:
            nk = -(-rule.k_extent // kc) if rule.k_extent else 1
            counts = {a: n_seg[a][sizes[a]] for a in axes}
            T = math.prod(counts.values()) * nk
            # compute: output tiles spread over `units` compute units (reduction chunks
            # of one output tile stay on its unit); a cheap lower bound on the time
            # before the footprint check
            par = max(1, min(cost.units, T // nk))
            C = (T * cost.step + cost.work) / par
            if best is not None and C >= best[0]:
                continue
            samples = _samples(rule, sizes, kc if rule.k_extent else 0)
            if over(samples) > 1.0:
                continue
            s0 = samples[0]
            for order in orders:
                pos = {a: i for i, a in enumerate(order)}
                D = 0.0
                M = 0.0
                for j, box in enumerate(s0.inputs):
                    if box is None:
                        continue
                    b = cost.in_bytes(j, box)
                    if b <= 0:
                        continue
                    mc = cost.map_cycles(j, box) if cost.map_cycles is not None else 0.0
                    r = rel[j] if j < len(rel) else set()
                    if -1 in r and nk > 1:
                        loads = T  # the reduction loop is innermost
                    else:
                        last = max((pos[a] for a in r if a >= 0), default=-1)
                        loads = math.prod(counts[order[i]] for i in range(last + 1))
                    D += loads * (cost.transfer + b / cost.bw)
                    M += loads * mc
                ntiles = T // nk
                for j, box in enumerate(s0.outputs):
                    D += ntiles * (cost.transfer + cost.out_bytes(j, box) / cost.bw)
                D /= cost.dma_queues
                if M > 0:
                    top = max(D, M, C)
                    t = top + (D + M + C - top) / T
                else:
                    t = max(D, C) + min(D, C) / T
                if best is None or t < best[0]:
                    best = (t, dict(sizes), kc, list(order))
    if best is None:
        return None
    _, sizes, kc, order = best
    rule.axes = order
    steps = enumerate_steps(rule, sizes, kc if rule.k_extent else 0)
    if over(steps) > 1.0:
        return None
    return steps
