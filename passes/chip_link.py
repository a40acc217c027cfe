"""`chip-link`: link separately compiled chip programs into one (docs/topological-order.md,
"Linking").

The input module holds several unallocated `chip.program`s (chip-lower's output, one per
subgraph), in data-flow order. A program's `chip.input @NAME` that an earlier program
produces as `chip.output @NAME` is a symbolic reference to that tensor: the linker
points it at the producer's `chip.buffer`, renames every other buffer apart
(`@s<k>_<tK>`), turns outputs that only later programs read into intermediates, shares
the buffer of inputs with the same name, and concatenates the instruction streams in
program order (`nnx.seq` renumbered, `nnx.access` renamed). The result is one
unallocated program: run `chip-allocate` (one storage allocation), then
`chip-schedule`/`chip-sync` over the whole.

Option: `outputs="a,b"` the names that stay program outputs (default: every output
that no later program reads).

    nnx-opt progs.mlir -p 'chip-link,chip-allocate,chip-schedule,chip-sync'
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError


@dataclass(frozen=True)
class ChipLinkPass(ModulePass):
    """Link the module's chip.programs, in data-flow order, into one unallocated
    program (see the module docstring)."""

    name = "chip-link"

    outputs: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.dialects.chip import BufferOp, ChipInstrOp
        from nnx.passes.chip_allocate import chip_programs
        from nnx.topo_order.link import LinkError, link_module

        progs = chip_programs(self.name, op)
        for k, p in enumerate(progs):
            ops = list(p.body.block.ops)
            if any(isinstance(o, ChipInstrOp) for o in ops) and not any(isinstance(o, BufferOp) for o in ops):
                raise PassError(f"{self.name}: program {k} is already allocated (no chip.buffer): "
                                f"link chip-lower's output, before chip-allocate", p)
        outs = [s.strip() for s in self.outputs.split(",") if s.strip()] or None
        try:
            link_module(op, outs)
        except LinkError as e:
            raise PassError(f"{self.name}: {e}", progs[e.index] if e.index is not None else None) from None
