"""Tiling rules of the MPU ops and pooling: Conv (N, output channels group-aware,
rows/columns with their input halo as tile-local pads, input channels as an
accumulated reduction split), MaxPool/AveragePool/LpPool (N, C, rows/columns with
halo when ceil_mode is 0), MatMul and Gemm (batch axes, M, N, and K accumulated).

The planner prefers the frame (batch) axis, then the channels, then the rows
(docs/architecture.md, "Tiling").
"""

from __future__ import annotations

from nnx.tiling.boxes import Box, Step, full_box
from nnx.tiling.registry import tiling_rule
from nnx.tiling.rule import Rule

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
    """ONNX `pads` (begins then ends) with `auto_pad` resolved."""
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
        # frame (batch) first, then channels, then rows
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




@tiling_rule("Conv")
def conv_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Conv over 1-3 spatial axes with known weights shape; otherwise one tile."""
    x = in_shapes[0] if in_shapes else None
    if x is not None and len(x) in (3, 4, 5) and in_shapes[1] is not None:
        return SpatialRule(kind, in_shapes, out_shapes, attrs)
    return Rule(kind, in_shapes, out_shapes, attrs)


@tiling_rule("MaxPool", "AveragePool", "LpPool")
def pool_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Pooling: N and C; rows/columns with halo only when ceil_mode is 0. One tile
    with MaxPool's Indices output."""
    x = in_shapes[0] if in_shapes else None
    if x is None or len(x) < 3 or len(out_shapes) > 1:
        return Rule(kind, in_shapes, out_shapes, attrs)
    ok = int(attrs.get("ceil_mode", 0)) == 0
    return SpatialRule(kind, in_shapes, out_shapes, attrs, spatial_ok=ok)


@tiling_rule("MatMul")
def matmul_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """MatMul of operands of rank >= 2; a 1-D operand makes it one tile."""
    x = in_shapes[0] if in_shapes else None
    b = in_shapes[1] if len(in_shapes) > 1 else None
    if x is not None and len(x) >= 2 and b is not None and len(b) >= 2:
        return MatMulRule(kind, in_shapes, out_shapes, attrs)
    return Rule(kind, in_shapes, out_shapes, attrs)


@tiling_rule("Gemm")
def gemm_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Gemm: M, N and K accumulated."""
    return GemmRule(kind, in_shapes, out_shapes, attrs)
