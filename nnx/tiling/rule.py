"""Rule classes shared by the registered tiling rules: the whole-op rule (`Rule`),
inputs that follow the output through axis maps (`MappedRule`, elementwise ops,
normalisations, reductions, data movement) and pure copies (`CopyRule`).

A rule knows the op's output shape, its separable output axes (`axes`, loop order
outer -> inner), the order in which the planner prefers to halve them (`prefer`) and
the length of a reduction it may split into accumulated chunks (`k_extent`, 0: none);
`step(out, k)` is the tile of output ranges `out` (axis -> [lo, hi)) and reduction
chunk `k`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nnx.tiling.boxes import Box, Range, Step, full_box

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

