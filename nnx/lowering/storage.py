"""Tensors in the storage unit and the lowering's small value helpers.

A `Tensor` is where a graph value lives: a storage allocation (`space` "S", `key` the
allocation: the dependency granule) or a resident cache buffer, possibly a strided
view (a Transpose). Storage is allocated statically by a bump allocator in two
regions: constants from address 0 (contiguous: nnx-translate writes them as one data
image) and everything else from the virtual base `DATA_BASE`; chip-allocate places
that region behind the constants (passes/chip_allocate.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnx.sim.isa import Tile
from nnx.tiling import Box, box_shape

ALIGN = 64
_DATA_BASE = 1 << 44  # data-region addresses before relocation behind the constants
DATA_BASE = _DATA_BASE

UNALLOCATED_ATTR = "nnx.unallocated"
"""Attribute of a chip.program whose storage is still in chip-lower's two virtual
regions: `{const_bytes, data_bytes}`, the bytes used by the constants (from address
0) and by everything else (from `DATA_BASE`). chip-allocate removes it."""


def unallocated_attr(const_bytes: int, data_bytes: int) -> dict:
    """The attributes that mark a program as unallocated (see `UNALLOCATED_ATTR`)."""
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, i64

    return {UNALLOCATED_ATTR: DictionaryAttr({"const_bytes": IntegerAttr(const_bytes, i64),
                                              "data_bytes": IntegerAttr(data_bytes, i64)})}


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
