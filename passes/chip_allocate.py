"""`chip-allocate`: static storage addresses for the buffers of a program from `chip-lower`.

chip-lower declares every storage tensor as a `chip.buffer @tK {bytes, kind}` and
points its tiles into it (`#chip.tile<@tK:OFFSET, ...>`, nnx/lowering/storage.py).
This pass gives the buffers their addresses -- the constants first, contiguous from
address 0 in declaration order (nnx-translate writes them as one data image), then
the program inputs, intermediates and outputs in declaration order (chip-lower
declares them in order of first use), each buffer on a 64-byte boundary -- and
rewrites every symbolic tile (storage symbols, instruction operands, masks) to its
absolute `S:` address and every buffer named in an instruction's `nnx.access`
(`S:@tK`) to its address range. `storage_bytes` becomes the end of the last buffer
(at least 64); the `chip.buffer` ops are removed. The result is the storage map of
the README (constants first, then inputs, intermediates, outputs). A program without
`chip.buffer` ops is left as it is; a tile of an undeclared buffer is an error.

Cache addresses are not decided here: chip-lower fixes them, because how an op is
tiled depends on what fits beside the resident buffers (tile sizes, residency and
cache addresses are one decision; docs/architecture.md section 7).

    nnx-opt prog.mlir -p chip-allocate
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError

ALIGN = 64
"""Every buffer starts on a multiple of this many bytes."""


def chip_programs(pass_name: str, module: ModuleOp) -> list:
    """The chip.program ops of a module; none is a PassError named `pass_name`."""
    from nnx.dialects.chip import ProgramOp

    progs = [o for o in module.body.block.ops if isinstance(o, ProgramOp)]
    if not progs:
        raise PassError(f"{pass_name}: expected a chip.program (run chip-lower first)")
    return progs


def buffer_addresses(buffers: list[tuple[str, int, str]]) -> tuple[dict[str, int], int]:
    """(address of each buffer, storage bytes) for (name, bytes, kind) in declaration
    order: constants first, then the others, each aligned to `ALIGN`."""
    addr: dict[str, int] = {}
    top = 0
    for consts in (True, False):
        for name, nbytes, kind in buffers:
            if (kind == "const") == consts:
                addr[name] = top
                top = (top + nbytes + ALIGN - 1) // ALIGN * ALIGN
    return addr, max(top, ALIGN)


def allocate_program(pass_name: str, prog) -> None:
    """Place the buffers of one `chip.program` and rewrite its tiles (see the module
    docstring)."""
    from nnx.dialects.chip import BufferOp, ChipInstrOp, TileAttr, _SymbolOp
    from nnx.lowering.deps import ACCESS_ATTR, allocate_accesses

    bufs = [op for op in prog.body.block.ops if isinstance(op, BufferOp)]
    if not bufs:
        return
    addr, storage_bytes = buffer_addresses([(b.sym_name.data, b.bytes.value.data, b.kind.data) for b in bufs])
    placed = {b.sym_name.data: (addr[b.sym_name.data], addr[b.sym_name.data] + b.bytes.value.data) for b in bufs}
    storage = StringAttr("S")

    def tile(op, a):
        if not isinstance(a, TileAttr) or not a.space.data.startswith("@"):
            return a
        base = addr.get(a.space.data[1:])
        if base is None:
            raise PassError(f"{pass_name}: tile {a.tile().text()} points into {a.space.data}, which is not a chip.buffer", op)
        return TileAttr(storage, IntAttr(base + a.offset.data), a.shape, a.element_type, a.strides)

    for op in prog.body.block.ops:
        if isinstance(op, _SymbolOp):
            op.properties["tile"] = tile(op, op.tile)
        elif isinstance(op, ChipInstrOp):
            for key in ("dsts", "srcs"):
                arr = op.properties[key]
                if any(isinstance(a, TileAttr) and a.space.data.startswith("@") for a in arr.data):
                    op.properties[key] = ArrayAttr([tile(op, a) for a in arr.data])
            for key in ("nmask", "wmask"):
                if key in op.properties:
                    op.properties[key] = tile(op, op.properties[key])
            acc = op.attributes.get(ACCESS_ATTR)
            if acc is not None and "S:@" in acc.data:
                try:
                    op.attributes[ACCESS_ATTR] = StringAttr(allocate_accesses(acc.data, placed))
                except KeyError as e:
                    raise PassError(f"{pass_name}: nnx.access names @{e.args[0]}, which is not a chip.buffer", op) from None
    for b in bufs:
        b.detach()
        b.erase()
    prog.properties["storage_bytes"] = IntegerAttr(storage_bytes, i64)


@dataclass(frozen=True)
class ChipAllocatePass(ModulePass):
    """Static storage addresses for chip-lower's buffers (see the module docstring)."""

    name = "chip-allocate"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in chip_programs(self.name, op):
            allocate_program(self.name, p)
