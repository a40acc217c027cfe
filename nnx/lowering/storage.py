"""Tensors in the storage unit: symbolic buffers, and the lowering's value helpers.

chip-lower does not decide storage addresses. Every storage tensor (a constant, a
program input, an intermediate result, a graph output) is one *buffer*, declared in
the program as `chip.buffer @tK {bytes, kind}` (K: the allocation order), and every
storage tile names its buffer and a byte offset into it: `#chip.tile<@tK:0x0, ...>`.
chip-allocate (passes/chip_allocate.py) assigns the addresses -- constants first,
contiguous (nnx-translate writes them as one data image), then everything else in
allocation order -- and rewrites the tiles to absolute `S:` addresses.

A `Tensor` is where a graph value lives: a storage buffer (possibly a strided view of
it, a Transpose) or a resident cache buffer. `StorageAllocator` declares the buffers
and names the program's symbols.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnx.sim.isa import Tile
from nnx.tiling import Box, box_shape
from nnx.types import dtype_of_name

ALIGN = 64
"""Storage (and cache slot) alignment in bytes: chip-allocate starts every buffer on it."""


def is_alias(op) -> bool:
    """Is graph op `op` lowered as an alias of its operand 0 (no instruction; its result
    is a view of the operand's storage)? A `ViewLike` op (dialects/traits.py) whose other
    results are unused: an inference Dropout only when its mask is not read."""
    from nnx.dialects.traits import ViewLike

    return op.has_trait(ViewLike) and all(r is None or not r.uses for r in op.onnx_outputs()[1:])


def _align(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


def chip_dtype_name(t) -> str:
    """The element-type name (`f32`, `i8`, ...; nnx/types.py) of tensor type `t`; a
    ValueError when the chip does not support it (dialects/chip.py `type_name`)."""
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


def symbol_name(name: str) -> str:
    """The assembly symbol of a graph tensor named `name` (`.input`/`.output`/
    `.const`): characters outside [A-Za-z0-9_.-] become `_`, and a leading `_` is
    added where the name would not start with a letter or `_`."""
    s = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    if not s or not (s[0].isalpha() or s[0] == "_"):
        s = "_" + s
    return s


def broadcast_box(shape: tuple[int, ...], out_box: Box) -> Box:
    """The box of a (right-aligned, broadcast) operand of `shape` for an output box."""
    off = len(out_box) - len(shape)
    return tuple((0, 1, 1) if d == 1 else (out_box[off + i][0], out_box[off + i][1], 1) for i, d in enumerate(shape))


@dataclass
class Tensor:
    """Where a graph value is: a storage buffer (`buffer` its symbol, `offset` bytes
    into it, `space` "S") or a resident cache buffer (`space` N/W/O, `offset` its cache
    address, `buffer` None). `strides`: element strides of a permuted view (a
    Transpose as an alias); None: row-major."""

    offset: int
    shape: tuple[int, ...]
    dtype: str
    buffer: str | None  # the storage buffer (the dependency granule); None: resident
    space: str = "S"  # "S", or the cache holding a resident (chained) tensor
    strides: tuple[int, ...] | None = None

    @property
    def resident(self) -> bool:
        return self.space != "S"

    @property
    def key(self) -> str | None:
        """The storage buffer: the granule of the dependencies (`("S", key)`)."""
        return self.buffer

    @property
    def ident(self) -> tuple:
        """Which bytes: equal for views of the same place (keys of the slot caches)."""
        return (self.buffer if self.buffer is not None else self.space, self.offset)

    @property
    def tile_space(self) -> str:
        """The space of this tensor's tiles: the cache, or `@buffer` in storage."""
        if self.space == "S" and self.buffer is not None:
            return "@" + self.buffer
        return self.space

    def access(self) -> tuple:
        """The dependency access of the whole tensor."""
        if self.space == "S":
            return ("S", self.key)
        return (self.space, self.offset, self.offset + max(self.nbytes, 1))

    @property
    def itemsize(self) -> int:
        return dtype_of_name(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize

    def view(self, shape: tuple[int, ...]) -> "Tensor":
        if self.strides is not None and tuple(shape) != self.shape:
            raise ValueError("internal: reshape of a permuted view")
        return Tensor(self.offset, tuple(shape), self.dtype, self.buffer, self.space, self.strides)

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
        return Tensor(self.offset, tuple(self.shape[p] for p in perm), self.dtype, self.buffer, self.space,
                      tuple(st[p] for p in perm))

    def tile(self, box: Box) -> Tile:
        """The tile of a box of this tensor in its space (strided when not contiguous)."""
        strides = self.row_major()
        off = self.offset + sum(s * st for (s, _, _), st in zip(box, strides)) * self.itemsize
        shape = box_shape(box)
        el_strides = tuple(st * step for (_, _, step), st in zip(box, strides))
        space = self.tile_space
        t = Tile(space, off, shape, self.dtype, el_strides)
        if t.contiguous:
            t = Tile(space, off, shape, self.dtype, None)
        return t


@dataclass
class StorageBuffer:
    """One storage allocation: `chip.buffer @name {bytes, kind}`."""

    name: str
    nbytes: int
    kind: str


class StorageAllocator:
    """The storage buffers of one program, where each graph value is in storage, and
    the names of the program's symbols.

    Buffers are declared in allocation order (`t0`, `t1`, ...); constants are
    deduplicated by value; `fresh` gives unique symbol names for the chip.input /
    chip.const / chip.output ops; `tensors` maps graph values to their storage (a
    buffer, or a view of another value's buffer: aliases, Transpose views)."""

    def __init__(self) -> None:
        self.tensors: dict = {}  # graph value -> Tensor in storage
        self.buffers: list[StorageBuffer] = []
        self.consts: list[tuple[str, Tensor, Any]] = []  # (symbol, tensor, value attr)
        self.const_cache: dict[Any, Tensor] = {}
        self.names: set[str] = set()

    def fresh(self, base: str) -> str:
        """A symbol name from `base` that no symbol has yet."""
        s = symbol_name(base)
        name, n = s, 1
        while name in self.names:
            name = f"{s}_{n}"
            n += 1
        self.names.add(name)
        return name

    def allocate(self, shape, dtype: str, kind: str) -> Tensor:
        """A new buffer for a tensor of `shape` x `dtype` (at least one byte)."""
        nbytes = max(math.prod(shape) * dtype_of_name(dtype).itemsize, 1)
        buf = StorageBuffer(f"t{len(self.buffers)}", nbytes, kind)
        self.buffers.append(buf)
        return Tensor(0, tuple(shape), dtype, buf.name)

    def constant(self, value_attr, shape, dtype: str, hint: str) -> Tensor:
        """A constant buffer initialised with `value_attr`, named after `hint`."""
        t = self.allocate(shape, dtype, "const")
        self.consts.append((self.fresh(hint), t, value_attr))
        return t

    def const_array(self, arr: np.ndarray, hint: str = "c") -> Tensor:
        """A constant holding `arr` (deduplicated by value)."""
        from nnx.dialects.graph import dense_attr
        from nnx.resources import register_array

        arr = np.ascontiguousarray(arr)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        t = self.const_cache.get(key)
        if t is not None:
            return t
        attr = dense_attr(arr) if arr.size <= 16 else register_array(arr, hint=hint)
        dt = chip_dtype_name(attr.get_type())
        t = self.constant(attr, arr.shape, dt, hint)
        self.const_cache[key] = t
        return t

    def buffer(self, name: str) -> StorageBuffer:
        return self.buffers[int(name[1:])]

    def storage(self, v, op=None) -> Tensor:
        """The storage of graph value `v`; a constant gets its buffer on first use."""
        t = self.tensors.get(v)
        if t is not None:
            return t
        from nnx.graph_queries import constant_op
        from nnx.lowering.errors import LoweringError

        owner = constant_op(v)
        if owner is not None:
            ty = v.type
            hint = "w"
            loc = getattr(owner, "location", None)
            m = re.fullmatch(r'loc\("([^"]+)"\)', str(loc)) if loc is not None else None
            if m:
                hint = m.group(1)
            t = self.constant(owner.value, tuple(ty.get_shape()), chip_dtype_name(ty), hint)
            self.tensors[v] = t
            return t
        raise LoweringError(f"operand of {op.name if op else 'an op'} has no storage", op)

    def result_tensor(self, v) -> Tensor:
        """A new intermediate buffer for the result `v`."""
        t = self.allocate(tuple(v.type.get_shape()), chip_dtype_name(v.type), "intermediate")
        self.tensors[v] = t
        return t

