"""The instruction set of the nnx accelerator (docs/architecture.md, sections 8 and 9).

This module is the ISA's single definition, without xDSL: the `chip` dialect
(dialects/chip.py) verifies its ops with `check_instr`, the assembler (asm.py) parses
and prints `Instr` objects, and the simulator decodes them into micro-instructions.

Units (one instruction queue each; names are the type plus an index, e.g. `MPU0`):

* `DAU`  memory access (the DMA between storage and the caches): LOAD, STORE, MOVE,
  and GATHER (indirect DMA: the rows of a storage tensor named by an index tile in a
  cache, e.g. the rows of an embedding table a Gather reads).
* `MPU`  matrix/convolution part of the operation unit: one ONNX kind per
  instruction (Conv, ConvTranspose, MatMul, Gemm, MatMulInteger, ConvInteger,
  QLinearConv, QLinearMatMul) on tiles, optionally sparse through direct-index masks
  built by the mapping unit (one unit does sparse and dense; docs/sparse-mapping.md,
  section 5).
* `VPU`  vector part of the operation unit: any other ONNX kind evaluated by
  `nnx.interp.kernels.run_kernel` on tiles, and FILL.
* `MAP`  the mapping unit (docs/sparse-mapping.md, section 5): CONN (build connection
  data), CONVERT (direct <-> stride), COMBINE (AND / stride intersection), EXPAND and
  COMPACT (select the surviving elements).
* any unit: SIGNAL/WAIT on named counting tokens (explicit synchronisation; a unit
  waits only on its dependencies).

Address spaces: `N` input neuron cache, `W` weight cache, `O` output cache, `S` the
off-chip storage unit. Addresses are byte offsets; strides are in elements. Connection
data live in caches as tiles in the storage forms of `nnx.connection_data` (the sparse
dialect's): one string per index of the leading dimensions, along the last axis. A
*direct index* is a `ui8` (or `i1`) tile, 1 where |x| > threshold; a *stride index* is
an `i32` tile of the same shape, left-packed distances between consecutive kept
positions (the first measured from position 0), padded with -1.

Operands of MPU and VPU instructions (sources, destinations, `nmask`/`wmask`) may be in
*any* cache: N, W or O. In particular a result left in the output cache by one
instruction is read there by the next one (the device's caches are separate
buffers, not FIFOs into fixed ports), which is how `lower-to-chip` chains ops on chip
without a STORE/LOAD round trip through storage; no MOVE O -> N is needed for that.
Reading a cache costs no extra cycles (the compute formulas count elements, not the
space). DMA (LOAD/STORE/MOVE/GATHER) is the only instruction that touches `S`.

Sparse MPU weights: source #1 is either the dense weight tile with `wmask` of the same
shape, or the *packed* surviving values (a 1-D tile, row-major order of the mask) with
`wmask` the full-shape direct index -- the form `lower-to-chip` emits. EXPAND (packed
values -> dense tile) stays in the ISA but the compiler does not need it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnx.types import dtype_of_name

# --------------------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------------------

DTYPES: dict[str, np.dtype] = {
    name: dtype_of_name(name)
    for name in ("f32", "f16", "f64", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "i1")
}
"""The element types of the ISA: their names and numpy dtypes (rows of nnx/types.py)."""

CACHE_SPACES = ("N", "W", "O")
SPACES = CACHE_SPACES + ("S",)
UNIT_TYPES = ("DAU", "MPU", "VPU", "MAP")
UNIT_RE = re.compile(r"^(DAU|MPU|VPU|MAP)(\d+)$")
TOKEN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
KIND_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")

MPU_KINDS = frozenset(
    {
        "Conv",
        "ConvTranspose",
        "MatMul",
        "Gemm",
        "MatMulInteger",
        "ConvInteger",
        "QLinearConv",
        "QLinearMatMul",
    }
)

# fixed mnemonics -> unit type (None: any unit)
FIXED: dict[str, str | None] = {
    "LOAD": "DAU",
    "STORE": "DAU",
    "MOVE": "DAU",
    "GATHER": "DAU",
    "FILL": "VPU",
    "CONN": "MAP",
    "CONVERT": "MAP",
    "COMBINE": "MAP",
    "EXPAND": "MAP",
    "COMPACT": "MAP",
    "SIGNAL": None,
    "WAIT": None,
}
SYNC = ("SIGNAL", "WAIT")


def unit_type_of_mnemonic(mnemonic: str) -> str | None:
    """The unit type that executes `mnemonic` (None: any unit); ONNX kinds: MPU or VPU."""
    if mnemonic in FIXED:
        return FIXED[mnemonic]
    return "MPU" if mnemonic in MPU_KINDS else "VPU"


# --------------------------------------------------------------------------------------
# Tiles and instructions
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tile:
    """A typed view of memory: `space:offset<shape x type>[strides]`.

    `strides` (in elements) is None for a dense row-major tile."""

    space: str
    offset: int
    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...] | None = None

    @property
    def np_dtype(self) -> np.dtype:
        return DTYPES[self.dtype]

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype].itemsize

    @property
    def nelems(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        """Bytes of data the tile holds (what a DMA moves)."""
        return self.nelems * self.itemsize

    @property
    def extent(self) -> int:
        """Bytes spanned from `offset` to the end of the last element."""
        if self.strides is None:
            return self.nbytes
        if self.nelems == 0:
            return 0
        span = 1 + sum((d - 1) * s for d, s in zip(self.shape, self.strides))
        return span * self.itemsize

    @property
    def end(self) -> int:
        return self.offset + self.extent

    @property
    def contiguous(self) -> bool:
        if self.strides is None:
            return True
        expect = 1
        for d, s in zip(reversed(self.shape), reversed(self.strides)):
            if d != 1 and s != expect:
                return False
            expect *= d
        return True

    def text(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        s = f"{self.space}:0x{self.offset:x}<{dims}{self.dtype}>"
        if self.strides is not None:
            s += "[" + ",".join(str(x) for x in self.strides) + "]"
        return s

    def __str__(self) -> str:  # pragma: no cover - convenience
        return self.text()


@dataclass(slots=True)
class Instr:
    """One instruction: `UNIT MNEMONIC dsts <- srcs, {attrs}, options`.

    `attrs` are the ONNX attributes (compute) or the instruction's parameters
    (FILL value, CONN threshold/order); `opts` hold flags (`acc`) and tile-valued
    options (`nmask`, `wmask`); `token` is the sync token of SIGNAL/WAIT."""

    unit: str
    mnemonic: str
    dsts: list[Tile | None] = field(default_factory=list)
    srcs: list[Tile | None] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    opts: dict[str, Any] = field(default_factory=dict)
    token: str | None = None
    line: int = 0
    comment: str = ""

    @property
    def unit_type(self) -> str:
        return self.unit[:3]

    def tiles(self) -> list[Tile]:
        out = [t for t in self.dsts if t is not None]
        out += [t for t in self.srcs if t is not None]
        out += [v for v in self.opts.values() if isinstance(v, Tile)]
        return out


# --------------------------------------------------------------------------------------
# Target-independent checks (shared by the chip dialect verifier and the assembler)
# --------------------------------------------------------------------------------------


def check_tile(t: Tile, what: str) -> str | None:
    if t.space not in SPACES:
        return f"{what}: unknown address space '{t.space}' (expected one of {', '.join(SPACES)})"
    if t.dtype not in DTYPES:
        return f"{what}: unknown element type '{t.dtype}'"
    if t.offset < 0:
        return f"{what}: negative address"
    if t.offset % t.itemsize:
        return f"{what}: address 0x{t.offset:x} is not aligned to the {t.itemsize}-byte element type {t.dtype}"
    if any(d < 1 for d in t.shape):
        return f"{what}: every dimension must be >= 1"
    if t.strides is not None:
        if len(t.strides) != len(t.shape):
            return f"{what}: {len(t.strides)} strides for a rank-{len(t.shape)} tile"
        if any(s < 0 for s in t.strides):
            return f"{what}: negative stride"
    return None


DIRECT_TYPES = ("ui8", "i1")
STRIDE_TYPES = ("i32", "i16")


def index_form(t: Tile) -> str | None:
    """'direct', 'stride' or None (not a connection-data tile), from the element type."""
    if t.dtype in DIRECT_TYPES:
        return "direct"
    if t.dtype in STRIDE_TYPES:
        return "stride"
    return None


def index_space(t: Tile) -> tuple[int, ...] | None:
    """Shape of the positions a connection-data tile indexes (None: not an index tile)."""
    return t.shape if index_form(t) is not None and t.shape else None


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_instr(ins: Instr) -> str | None:
    """The first target-independent problem of an instruction, or None."""
    m = UNIT_RE.match(ins.unit)
    if not m:
        return f"unknown unit '{ins.unit}' (expected DAU<i>, MPU<i>, VPU<i> or MAP<i>)"
    mn = ins.mnemonic
    if mn not in FIXED and not KIND_RE.match(mn):
        return f"unknown mnemonic '{mn}'"
    want = unit_type_of_mnemonic(mn)
    if want is not None and m.group(1) != want:
        return f"{mn} runs on a {want} unit, not on {ins.unit}"
    for i, t in enumerate(ins.dsts):
        if t is None:
            return f"{mn}: destination #{i} is 'none'"
        err = check_tile(t, f"destination #{i}")
        if err:
            return err
    for i, t in enumerate(ins.srcs):
        if t is not None:
            err = check_tile(t, f"source #{i}")
            if err:
                return err
    for k, v in ins.opts.items():
        if isinstance(v, Tile):
            err = check_tile(v, k)
            if err:
                return err
    if mn in SYNC:
        if ins.token is None or not TOKEN_RE.match(ins.token):
            return f"{mn} needs one token name"
        if ins.dsts or ins.srcs or ins.attrs or ins.opts:
            return f"{mn} takes only a token"
        return None
    if ins.token is not None:
        return f"{mn} takes no token"
    fn = _CHECKS.get(mn)
    if fn is None:
        fn = _check_mpu if mn in MPU_KINDS else _check_vpu
    return fn(ins)


def _counts(ins: Instr, nd: int, ns: int | None) -> str | None:
    if len(ins.dsts) != nd:
        return f"{ins.mnemonic} takes {nd} destination(s), got {len(ins.dsts)}"
    if ns is not None and len(ins.srcs) != ns:
        return f"{ins.mnemonic} takes {ns} source(s), got {len(ins.srcs)}"
    if ns is not None and any(s is None for s in ins.srcs):
        return f"{ins.mnemonic}: a source is 'none'"
    return None


def _no_extras(ins: Instr, attrs: tuple[str, ...] = (), opts: tuple[str, ...] = ()) -> str | None:
    for k in ins.attrs:
        if k not in attrs:
            return f"{ins.mnemonic}: unknown parameter '{k}'"
    for k in ins.opts:
        if k not in opts:
            return f"{ins.mnemonic}: unknown option '{k}'"
    return None


def _in_caches(ins: Instr, tiles: list[Tile | None], what: str) -> str | None:
    for i, t in enumerate(tiles):
        if t is not None and t.space not in CACHE_SPACES:
            return f"{ins.mnemonic}: {what} #{i} must be in a cache (N, W, O), not in {t.space}"
    return None


def _check_transfer(ins: Instr) -> str | None:
    err = _counts(ins, 1, 1) or _no_extras(ins)
    if err:
        return err
    d, s = ins.dsts[0], ins.srcs[0]
    assert d is not None and s is not None
    if ins.mnemonic == "LOAD":
        if s.space != "S" or d.space == "S":
            return "LOAD moves storage (S) -> cache (N, W, O)"
    elif ins.mnemonic == "STORE":
        if d.space != "S" or s.space == "S":
            return "STORE moves cache (N, W, O) -> storage (S)"
    elif d.space == "S" or s.space == "S":
        return "MOVE moves cache -> cache"
    if d.dtype != s.dtype:
        return f"{ins.mnemonic}: element types differ ({d.dtype} <- {s.dtype})"
    if d.shape != s.shape:
        return f"{ins.mnemonic}: shapes differ ({'x'.join(map(str, d.shape))} <- {'x'.join(map(str, s.shape))})"
    return None


def _check_gather(ins: Instr) -> str | None:
    err = _counts(ins, 1, 2) or _no_extras(ins)
    if err:
        return err
    d, table, idx = ins.dsts[0], ins.srcs[0], ins.srcs[1]
    assert d is not None and table is not None and idx is not None
    if table.space != "S" or d.space == "S":
        return "GATHER moves rows of a storage (S) tensor -> cache (N, W, O)"
    if idx.space not in CACHE_SPACES:
        return "GATHER: the index tile (source #1) must be in a cache (N, W, O)"
    if idx.dtype not in ("i32", "i64"):
        return f"GATHER: indices must be i32 or i64, got {idx.dtype}"
    if d.dtype != table.dtype:
        return f"GATHER: element types differ ({d.dtype} <- {table.dtype})"
    want = tuple(idx.shape) + tuple(table.shape[1:])
    if tuple(d.shape) != want:
        return (f"GATHER: destination must be indices x row = {'x'.join(map(str, want))}, "
                f"got {'x'.join(map(str, d.shape))}")
    return None


def _check_compute(ins: Instr, masks: bool) -> str | None:
    if not ins.dsts:
        return f"{ins.mnemonic} needs at least one destination"
    err = _in_caches(ins, ins.dsts, "destination") or _in_caches(ins, ins.srcs, "source")
    if err:
        return err
    for k, v in ins.opts.items():
        if k == "acc":
            if v is not True:
                return f"{ins.mnemonic}: 'acc' is a flag"
        elif masks and k in ("nmask", "wmask"):
            if not isinstance(v, Tile):
                return f"{ins.mnemonic}: '{k}' must be a tile"
            if v.dtype not in DIRECT_TYPES or v.space not in CACHE_SPACES:
                return f"{ins.mnemonic}: '{k}' must be a direct-index (ui8 or i1) tile in a cache"
            j = 0 if k == "nmask" else 1
            src = ins.srcs[j] if j < len(ins.srcs) else None
            if k == "wmask" and src is not None and is_packed(ins):
                if src.nelems > v.nelems:
                    return f"{ins.mnemonic}: packed weights (1-D source #1) hold at most one value per 'wmask' position"
                continue
            if src is None or src.shape != v.shape:
                return f"{ins.mnemonic}: '{k}' must have the shape of source #{j}"
        else:
            return f"{ins.mnemonic}: unknown option '{k}'"
    return None


def _check_mpu(ins: Instr) -> str | None:
    if len(ins.srcs) < 2 or ins.srcs[0] is None or ins.srcs[1] is None:
        return f"{ins.mnemonic} needs a neuron and a weight source"
    if ins.mnemonic == "MatMul" and len(ins.srcs) > 2:
        c, d = ins.srcs[2], ins.dsts[0] if ins.dsts else None
        if len(ins.srcs) > 3:
            return "MatMul takes A, B and an optional C (accumulator initial value)"
        if c is not None and d is not None and (_broadcast(c.shape, d.shape) != tuple(d.shape) or c.dtype != d.dtype):
            return "MatMul: C (source #2) must broadcast to the destination and have its element type"
    return _check_compute(ins, masks=True)


def _check_vpu(ins: Instr) -> str | None:
    return _check_compute(ins, masks=False)


def _check_fill(ins: Instr) -> str | None:
    err = _counts(ins, 1, 0) or _no_extras(ins, attrs=("value",)) or _in_caches(ins, ins.dsts, "destination")
    if err:
        return err
    if "value" not in ins.attrs or not _is_num(ins.attrs["value"]):
        return "FILL needs a numeric parameter 'value'"
    return None


def _check_conn(ins: Instr) -> str | None:
    err = _counts(ins, 1, 1) or _no_extras(ins, attrs=("threshold", "order"))
    err = err or _in_caches(ins, ins.dsts, "destination") or _in_caches(ins, ins.srcs, "source")
    if err:
        return err
    d, s = ins.dsts[0], ins.srcs[0]
    assert d is not None and s is not None
    if not _is_num(ins.attrs.get("threshold")) or ins.attrs["threshold"] < 0:
        return "CONN needs a non-negative numeric parameter 'threshold'"
    order = ins.attrs.get("order", "out")
    if order not in ("out", "in"):
        return "CONN: 'order' must be \"out\" (per output neuron) or \"in\" (per input neuron)"
    if order == "in" and len(s.shape) != 2:
        return "CONN: order \"in\" needs a rank-2 weight tile [outputs, inputs]"
    want = s.shape if order == "out" else (s.shape[1], s.shape[0])
    if index_form(d) is None:
        return "CONN: the destination must be a direct (ui8/i1) or stride (i32) index tile"
    if d.shape != want:
        return f"CONN: the connection data have the source's shape {'x'.join(map(str, want))}"
    return None


def _check_convert(ins: Instr) -> str | None:
    err = _counts(ins, 1, 1) or _no_extras(ins) or _in_caches(ins, ins.dsts + ins.srcs, "operand")
    if err:
        return err
    d, s = ins.dsts[0], ins.srcs[0]
    assert d is not None and s is not None
    if index_form(d) is None or index_form(s) is None:
        return "CONVERT: operands must be connection data (ui8/i1 direct or i32/i16 stride index tiles)"
    if index_form(d) == index_form(s):
        return "CONVERT: source and destination have the same index form"
    if d.shape != s.shape:
        # an unpadded stride string (1-D, only the kept elements' strides) -> the 1-D
        # direct string of its positions
        if not (index_form(s) == "stride" and len(s.shape) == 1 and len(d.shape) == 1 and s.shape[0] <= d.shape[0]):
            return "CONVERT: source and destination shapes differ"
    return None


def _check_combine(ins: Instr) -> str | None:
    err = _counts(ins, 1, 2) or _no_extras(ins) or _in_caches(ins, ins.dsts + ins.srcs, "operand")
    if err:
        return err
    spaces = [index_space(t) for t in (ins.dsts + ins.srcs) if t is not None]
    if any(x is None for x in spaces):
        return "COMBINE: operands must be connection data (ui8/i1 direct or i32 stride index tiles)"
    a, b = spaces[1], spaces[2]
    assert a is not None and b is not None
    both = _broadcast(a, b)
    if both is None or a[-1] != b[-1]:
        return "COMBINE: the two connection data have strings of different lengths or shapes"
    if spaces[0] != both:
        return f"COMBINE: the destination must have shape {'x'.join(map(str, both))}"
    return None


def _check_select(ins: Instr) -> str | None:
    err = _counts(ins, 1, 2) or _no_extras(ins) or _in_caches(ins, ins.dsts + ins.srcs, "operand")
    if err:
        return err
    d, s, c = ins.dsts[0], ins.srcs[0], ins.srcs[1]
    assert d is not None and s is not None and c is not None
    ci = index_space(c)
    if ci is None:
        return f"{ins.mnemonic}: source #1 must be connection data (ui8/i1 or i32 index tile)"
    dense, packed = (d, s) if ins.mnemonic == "EXPAND" else (s, d)
    if d.dtype != s.dtype:
        return f"{ins.mnemonic}: element types differ ({d.dtype} <- {s.dtype})"
    if int(np.prod(ci)) != dense.nelems:
        return f"{ins.mnemonic}: the connection data index {int(np.prod(ci))} positions, the dense tile has {dense.nelems}"
    if len(packed.shape) != 1:
        return f"{ins.mnemonic}: the packed (selected) tile must be 1-D"
    return None


_CHECKS = {
    "LOAD": _check_transfer,
    "STORE": _check_transfer,
    "MOVE": _check_transfer,
    "GATHER": _check_gather,
    "FILL": _check_fill,
    "CONN": _check_conn,
    "CONVERT": _check_convert,
    "COMBINE": _check_combine,
    "EXPAND": _check_select,
    "COMPACT": _check_select,
}


# --------------------------------------------------------------------------------------
# Work of an instruction (the cost model and the simulator share these)
# --------------------------------------------------------------------------------------


def is_packed(ins: Instr) -> bool:
    """True when an MPU instruction's weights (source #1) are *compacted*: a 1-D tile of
    the surviving values in row-major order of `wmask`, the direct index over the dense
    weight tile (docs/sparse-mapping.md, section 5: the weight cache holds only the
    surviving weights and their connection data; the MPU computes on the surviving
    pairs only)."""
    wm = ins.opts.get("wmask")
    if not isinstance(wm, Tile) or len(ins.srcs) < 2 or ins.srcs[1] is None:
        return False
    w = ins.srcs[1]
    return len(w.shape) == 1 and w.shape != wm.shape


def weight_view(ins: Instr) -> list[Tile | None]:
    """Sources with a compacted weight replaced by a tile of its dense shape (for shape
    arithmetic only)."""
    srcs = list(ins.srcs)
    if is_packed(ins):
        wm = ins.opts["wmask"]
        w = srcs[1]
        assert w is not None
        srcs[1] = Tile(w.space, w.offset, wm.shape, w.dtype)
    return srcs


def dense_macs(ins: Instr) -> int:
    """MACs of an MPU instruction computed densely: outputs x reduction length."""
    out = ins.dsts[0]
    srcs = weight_view(ins)
    w = srcs[1]
    assert out is not None and w is not None
    k = reduction_length(ins.mnemonic, ins.attrs, srcs)
    if ins.mnemonic in ("ConvTranspose",):
        x = ins.srcs[0]
        assert x is not None
        # every input element meets every weight of its group's output channels
        return x.nelems * (w.nelems // w.shape[0])
    return out.nelems * k


def reduction_length(kind: str, attrs: dict[str, Any], srcs: list[Tile | None]) -> int:
    a, w = srcs[0], srcs[1]
    assert a is not None and w is not None
    if kind in ("Conv", "ConvInteger", "QLinearConv"):
        wt = srcs[3] if kind == "QLinearConv" else w
        assert wt is not None
        return int(np.prod(wt.shape[1:]))
    if kind == "Gemm":
        return a.shape[0] if attrs.get("transA", 0) else a.shape[-1]
    if kind == "QLinearMatMul":
        return a.shape[-1]
    return a.shape[-1]


def vpu_elements(ins: Instr) -> int:
    ins_el = sum(t.nelems for t in ins.srcs if t is not None)
    out_el = sum(t.nelems for t in ins.dsts if t is not None)
    return max(ins_el, out_el)


def map_indices(ins: Instr) -> int:
    """Positions the mapping unit walks for an instruction."""
    n = 0
    for t in ins.dsts + ins.srcs:
        if t is None:
            continue
        sp = index_space(t)
        n = max(n, int(np.prod(sp)) if sp is not None else t.nelems)
    return n
