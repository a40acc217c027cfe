"""`lower-to-chip`: graph (+ sparse) ops of `func.func @main` -> one `chip.program`.

The result is a program for the device of seed 004 (claims 1-4: storage unit, DMA,
instruction cache and control unit, mapping unit, input neuron cache, weight cache,
operation unit, output cache) with the parallel unit types of seed 000 (para. 93: DAU
memory access, MPU convolution/matrix, VPU vector), as described by a target TOML:

* Storage (static allocation). Every tensor gets a fixed address in the storage unit
  `S`: constants (weights) first -- contiguous, so that nnx-translate writes them as
  one data image beside the assembly (`chip.const`) -- then the program inputs
  (`chip.input`), the intermediate tensors and the outputs (`chip.output`). Reshape,
  Flatten, Squeeze, Unsqueeze, Identity and inference Dropout are aliases (no code).
* Tiling (nnx/tiling.py, seed 000 paras. 88-98). Every op becomes tiles whose
  operands fit the caches: an output box, the input windows it needs, the tile-local
  ONNX attributes; reductions of Conv/MatMul/Gemm that do not fit are split into
  chunks accumulated in the output cache (`acc`). An op whose minimal tile does not
  fit is a PassError naming the op.
* Per tile: DAU `LOAD`s of the input windows from `S` into the input neuron cache `N`
  (first operand) and the weight cache `W` (the others), one MPU (Conv, MatMul, Gemm,
  ... seed 000 para. 93) or VPU (everything else) instruction into the output cache
  `O`, and a DAU `STORE` back to `S`. Cache addresses are static: each operand has
  two buffers (double buffering, `double-buffer=true`), so the DMA of tile t+1 runs
  while tile t computes; an operand whose window does not change (weights along the
  rows of a conv, B along the rows of a matmul) stays loaded. The program order is
  software-pipelined: loads(t+1) are issued before store(t).
* On-chip chaining (`chain=true`, the default). A result that fits stays *resident*
  in the output cache (or the neuron cache): its tiles are computed in place into one
  buffer (a top-down heap per cache, `CacheHeap`; the bottom 1/8 and everything below
  the lowest resident is left to the ops' slots), consumers read their windows from it
  directly (MPU/VPU operands may be in any cache: no STORE, no LOAD, no MOVE), and it is
  freed after its last reader (liveness over the op order; aliases share the buffer).
  Graph outputs are written back (one STORE) when complete. A result that does not fit evicts residents used
  later than it (evict = one STORE); an op whose tiles do not fit beside the residents
  is retried with its result in storage, then after evicting the residents it does not
  read, then after evicting all (the per-op path). Conv -> depthwise Conv -> Conv
  chains whose expanded tensor is too large (inverted-residual blocks) are computed
  per group of expanded channels (`try_group_chain`). Consecutive ops' working sets
  rotate over up to `ROTATE` regions of the free cache space, so the next ops' weights
  are prefetched while this one computes.
* Synchronisation. Every instruction's cache byte ranges (and the storage tensors it
  touches) are tracked; a read-after-write, write-after-read or write-after-write
  between instructions of *different* units becomes `SIGNAL` after the producer and
  `WAIT` before the consumer on a fresh token, unless the consumer's unit already
  knows (transitively, by vector clocks) that the producer has finished. Units thus
  wait only on their real dependencies (seed 000 para. 110: waits are the exception).
  Tiles of resident buffers also carry their element box: disjoint boxes whose strided
  byte spans interleave do not depend on each other.
* Sparse ops (seed 004). `sparse.fc` / `sparse.matmul` / `sparse.conv` with constant
  weights: per weight tile the *surviving* weights are stored compacted, beside their
  connection data (claim 6: direct index = one 0/1 flag per weight, or stride index =
  distances between kept weights, appended to the values: one constant, one DMA);
  the DMA moves only those and the weight cache holds them packed (claims 5, 21); for
  the stride form the mapping unit `CONVERT`s the index to a direct one (claims 9-10);
  the MPU reads the packed values (1-D source #1) with that full-shape direct index as
  `wmask` (no EXPAND), so MACs on pruned pairs are skipped (reported as
  `macs_skipped`, claim 12: one unit for dense and sparse). Neuron connection data
  (`sparse.connect` of the activations, combined with the weights': claims 7-8,
  18-19) become a mapping-unit `CONN` on the loaded neuron tile, passed as `nmask`:
  a pair is computed only when both the neuron and the weight survive.

* Embedding lookups: Gather along axis 0 of a tensor in storage is indirect DMA
  (`GATHER`) of the rows the indices name (`lower_gather`).
* Linear layers: MatMul by a constant [K, N] weight + Add of a constant bias along N
  is one MPU Gemm with the bias as C (`bias_gemm`).
* Scheduling (`schedule=true`): the instruction DAG (the dependencies above, kept
  exactly per instruction) is ordered by nnx/schedule.py -- the emitted order or a
  list schedule, whichever the target's cost model (seed 000) times faster -- and
  the SIGNAL/WAITs are derived from that order.

Options: `target` (path of a target TOML; default: the embedded default target),
`chain` (default true; false = every result STOREd to storage and LOADed back),
`schedule` (default true; false = the emitted op-by-op order),
`double-buffer` (default true), `max-tile-elements` (split output tiles above this
many elements even when they fit, so DMA and compute overlap; 0 = the target's
`tiling.vpu_elements` x 4, -1 = never).

    nnx-opt m.mlir -p 'lower-to-chip{target=targets/default.toml}'
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError
from nnx.graph_queries import sole_user
from nnx.sim.isa import MPU_KINDS, Instr, Tile
from nnx.tiling import (
    Box,
    Cost,
    plan_cost,
    CopyRule,
    Step,
    TilingError,
    box_shape,
    enumerate_steps,
    full_box,
    plan,
    rule_for,
)

ALIGN = 64
ROTATE = 4  # most working-set regions consecutive ops rotate over (prefetch depth)
MAX_DEPTH = 8  # most buffers of a per-tile weight slot (prefetch depth, scheduled programs)
PLAN_UNITS = 2  # compute units the MPU tiling is planned for (see Lowering.plan_mpu)
_DATA_BASE = 1 << 44  # data-region addresses before relocation behind the constants

ALIAS_KINDS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})


def _align(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


def _dtype_name(t) -> str:
    from nnx.dialects.chip import type_name

    name = type_name(t.element_type)
    if name is None:
        raise ValueError(f"element type {t.element_type} is not supported by the chip")
    return name


def _py(v: Any) -> Any:
    """ONNX attribute value -> JSON-able Python (the assembly prints parameters as JSON)."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, (list, tuple)):
        return [_py(x) for x in v]
    return v


def _sym(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    if not s or not (s[0].isalpha() or s[0] == "_"):
        s = "_" + s
    return s


@dataclass
class Tensor:
    """A tensor in the storage unit."""

    offset: int
    shape: tuple[int, ...]
    dtype: str
    key: tuple[int, int] | None  # the allocation (dependency tracking granule)
    space: str = "S"  # "S", or the cache holding a resident (chained) tensor
    # element strides of a permuted view (a Transpose as an alias); None: row-major
    strides: tuple[int, ...] | None = None

    @property
    def resident(self) -> bool:
        return self.space != "S"

    def access(self) -> tuple:
        """The Stream access of the whole tensor."""
        if self.space == "S":
            return ("S", self.key)
        return (self.space, self.offset, self.offset + max(self.nbytes, 1))

    @property
    def itemsize(self) -> int:
        return np.dtype(_NP[self.dtype]).itemsize

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize

    def view(self, shape: tuple[int, ...]) -> "Tensor":
        if self.strides is not None and tuple(shape) != self.shape:
            raise ValueError("internal: reshape of a permuted view")
        return Tensor(self.offset, tuple(shape), self.dtype, self.key, self.space, self.strides)

    def row_major(self) -> tuple[int, ...]:
        """Element strides (the permuted ones for a Transpose view)."""
        if self.strides is not None:
            return self.strides
        strides = []
        acc = 1
        for d in reversed(self.shape):
            strides.append(acc)
            acc *= d
        return tuple(reversed(strides))

    def permuted(self, perm: list[int]) -> "Tensor":
        """Transpose as a view: no data moves, consumers read strided tiles."""
        st = self.row_major()
        return Tensor(self.offset, tuple(self.shape[p] for p in perm), self.dtype, self.key, self.space,
                      tuple(st[p] for p in perm))

    def tile(self, box: Box) -> Tile:
        """The tile of a box of this tensor in its space (strided when not contiguous)."""
        strides = self.row_major()
        off = self.offset + sum(s * st for (s, _, _), st in zip(box, strides)) * self.itemsize
        shape = box_shape(box)
        el_strides = tuple(st * step for (_, _, step), st in zip(box, strides))
        t = Tile(self.space, off, shape, self.dtype, el_strides)
        if t.contiguous:
            t = Tile(self.space, off, shape, self.dtype, None)
        return t


_NP = {
    "f32": np.float32, "f16": np.float16, "f64": np.float64, "i8": np.int8, "i16": np.int16,
    "i32": np.int32, "i64": np.int64, "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32,
    "ui64": np.uint64, "i1": np.bool_,
}


# --------------------------------------------------------------------------------------
# Instruction stream with dependency tracking and SIGNAL/WAIT insertion
# --------------------------------------------------------------------------------------


class Stream:
    """Instructions in program order with their exact dependencies; `program` orders
    them (as emitted, or list-scheduled: nnx/schedule.py) and inserts SIGNAL/WAIT on
    the cross-unit dependencies."""

    def __init__(self) -> None:
        self.instrs: list[Instr] = []
        self.units: list[str] = []
        self.preds: list[list[int]] = []
        # cache records: [lo, hi, writer index | None, reader indices, box]
        self.cache_recs: dict[str, list[list]] = {"N": [], "W": [], "O": []}
        # storage records: key -> [writer index | None, reader indices]
        self.s_recs: dict[tuple[int, int], list] = {}

    @staticmethod
    def _ov(a, b) -> bool:
        """May two boxes of resident buffers share an element? (None: not a box)"""
        if a is None or b is None or a[0] != b[0] or a[1] != b[1]:
            return True
        return all(s1 < e2 and s2 < e1 for (s1, e1), (s2, e2) in zip(a[2], b[2]))

    @staticmethod
    def _covers(a, b) -> bool:
        """Does box `a` hold every element of box `b`?"""
        if a is None or b is None or a[0] != b[0] or a[1] != b[1]:
            return False
        return all(s1 <= s2 and e2 <= e1 for (s1, e1), (s2, e2) in zip(a[2], b[2]))

    def emit(self, ins: Instr, reads: list[tuple], writes: list[tuple]) -> int:
        """Append `ins`; reads/writes: ('N'|'W'|'O', lo, hi[, box]) or ('S', key).

        `box` (base, buffer shape, per-dim [start, end) element bounds) narrows a
        strided access of a resident buffer: two boxes of one buffer that do not
        intersect are independent although their byte spans interleave."""
        idx = len(self.instrs)
        deps: set[int] = set()
        # ---- dependencies: read-after-write, write-after-read, write-after-write ------
        for acc in reads:
            if acc[0] == "S":
                rec = self.s_recs.get(acc[1])
                if rec is not None and rec[0] is not None:
                    deps.add(rec[0])
                continue
            lo, hi = acc[1], acc[2]
            bx = acc[3] if len(acc) > 3 else None
            for rec in self.cache_recs[acc[0]]:
                if rec[0] < hi and lo < rec[1] and rec[2] is not None and self._ov(rec[4], bx):
                    deps.add(rec[2])
        for acc in writes:
            if acc[0] == "S":
                rec = self.s_recs.get(acc[1])
                if rec is not None:
                    if rec[0] is not None:
                        deps.add(rec[0])
                    deps.update(rec[1])
                continue
            lo, hi = acc[1], acc[2]
            bx = acc[3] if len(acc) > 3 else None
            for rec in self.cache_recs[acc[0]]:
                if rec[0] < hi and lo < rec[1] and self._ov(rec[4], bx):
                    if rec[2] is not None:
                        deps.add(rec[2])
                    deps.update(rec[3])
        deps.discard(idx)
        self.instrs.append(ins)
        self.units.append(ins.unit)
        self.preds.append(sorted(deps))
        # ---- update the records -------------------------------------------------------
        for acc in reads:
            if acc[0] == "S":
                self.s_recs.setdefault(acc[1], [None, []])[1].append(idx)
                continue
            lo, hi = acc[1], acc[2]
            bx = acc[3] if len(acc) > 3 else None
            for rec in self.cache_recs[acc[0]]:
                if rec[0] < hi and lo < rec[1] and self._ov(rec[4], bx):
                    rec[3].append(idx)
        for acc in writes:
            if acc[0] == "S":
                self.s_recs[acc[1]] = [idx, []]
                continue
            lo, hi = acc[1], acc[2]
            bx = acc[3] if len(acc) > 3 else None
            recs = self.cache_recs[acc[0]]
            new = []
            for rec in recs:
                if rec[0] < hi and lo < rec[1] and self._ov(rec[4], bx):
                    if bx is not None:
                        # a box does not write every byte of its span: drop only
                        # the records it covers
                        if not self._covers(bx, rec[4]):
                            new.append(rec)
                        continue
                    if rec[0] < lo:
                        new.append([rec[0], lo, rec[2], list(rec[3]), rec[4]])
                    if hi < rec[1]:
                        new.append([hi, rec[1], rec[2], list(rec[3]), rec[4]])
                else:
                    new.append(rec)
            new.append([lo, hi, idx, [], bx])
            self.cache_recs[acc[0]] = new
        return idx

    def program(self, order: list[int] | None = None) -> list[Instr]:
        """The instructions in `order` (default: as emitted; it must be topological)
        with SIGNAL after a producer and WAIT before a consumer on another unit, on a
        fresh token, unless the consumer's unit already knows (transitively, by vector
        clocks over the unit queues) that the producer has finished."""
        n = len(self.instrs)
        order = list(range(n)) if order is None else order
        qpos = [0] * n
        count: dict[str, int] = {}
        for i in order:
            u = self.units[i]
            qpos[i] = count.get(u, 0)
            count[u] = qpos[i] + 1
        know: dict[str, dict[str, int]] = {}
        ivc: list[dict[str, int] | None] = [None] * n
        signals: dict[int, list[str]] = {}
        waits: dict[int, list[str]] = {}
        ntok = 0
        for i in order:
            u = self.units[i]
            k = know.setdefault(u, {})
            need: dict[str, int] = {}
            for p in self.preds[i]:
                up = self.units[p]
                if up != u and (up not in need or qpos[p] > qpos[need[up]]):
                    need[up] = p
            for up in sorted(need):
                p = need[up]
                if k.get(up, -1) >= qpos[p]:
                    continue
                tok = f"t{ntok}"
                ntok += 1
                signals.setdefault(p, []).append(tok)
                waits.setdefault(i, []).append(tok)
                for kk, vv in ivc[p].items():  # type: ignore[union-attr]
                    if k.get(kk, -1) < vv:
                        k[kk] = vv
                k[up] = qpos[p]
            ivc[i] = dict(k)
            k[u] = qpos[i]
        out: list[Instr] = []
        for i in order:
            ins = self.instrs[i]
            for tok in waits.get(i, ()):
                out.append(Instr(ins.unit, "WAIT", token=tok))
            out.append(ins)
            for tok in signals.get(i, ()):
                out.append(Instr(ins.unit, "SIGNAL", token=tok))
        return out


# --------------------------------------------------------------------------------------
# Cache layout of one op
# --------------------------------------------------------------------------------------


@dataclass
class Slot:
    """One operand of an op in a cache: `nbuf` buffers of `size` bytes."""

    space: str
    size: int
    nbuf: int
    base: int = 0
    cur: Any = None  # what the current buffer holds
    which: int = -1
    cur_tile: Any = None

    def next(self) -> int:
        self.which = (self.which + 1) % self.nbuf
        return self.base + self.which * _align(self.size)

    def current(self) -> int:
        return self.base + max(self.which, 0) * _align(self.size)


class Layout:
    def __init__(self, base: dict[str, int] | None = None) -> None:
        self.top = {"N": 0, "W": 0, "O": 0}
        if base:
            self.top.update(base)

    def add(self, slot: Slot) -> Slot:
        slot.base = self.top[slot.space]
        self.top[slot.space] += slot.nbuf * _align(max(slot.size, 1))
        return slot


class CacheHeap:
    """Resident (chained) tensors in one cache: allocated top-down, so that an op's
    working set (its slots, laid out from address 0) gets everything below `floor()`."""

    def __init__(self, cap: int, next_fit: bool = False) -> None:
        self.cap = cap
        self.live: dict[Any, tuple[int, int]] = {}  # root value -> [lo, hi)
        # next fit: search downwards from the last allocation first, so a buffer
        # freed a moment ago (whose last readers may still be running) is reused
        # last: fewer write-after-read waits between consecutive ops
        self.next_fit = next_fit
        self.cursor = cap

    def floor(self) -> int:
        return min((lo for lo, _ in self.live.values()), default=self.cap)

    def alloc(self, root, nbytes: int, limit: int = 0) -> int | None:
        """The highest free gap of `nbytes` (aligned) at or above `limit` (below the
        cursor first, with next fit)."""
        n = _align(max(nbytes, 1))
        spans = sorted(self.live.values(), key=lambda r: -r[0])
        tops = [min(self.cursor, self.cap), self.cap] if self.next_fit else [self.cap]
        for top in tops:
            hi = top
            for lo2, hi2 in spans + [(0, 0)]:
                if lo2 >= top:
                    continue
                hi = min(hi, top)
                lo = (hi - n) // ALIGN * ALIGN
                if hi2 <= lo and lo >= limit:
                    self.live[root] = (lo, lo + n)
                    self.cursor = lo
                    return lo
                hi = min(hi, lo2)
        return None

    def free(self, root) -> None:
        self.live.pop(root, None)


# --------------------------------------------------------------------------------------
# The lowering
# --------------------------------------------------------------------------------------


@dataclass
class SparseInfo:
    """How a sparse compute op's weight (input 1) and neurons (input 0) are masked."""

    weight_mask: np.ndarray | None  # compile-time weight connection data (weight layout)
    weight_value: np.ndarray | None
    form: str  # "direct" | "stride"
    weight_threshold: float
    neuron_threshold: float | None

    def __post_init__(self) -> None:
        self._sat = None
        self._grid: dict = {}
        m = self.weight_mask
        self.density = 1.0 if m is None or m.size == 0 else float(np.count_nonzero(m)) / m.size

    def _table(self) -> np.ndarray:
        if self._sat is None:
            m = np.asarray(self.weight_mask)
            c = m.reshape(m.shape[0], m.shape[1], -1).sum(-1) if m.ndim >= 2 else m.reshape(1, -1)
            sat = np.zeros((c.shape[0] + 1, c.shape[1] + 1), np.int64)
            sat[1:, 1:] = c.cumsum(0).cumsum(1)
            self._sat = sat
        return self._sat

    def max_nnz(self, boxes: list[Box]) -> int:
        """Most surviving weights in any of `boxes` -- and in any box of the grid of the
        first box's size (planning sees sample tiles only)."""
        m = self.weight_mask
        assert m is not None
        if m.ndim < 2:
            return int(np.count_nonzero(m))
        sat = self._table()
        a0 = np.array([b[0][0] for b in boxes])
        a1 = a0 + np.array([b[0][1] for b in boxes])
        b0 = np.array([b[1][0] for b in boxes])
        b1 = b0 + np.array([b[1][1] for b in boxes])
        best = int((sat[a1, b1] - sat[a0, b1] - sat[a1, b0] + sat[a0, b0]).max())
        na, nb = boxes[0][0][1], boxes[0][1][1]
        g = self._grid.get((na, nb))
        if g is None:
            d0, d1 = sat.shape[0] - 1, sat.shape[1] - 1
            ga0 = np.arange(0, d0, na)
            gb0 = np.arange(0, d1, nb)
            ga1 = np.minimum(ga0 + na, d0)
            gb1 = np.minimum(gb0 + nb, d1)
            g = int((sat[np.ix_(ga1, gb1)] - sat[np.ix_(ga0, gb1)] - sat[np.ix_(ga1, gb0)] + sat[np.ix_(ga0, gb0)]).max())
            self._grid[(na, nb)] = g
        return max(best, g)


def _bcast_box(shape: tuple[int, ...], out_box: Box) -> Box:
    """The box of a (right-aligned, broadcast) operand of `shape` for an output box."""
    off = len(out_box) - len(shape)
    return tuple((0, 1, 1) if d == 1 else (out_box[off + i][0], out_box[off + i][1], 1) for i, d in enumerate(shape))


class Lowering:
    def __init__(self, target, double_buffer: bool, max_tile: int, chain: bool = True, schedule: bool = True):
        self.target = target
        self.schedule = schedule
        self.double_buffer = double_buffer
        self.max_tile = max_tile
        self.chain = chain
        self.caps = {s: target.cache_bytes(s) for s in ("N", "W", "O")}
        # on-chip chaining: resident tensors (by root value: aliases share the root)
        self.heaps = {s: CacheHeap(self.caps[s], next_fit=schedule) for s in ("O", "N")}
        self.res: dict[Any, str] = {}  # root -> space
        self.root: dict[SSAValue, SSAValue] = {}
        self.uses: dict[Any, list[int]] = {}  # root -> op indices reading it
        self.must_store: set = set()
        self.idx = 0
        self.flip = 0
        self.stream = Stream()
        self.const_top = 0
        self.data_top = _DATA_BASE
        self.tensors: dict[SSAValue, Tensor] = {}
        self.consts: list[tuple[str, Tensor, Any]] = []  # (name, tensor, value attr)
        self.const_cache: dict[Any, Tensor] = {}
        self.inputs: list[tuple[str, Tensor]] = []
        self.outputs: list[tuple[str, Tensor]] = []
        self.names: set[str] = set()
        self.fused: set[Operation] = set()
        # epilogue operands read through a view of the op's output (bias_gemm)
        self.epi_views: dict[tuple[Operation, int], tuple[int, ...]] = {}
        # output tile shape of each resident result (follow_tiles)
        self.tile_shape: dict[Any, tuple[int, ...]] = {}
        dau = target.unit("DAU").count
        self.load_unit = "DAU0"
        self.store_unit = f"DAU{dau - 1}"
        self.mpu = "MPU0"
        self.vpu = "VPU0"
        self.map = "MAP0"
        self.counts = {u: (target.unit(u).count if u != "MAP" else target.mapping.count) for u in ("DAU", "MPU", "VPU", "MAP")}
        self.rr = {u: 0 for u in self.counts}

    def next_unit(self, ut: str) -> str:
        """Round-robin over the target's instances of a unit type."""
        i = self.rr[ut]
        self.rr[ut] = (i + 1) % self.counts[ut]
        return f"{ut}{i}"

    def next_load_unit(self) -> str:
        return self.next_unit("DAU")

    # ---- names and storage ----------------------------------------------------------
    def fresh(self, base: str) -> str:
        s = _sym(base)
        name, n = s, 1
        while name in self.names:
            name = f"{s}_{n}"
            n += 1
        self.names.add(name)
        return name

    def alloc_data(self, shape, dtype: str) -> Tensor:
        nbytes = max(math.prod(shape) * np.dtype(_NP[dtype]).itemsize, 1)
        off = self.data_top
        self.data_top = _align(off + nbytes)
        return Tensor(off, tuple(shape), dtype, (off, off + nbytes))

    def alloc_const(self, value_attr, shape, dtype: str, hint: str) -> Tensor:
        nbytes = max(math.prod(shape) * np.dtype(_NP[dtype]).itemsize, 1)
        off = self.const_top
        self.const_top = _align(off + nbytes)
        t = Tensor(off, tuple(shape), dtype, (off, off + nbytes))
        self.consts.append((self.fresh(hint), t, value_attr))
        return t

    def const_array(self, arr: np.ndarray, hint: str = "c") -> Tensor:
        """A constant in storage holding `arr` (deduplicated)."""
        from nnx.dialects.graph import dense_attr
        from nnx.resources import register_array

        from nnx.dialects.chip import type_name

        arr = np.ascontiguousarray(arr)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        t = self.const_cache.get(key)
        if t is not None:
            return t
        attr = dense_attr(arr) if arr.size <= 16 else register_array(arr, hint=hint)
        dt = type_name(attr.get_type().element_type)
        t = self.alloc_const(attr, arr.shape, dt, hint)
        self.const_cache[key] = t
        return t

    def rootof(self, v: SSAValue):
        return self.root.get(v, v)

    def tensor(self, v: SSAValue, op: Operation | None = None) -> Tensor:
        """Where `v` is now: its cache buffer when resident, else its storage."""
        t = self.storage(v, op)
        sp = self.res.get(self.rootof(v))
        if sp is not None:
            lo, _ = self.heaps[sp].live[self.rootof(v)]
            return Tensor(lo, t.shape, t.dtype, None, sp, t.strides)
        return t

    def storage(self, v: SSAValue, op: Operation | None = None) -> Tensor:
        t = self.tensors.get(v)
        if t is not None:
            return t
        from nnx.dialects.graph import ConstantOp

        owner = v.owner
        if isinstance(owner, ConstantOp):
            ty = v.type
            shape = tuple(ty.get_shape())  # type: ignore[attr-defined]
            dt = _dtype_name(ty)
            hint = "w"
            loc = getattr(owner, "location", None)
            m = re.fullmatch(r'loc\("([^"]+)"\)', str(loc)) if loc is not None else None
            if m:
                hint = m.group(1)
            t = self.alloc_const(owner.value, shape, dt, hint)
            self.tensors[v] = t
            return t
        raise PassError(f"lower-to-chip: operand of {op.name if op else 'an op'} has no storage", op)

    # ---- op dispatch ----------------------------------------------------------------
    def run(self, func) -> None:
        from xdsl.dialects import func as fdialect

        from nnx.dialects.graph import ConstantOp, GraphOp

        block = func.body.block
        self.returned = set()
        for o in block.ops:
            if isinstance(o, fdialect.ReturnOp):
                self.returned.update(o.arguments)
        arg_attrs = func.arg_attrs.data if func.arg_attrs is not None else None
        for i, arg in enumerate(block.args):
            name = f"arg{i}"
            if arg_attrs is not None and i < len(arg_attrs):
                n = arg_attrs[i].data.get("nnx.name")
                if isinstance(n, StringAttr):
                    name = n.data
            t = self.alloc_data(tuple(arg.type.get_shape()), _dtype_name(arg.type))  # type: ignore[attr-defined]
            self.tensors[arg] = t
            self.inputs.append((self.fresh(name), t))
        # the outputs' names are reserved before any constant is named (a constant
        # must not take a graph output's name)
        res_attrs = func.res_attrs.data if func.res_attrs is not None else None
        ret = next((o for o in block.ops if isinstance(o, fdialect.ReturnOp)), None)
        out_names = []
        for i in range(len(ret.arguments) if ret is not None else 0):
            name = f"out{i}"
            if res_attrs is not None and i < len(res_attrs):
                n = res_attrs[i].data.get("nnx.name")
                if isinstance(n, StringAttr):
                    name = n.data
            out_names.append(self.fresh(name))
        if self.schedule:
            self.hoist_acc_operands(block)
        self.liveness(block)
        for idx, op in enumerate(block.ops):
            self.idx = idx
            if isinstance(op, ConstantOp) or op in self.fused:
                continue
            self.release_dead()
            if isinstance(op, fdialect.ReturnOp):
                for i, v in enumerate(op.arguments):
                    self.outputs.append((out_names[i], self.storage(v, op)))
                continue
            try:
                if op.name.startswith("sparse."):
                    self.lower_sparse(op)
                elif isinstance(op, GraphOp):
                    self.lower_graph(op)
                else:
                    raise PassError(f"lower-to-chip: cannot lower {op.name}", op)
            except TilingError as e:
                raise PassError(f"lower-to-chip: {op.name} does not fit the caches: {e}", op) from None
            except ValueError as e:
                raise PassError(f"lower-to-chip: {op.name}: {e}", op) from None

    # ---- on-chip chaining ------------------------------------------------------------
    def liveness(self, block) -> None:
        """Roots of alias chains, the op indices that read each root, and the roots that
        must reach storage (graph outputs)."""
        from xdsl.dialects import func as fdialect

        from nnx.dialects.graph import GraphOp

        for idx, op in enumerate(block.ops):
            if isinstance(op, fdialect.ReturnOp):
                # graph outputs: written back to storage as soon as they are complete
                # (and still resident for their other readers)
                self.must_store.update(self.rootof(v) for v in op.arguments)
                continue
            if isinstance(op, GraphOp):
                kind = op.ONNX_TYPE
                outs = op.onnx_outputs()
                if kind in ALIAS_KINDS or (kind == "Dropout" and (len(outs) == 1 or not outs[1].uses)) or self.transpose_view(op):
                    ins = op.onnx_inputs()
                    if ins and ins[0] is not None and outs and outs[0] is not None:
                        # an alias reads nothing: its readers read the root
                        self.root[outs[0]] = self.rootof(ins[0])
                        continue
            for v in op.operands:
                self.uses.setdefault(self.rootof(v), []).append(idx)

    def next_use(self, root) -> int:
        for i in self.uses.get(root, ()):
            if i > self.idx:
                return i
        return 1 << 60

    def release_dead(self) -> None:
        """Free the buffers of resident tensors that no later op reads."""
        for r in [r for r in self.res if max(self.uses.get(r, [-1])) < self.idx]:
            self.heaps[self.res.pop(r)].free(r)

    def evict(self, root) -> None:
        """STORE a resident tensor to its storage (unless a graph output, already
        written back) and free its cache buffer."""
        if root not in self.must_store:
            self.write_back(root)
        self.heaps[self.res.pop(root)].free(root)

    def write_back(self, root) -> None:
        """One STORE of a resident tensor to its storage address."""
        sp = self.res[root]
        lo, _ = self.heaps[sp].live[root]
        st = self.storage(root)
        ct = Tensor(lo, st.shape, st.dtype, None, sp)
        full = full_box(st.shape)
        self.stream.emit(
            Instr(self.next_unit("DAU"), "STORE", [st.tile(full)], [ct.tile(full)]),
            [ct.access()], [("S", st.key)],
        )

    def make_resident(self, v: SSAValue, protect: set) -> bool:
        """Give `v` (a fresh result) a cache buffer, evicting residents used furthest in
        the future (never those in `protect`) when that makes room."""
        if not self.chain or not self.uses.get(v):
            return False
        t = self.storage(v)
        n = t.nbytes
        for sp in ("O", "N"):
            if _align(n) > self.caps[sp] - self.reserve(sp):
                continue  # leave room for the working sets
            lo = self.heaps[sp].alloc(v, n, self.reserve(sp))
            if lo is not None:
                self.res[v] = sp
                return True
        # evict residents that are needed later than `v` is
        mine = self.next_use(v)
        for sp in ("O", "N"):
            if _align(n) > self.caps[sp] - self.reserve(sp):
                continue
            cands = sorted((r for r, s2 in self.res.items() if s2 == sp and r not in protect),
                           key=lambda r: -self.next_use(r))
            for r in cands:
                if self.next_use(r) <= mine:
                    break
                self.evict(r)
                lo = self.heaps[sp].alloc(v, n, self.reserve(sp))
                if lo is not None:
                    self.res[v] = sp
                    return True
        return False

    @staticmethod
    def box_acc(t: Tensor, box: Box, ct: Tile) -> tuple:
        """The Stream access of the tile `ct` of `box` of a resident tensor."""
        bounds = tuple((s, s + (n - 1) * st + 1) for s, n, st in box)
        return (ct.space, ct.offset, ct.end, (t.offset, t.shape, bounds))

    def reserve(self, sp: str) -> int:
        """Bytes at the bottom of a cache kept for the working sets (op slots): 1/8 of
        it (an op that needs more evicts residents, see lower_compute)."""
        return self.caps[sp] // 8

    def drop_resident(self, v: SSAValue) -> None:
        sp = self.res.pop(v, None)
        if sp is not None:
            self.heaps[sp].free(v)

    def work_caps(self) -> dict[str, int]:
        caps = dict(self.caps)
        for sp, h in self.heaps.items():
            caps[sp] = h.floor()
        return caps

    def result_tensor(self, v: SSAValue) -> Tensor:
        t = self.alloc_data(tuple(v.type.get_shape()), _dtype_name(v.type))  # type: ignore[attr-defined]
        self.tensors[v] = t
        return t

    def lower_graph(self, op) -> None:
        kind = op.ONNX_TYPE
        ins = op.onnx_inputs()
        outs = op.onnx_outputs()
        attrs = {k: _py(v) for k, v in op.onnx_attributes().items()}
        if any(o is None for o in outs):
            raise PassError(f"lower-to-chip: {op.name} with an absent optional output in the middle is not supported", op)
        if self.transpose_view(op):
            src = self.storage(ins[0], op)
            r = len(src.shape)
            perm = [int(p) for p in attrs.get("perm", list(range(r))[::-1])]
            self.tensors[outs[0]] = src.permuted(perm)
            return
        # aliases: same bytes, new shape
        if kind in ALIAS_KINDS or (kind == "Dropout" and (len(outs) == 1 or not outs[1].uses)):
            src = self.storage(ins[0], op)  # the storage view; residency goes by the root
            for o in outs[:1]:
                self.tensors[o] = src.view(tuple(o.type.get_shape()))
            if len(outs) > 1:
                # the (unused) mask of an inference Dropout: all true
                self.tensors[outs[1]] = self.const_array(np.ones(outs[1].type.get_shape(), np.bool_), "mask")
            return
        for v in ins:
            if v is not None:
                self.tensor(v, op)
        if kind == "Concat":
            return self.lower_concat(op, ins, outs, attrs)
        if kind == "Split":
            return self.lower_split(op, ins, outs, attrs)
        if kind == "Slice" and self.lower_slice(op, ins, outs, attrs):
            return
        if kind == "Gather" and self.lower_gather(op, ins, outs, attrs):
            return
        if kind == "Conv" and self.try_group_chain(op):
            return
        epi = self.epilogue_chain(op, outs) if len(outs) == 1 else []
        bg = self.bias_gemm(ins[0], ins[1], epi) if kind == "MatMul" else None
        if bg is not None:
            gins, views, out_view, rest = bg
            last = rest[-1][0] if rest else epi[0][0]
            self.lower_compute(op, "Gemm", gins, [last.onnx_outputs()[0]], {}, None, views, out_view, epilogue=rest)
            return
        ai = self.acc_init(ins[0], ins[1], epi) if kind == "MatMul" and self.schedule else None
        if ai is not None:
            mins, rest = ai
            last = rest[-1][0] if rest else epi[0][0]
            self.lower_compute(op, kind, mins, [last.onnx_outputs()[0]], attrs, epilogue=rest)
            return
        if epi:
            self.lower_compute(op, kind, ins, [epi[-1][0].onnx_outputs()[0]], attrs, epilogue=epi)
            return
        self.lower_compute(op, kind, ins, outs, attrs)

    def transpose_view(self, op) -> bool:
        """Scheduled programs: is this Transpose an alias with permuted strides (no VPU
        pass)? Yes when every reader takes tiles of it as they are: compute ops that
        neither reshape their operands (aliases, Gemm/fc views) nor copy them, and it
        is not a graph output (outputs are stored row-major)."""
        from xdsl.dialects import func as fdialect

        from nnx.dialects import sparse as sd
        from nnx.dialects.graph import GraphOp

        if not self.schedule or not isinstance(op, GraphOp) or op.ONNX_TYPE != "Transpose" or op.after:
            return False
        out = op.onnx_outputs()[0]
        if out is None or not out.uses:
            return False
        for u in out.uses:
            o = u.operation
            if isinstance(o, fdialect.ReturnOp) or isinstance(o, sd.FcOp):
                return False
            if isinstance(o, GraphOp) and o.ONNX_TYPE in ALIAS_KINDS | {"Dropout", "Concat", "Split", "Slice", "Transpose", "Gather", "Conv"}:
                return False
            if not isinstance(o, (GraphOp, sd.MatMulOp, sd.ConvOp)):
                return False
        return True

    def epilogue_chain(self, op, outs) -> list:
        """Elementwise ops applied to `op`'s single result in the output cache before
        it is stored (the intermediate never goes to storage): each is the only user of
        the previous result, keeps its shape and type, and its other inputs are
        constants or tensors already computed (read by broadcasting: a bias, the
        shortcut of a residual add)."""
        from nnx.dialects.graph import ConstantOp, GraphOp
        from nnx.tiling import ELEMENTWISE

        chain = []
        v = outs[0]
        while True:
            uses = list(v.uses)
            if len(uses) != 1:
                break
            user = uses[0].operation
            if not isinstance(user, GraphOp) or user.ONNX_TYPE not in ELEMENTWISE or user.ONNX_TYPE == "Dropout":
                break
            if v in self.returned:
                break
            uins = user.onnx_inputs()
            uouts = user.onnx_outputs()
            if len(uouts) != 1 or uouts[0].type != v.type:
                break
            if sum(1 for x in uins if x is v) != 1:
                break
            consts = []
            ok = True
            for j, x in enumerate(uins):
                if x is v or x is None:
                    continue
                # constants, or tensors already in storage when `op` runs (e.g. the
                # shortcut of a residual add)
                if not isinstance(x.owner, ConstantOp) and x not in self.tensors:
                    ok = False
                    break
                xs = tuple(x.type.get_shape())
                vs = tuple(v.type.get_shape())
                if len(xs) > len(vs) or any(a != 1 and a != b for a, b in zip(xs[::-1], vs[::-1])):
                    ok = False
                    break
            if not ok:
                break
            pos = next(j for j, x in enumerate(uins) if x is v)
            attrs = {k: _py(a) for k, a in user.onnx_attributes().items()}
            chain.append((user, user.ONNX_TYPE, uins, pos, attrs))
            self.fused.add(user)
            v = uouts[0]
        return chain

    def epi_operand(self, user, j: int, x: SSAValue, op) -> Tensor:
        """Operand `j` of the epilogue op `user`, viewed like the output it is applied to."""
        t = self.tensor(x, op)
        vw = self.epi_views.get((user, j))
        return t if vw is None else t.view(vw)

    def bias_gemm(self, a: SSAValue, w: SSAValue, epi: list):
        """MatMul A[..., K] x W[K, N] followed by an Add of a constant bias along N (the
        Linear layers of exported transformers): the MPU computes it as Gemm(A as
        [M, K], W, bias) -- the bias initialises the accumulators, as Gemm's C and
        Conv's B already do (seed 000 para. 93: the MPU does the layer, the VPU only
        what the MPU cannot), instead of a VPU Add pass over the result. Returns (ins,
        views, out_view, epilogue left) or None. Epilogue ops after the Add stay
        fused when their other operands can be read through the [M, N] view; the rest
        are lowered as ops of their own."""
        from nnx.dialects.graph import ConstantOp

        ws = tuple(w.type.get_shape())
        xs = tuple(a.type.get_shape())
        if len(ws) != 2 or len(xs) < 2 or not epi or epi[0][1] != "Add":
            return None
        if self.storage(a).strides is not None:
            return None  # a Transpose view cannot be reshaped to [M, K]
        k, n = ws
        user, _, uins, pos, _ = epi[0]
        b = uins[1 - pos]
        if b is None or not isinstance(b.owner, ConstantOp) or b.type.element_type != w.type.element_type:
            return None
        bs = tuple(b.type.get_shape())
        if not bs or bs[-1] != n or any(d != 1 for d in bs[:-1]):
            return None
        m = math.prod(xs[:-1])
        out_full = (*xs[:-1], n)
        keep = []
        for e in epi[1:]:
            eu, _, euins, epos, _ = e
            ok = True
            vws = {}
            for j, x in enumerate(euins):
                if x is None or j == epos:
                    continue
                s2 = tuple(x.type.get_shape())
                if self.storage(x).strides is not None:
                    ok = False  # a Transpose view cannot be read through [M, N]
                    break
                if len(s2) <= 1:
                    continue
                if s2 == out_full:
                    vws[(eu, j)] = (m, n)
                elif all(d == 1 for d in s2[:-1]):
                    vws[(eu, j)] = (s2[-1],)
                else:
                    ok = False
            if not ok:
                break
            self.epi_views.update(vws)
            keep.append(e)
        for e in epi[1 + len(keep):]:
            self.fused.discard(e[0])  # lowered on their own, after this op
        return [a, w, b], {0: (m, k), 2: (n,)}, (m, n), keep

    def hoist_acc_operands(self, block) -> None:
        """Move the ops computing the addend of `MatMul -> Add` (an attention mask built
        after the scores in the export's order) before the MatMul, when they do not
        depend on it, so `acc_init` can start the accumulators from it (block order
        stays topological)."""
        from nnx.dialects import sparse as sd
        from nnx.dialects.graph import GraphOp

        ops = list(block.ops)
        pos = {o: i for i, o in enumerate(ops)}
        for mm in ops:
            is_mm = (isinstance(mm, GraphOp) and mm.ONNX_TYPE == "MatMul") or isinstance(mm, sd.MatMulOp)
            if not is_mm or len(mm.results) != 1:
                continue
            uses = list(mm.results[0].uses)
            if len(uses) != 1:
                continue
            add = uses[0].operation
            if not isinstance(add, GraphOp) or add.ONNX_TYPE != "Add":
                continue
            other = [x for x in add.onnx_inputs() if x is not mm.results[0]]
            if len(other) != 1 or other[0] is None or not isinstance(other[0].owner, Operation):
                continue
            # the ops after the MatMul that the addend needs
            need, stack, ok = set(), [other[0].owner], True
            while stack and ok:
                o = stack.pop()
                if o in need or o.parent_block() is not block or pos[o] < pos[mm]:
                    continue
                if o is mm or len(need) > 16:
                    ok = False
                    break
                need.add(o)
                stack += [v.owner for v in o.operands if isinstance(v.owner, Operation)]
            if not ok or not need:
                continue
            for o in sorted(need, key=lambda x: pos[x]):
                o.detach()
                block.insert_op_before(o, mm)
            ops = list(block.ops)
            pos = {o: i for i, o in enumerate(ops)}

    def acc_init(self, a: SSAValue, b: SSAValue, epi: list):
        """MatMul followed by an Add of a tensor that broadcasts to its result (the
        attention mask added to the scores, a residual): the MPU starts the
        accumulators from it (MatMul's optional C, as Gemm's C), no VPU pass. Returns
        (ins, epilogue left) or None."""
        if not epi or epi[0][1] != "Add":
            return None
        user, _, uins, pos, _ = epi[0]
        c = uins[1 - pos]
        out = user.onnx_outputs()[0]
        if c is None or c.type.element_type != out.type.element_type:  # type: ignore[attr-defined]
            return None
        cs = tuple(c.type.get_shape())  # type: ignore[attr-defined]
        os_ = tuple(out.type.get_shape())  # type: ignore[attr-defined]
        if len(cs) > len(os_) or any(d != 1 and d != o for d, o in zip(cs[::-1], os_[::-1])):
            return None
        return [a, b, c], epi[1:]

    # ---- channel-group chaining (inverted-residual blocks) -----------------------------
    def conv_parts(self, op):
        """(input, weight, bias, attrs, sparse info) of a graph or sparse Conv, else None."""
        from nnx.dialects import sparse as sd
        from nnx.dialects.graph import GraphOp

        if isinstance(op, sd.ConvOp):
            info = self.conn_info(op, op.conn, op.weight, False)
            if info.neuron_threshold is not None or info.weight_value is None:
                return None
            return op.input, op.weight, op.bias, {k: _py(v) for k, v in op.conv_params().items()}, info, op.output
        if isinstance(op, GraphOp) and op.ONNX_TYPE == "Conv":
            ins = op.onnx_inputs()
            outs = op.onnx_outputs()
            if len(outs) != 1 or len(ins) < 2:
                return None
            attrs = {k: _py(v) for k, v in op.onnx_attributes().items()}
            if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET"):
                return None
            return ins[0], ins[1], ins[2] if len(ins) > 2 else None, attrs, None, outs[0]
        return None

    def try_group_chain(self, op) -> bool:
        """Conv A -> depthwise Conv B -> Conv C (each with its elementwise epilogue), as
        in MobileNetV2's inverted-residual blocks, whose expanded tensors are too large
        to stay resident: computed per group of g expanded channels without the
        intermediates ever leaving the chip: A[g] (all of A's input, g output channels)
        into the output cache, B[g] (depthwise: only those channels) into the neuron
        cache, and C accumulating the chunk g of its reduction (acc) into its output."""
        from nnx.dialects.graph import ConstantOp

        if not self.chain:
            return False
        pa = self.conv_parts(op)
        if pa is None or int(pa[3].get("group", 1)) != 1:
            return False
        undo: list = []

        def fail() -> bool:
            for e in undo:
                self.fused.discard(e[0])
            return False

        def single_user(v):
            return None if v in self.returned else sole_user(v)

        epa = self.epilogue_chain(op, [pa[5]])
        undo += epa
        va = epa[-1][0].onnx_outputs()[0] if epa else pa[5]
        opb = single_user(va)
        pb = self.conv_parts(opb) if opb is not None else None
        if pb is None or pb[0] is not va:
            return fail()
        ca = tuple(va.type.get_shape())
        wb = tuple(pb[1].type.get_shape())
        if len(ca) != 4 or int(pb[3].get("group", 1)) != ca[1] or wb[0] != ca[1] or wb[1] != 1:
            return fail()
        epb = self.epilogue_chain(opb, [pb[5]])
        undo += epb
        vb = epb[-1][0].onnx_outputs()[0] if epb else pb[5]
        opc = single_user(vb)
        pc = self.conv_parts(opc) if opc is not None else None
        if pc is None or pc[0] is not vb or int(pc[3].get("group", 1)) != 1:
            return fail()
        big = max(self.storage_bytes(va), self.storage_bytes(vb))
        if big <= self.caps["O"] - self.reserve("O"):
            return fail()  # resident chaining handles it
        for p in (pa, pb, pc):
            for v in p[:3]:
                if v is not None and _dtype_name(v.type) != "f32":
                    return fail()
            if not isinstance(p[1].owner, ConstantOp) or (p[2] is not None and not isinstance(p[2].owner, ConstantOp)):
                return fail()
        epc = self.epilogue_chain(opc, [pc[5]])
        undo += epc
        vc = epc[-1][0].onnx_outputs()[0] if epc else pc[5]
        if not self.emit_group_chain(op, (pa, epa, va), (opb, pb, epb, vb), (opc, pc, epc, vc)):
            return fail()
        self.fused.add(opb)
        self.fused.add(opc)
        return True

    def storage_bytes(self, v) -> int:
        return math.prod(v.type.get_shape()) * np.dtype(_NP[_dtype_name(v.type)]).itemsize

    def emit_group_chain(self, opa, A, B, C) -> bool:
        pa, epa, va = A
        opb, pb, epb, vb = B
        opc, pc, epc, vc = C
        S = self.stream
        x = self.tensor(pa[0], opa)
        sa = tuple(va.type.get_shape())
        sb = tuple(vb.type.get_shape())
        ca = sa[1]
        out_s = self.result_tensor(vc)
        protect = {self.rootof(pa[0])} | {self.rootof(e) for ch in (epa, epb, epc) for c in ch for e in c[2] if e is not None}
        resident = self.make_resident(vc, protect)
        out = self.tensor(vc)
        caps = self.work_caps()

        def wshape(p):
            return tuple(p[1].type.get_shape())

        def epi_inputs(chain, shape):
            res = []
            for e, (_, _, uins, pos, _) in enumerate(chain):
                for j, u in enumerate(uins):
                    if u is None or j == pos:
                        continue
                    res.append((e, j, self.tensor(u)))
            return res

        def layout_for(g: int, nb: int, spa: str, spb: str):
            lay = Layout()
            sl: dict[str, Slot] = {}
            if not x.resident:
                sl["x"] = lay.add(Slot("N", x.nbytes, 1))
            sl["ta"] = lay.add(Slot(spa, g * sa[0] * sa[2] * sa[3] * 4, nb))
            sl["tb"] = lay.add(Slot(spb, g * sb[0] * sb[2] * sb[3] * 4, nb))
            if not out.resident:
                sl["out"] = lay.add(Slot("O", out.nbytes, 1))
            for name, p, n in (("A", pa, g * math.prod(wshape(pa)[1:])), ("B", pb, g * math.prod(wshape(pb)[1:])),
                               ("C", pc, g * wshape(pc)[0] * math.prod(wshape(pc)[2:]))):
                if p[4] is not None:
                    sl[name + "w"] = lay.add(Slot("W", n * 6, nb))  # values (+ stride index)
                    sl[name + "wm"] = lay.add(Slot("W", n, nb))
                    if p[4].density < 0.5:
                        sl[name + "wi"] = Slot("W", 1, 1)  # marker: the stride transport
                else:
                    sl[name + "w"] = lay.add(Slot("W", n * 4, nb))
                if p[2] is not None:
                    sl[name + "b"] = lay.add(Slot("W", (g if name != "C" else wshape(pc)[0]) * 4, nb if name != "C" else 1))
            for tag, chain, shape, n in (("a", epa, sa, g), ("b", epb, sb, g), ("c", epc, tuple(vc.type.get_shape()), None)):
                for e, j, t in epi_inputs(chain, shape):
                    if t.resident:
                        continue
                    if n is None:
                        box = full_box(t.shape)
                    else:
                        box = _bcast_box(t.shape, ((0, shape[0], 1), (0, n, 1), (0, shape[2], 1), (0, shape[3], 1)))
                    sp = "N" if tag == "c" else "W"
                    sl[f"e{tag}{e}_{j}"] = lay.add(Slot(sp, math.prod(box_shape(box)) * t.itemsize, 1 if tag == "c" else nb))
            return sl, lay

        # the largest group that fits double-buffered (the stages then overlap), else
        # single-buffered
        choice = None
        for nb in (2, 1):
            g = ca
            while g >= 1 and choice is None:
                for spa, spb in (("O", "N"), ("N", "O"), ("N", "N"), ("O", "O")):
                    sl, lay = layout_for(g, nb, spa, spb)
                    if all(lay.top[s] <= caps[s] for s in lay.top):
                        choice = (g, nb, sl)
                        break
                g = g // 2 if g > 8 else g - 1
            if choice is not None:
                break
        if choice is None:
            self.drop_resident(vc)
            return False
        g, nb, sl = choice

        # A's input, whole, once
        if x.resident:
            xt = x.tile(full_box(x.shape))
            xacc = self.box_acc(x, full_box(x.shape), xt)
        else:
            buf = sl["x"].next()
            xt = Tile("N", buf, x.shape, x.dtype)
            S.emit(Instr(self.next_load_unit(), "LOAD", [xt], [x.tile(full_box(x.shape))]), [x.access()], [("N", buf, buf + xt.nbytes)])
            xacc = ("N", buf, buf + xt.nbytes)

        def weight(name, p, box, opx):
            """(tile, mask tile | None, reads) of the weight box of conv `p`."""
            w = self.storage(p[1]) if p[4] is None else Tensor(-1 - len(self.tensors), wshape(p), "f32", (-1, -1))
            if p[4] is not None:
                slots = {"w": sl[name + "w"], "wm": sl[name + "wm"]}
                if name + "wi" in sl:
                    slots["wi"] = sl[name + "wi"]
                t, m = self.sparse_weight(opx, slots, w, box, p[4])
                return t, m, [(t.space, t.offset, t.end), (m.space, m.offset, m.end)]
            buf = sl[name + "w"].next()
            wt = Tile("W", buf, box_shape(box), "f32")
            S.emit(Instr(self.next_load_unit(), "LOAD", [wt], [w.tile(box)]), [("S", w.key)], [("W", buf, wt.end)])
            return wt, None, [("W", buf, wt.end)]

        def bias(name, p, box):
            if p[2] is None:
                return None, []
            b = self.storage(p[2])
            slot = sl[name + "b"]
            buf = slot.next()
            bt = Tile("W", buf, box_shape(box), "f32")
            S.emit(Instr(self.next_load_unit(), "LOAD", [bt], [b.tile(box)]), [("S", b.key)], [("W", buf, bt.end)])
            return bt, [("W", buf, bt.end)]

        def epilogue(tag, chain, ot, oacc, obox):
            vpu = self.next_unit("VPU")
            for e, (_, ekind, uins, pos, eattrs) in enumerate(chain):
                esrcs: list = []
                ereads = [oacc]
                for j, u in enumerate(uins):
                    if j == pos:
                        esrcs.append(ot)
                        continue
                    if u is None:
                        esrcs.append(None)
                        continue
                    t = self.tensor(u)
                    box = _bcast_box(t.shape, obox)
                    if t.resident:
                        ct = t.tile(box)
                        ereads.append(self.box_acc(t, box, ct))
                    else:
                        slot = sl[f"e{tag}{e}_{j}"]
                        ct, _ = self.load_slot(slot, t, box, (t.offset, t.shape, box))
                        ereads.append((ct.space, ct.offset, ct.end))
                    esrcs.append(ct)
                while esrcs and esrcs[-1] is None:
                    esrcs.pop()
                S.emit(Instr(vpu, ekind, [ot], esrcs, eattrs), ereads, [oacc])

        cc = wshape(pc)[0]
        sc = tuple(vc.type.get_shape())
        if out.resident:
            ot_c = out.tile(full_box(sc))
            oacc_c = self.box_acc(out, full_box(sc), ot_c)
        else:
            buf = sl["out"].next()
            ot_c = Tile("O", buf, sc, "f32")
            oacc_c = ("O", buf, ot_c.end)
        battrs = dict(pb[3])
        groups = [(c0, min(g, ca - c0)) for c0 in range(0, ca, g)]
        ta_t: dict[int, tuple] = {}
        tb_t: dict[int, tuple] = {}

        def stage_a(k: int) -> None:
            c0, n = groups[k]
            wa = wshape(pa)
            wt, wm, rd = weight("A", pa, ((c0, n, 1),) + tuple((0, d, 1) for d in wa[1:]), opa)
            bt, brd = bias("A", pa, ((c0, n, 1),))
            ta_buf = sl["ta"].next()
            ta = Tile(sl["ta"].space, ta_buf, (sa[0], n, sa[2], sa[3]), "f32")
            tacc = (ta.space, ta_buf, ta.end)
            srcs = [xt, wt] + ([bt] if bt is not None else [])
            S.emit(Instr(self.next_unit("MPU"), "Conv", [ta], srcs, dict(pa[3]), {"wmask": wm} if wm is not None else {}),
                   [xacc] + rd + brd, [tacc])
            abox = ((0, sa[0], 1), (c0, n, 1), (0, sa[2], 1), (0, sa[3], 1))
            epilogue("a", epa, ta, tacc, abox)
            ta_t[k] = (ta, tacc)

        def stage_b(k: int) -> None:
            # depthwise on the same channels
            c0, n = groups[k]
            ta, tacc = ta_t.pop(k)
            wt, wm, rd = weight("B", pb, ((c0, n, 1),) + tuple((0, d, 1) for d in wshape(pb)[1:]), opb)
            bt, brd = bias("B", pb, ((c0, n, 1),))
            tb_buf = sl["tb"].next()
            tb = Tile(sl["tb"].space, tb_buf, (sb[0], n, sb[2], sb[3]), "f32")
            tbacc = (tb.space, tb_buf, tb.end)
            battrs["group"] = n
            srcs = [ta, wt] + ([bt] if bt is not None else [])
            S.emit(Instr(self.next_unit("MPU"), "Conv", [tb], srcs, dict(battrs), {"wmask": wm} if wm is not None else {}),
                   [tacc] + rd + brd, [tbacc])
            bbox = ((0, sb[0], 1), (c0, n, 1), (0, sb[2], 1), (0, sb[3], 1))
            epilogue("b", epb, tb, tbacc, bbox)
            tb_t[k] = (tb, tbacc)

        def stage_c(k: int) -> None:
            # chunk k of C's reduction, accumulated in C's output
            c0, n = groups[k]
            tb, tbacc = tb_t.pop(k)
            wc = wshape(pc)
            wt, wm, rd = weight("C", pc, ((0, cc, 1), (c0, n, 1)) + tuple((0, d, 1) for d in wc[2:]), opc)
            srcs = [tb, wt]
            brd = []
            if k == 0 and pc[2] is not None:
                bt, brd = bias("C", pc, ((0, cc, 1),))
                srcs.append(bt)
            opts: dict[str, Any] = {"wmask": wm} if wm is not None else {}
            reads = [tbacc] + rd + brd
            if k > 0:
                opts["acc"] = True
                reads.append(oacc_c)
            S.emit(Instr(self.next_unit("MPU"), "Conv", [ot_c], srcs, dict(pc[3]), opts), reads, [oacc_c])

        # software pipeline (double buffers): step k issues A[k], B[k-1], C[k-2], so the
        # MPU computes A[k] while the VPU runs B[k-1]'s epilogue, and so on
        skew = 1 if nb == 2 else 0
        for k in range(len(groups) + 2 * skew):
            if k < len(groups):
                stage_a(k)
            if 0 <= k - skew < len(groups):
                stage_b(k - skew)
            if 0 <= k - 2 * skew < len(groups):
                stage_c(k - 2 * skew)
        epilogue("c", epc, ot_c, oacc_c, full_box(sc))
        if not out.resident:
            S.emit(Instr(self.next_unit("DAU"), "STORE", [out_s.tile(full_box(sc))], [ot_c]), [oacc_c], [("S", out_s.key)])
        elif vc in self.must_store:
            self.write_back(vc)
        return True

    # ---- data movement --------------------------------------------------------------
    def copy(self, src: Tensor, dst: Tensor, shape, src_off, src_step, dst_off) -> None:
        if src.resident:
            # chained source: one (strided) STORE straight from the cache
            sbox = tuple((o, n, st) for o, n, st in zip(src_off, shape, src_step))
            dbox = tuple((o, n, 1) for o, n in zip(dst_off, shape))
            ct = src.tile(sbox)
            self.stream.emit(
                Instr(self.next_unit("DAU"), "STORE", [dst.tile(dbox)], [ct]),
                [self.box_acc(src, sbox, ct)], [("S", dst.key)],
            )
            return
        rule = CopyRule(shape, src_off, src_step, dst_off)
        isz = np.dtype(_NP[src.dtype]).itemsize
        nb = 2 if self.double_buffer else 1

        def need(steps):
            m = max(math.prod(box_shape(s.inputs[0])) for s in steps) * isz
            return {"N": nb * _align(m)}

        steps = plan(rule, need, {"N": self.work_caps()["N"]}, self.soft())
        size = max(math.prod(box_shape(s.inputs[0])) for s in steps) * isz
        slot = Layout().add(Slot("N", size, min(nb, len(steps))))
        for st in steps:
            sbox, dbox = st.inputs[0], st.outputs[0]
            buf = slot.next()
            ct = Tile("N", buf, box_shape(sbox), src.dtype)
            self.stream.emit(
                Instr(self.next_load_unit(), "LOAD", [ct], [src.tile(sbox)]),
                [("S", src.key)], [("N", buf, buf + ct.nbytes)],
            )
            self.stream.emit(
                Instr(self.next_unit("DAU"), "STORE", [dst.tile(dbox)], [ct]),
                [("N", buf, buf + ct.nbytes)], [("S", dst.key)],
            )

    def lower_concat(self, op, ins, outs, attrs) -> None:
        out = self.result_tensor(outs[0])
        r = len(out.shape)
        ax = int(attrs.get("axis", 0))
        ax = ax + r if ax < 0 else ax
        pos = 0
        for v in ins:
            src = self.tensor(v, op)
            shape = src.shape
            if math.prod(shape) > 0:
                self.copy(src, out, shape, [0] * r, [1] * r, [pos if a == ax else 0 for a in range(r)])
            pos += shape[ax]

    def lower_split(self, op, ins, outs, attrs) -> None:
        src = self.tensor(ins[0], op)
        r = len(src.shape)
        ax = int(attrs.get("axis", 0))
        ax = ax + r if ax < 0 else ax
        pos = 0
        for v in outs:
            dst = self.result_tensor(v)
            self.copy(src, dst, dst.shape, [pos if a == ax else 0 for a in range(r)], [1] * r, [0] * r)
            pos += dst.shape[ax]

    def lower_slice(self, op, ins, outs, attrs) -> bool:
        from nnx.dialects.graph import ConstantOp

        src = self.tensor(ins[0], op)
        r = len(src.shape)
        vals = []
        for v in ins[1:]:
            if v is None:
                vals.append(None)
                continue
            if not isinstance(v.owner, ConstantOp):
                return False
            vals.append([int(x) for x in np.asarray(v.owner.numpy_value()).reshape(-1)])
        while len(vals) < 4:
            vals.append(None)
        starts, ends, axes, steps = vals
        if starts is None or ends is None:
            return False
        axes = axes if axes is not None else list(range(len(starts)))
        steps = steps if steps is not None else [1] * len(starts)
        off, stp = [0] * r, [1] * r
        for s, a, st in zip(starts, axes, steps):
            a = a + r if a < 0 else a
            if st <= 0:
                return False
            d = src.shape[a]
            s = s + d if s < 0 else s
            off[a] = min(max(s, 0), d)
            stp[a] = st
        out = self.result_tensor(outs[0])
        if math.prod(out.shape) > 0:
            self.copy(src, out, out.shape, off, stp, [0] * r)
        return True

    def lower_gather(self, op, ins, outs, attrs) -> bool:
        """Gather along axis 0 of a tensor in storage (an embedding table): indirect DMA
        (`GATHER`) of only the rows the indices name, instead of loading the whole
        table for a VPU Gather. Chunks of indices: LOAD the index chunk into the neuron
        cache unless it is resident, GATHER its rows into the output (its resident
        buffer, or an output-cache slot that is STOREd). False: not this form (the VPU
        path handles it)."""
        data = self.tensor(ins[0], op)
        if data.resident or not data.shape:
            return False
        r = len(data.shape)
        ax = int(attrs.get("axis", 0))
        if (ax + r if ax < 0 else ax) != 0:
            return False
        idx = self.tensor(ins[1], op)
        if idx.dtype not in ("i32", "i64") or idx.strides is not None:
            return False
        n = math.prod(idx.shape)
        row = math.prod(data.shape[1:])
        isz = data.itemsize
        if n == 0 or row == 0:
            return False
        t = self.target
        if t.gather_cycles(n, row * isz) > t.dma_cycles(data.nbytes) + t.vpu_cycles(n * row + n + math.prod(data.shape)):
            return False  # a small table (token types): one LOAD + a VPU Gather is cheaper
        caps = self.work_caps()
        nb = 2 if self.double_buffer else 1
        self.result_tensor(outs[0])
        resident = self.make_resident(outs[0], {self.rootof(ins[0]), self.rootof(ins[1])})
        caps = self.work_caps()
        per_o = 0 if resident else row * isz
        per_n = 0 if idx.resident else idx.itemsize
        # rows per chunk: the double-buffered slots fit, and chunks stay around the
        # soft tile size so that the DMA of chunk t+1 overlaps the consumers of chunk t
        c = n
        soft = self.soft()
        if soft > 0:
            c = min(c, max(1, soft // row))
        while c > 1 and (nb * _align(c * per_o) > caps["O"] or nb * _align(c * per_n) > caps["N"]):
            c = (c + 1) // 2
        if nb * _align(max(c * per_o, 1)) > caps["O"] or nb * _align(max(c * per_n, 1)) > caps["N"]:
            self.drop_resident(outs[0])
            return False
        out = self.tensor(outs[0])
        iv = idx.view((n,))
        ov = out.view((n, *data.shape[1:]))
        dv = data
        lay = Layout()
        oslot = lay.add(Slot("O", c * per_o, nb)) if not resident else None
        islot = lay.add(Slot("N", c * per_n, nb)) if not idx.resident else None
        table = dv.tile(full_box(dv.shape))
        for s0 in range(0, n, c):
            k = min(c, n - s0)
            ibox = ((s0, k, 1),)
            if idx.resident:
                it = iv.tile(ibox)
                racc = self.box_acc(iv, ibox, it)
            else:
                it, _ = self.load_slot(islot, iv, ibox, (iv.offset, iv.shape, ibox))
                racc = (it.space, it.offset, it.end)
            obox = ((s0, k, 1),) + tuple((0, d, 1) for d in data.shape[1:])
            if resident:
                ot = ov.tile(obox)
                wacc = self.box_acc(ov, obox, ot)
            else:
                buf = oslot.next()
                ot = Tile("O", buf, (k, *data.shape[1:]), data.dtype)
                wacc = ("O", buf, ot.end)
            self.stream.emit(Instr(self.next_unit("DAU"), "GATHER", [ot], [table, it]), [("S", data.key), racc], [wacc])
            if not resident:
                self.stream.emit(
                    Instr(self.next_unit("DAU"), "STORE", [ov.tile(obox)], [ot]),
                    [wacc], [("S", out.key)],
                )
        if outs[0] in self.res and outs[0] in self.must_store:
            self.write_back(outs[0])
        return True

    # ---- compute ----------------------------------------------------------------------
    def soft(self, kind: str = "") -> int:
        """Output elements above which a tile is split although it fits. Default: half
        the target's `tiling.vpu_elements` for VPU ops when the program is
        list-scheduled (small vector tiles let the VPU work on one tile while the MPU
        computes the next, and two tiles of consecutive ops are in flight; measured
        best of 1, 1/2, 1/4, 1/8 on BERT-style models), 4x it otherwise."""
        if self.max_tile < 0:
            return 0
        if self.max_tile == 0:
            if self.schedule and kind and kind not in MPU_KINDS:
                return max(1, self.target.tiling.vpu_elements // 2)
            return 4 * self.target.tiling.vpu_elements
        return self.max_tile

    def lower_compute(self, op, kind, ins, outs, attrs, sparse: SparseInfo | None = None,
                      views: dict[int, tuple[int, ...]] | None = None, out_view=None, epilogue=()) -> None:
        from nnx.dialects.graph import ConstantOp

        views = views or {}
        for o in outs:
            self.result_tensor(o)
        protect = {self.rootof(v) for v in ins if v is not None}
        for e in epilogue:
            protect |= {self.rootof(x) for x in e[2] if x is not None}
        resident_out = len(outs) == 1 and self.make_resident(outs[0], protect)
        # attempts: chained output; per-op output; evict the residents this op does not
        # read; evict every resident (the per-op STORE/LOAD path)
        attempts = ["out", "keep", "others", "all"] if resident_out else ["keep", "others", "all"]
        for ai, attempt in enumerate(attempts):
            if attempt != "out":
                self.drop_resident(outs[0])
            if attempt == "others":
                for r in [r for r in self.res if r not in protect]:
                    self.evict(r)
            elif attempt == "all":
                for r in list(self.res):
                    self.evict(r)
            try:
                self._lower_compute(op, kind, ins, outs, attrs, sparse, views, out_view, epilogue)
                if outs[0] in self.res and outs[0] in self.must_store:
                    self.write_back(outs[0])
                return
            except TilingError:
                if ai == len(attempts) - 1:
                    raise

    def _lower_compute(self, op, kind, ins, outs, attrs, sparse, views, out_view, epilogue) -> None:
        from nnx.dialects.graph import ConstantOp

        caps = self.work_caps()
        srcs: list[Tensor | None] = []
        for j, v in enumerate(ins):
            if v is None:
                srcs.append(None)
                continue
            if sparse is not None and j == 1 and sparse.weight_value is not None and v not in self.tensors:
                # compacted per tile (sparse_weight): the dense weights never reach storage
                ty = v.type
                t = Tensor(-1 - len(self.tensors), tuple(ty.get_shape()), _dtype_name(ty), (-1, -1))  # type: ignore[attr-defined]
                srcs.append(t)
                continue
            t = self.tensor(v, op)
            if j in views:
                t = t.view(views[j])
            srcs.append(t)
        dsts = [self.tensor(o) for o in outs]
        if out_view is not None:
            dsts[0] = dsts[0].view(out_view)
        const_inputs = {}
        for j, v in enumerate(ins):
            if v is not None and isinstance(v.owner, ConstantOp):
                const_inputs[j] = np.asarray(v.owner.numpy_value())
        rule = rule_for(kind, [None if s is None else s.shape for s in srcs], [d.shape for d in dsts], attrs, const_inputs)
        unit = self.mpu if kind in MPU_KINDS else self.vpu
        nb = 2 if self.double_buffer else 1
        isz = [0 if s is None else np.dtype(_NP[s.dtype]).itemsize for s in srcs]
        osz = [np.dtype(_NP[d.dtype]).itemsize for d in dsts]
        space = ["N" if j == 0 else "W" for j in range(len(srcs))]

        def slot_bytes(steps: list[Step]):
            """bytes per slot name -> (space, max bytes, varies)"""
            res: dict[str, tuple[str, int, bool]] = {}
            for j, s in enumerate(srcs):
                if s is None:
                    continue
                boxes = [st.inputs[j] for st in steps if st.inputs[j] is not None]
                if not boxes:
                    continue
                n = max(math.prod(box_shape(b)) for b in boxes)
                varies = any(b != boxes[0] for b in boxes)
                if s.resident:
                    # chained operand: no slot; only the connection data it gets
                    if sparse is not None and j == 1:
                        res["wm"] = ("W", n, varies)
                    if sparse is not None and j == 0 and sparse.neuron_threshold is not None:
                        res["nm"] = ("N", n, varies)
                    continue
                if sparse is not None and j == 1:
                    if sparse.weight_mask is None:
                        # weights computed at run time: dense tile + its mask
                        res["w"] = ("W", n * isz[j], varies)
                        res["wm"] = ("W", n, varies)
                        continue
                    # compacted values + connection data (direct mask; stride index
                    # in transit when it is the cheaper transport)
                    nnz = max(1, sparse.max_nnz(boxes))
                    res["w"] = ("W", nnz * isz[j], varies)
                    if sparse.density < 0.5:
                        # the stride index travels behind the values (same buffer)
                        res["w"] = ("W", nnz * (isz[j] + 2), varies)
                        res["wi"] = ("W", 1, False)
                    res["wm"] = ("W", n, varies)
                    continue
                res[f"i{j}"] = (space[j], n * isz[j], varies)
                if sparse is not None and j == 0 and sparse.neuron_threshold is not None:
                    res["nm"] = ("N", n, varies)
            for j, d in enumerate(dsts):
                if d.resident:
                    continue
                boxes = [st.outputs[j] for st in steps]
                n = max(math.prod(box_shape(b)) for b in boxes)
                res[f"o{j}"] = ("O", n * osz[j], len(steps) > 1)
            for e, (user, _, uins, pos, _) in enumerate(epilogue):
                for j, x in enumerate(uins):
                    if x is None or j == pos:
                        continue
                    t = self.epi_operand(user, j, x, op)
                    if t.resident:
                        continue
                    boxes = [_bcast_box(t.shape, st.outputs[0]) for st in steps]
                    n = max(math.prod(box_shape(b)) for b in boxes)
                    res[f"e{e}_{j}"] = ("W", n * t.itemsize, any(b != boxes[0] for b in boxes))
            return res

        def need(steps: list[Step]) -> dict[str, int]:
            tot = {"N": 0, "W": 0, "O": 0}
            for sp, n, varies in slot_bytes(steps).values():
                tot[sp] += (nb if varies else 1) * _align(max(n, 1))
            return tot

        steps = None
        if kind in MPU_KINDS and self.max_tile == 0 and (rule.axes or rule.k_extent):
            steps = self.plan_mpu(rule, srcs, dsts, sparse, need, caps)
        if steps is None and kind not in MPU_KINDS:
            steps = self.follow_tiles(rule, ins, srcs, dsts, need, caps)
        if steps is None:
            try:
                steps = plan(rule, need, caps, self.soft(kind))
            except TilingError:
                if nb == 1:
                    raise
                nb = 1  # single buffering: no DMA/compute overlap, but smaller tiles fit
                steps = plan(rule, need, caps, self.soft(kind))
        if len(dsts) == 1 and dsts[0].resident and steps and steps[0].outputs:
            self.tile_shape[self.rootof(outs[0])] = box_shape(steps[0].outputs[0])
        sizes = slot_bytes(steps)
        trial = Layout()
        for sp, n, varies in sizes.values():
            trial.add(Slot(sp, n, nb if varies else 1))
        base = None
        nreg = min([ROTATE] + [caps[s] // max(trial.top[s], 1) for s in trial.top])
        if self.chain and nreg >= 2:
            # consecutive ops rotate over `nreg` parts of the free working region, so
            # the DMA (and connection-data conversion) of the next ops' operands
            # overlaps this op's compute
            base = {s: (caps[s] // nreg // ALIGN * ALIGN) * (self.flip % nreg) for s in trial.top}
            self.flip += 1
        depth = {name: (nb if varies else 1) for name, (sp, n, varies) in sizes.items()}
        if self.schedule and nb == 2:
            # deeper weight buffering: the weight-cache slots that change per tile get
            # as many buffers as this op's part of the weight cache holds (up to one
            # per tile, at most MAX_DEPTH), so the list scheduler can run the DMA and
            # the CONVERTs of many tiles ahead while the compute units are busy
            region = caps["W"] // nreg // ALIGN * ALIGN if base is not None else caps["W"]
            wv = [k for k, (sp, n, varies) in sizes.items() if sp == "W" and varies]
            if wv:
                fixed = sum(depth[k] * _align(max(n, 1)) for k, (sp, n, _) in sizes.items() if sp == "W" and k not in wv)
                per = sum(_align(max(sizes[k][1], 1)) for k in wv)
                d = min(len(steps), MAX_DEPTH, (region - fixed) // per)
                if d > nb:
                    for k in wv:
                        depth[k] = d
        layout = Layout(base)
        slots = {name: layout.add(Slot(sp, n, depth[name])) for name, (sp, n, varies) in sizes.items()}
        self.emit_steps(op, kind, unit, srcs, dsts, steps, slots, sparse, epilogue)

    def follow_tiles(self, rule, ins, srcs, dsts, need, caps):
        """Scheduled programs: a VPU op whose result has the shape of a resident operand
        is tiled like that operand's producer (`tile_shape`), so its tile t waits only
        for the producer's tile t and chains of ops pipeline tile by tile (one head's
        softmax while the MPU computes the next head's scores). None: no such operand,
        or those tiles do not fit."""
        if not self.schedule or self.max_tile != 0 or len(dsts) != 1 or not rule.axes:
            return None
        out = tuple(dsts[0].shape)
        for j, v in enumerate(ins):
            if v is None or j >= len(srcs) or srcs[j] is None or not srcs[j].resident:
                continue
            ts = self.tile_shape.get(self.rootof(v))
            if ts is None or tuple(srcs[j].shape) != out or len(ts) != len(out):
                continue
            sizes = {a: max(1, min(ts[a], out[a])) for a in rule.axes}
            if all(sizes[a] == out[a] for a in rule.axes):
                return None  # one tile: nothing to follow
            try:
                steps = enumerate_steps(rule, sizes, rule.k_extent or 0)
            except (TilingError, ValueError):
                return None
            n = need(steps)
            if all(n.get(sp, 0) <= caps[sp] for sp in caps):
                return steps
            return None
        return None

    def plan_mpu(self, rule, srcs, dsts, sparse, need, caps):
        """Cost-based tiling of an MPU op (nnx.tiling.plan_cost): the loop order and
        tile sizes with the fewest DMA cycles and the best DMA/compute overlap."""
        t = self.target
        isz = [0 if s is None else np.dtype(_NP[s.dtype]).itemsize for s in srcs]
        osz = [np.dtype(_NP[d.dtype]).itemsize for d in dsts]
        dens = 1.0
        if sparse is not None and sparse.weight_mask is not None:
            dens = sparse.density

        def in_bytes(j, box):
            if j >= len(srcs) or srcs[j] is None or srcs[j].resident:
                return 0
            n = math.prod(box_shape(box))
            if j == 1 and dens < 1.0:
                return n * (dens * isz[j] + min(1.0, 2 * dens))
            return n * isz[j]

        def out_bytes(j, box):
            if dsts[j].resident:
                return 0
            return math.prod(box_shape(box)) * osz[j]

        w = srcs[1].shape if len(srcs) > 1 and srcs[1] is not None else (1,)
        red = math.prod(w[1:]) if rule.kind == "Conv" else (rule.k_extent or 1)
        macs = math.prod(dsts[0].shape) * red * dens
        mpu = t.unit("MPU")
        # planned for PLAN_UNITS compute units and one DMA queue whatever the target
        # declares: the tiles (hence the order of every accumulation) do not depend on
        # the unit counts, so targets that differ only in them give bit-identical
        # results; the output tiles are then spread over the units the target has
        map_cycles = None
        wfull = math.prod(srcs[1].shape) if len(srcs) > 1 and srcs[1] is not None else 0
        if dens < 0.5 and wfull * (1 + dens * (isz[1] + 2)) > caps["W"] // 2:
            # the stride index of each weight tile is converted by the mapping unit;
            # when the whole weight is too big for the next op's weights to be
            # prefetched beside it (see the rotation in _lower_compute), the DMA ->
            # CONVERT -> MPU pipeline is inside the op: tiles overlap those stages
            def map_cycles(j, box):
                if j != 1:
                    return 0.0
                return t.mapping.latency_cycles + math.prod(box_shape(box)) / t.mapping.indices_per_cycle

        cost = Cost(in_bytes, out_bytes, t.unit("DAU").latency_cycles + t.storage.dma_latency_cycles,
                    float(t.storage.dma_bytes_per_cycle), float(mpu.latency_cycles),
                    macs / mpu.throughput, 1, PLAN_UNITS, map_cycles)
        axes = list(rule.axes)
        orders = [axes] + [[b for b in axes if b != a] + [a] for a in axes[:-1]]
        # the target's preferred MPU tile bounds the output-channel (N) and row (M)
        # tiles from below: fewer, larger MPU instructions
        r = len(rule.out_shape)
        if rule.kind == "Conv":
            amin = {1: t.tiling.mpu_n}
        elif rule.kind == "Gemm":
            amin = {0: t.tiling.mpu_m, 1: t.tiling.mpu_n}
        else:
            amin = {r - 2: t.tiling.mpu_m, r - 1: t.tiling.mpu_n}
            if self.schedule and math.prod(rule.out_shape[:-2]) > 1:
                # batched MatMul (attention heads): whole matrices per tile, so the
                # tiles split along the batch dims as the VPU ops' tiles do and the
                # softmax of one head overlaps the matmuls of the next
                amin[r - 2] = rule.out_shape[r - 2]
                amin[r - 1] = rule.out_shape[r - 1]
        steps = plan_cost(rule, need, caps, cost, orders, kmin=max(1, t.tiling.mpu_k), amin=amin)
        if steps is None:
            steps = plan_cost(rule, need, caps, cost, orders)
        return steps

    def load_slot(self, slot: Slot, src: Tensor, box: Box, key) -> tuple[Tile, bool]:
        """The cache tile of `box` of `src` in `slot`, loading it unless already there."""
        shape = box_shape(box)
        if slot.cur == key:
            return Tile(slot.space, slot.current(), shape, src.dtype), False
        buf = slot.next()
        ct = Tile(slot.space, buf, shape, src.dtype)
        self.stream.emit(
            Instr(self.next_load_unit(), "LOAD", [ct], [src.tile(box)]),
            [("S", src.key)], [(slot.space, buf, buf + ct.nbytes)],
        )
        slot.cur = key
        return ct, True

    def emit_steps(self, op, kind, unit, srcs, dsts, steps, slots, sparse, epilogue=()) -> None:
        pending: list[tuple[Instr, list, list]] = []
        S = self.stream
        utype = unit[:3]
        for st in steps:
            if not st.acc:
                # output tiles go round-robin over the unit instances (accumulation
                # chunks of one output tile stay on its unit)
                unit = self.next_unit(utype)
            tiles: list[Tile | None] = []
            reads: list[tuple] = []
            opts: dict[str, Any] = {}
            for j, s in enumerate(srcs):
                box = st.inputs[j] if j < len(st.inputs) else None
                if s is None or box is None or j in st.drop:
                    tiles.append(None)
                    continue
                if j in st.consts:
                    src = self.const_array(np.asarray(st.consts[j]).astype(_NP[s.dtype]), "p")
                    box = full_box(src.shape)
                    key = ("c", src.offset)
                else:
                    src = s
                    key = (s.offset, s.shape, box)
                if s.resident:
                    # chained: the operand is read where its producer left it
                    ct = s.tile(box)
                    tiles.append(ct)
                    reads.append(self.box_acc(s, box, ct))
                    if sparse is not None and j == 1:
                        m = self.runtime_mask(slots, ct, key, sparse, self.box_acc(s, box, ct))
                        opts["wmask"] = m
                        reads.append(("W", m.offset, m.end))
                        continue
                    fresh = True
                elif sparse is not None and j == 1:
                    t, m = self.sparse_weight(op, slots, s, box, sparse)
                    tiles.append(t)
                    reads.append(("W", t.offset, t.offset + t.nbytes))
                    reads.append(("W", m.offset, m.offset + m.nbytes))
                    opts["wmask"] = m
                    continue
                else:
                    ct, fresh = self.load_slot(slots[f"i{j}"], src, box, key)
                    tiles.append(ct)
                    reads.append((ct.space, ct.offset, ct.offset + ct.nbytes))
                if sparse is not None and j == 0 and sparse.neuron_threshold is not None:
                    ns = slots["nm"]
                    if fresh or ns.cur != key:
                        buf = ns.next()
                        mt = Tile("N", buf, ct.shape, "i1")
                        S.emit(
                            Instr(self.next_unit("MAP"), "CONN", [mt], [ct], {"threshold": float(sparse.neuron_threshold)}),
                            [reads[-1]], [("N", buf, buf + mt.nbytes)],
                        )
                        ns.cur = key
                    mt = Tile("N", ns.current(), ct.shape, "i1")
                    opts["nmask"] = mt
                    reads.append(("N", mt.offset, mt.offset + mt.nbytes))
            # the previous output tile's store goes after this tile's loads (pipelining)
            for ins, r, w in pending:
                S.emit(ins, r, w)
            pending = []
            otiles = []
            writes = []
            for j, d in enumerate(dsts):
                if d.resident:
                    # chained: computed in place into the resident buffer
                    ot = d.tile(st.outputs[j])
                    writes.append(self.box_acc(d, st.outputs[j], ot))
                else:
                    sl = slots[f"o{j}"]
                    if not st.acc:
                        sl.next()
                    ot = Tile("O", sl.current(), box_shape(st.outputs[j]), d.dtype)
                    writes.append((ot.space, ot.offset, ot.end))
                otiles.append(ot)
            if st.acc:
                opts["acc"] = True
                reads += writes
            while tiles and tiles[-1] is None:
                tiles.pop()
            S.emit(Instr(unit, kind, otiles, tiles, {k: _py(v) for k, v in st.attrs.items()}, opts), reads, writes)
            if st.last:
                ot = otiles[0]
                orange = writes[0]
                evpu = unit if utype == "VPU" else self.next_unit("VPU")
                for e, (user, ekind, uins, pos, eattrs) in enumerate(epilogue):
                    esrcs: list[Tile | None] = []
                    ereads = [orange]
                    for j, x in enumerate(uins):
                        if j == pos:
                            esrcs.append(ot)
                            continue
                        if x is None:
                            esrcs.append(None)
                            continue
                        t = self.epi_operand(user, j, x, op)
                        box = _bcast_box(t.shape, st.outputs[0])
                        if t.resident:
                            ct = t.tile(box)
                            ereads.append(self.box_acc(t, box, ct))
                        else:
                            ct, _ = self.load_slot(slots[f"e{e}_{j}"], t, box, (t.offset, t.shape, box))
                            ereads.append((ct.space, ct.offset, ct.end))
                        esrcs.append(ct)
                    while esrcs and esrcs[-1] is None:
                        esrcs.pop()
                    S.emit(Instr(evpu, ekind, [ot], esrcs, eattrs), ereads, [orange])
                for j, d in enumerate(dsts):
                    ot = otiles[j]
                    if d.resident:
                        continue
                    pending.append((
                        Instr(self.next_unit("DAU"), "STORE", [d.tile(st.outputs[j])], [ot]),
                        [("O", ot.offset, ot.offset + ot.nbytes)], [("S", d.key)],
                    ))
        for ins, r, w in pending:
            S.emit(ins, r, w)

    # ---- sparse -----------------------------------------------------------------------
    def runtime_mask(self, slots, wt: Tile, key, sp: SparseInfo, wacc) -> Tile:
        """The direct index of run-time weights already in a cache (chained)."""
        wm = slots["wm"]
        if wm.cur == key:
            return Tile("W", wm.current(), wt.shape, "ui8")
        mbuf = wm.next()
        mt = Tile("W", mbuf, wt.shape, "ui8")
        self.stream.emit(
            Instr(self.next_unit("MAP"), "CONN", [mt], [wt], {"threshold": float(max(sp.weight_threshold, 0.0))}),
            [wacc], [("W", mbuf, mbuf + mt.nbytes)],
        )
        wm.cur = key
        return mt

    def sparse_weight(self, op, slots, w: Tensor, box: Box, sp: SparseInfo) -> tuple[Tile, Tile]:
        """The weight tile of `box` in W and its direct-index mask: for constant weights
        the *compacted* surviving values (1-D) + the connection data, which is all the
        DMA moves and all the weight cache holds (seed 004 claims 5-6, 21); the MPU
        then computes on the surviving pairs only."""
        S = self.stream
        key = (w.offset, box)
        ws, wm = slots["w"], slots["wm"]
        shape = box_shape(box)
        if ws.cur == key:
            return ws.cur_tile, Tile("W", wm.current(), shape, "ui8")
        sl = tuple(slice(s, s + n * st, st) for s, n, st in box)
        unit = self.next_load_unit()
        if sp.weight_value is None or sp.weight_mask is None:
            # weights computed at run time: load them and build the connection data
            buf = ws.next()
            wt = Tile("W", buf, shape, w.dtype)
            S.emit(Instr(unit, "LOAD", [wt], [w.tile(box)]), [("S", w.key)], [("W", buf, buf + wt.nbytes)])
            mbuf = wm.next()
            mt = Tile("W", mbuf, shape, "ui8")
            S.emit(
                Instr(self.next_unit("MAP"), "CONN", [mt], [wt], {"threshold": float(max(sp.weight_threshold, 0.0))}),
                [("W", buf, buf + wt.nbytes)], [("W", mbuf, mbuf + mt.nbytes)],
            )
            ws.cur = key
            ws.cur_tile = wt
            return wt, mt
        vals = np.ascontiguousarray(sp.weight_value[sl])
        mask = np.ascontiguousarray(sp.weight_mask[sl])
        packed = vals[mask]
        if packed.size == 0:
            packed = np.zeros(1, vals.dtype)
        mbuf = wm.next()
        mt = Tile("W", mbuf, shape, "ui8")
        L = mask.size
        pos = np.flatnonzero(mask.reshape(-1))
        stride = np.diff(pos, prepend=0)
        pbuf = ws.next()
        pt = Tile("W", pbuf, (packed.size,), w.dtype)
        if stride.size and "wi" in slots and stride.max() < 2**15 and 2 * stride.size < L:
            # the cheaper transport: the stride index (only the kept weights' distances)
            # travels and the mapping unit converts it to the direct index the MPU
            # reads (claims 6, 9-10). Values and index are one constant, moved by one
            # DMA (one fixed transfer cost instead of two)
            idx = stride.astype(np.int16)
            blob = np.concatenate([packed.view(np.uint8).reshape(-1), idx.view(np.uint8).reshape(-1)])
            bc = self.const_array(blob, "wpk")
            bt = Tile("W", pbuf, (blob.size,), "ui8")
            S.emit(Instr(unit, "LOAD", [bt], [bc.tile(full_box(bc.shape))]), [("S", bc.key)], [("W", pbuf, pbuf + blob.size)])
            it = Tile("W", pbuf + packed.nbytes, (stride.size,), "i16")
            flat_m = Tile("W", mbuf, (L,), "ui8")
            S.emit(Instr(self.next_unit("MAP"), "CONVERT", [flat_m], [it]), [("W", it.offset, it.end)],
                   [("W", mbuf, mbuf + L)])
        else:
            pk = self.const_array(packed, "wpk")
            S.emit(Instr(unit, "LOAD", [pt], [pk.tile(full_box(pk.shape))]), [("S", pk.key)], [("W", pbuf, pbuf + pt.nbytes)])
            mc = self.const_array(mask.astype(np.uint8), "wconn")
            S.emit(Instr(unit, "LOAD", [mt], [mc.tile(full_box(mc.shape))]), [("S", mc.key)], [("W", mbuf, mbuf + mt.nbytes)])
        ws.cur = key
        ws.cur_tile = pt
        return pt, mt

    def conn_info(self, op, conn: SSAValue, weight: SSAValue, layout_in_out: bool) -> SparseInfo:
        from nnx.dialects import sparse as sd
        from nnx.dialects.graph import ConstantOp

        wthr: float | None = None
        nthr: float | None = None
        form = "direct"
        stack = [conn]
        while stack:
            v = stack.pop()
            o = v.owner
            if isinstance(o, sd.ConnectOp):
                if o.result.type.order_name == "neuron":  # type: ignore[attr-defined]
                    nthr = o.threshold_value
                else:
                    wthr = o.threshold_value
                    form = o.result.type.form_name  # type: ignore[attr-defined]
            elif isinstance(o, sd.ConvertOp):
                stack.append(o.input)
            elif isinstance(o, sd.CombineOp):
                stack += [o.lhs, o.rhs]
            else:
                raise PassError(f"lower-to-chip: {op.name}: connection data from {o.name if isinstance(o, Operation) else 'a block argument'} is not supported", op)
        if wthr is None:
            wthr = 0.0
        value = mask = None
        if isinstance(weight.owner, ConstantOp):
            value = np.asarray(weight.owner.numpy_value())
            mask = np.abs(value) > max(wthr, 0.0)
        return SparseInfo(mask, value, form, wthr, nthr)

    def lower_sparse(self, op) -> None:
        from nnx.dialects import sparse as sd

        if isinstance(op, (sd.ConnectOp, sd.ConvertOp, sd.CombineOp)):
            for u in op.results[0].uses:
                if not isinstance(u.operation, (sd.FcOp, sd.MatMulOp, sd.ConvOp, sd.ConvertOp, sd.CombineOp)):
                    raise PassError(f"lower-to-chip: connection data used by {u.operation.name} is not supported", op)
            return
        if isinstance(op, sd.FcOp):
            x = self.tensor(op.input, op)
            out_n, in_n = tuple(op.weight.type.get_shape())
            m = math.prod(x.shape[:-1])
            info = self.conn_info(op, op.conn, op.weight, False)
            ins = [op.input, op.weight] + ([op.bias] if op.bias is not None else [])
            views = {0: (m, in_n)}
            if op.bias is not None:
                views[2] = (out_n,)
            epi = self.epilogue_chain(op, [op.output]) if len(x.shape) == 2 else []
            out = epi[-1][0].onnx_outputs()[0] if epi else op.output
            self.lower_compute(op, "Gemm", ins, [out], {"transB": 1}, info, views, (m, out_n), epilogue=epi)
            return
        if isinstance(op, sd.MatMulOp):
            info = self.conn_info(op, op.conn, op.weight, True)
            epi = self.epilogue_chain(op, [op.output])
            bg = self.bias_gemm(op.input, op.weight, epi)
            if bg is not None:
                gins, views, out_view, rest = bg
                last = rest[-1][0] if rest else epi[0][0]
                self.lower_compute(op, "Gemm", gins, [last.onnx_outputs()[0]], {}, info, views, out_view, epilogue=rest)
                return
            ai = self.acc_init(op.input, op.weight, epi) if self.schedule else None
            if ai is not None:
                mins, rest = ai
                last = rest[-1][0] if rest else epi[0][0]
                self.lower_compute(op, "MatMul", mins, [last.onnx_outputs()[0]], {}, info, epilogue=rest)
                return
            out = epi[-1][0].onnx_outputs()[0] if epi else op.output
            self.lower_compute(op, "MatMul", [op.input, op.weight], [out], {}, info, epilogue=epi)
            return
        if isinstance(op, sd.ConvOp):
            if self.try_group_chain(op):
                return
            info = self.conn_info(op, op.conn, op.weight, False)
            if info.neuron_threshold is not None:
                raise PassError("lower-to-chip: sparse.conv with neuron connection data is not supported", op)
            attrs = {k: _py(v) for k, v in op.conv_params().items()}
            ins = [op.input, op.weight] + ([op.bias] if op.bias is not None else [])
            epi = self.epilogue_chain(op, [op.output])
            out = epi[-1][0].onnx_outputs()[0] if epi else op.output
            self.lower_compute(op, "Conv", ins, [out], attrs, info, epilogue=epi)
            return
        raise PassError(f"lower-to-chip: cannot lower {op.name} (not a sparse compute op)", op)

    # ---- program ----------------------------------------------------------------------
    def program(self):
        from nnx.dialects.chip import ConstOp, InputOp, OutputOp, ProgramOp, TileAttr, instr_op

        cbytes = _align(self.const_top)

        def reloc_tile(t: Tile) -> Tile:
            if t.space == "S" and t.offset >= _DATA_BASE:
                return dataclasses.replace(t, offset=t.offset - _DATA_BASE + cbytes)
            return t

        def reloc(ins: Instr) -> Instr:
            ins.dsts = [None if t is None else reloc_tile(t) for t in ins.dsts]
            ins.srcs = [None if t is None else reloc_tile(t) for t in ins.srcs]
            return ins

        def sym_tile(t: Tensor) -> Tile:
            return reloc_tile(Tile("S", t.offset, t.shape, t.dtype))

        ops: list[Operation] = []
        for name, t in self.inputs:
            ops.append(InputOp.create(properties={"sym_name": StringAttr(name), "tile": TileAttr.of(sym_tile(t))}))
        for name, t, value in self.consts:
            ops.append(ConstOp.create(properties={"sym_name": StringAttr(name), "tile": TileAttr.of(sym_tile(t)), "value": value}))
        for name, t in self.outputs:
            ops.append(OutputOp.create(properties={"sym_name": StringAttr(name), "tile": TileAttr.of(sym_tile(t))}))
        order = None
        if self.schedule:
            from nnx.schedule import best_order, estimate_cycles

            st = self.stream
            order, t0, t1 = best_order(st.units, [estimate_cycles(self.target, i) for i in st.instrs], st.preds)
            if os.environ.get("NNX_SCHEDULE_DEBUG"):
                from collections import Counter

                from nnx.schedule import critical_path

                print(f"lower-to-chip: cost model: emitted order {t0} cycles, chosen {t1}", file=sys.stderr)
                cost = [estimate_cycles(self.target, i) for i in st.instrs]
                crit = Counter()
                for i in critical_path(st.units, cost, st.preds, order):
                    crit[(st.units[i], st.instrs[i].mnemonic)] += cost[i]
                print("lower-to-chip: critical path: " + ", ".join(f"{u} {m} {c}" for (u, m), c in crit.most_common()), file=sys.stderr)
        for ins in self.stream.program(order):
            ops.append(instr_op(reloc(ins)))
        storage = cbytes + (self.data_top - _DATA_BASE)
        return ProgramOp(max(storage, ALIGN), ops, target=self.target.name)


@dataclass(frozen=True)
class LowerToChipPass(ModulePass):
    """graph (+ sparse) ops of @main -> a chip.program (see the module docstring)."""

    name = "lower-to-chip"

    target: str = ""
    double_buffer: bool = True
    max_tile_elements: int = 0
    chain: bool = True
    schedule: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects import func as fdialect

        from nnx.target import TargetError, load_target

        try:
            target = load_target(self.target or None)
        except TargetError as e:
            raise PassError(f"lower-to-chip: {e}") from None
        except OSError as e:
            raise PassError(f"lower-to-chip: cannot read target '{self.target}': {e.strerror}") from None
        funcs = [o for o in op.body.block.ops if isinstance(o, fdialect.FuncOp)]
        main = next((f for f in funcs if f.sym_name.data == "main"), None)
        if main is None:
            if len(funcs) != 1:
                raise PassError("lower-to-chip: expected a func.func @main")
            main = funcs[0]
        if ctx.get_optional_dialect("chip") is None:
            from nnx.dialects.chip import Chip

            ctx.load_dialect(Chip)
        lw = Lowering(target, self.double_buffer, int(self.max_tile_elements), bool(self.chain), bool(self.schedule))
        lw.run(main)
        prog = lw.program()
        for f in funcs:
            f.detach()
            f.erase()
        op.body.block.add_op(prog)
