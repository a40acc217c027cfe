"""The `chip` dialect: the instructions of the nnx accelerator as ops.

One op per instruction of the ISA (nnx/sim/isa.py has the rules, README.md ("The accelerator") the
reference), inside a `chip.program` region op. Addresses are static: every operand is
a `#chip.tile<SPACE:ADDR, DIMSxTYPE[, [STRIDES]]>` attribute naming a typed (optionally
strided, strides in elements) range of the storage unit `S` or of the input neuron
cache `N`, weight cache `W` or output cache `O` (docs/architecture.md).

    chip.program {storage_bytes = 12288 : i64, target = "nnx-default"} {
      chip.input @x #chip.tile<S:0x0, 8x64xf32>
      chip.const @w #chip.tile<S:0x800, 64x32xf32> = dense_resource<w> : tensor<64x32xf32>
      chip.output @y #chip.tile<S:0x2800, 8x32xf32>
      chip.load DAU0 #chip.tile<N:0x0, 4x64xf32> <- #chip.tile<S:0x0, 4x64xf32>
      chip.signal DAU0 ld0
      chip.wait MPU0 ld0
      chip.mpu MatMul MPU0 #chip.tile<O:0x0, 4x32xf32> <- #chip.tile<N:0x0, 4x64xf32>, #chip.tile<W:0x0, 64x32xf32> {acc}
      chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x32xf32> <- #chip.tile<O:0x0, 4x32xf32>
      ...
    }

Ops (by unit type):

* `chip.load`, `chip.store`, `chip.move` -- DAU: the DMA between the storage unit and
  the caches.
* `chip.mpu KIND` -- MPU: Conv/ConvTranspose/MatMul/Gemm/... on tiles, dense or sparse
  through `nmask`/`wmask` direct-index tiles (docs/sparse-mapping.md).
* `chip.vpu KIND`, `chip.fill` -- VPU: any other ONNX op on tiles, evaluated by
  `nnx.interp.kernels.run_kernel`.
* `chip.conn`, `chip.convert`, `chip.combine`, `chip.expand`, `chip.compact` -- the
  mapping unit (docs/sparse-mapping.md: connection data in direct or stride index form,
  AND / stride intersection, selection of surviving neurons and weights).
* `chip.signal`, `chip.wait` -- synchronisation between units (counting tokens): units
  run in parallel and wait only on their dependencies.
* `chip.input`, `chip.output`, `chip.const` -- storage symbols; const values become the
  data file beside the assembly.
* `chip.buffer` -- a storage tensor before storage is allocated (chip-lower declares
  one per tensor; tiles `#chip.tile<@tK:OFFSET, ...>` point into it; chip-allocate
  gives each an address and removes them: passes/chip_allocate.py).

Verification: `verify_()` checks everything target-independent (unit kinds, address
spaces, alignment, shapes, operand counts); `check_program(op, target)` checks a
program against a target (addresses within the caches and storage, units that exist).
Lowering passes build ops from `nnx.sim.isa.Instr` objects with `instr_op(instr)`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, ParametrizedAttribute, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, NoTerminator
from xdsl.utils.exceptions import VerifyException

from nnx.sim.isa import DTYPES, Instr, MPU_KINDS, Tile, check_instr, check_tile
from nnx.types import mlir_type_of_name, name_of_type

# --------------------------------------------------------------------------------------
# Element types and tiles
# --------------------------------------------------------------------------------------


def type_name(t: Attribute) -> str | None:
    """ISA element-type name of a builtin type (f32, i8, ui16, i1, ...; the spelling of
    nnx/types.py), None when the ISA does not support it (`nnx.sim.isa.DTYPES`)."""
    name = name_of_type(t)
    return name if name in DTYPES else None


def type_of_name(name: str) -> Attribute:
    """The builtin type of an ISA element-type name; a ValueError for a type the ISA
    does not support."""
    if name not in DTYPES:
        raise ValueError(f"unsupported tile element type {name} (expected one of {', '.join(DTYPES)})")
    return mlir_type_of_name(name)


@irdl_attr_definition
class TileAttr(ParametrizedAttribute):
    """`#chip.tile<SPACE:ADDR, DIMSxTYPE[, [STRIDES]]>`: a typed range of a memory.

    SPACE is S (storage unit), N (input neuron cache), W (weight cache) or O (output
    cache); ADDR a byte address; STRIDES (elements) make a strided view, absent = dense.
    Before storage is allocated, SPACE may be `@BUFFER`, a `chip.buffer` symbol: ADDR
    is then a byte offset into that buffer (chip-allocate rewrites it to `S:`).
    """

    name = "chip.tile"

    space: StringAttr
    offset: IntAttr
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    strides: ArrayAttr[IntAttr]

    @staticmethod
    def of(t: Tile) -> "TileAttr":
        return TileAttr(
            StringAttr(t.space),
            IntAttr(t.offset),
            ArrayAttr([IntAttr(d) for d in t.shape]),
            type_of_name(t.dtype),
            ArrayAttr([IntAttr(s) for s in (t.strides or ())]),
        )

    def tile(self) -> Tile:
        name = type_name(self.element_type)
        strides = tuple(s.data for s in self.strides.data)
        return Tile(
            self.space.data,
            self.offset.data,
            tuple(d.data for d in self.shape.data),
            name if name is not None else "?",
            strides if strides else None,
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        sym = parser.parse_optional_symbol_name()
        if sym is not None:
            space = "@" + sym.data
        else:
            space = parser.parse_identifier(" (address space S, N, W or O, or a @buffer)")
        parser.parse_punctuation(":")
        offset = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation(",")
        pos = parser.pos
        dims, etype = parser.parse_ranked_shape()
        if type_name(etype) is None:
            parser.raise_error(
                f"unsupported tile element type {etype} (expected one of {', '.join(DTYPES)})",
                pos,
                parser.pos,
            )
        strides: list[int] = []
        if parser.parse_optional_punctuation(",") is not None:
            strides = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
            )
        parser.parse_punctuation(">")
        return [
            StringAttr(space),
            IntAttr(offset),
            ArrayAttr([IntAttr(d) for d in dims]),
            etype,
            ArrayAttr([IntAttr(s) for s in strides]),
        ]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.space.data}:0x{self.offset.data:x}, ")
        for d in self.shape.data:
            printer.print_string(f"{d.data}x")
        printer.print_attribute(self.element_type)
        if self.strides.data:
            printer.print_string(", [" + ", ".join(str(s.data) for s in self.strides.data) + "]")
        printer.print_string(">")

    @property
    def buffer(self) -> str | None:
        """The `chip.buffer` a symbolic storage tile points into (None: an address)."""
        sp = self.space.data
        return sp[1:] if sp.startswith("@") else None

    # Tiles are checked by the ops that use them (check_instr / _SymbolOp.verify_), so
    # that a bad address is reported at the op with the op's location.


# --------------------------------------------------------------------------------------
# Program and storage symbols
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """A chip program: storage symbols and instructions in issue order (the
    instruction stream, fetched through the instruction cache)."""

    name = "chip.program"
    storage_bytes = prop_def(IntegerAttr)
    target = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, storage_bytes: int, ops: Sequence[IRDLOperation] = (), target: str | None = None):
        props: dict[str, Attribute] = {"storage_bytes": IntegerAttr(storage_bytes, i64)}
        if target:
            props["target"] = StringAttr(target)
        super().__init__(properties=props, regions=[Region([Block(list(ops))])])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        shown: dict[str, Attribute] = dict(self.properties)
        shown.update(self.attributes)
        printer.print_attr_dict(shown)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> "ProgramOp":
        d = parser.parse_optional_attr_dict()
        region = parser.parse_region()
        props = {k: v for k, v in d.items() if k in ("storage_bytes", "target")}
        attrs = {k: v for k, v in d.items() if k not in props}
        op = cls.create(properties=props, attributes=attrs, regions=[region])
        return op

    def verify_(self) -> None:
        sb = self.storage_bytes.value.data
        if sb < 0:
            raise VerifyException("chip.program: storage_bytes must not be negative")
        seen: set[tuple[str, str]] = set()
        buffers: dict[str, int] = {}
        for op in self.body.block.ops:
            if isinstance(op, (_SymbolOp, BufferOp)):
                key = (op.name, op.sym_name.data)
                if key in seen:
                    raise VerifyException(f"{op.name} @{op.sym_name.data} declared twice")
                seen.add(key)
                if isinstance(op, BufferOp):
                    buffers[op.sym_name.data] = op.bytes.value.data
            elif not isinstance(op, ChipInstrOp):
                raise VerifyException(f"chip.program may only hold chip ops, not {op.name}")
        if buffers:
            _check_buffer_refs(self, buffers)

    def instructions(self) -> list["ChipInstrOp"]:
        return [op for op in self.body.block.ops if isinstance(op, ChipInstrOp)]


def _storage_bytes(op: IRDLOperation) -> int | None:
    """The storage size of the op's program (None: not in a program)."""
    p = op.parent_op()
    if not isinstance(p, ProgramOp):
        return None
    return p.storage_bytes.value.data


def is_symbolic(t: Tile) -> bool:
    """Is this a tile of a `chip.buffer` (`@BUFFER:OFFSET`), not of an address space?"""
    return t.space.startswith("@")


def _checkable(ins: Instr) -> Instr:
    """`ins` with its symbolic storage tiles as storage tiles (offsets into their
    buffers), for the target-independent checks of nnx/sim/isa.py."""

    def st(t):
        return Tile("S", t.offset, t.shape, t.dtype, t.strides) if t is not None and is_symbolic(t) else t

    opts = {k: st(v) if isinstance(v, Tile) else v for k, v in ins.opts.items()}
    return Instr(ins.unit, ins.mnemonic, [st(t) for t in ins.dsts], [st(t) for t in ins.srcs], ins.attrs, opts,
                 ins.token)


BUFFER_KINDS = ("const", "input", "intermediate", "output")


@irdl_op_definition
class BufferOp(IRDLOperation):
    """`chip.buffer @tK {bytes = N, kind = KIND}`: one storage tensor whose address is
    not decided yet (chip-lower declares them, chip-allocate places them and removes
    these ops). KIND is const, input, intermediate or output; tiles `@tK:OFFSET` point
    into it. chip-allocate puts the constants first, contiguous, then the other
    buffers in the order they are declared, each on a 64-byte boundary."""

    name = "chip.buffer"
    sym_name = prop_def(SymbolNameConstraint())
    bytes = prop_def(IntegerAttr)
    kind = prop_def(StringAttr)
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" ")
        printer.print_attr_dict({"bytes": self.bytes, "kind": self.kind})
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> "BufferOp":
        name = parser.parse_symbol_name()
        d = parser.parse_optional_attr_dict()
        props = {k: v for k, v in d.items() if k in ("bytes", "kind")}
        attrs = {k: v for k, v in d.items() if k not in props}
        if parser.parse_optional_keyword("attributes") is not None:
            attrs.update(parser.parse_optional_attr_dict())
        return cls.create(properties={"sym_name": name, **props}, attributes=attrs)

    def verify_(self) -> None:
        if self.bytes.value.data < 1:
            raise VerifyException(f"chip.buffer @{self.sym_name.data}: bytes must be at least 1")
        if self.kind.data not in BUFFER_KINDS:
            raise VerifyException(f"chip.buffer @{self.sym_name.data}: kind must be one of {', '.join(BUFFER_KINDS)}, "
                                  f"not '{self.kind.data}'")


def _check_buffer_refs(program: "ProgramOp", buffers: dict[str, int]) -> None:
    """Every symbolic tile of the program names a declared buffer and stays inside it."""

    def check(op, a) -> None:
        if not isinstance(a, TileAttr) or not a.space.data.startswith("@"):
            return
        name = a.space.data[1:]
        n = buffers.get(name)
        t = a.tile()
        if n is None:
            raise VerifyException(f"{op.name}: tile {t.text()} points into @{name}, which is not a chip.buffer")
        if t.end > n:
            raise VerifyException(f"{op.name}: tile {t.text()} ends at byte {t.end} of @{name}, a {n}-byte buffer")

    for op in program.body.block.ops:
        if isinstance(op, _SymbolOp):
            check(op, op.tile)
        elif isinstance(op, ChipInstrOp):
            for a in op.dsts.data:
                check(op, a)
            for a in op.srcs.data:
                check(op, a)
            for k in ("nmask", "wmask"):
                if k in op.properties:
                    check(op, op.properties[k])


class _SymbolOp(IRDLOperation):
    sym_name = prop_def(SymbolNameConstraint())
    tile = prop_def(TileAttr)
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" ")
        printer.print_attribute(self.tile)
        self._print_tail(printer)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)

    def _print_tail(self, printer: Printer) -> None:
        pass

    @classmethod
    def parse(cls, parser: Parser) -> "_SymbolOp":
        name = parser.parse_symbol_name()
        tile = parser.parse_attribute()
        props: dict[str, Attribute] = {"sym_name": name, "tile": tile}
        if cls is ConstOp:
            parser.parse_punctuation("=")
            props["value"] = parser.parse_attribute()
        attrs = parser.parse_optional_attr_dict()
        return cls.create(properties=props, attributes=attrs)

    def verify_(self) -> None:
        t = self.tile.tile()
        symbolic = is_symbolic(t)
        err = check_tile(Tile("S", t.offset, t.shape, t.dtype, t.strides) if symbolic else t, f"@{self.sym_name.data}")
        if err:
            raise VerifyException(f"{self.name} {err}")
        if t.space != "S" and not symbolic:
            raise VerifyException(f"{self.name} @{self.sym_name.data}: must live in storage (S or a @buffer), not {t.space}")
        if not t.contiguous:
            raise VerifyException(f"{self.name} @{self.sym_name.data}: must be a dense tile")
        sb = _storage_bytes(self)
        if sb is not None and not symbolic and t.end > sb:
            raise VerifyException(f"{self.name} @{self.sym_name.data} ends at byte {t.end}, beyond storage_bytes {sb}")


@irdl_op_definition
class InputOp(_SymbolOp):
    """A program input: the caller writes it into the storage unit before the run."""

    name = "chip.input"


@irdl_op_definition
class OutputOp(_SymbolOp):
    """A program output: read from the storage unit after the run."""

    name = "chip.output"


@irdl_op_definition
class ConstOp(_SymbolOp):
    """Initial storage contents (weights, constants); nnx-translate writes the values
    to the data file beside the assembly, never as decimal text."""

    name = "chip.const"
    value = prop_def(Attribute)

    def _print_tail(self, printer: Printer) -> None:
        printer.print_string(" = ")
        printer.print_attribute(self.value)

    def array(self) -> np.ndarray:
        from nnx.resources import elements_value

        v = self.value
        if not isinstance(v, (DenseIntOrFPElementsAttr, DenseResourceAttr)):
            raise VerifyException(f"chip.const @{self.sym_name.data}: value must be dense elements")
        return np.asarray(elements_value(v))

    def verify_(self) -> None:
        super().verify_()
        v = self.value
        if not isinstance(v, (DenseIntOrFPElementsAttr, DenseResourceAttr)):
            raise VerifyException(f"chip.const @{self.sym_name.data}: value must be dense or dense_resource elements")
        ty = v.type
        if not isinstance(ty, TensorType):
            raise VerifyException(f"chip.const @{self.sym_name.data}: value must have a tensor type")
        t = self.tile.tile()
        if type_name(ty.element_type) != t.dtype or int(np.prod(ty.get_shape())) != t.nelems:
            raise VerifyException(
                f"chip.const @{self.sym_name.data}: value {ty} does not fill the tile {t.text()}"
            )


# --------------------------------------------------------------------------------------
# Instructions
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1 << 16)
def _tile_attr(t: Tile) -> TileAttr:
    """`TileAttr.of`, shared between equal tiles (attributes are immutable; a program
    reuses the same cache slots thousands of times)."""
    return TileAttr.of(t)


def _tiles_attr(tiles: Sequence[Tile | None]) -> ArrayAttr:
    return ArrayAttr([UnitAttr() if t is None else _tile_attr(t) for t in tiles])


def _py(attr: Attribute) -> Any:
    from nnx.dialects.graph import attr_to_python

    v = attr_to_python(attr)
    if isinstance(v, np.ndarray):
        v = v.tolist()
    return v


class ChipInstrOp(IRDLOperation):
    """Base of every instruction op: `unit`, destination and source tiles, parameters."""

    MNEMONIC: ClassVar[str] = ""
    HEAD: ClassVar[str | None] = None  # a property printed before the unit (kind)

    unit = prop_def(StringAttr)
    dsts = prop_def(ArrayAttr)
    srcs = prop_def(ArrayAttr)
    params = opt_prop_def(DictionaryAttr)

    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    # ---- ISA view ------------------------------------------------------------------
    def mnemonic(self) -> str:
        return self.MNEMONIC

    def to_instr(self) -> Instr:
        def tl(arr: ArrayAttr) -> list[Tile | None]:
            return [a.tile() if isinstance(a, TileAttr) else None for a in arr.data]

        attrs = {} if self.params is None else {k: _py(v) for k, v in self.params.data.items()}
        opts: dict[str, Any] = {}
        for k in ("acc",):
            if k in self.properties:
                opts[k] = True
        for k in ("nmask", "wmask"):
            a = self.properties.get(k)
            if isinstance(a, TileAttr):
                opts[k] = a.tile()
        tok = self.properties.get("token")
        return Instr(
            self.unit.data,
            self.mnemonic(),
            tl(self.dsts),
            tl(self.srcs),
            attrs,
            opts,
            tok.data if isinstance(tok, StringAttr) else None,
        )

    def verify_(self) -> None:
        for arr in (self.dsts, self.srcs):
            for a in arr.data:
                if not isinstance(a, (TileAttr, UnitAttr)):
                    raise VerifyException(f"{self.name}: operands must be #chip.tile attributes or 'none'")
        raw = self.to_instr()
        ins = _checkable(raw) if any(is_symbolic(t) for t in raw.tiles()) else raw
        err = check_instr(ins)
        if err:
            raise VerifyException(f"{self.name}: {err}")
        sb = _storage_bytes(self)
        for t in raw.tiles():
            if sb is not None and t.space == "S" and t.end > sb:
                raise VerifyException(f"{self.name}: tile {t.text()} ends at byte {t.end}, beyond storage_bytes {sb}")

    # ---- custom assembly -------------------------------------------------------------
    def print(self, printer: Printer) -> None:
        if self.HEAD is not None:
            printer.print_string(" " + self.properties[self.HEAD].data)  # type: ignore[attr-defined]
        printer.print_string(f" {self.unit.data}")
        if isinstance(self, (SignalOp, WaitOp)):
            printer.print_string(f" {self.token.data}")
        else:
            for i, a in enumerate(self.dsts.data):
                printer.print_string(" " if i == 0 else ", ")
                self._print_tile(printer, a)
            if self.srcs.data:
                printer.print_string(" <-")
                for i, a in enumerate(self.srcs.data):
                    printer.print_string(" " if i == 0 else ", ")
                    self._print_tile(printer, a)
        skip = {"unit", "dsts", "srcs", "token", self.HEAD}
        shown = {k: v for k, v in self.properties.items() if k not in skip}
        shown.update(self.attributes)
        if shown:
            printer.print_string(" ")
            printer.print_attr_dict(shown)

    @staticmethod
    def _print_tile(printer: Printer, a: Attribute) -> None:
        if isinstance(a, UnitAttr):
            printer.print_string("none")
        else:
            printer.print_attribute(a)

    @classmethod
    def parse(cls, parser: Parser) -> "ChipInstrOp":
        props: dict[str, Attribute] = {}
        if cls.HEAD is not None:
            props[cls.HEAD] = StringAttr(parser.parse_identifier(f" ({cls.HEAD})"))
        props["unit"] = StringAttr(parser.parse_identifier(" (unit, e.g. DAU0)"))
        if cls in (SignalOp, WaitOp):
            props["token"] = StringAttr(parser.parse_identifier(" (token name)"))
            props["dsts"] = ArrayAttr([])
            props["srcs"] = ArrayAttr([])
        else:

            def one() -> Attribute:
                if parser.parse_optional_keyword("none") is not None:
                    return UnitAttr()
                return parser.parse_attribute()

            dsts: list[Attribute] = []
            srcs: list[Attribute] = []
            if parser._current_token.text.startswith("#"):  # noqa: SLF001
                dsts = parser.parse_comma_separated_list(parser.Delimiter.NONE, one)
            if parser.parse_optional_punctuation("<") is not None:
                parser.parse_punctuation("-")
                srcs = parser.parse_comma_separated_list(parser.Delimiter.NONE, one)
            props["dsts"] = ArrayAttr(dsts)
            props["srcs"] = ArrayAttr(srcs)
        d = parser.parse_optional_attr_dict()
        names = cls.get_irdl_definition().properties
        attrs: dict[str, Attribute] = {}
        for k, v in d.items():
            if k in names:
                props[k] = v
            else:
                attrs[k] = v
        return cls.create(properties=props, attributes=attrs)


@irdl_op_definition
class LoadOp(ChipInstrOp):
    """DAU: DMA a tile from the storage unit into a cache.

    `dsts[0]` is the cache tile, `srcs[0]` the storage tile of the same shape and type;
    either side may be strided (docs/architecture.md, "The chip dialect")."""

    name = "chip.load"
    MNEMONIC: ClassVar[str] = "LOAD"


@irdl_op_definition
class StoreOp(ChipInstrOp):
    """DAU: DMA a cache tile to the storage unit (`dsts[0]` in S, `srcs[0]` in a cache)."""

    name = "chip.store"
    MNEMONIC: ClassVar[str] = "STORE"


@irdl_op_definition
class MoveOp(ChipInstrOp):
    """DAU: copy a tile between caches (e.g. output cache -> neuron cache)."""

    name = "chip.move"
    MNEMONIC: ClassVar[str] = "MOVE"


@irdl_op_definition
class GatherOp(ChipInstrOp):
    """DAU: indirect DMA -- `dst[i, ...] = table[idx[i], ...]`.

    Source #0 is the storage tensor `table`, source #1 the index tile `idx` (i32/i64 in a
    cache, negative = from the end); only the named rows move (an embedding lookup
    without loading the whole table)."""

    name = "chip.gather"
    MNEMONIC: ClassVar[str] = "GATHER"


@irdl_op_definition
class FillOp(ChipInstrOp):
    """VPU: set every element of a tile to `params.value` (padding, accumulator init)."""

    name = "chip.fill"
    MNEMONIC: ClassVar[str] = "FILL"


@irdl_op_definition
class ConnOp(ChipInstrOp):
    """MAP: build the connection data of a neuron or weight tile.

    A direct index (ui8/i1 destination) or stride index (i32 destination) of the
    elements with |x| > `params.threshold`; `params.order` = "out" (per output neuron)
    or "in" (per input neuron). See docs/sparse-mapping.md."""

    name = "chip.conn"
    MNEMONIC: ClassVar[str] = "CONN"


@irdl_op_definition
class ConvertOp(ChipInstrOp):
    """MAP: convert connection data between direct and stride index (same shape)."""

    name = "chip.convert"
    MNEMONIC: ClassVar[str] = "CONVERT"


@irdl_op_definition
class CombineOp(ChipInstrOp):
    """MAP: combine two connection data.

    direct + direct: AND; stride + stride: prefix-sum, intersect, differences; mixed:
    the destination's form decides (docs/sparse-mapping.md)."""

    name = "chip.combine"
    MNEMONIC: ClassVar[str] = "COMBINE"


@irdl_op_definition
class ExpandOp(ChipInstrOp):
    """MAP: select -- scatter packed surviving values into a dense tile by connection data."""

    name = "chip.expand"
    MNEMONIC: ClassVar[str] = "EXPAND"


@irdl_op_definition
class CompactOp(ChipInstrOp):
    """MAP: select -- gather the surviving elements of a dense tile by connection data (zero-padded)."""

    name = "chip.compact"
    MNEMONIC: ClassVar[str] = "COMPACT"


@irdl_op_definition
class MpuOp(ChipInstrOp):
    """MPU: one ONNX kind (Conv, ConvTranspose, MatMul, Gemm, ...) on cache tiles.

    Sources are the ONNX inputs in order (`none` = absent optional input), `params` the
    ONNX attributes, `acc` adds into the destination (reduction tiling), `nmask`/`wmask`
    are direct-index connection data of the neuron/weight source: only surviving pairs
    are computed and counted (docs/sparse-mapping.md)."""

    name = "chip.mpu"
    HEAD: ClassVar[str | None] = "kind"
    kind = prop_def(StringAttr)
    acc = opt_prop_def(UnitAttr)
    nmask = opt_prop_def(TileAttr)
    wmask = opt_prop_def(TileAttr)

    def mnemonic(self) -> str:
        return self.kind.data


@irdl_op_definition
class VpuOp(ChipInstrOp):
    """VPU: any other ONNX kind on cache tiles, meaning `run_kernel(kind, srcs, params)`
    (elementwise, activation, pooling, normalisation, softmax, reductions, data
    movement); `acc` adds into the destination."""

    name = "chip.vpu"
    HEAD: ClassVar[str | None] = "kind"
    kind = prop_def(StringAttr)
    acc = opt_prop_def(UnitAttr)

    def mnemonic(self) -> str:
        return self.kind.data


@irdl_op_definition
class SignalOp(ChipInstrOp):
    """Any unit: add one to counting token `token` when this unit reaches it."""

    name = "chip.signal"
    MNEMONIC: ClassVar[str] = "SIGNAL"
    token = prop_def(StringAttr)


@irdl_op_definition
class WaitOp(ChipInstrOp):
    """Any unit: wait until token `token` has been signalled, and take one signal."""

    name = "chip.wait"
    MNEMONIC: ClassVar[str] = "WAIT"
    token = prop_def(StringAttr)


_BY_MNEMONIC: dict[str, type[ChipInstrOp]] = {
    c.MNEMONIC: c
    for c in (LoadOp, StoreOp, MoveOp, GatherOp, FillOp, ConnOp, ConvertOp, CombineOp, ExpandOp, CompactOp, SignalOp, WaitOp)
}


def _op_class(mnemonic: str) -> type[ChipInstrOp]:  # the op of an ISA mnemonic
    return _BY_MNEMONIC.get(mnemonic) or (MpuOp if mnemonic in MPU_KINDS else VpuOp)


def instr_op(ins: Instr) -> ChipInstrOp:
    """The chip op of an ISA instruction (the builder lowering passes use)."""
    from nnx.dialects.graph import python_to_attr

    props: dict[str, Attribute] = {"unit": StringAttr(ins.unit), "dsts": _tiles_attr(ins.dsts),
                                   "srcs": _tiles_attr(ins.srcs)}
    cls = _op_class(ins.mnemonic)
    if cls.HEAD is not None:
        props["kind"] = StringAttr(ins.mnemonic)
    if ins.attrs:
        props["params"] = DictionaryAttr({k: python_to_attr(v) for k, v in ins.attrs.items()})
    for k, v in ins.opts.items():
        props[k] = UnitAttr() if v is True else _tile_attr(v)
    if ins.token is not None:
        props["token"] = StringAttr(ins.token)
    return cls.create(properties=props)


def check_program(program: ProgramOp, target: Any, instrs: list | None = None) -> list[str]:
    """Target-dependent problems of a program (empty list: it fits the target);
    `instrs`: its instructions already made `Instr`s (`op.to_instr()`, in order)."""
    instrs = instrs if instrs is not None else [op.to_instr() for op in program.instructions()]
    return check_instrs(program.storage_bytes.value.data, instrs, target)


def check_instrs(sb: int, instrs: list[Instr], target: Any) -> list[str]:
    """`check_program` of a program of `sb` storage bytes and these instructions."""
    errors: list[str] = []
    if sb > target.storage.bytes:
        errors.append(f"chip.program: storage_bytes {sb} exceeds the target's storage ({target.storage.bytes} bytes)")
    units = set(target.unit_names())
    caps: dict[str, int] = {}
    ends: dict[Tile, int] = {}  # (an instruction's tiles recur in many others)
    for ins in instrs:
        if ins.unit not in units:
            errors.append(f"{_op_class(ins.mnemonic).name}: unit {ins.unit} does not exist in target '{target.name}'")
        for t in ins.tiles():
            if t.space == "S" or is_symbolic(t):
                continue
            end, cap = ends.get(t), caps.get(t.space)
            if end is None:
                end = ends[t] = t.end
            if cap is None:
                cap = caps[t.space] = target.cache_bytes(t.space)
            if end > cap:
                errors.append(f"{_op_class(ins.mnemonic).name}: tile {t.text()} ends at byte {end}, beyond the "
                              f"{target.cache(t.space).name} cache ({cap} bytes)")
    return errors


Chip = Dialect(
    "chip",
    [ProgramOp, BufferOp, InputOp, OutputOp, ConstOp, LoadOp, StoreOp, MoveOp, GatherOp, MpuOp, VpuOp, FillOp,
     ConnOp, ConvertOp, CombineOp, ExpandOp, CompactOp, SignalOp, WaitOp],
    [TileAttr],
)
