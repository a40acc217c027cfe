"""Tile splits (docs/mesh.md, "Schedules", "Tiles"): a convolution cut into r row
bands x c output-channel groups at once, for the latency schedule.

A channel split's parts each receive the whole input and load it into their caches,
which costs a layer its input bytes over a link and through one DMA whatever the
parts; a row split's parts each hold all the weights and compute 1/r of the MACs,
at most one part per output row. Part (b, j) of a tile split computes output rows
band b of output channels j: it reads only its band of input rows (with the
kernel's halo) of every input channel, and the weights of channels j, so it
receives about 1/r of the input and computes 1/(r c) of the MACs. Its result is
the tile (rows band b, channels j) of the value.

Parts are numbered b x c + j (`TileSplit.part`), so that folding (nnx/mesh/latency.py)
puts the c parts of one band side by side along the snake and the bands one after
another: a tiled conv reading a tiled value of as many bands finds the producers of
its band (and of the halo rows) on its own and neighbouring cores.

Readers of a tiled value:

* an elementwise op or batch norm whose activation operands are all tiled alike
  *follows* it: part p reads tile p of each (`can_follow_tiles`);
* a tiled conv reads, for each input channel group g, the tiles of group g
  overlapping its input rows (a tile only partly inside is sliced by its producer,
  as a row split's band), joins them along the rows (received in place: a strided
  view of one buffer) and multiplies them by the weights of (its channels j, input
  group g); the products are summed (no copy of the input);
* a pool, batch norm or depthwise conv that could follow a channel split reads it
  by channel groups (the partitioner's kind "groups"): part j joins group j of
  every band along the rows;
* any other reader reads the rows it needs (`window_pieces`) and joins them per
  channel group along the rows, then the groups along the channels.

The cost model (`tile_shape`): an op of one-core cycles T split into r x c parts
takes about T / (r c) of compute, plus its input band (the kernel's halo included)
over one NoC link and through one DMA into the caches, plus its weight slice (1 / c
of the weights) through the DMA. The (r, c) of least time within the parts its
work asks for is taken when it cuts both ways; otherwise the op is split as before
(rows or output channels alone).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.ir import Operation

from nnx.dialects import graph as g
from nnx.dialects.traits import Elementwise
from nnx.graph_queries import constant_op
from nnx.mesh.rows import ROW_AXIS, row_window

#: the channel axis of NCHW activations, the other axis a tile split cuts
CHANNEL_AXIS = 1


@dataclass(frozen=True)
class TileSplit:
    """A value cut into `bands` (k + 1 row offsets along ROW_AXIS) x `groups` (channel
    offsets along CHANNEL_AXIS); piece p = b x c + j holds rows band b of channels j."""

    bands: tuple[int, ...]
    groups: tuple[int, ...]
    combine: str = "concat"

    @property
    def r(self) -> int:
        return len(self.bands) - 1

    @property
    def c(self) -> int:
        return len(self.groups) - 1

    @property
    def k(self) -> int:
        return self.r * self.c

    def part(self, b: int, j: int) -> int:
        """The piece (part) number of band b, channel group j."""
        return b * self.c + j

    def coords(self, p: int) -> tuple[int, int]:
        """(band, channel group) of piece p."""
        return divmod(p, self.c)

    def extent(self, p: int, axis: int) -> tuple[int, int] | None:
        """The range piece p covers along `axis` (None: all of it)."""
        b, j = self.coords(p)
        if axis == ROW_AXIS:
            return self.bands[b], self.bands[b + 1]
        if axis == CHANNEL_AXIS:
            return self.groups[j], self.groups[j + 1]
        return None

    def fraction(self, p: int) -> float:
        """Piece p's share of the value's elements."""
        (a, b), (lo, hi) = self.extent(p, ROW_AXIS), self.extent(p, CHANNEL_AXIS)
        return (b - a) * (hi - lo) / (self.bands[-1] * self.groups[-1])

    def window(self, size: int, a: int, b: int, axis: int) -> list[tuple[int, int, int, bool]]:
        """The pieces that [a, b) along `axis` (`size` in all) lies in, as
        `partition.window_pieces` gives them: (piece, first, end, whole piece), in
        piece order (channel groups within a band)."""
        out = []
        for p in range(self.k):
            ext = self.extent(p, axis)
            lo, hi = (max(a, ext[0]), min(b, ext[1])) if ext is not None else (a, b)
            if lo < hi:
                out.append((p, lo, hi, (lo, hi) == (ext if ext is not None else (0, size))))
        return out


def tileable(op: Operation) -> bool:
    """A conv (one group, constant weights and bias) on N = 1 NCHW activations, whose
    input comes from another op: it may be tiled."""
    if not isinstance(op, g.ConvOp) or len(op.results) != 1 or int(op.attr("group", 1)) != 1:
        return False
    out = tuple(int(d) for d in op.results[0].type.get_shape())
    return len(out) == 4 and out[0] == 1 and constant_op(op.operands[0]) is None \
        and isinstance(op.operands[0].owner, Operation) \
        and all(constant_op(v) is not None for v in op.operands[1:])


def can_follow_tiles(op: Operation, in_shape: tuple[int, ...]) -> bool:
    """May `op` run tile by tile on operands tiled alike (same tiles for its result)?
    Elementwise ops of the operands' shape whose constants have one row (sliced by
    channels when they have a channel axis), and batch norm."""
    out = tuple(int(d) for d in op.results[0].type.get_shape()) if len(op.results) == 1 else ()
    if out != in_shape or len(out) != 4:
        return False
    if isinstance(op, g.BatchNormalizationOp):
        return True
    if not op.has_trait(Elementwise):
        return False
    for v in op.operands:
        if constant_op(v) is not None:
            cs = tuple(int(d) for d in v.type.get_shape())
            pad = (1,) * (4 - len(cs)) + cs
            if pad[ROW_AXIS] != 1 or pad[3] != 1 or pad[CHANNEL_AXIS] not in (1, out[CHANNEL_AXIS]):
                return False
    return True


def tile_time(op: Operation, cycles: float, r: int, c: int, in_bytes: int, w_bytes: int,
              link: float, dma: float) -> float:
    """Estimated cycles of `op` (one-core `cycles`) on r bands x c channel groups: its
    compute share, its input band (with the halo) over a link and through a DMA, its
    weight slice through a DMA (r = 1: an output-channel split, c = 1: rows)."""
    x = tuple(int(d) for d in op.operands[0].type.get_shape())
    out_rows = int(op.results[0].type.get_shape()[ROW_AXIS])
    band = math.ceil(out_rows / r)
    a, b, _, _ = row_window(op, 0, band) if r > 1 else (0, x[ROW_AXIS], 0, 0)
    band_bytes = in_bytes * (b - a) / x[ROW_AXIS]
    return cycles / (r * c) + band_bytes * (1.0 / link + 1.0 / dma) + w_bytes / c / dma


def tile_shape(op: Operation, cycles: float, parts: int, in_bytes: int, w_bytes: int,
               link: float, dma: float, max_bands: int | None = None) -> tuple[int, int] | None:
    """The (bands, channel groups) of least `tile_time` with at most `parts` parts
    (the op's share of the mesh) and at most `max_bands` bands (None: any), or None
    when the best cuts only one way (rows or channels alone: the partitioner's own
    choice stands)."""
    out = tuple(int(d) for d in op.results[0].type.get_shape())
    rows, chans = out[ROW_AXIS], out[CHANNEL_AXIS]
    best, best_t = None, math.inf
    for r in range(1, min(rows, parts, max_bands or rows) + 1):
        c = min(chans, parts // r)
        if c < 1:
            break
        t = tile_time(op, cycles, r, c, in_bytes, w_bytes, link, dma)
        if t < best_t:
            best, best_t = (r, c), t
    if best is None or best[0] == 1 or best[1] == 1:
        return None
    return best

