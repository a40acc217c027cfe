"""`chip-allocate`: static storage addresses for a program from `chip-lower`.

chip-lower allocates storage in two virtual regions: the constants from address 0,
contiguous (nnx-translate writes them as one data image), and the program inputs,
intermediate tensors and outputs, in that order of first use, from
`nnx.lowering.storage.DATA_BASE`. This pass places the second region right behind the
constants (aligned to 64 bytes): every storage tile of the symbols and instructions,
and every storage allocation named in the instructions' `nnx.access`, moves down by
`DATA_BASE - const_bytes`; `storage_bytes` becomes the end of the data region. The
result is the storage map the README describes (constants first, then inputs,
intermediates, outputs). A program without the `nnx.unallocated` mark is left as it is.

Cache addresses are not decided here: chip-lower fixes them, because how an op is
tiled depends on what fits beside the resident buffers.

    nnx-opt prog.mlir -p chip-allocate
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError


def allocate_program(prog) -> None:
    """Relocate the data region of an unallocated `chip.program` behind its constants."""
    from nnx.dialects.chip import ChipInstrOp, TileAttr, _SymbolOp
    from nnx.lowering.deps import ACCESS_ATTR, relocate_accesses
    from nnx.lowering.storage import ALIGN, DATA_BASE, UNALLOCATED_ATTR, _align

    marks = prog.attributes.get(UNALLOCATED_ATTR)
    if marks is None:
        return
    const_bytes = marks.data["const_bytes"].value.data
    data_bytes = marks.data["data_bytes"].value.data
    cbytes = _align(const_bytes)
    delta = DATA_BASE - cbytes

    def reloc(addr: int) -> int:
        return addr - delta if addr >= DATA_BASE else addr

    def tile(a):
        if isinstance(a, TileAttr) and a.space.data == "S" and a.offset.data >= DATA_BASE:
            return TileAttr(a.space, IntAttr(a.offset.data - delta), a.shape, a.element_type, a.strides)
        return a

    for op in prog.body.block.ops:
        if isinstance(op, _SymbolOp):
            op.properties["tile"] = tile(op.tile)
        elif isinstance(op, ChipInstrOp):
            for key in ("dsts", "srcs"):
                arr = op.properties[key]
                if any(isinstance(a, TileAttr) and a.space.data == "S" for a in arr.data):
                    op.properties[key] = ArrayAttr([tile(a) for a in arr.data])
            for key in ("nmask", "wmask"):
                if key in op.properties:
                    op.properties[key] = tile(op.properties[key])
            acc = op.attributes.get(ACCESS_ATTR)
            if acc is not None and "S:" in acc.data:
                op.attributes[ACCESS_ATTR] = StringAttr(relocate_accesses(acc.data, reloc))
    del prog.attributes[UNALLOCATED_ATTR]
    prog.properties["storage_bytes"] = IntegerAttr(max(cbytes + data_bytes, ALIGN), i64)


@dataclass(frozen=True)
class ChipAllocatePass(ModulePass):
    """Static storage addresses: the data region of chip-lower's program behind the
    constants (see the module docstring)."""

    name = "chip-allocate"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.dialects.chip import ProgramOp

        progs = [o for o in op.body.block.ops if isinstance(o, ProgramOp)]
        if not progs:
            raise PassError("chip-allocate: expected a chip.program (run chip-lower first)")
        for p in progs:
            allocate_program(p)
