"""`chip-sync`: SIGNAL/WAIT for the cross-unit dependencies, in the block's order.

The units run their queues in parallel, each in program order; a unit must not read
data another unit has not finished writing, nor overwrite data another unit still
reads. This pass recomputes the dependencies of the `chip.program`'s instructions from the
IR (`nnx.lowering.deps.instruction_dependencies`: in the program's sequential order
`nnx.seq`, whatever order a scheduler gave the block; a block order that puts an
instruction before one it depends on is an error) and, for every
dependency between instructions of different units, puts `chip.signal` after the
producer and `chip.wait` before the consumer on a fresh token `t<k>` -- unless the
consumer's unit already knows, transitively through earlier tokens (vector clocks),
that the producer has finished (`nnx.lowering.deps.sync_tokens`). It then drops the
instructions' `nnx.access` and `nnx.seq` attributes: the program is final (any SIGNAL/WAIT already
present is an error).

    nnx-opt prog.mlir -p chip-sync
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError


def synchronise_program(pass_name: str, prog, deps=None) -> None:
    """Insert SIGNAL/WAIT into one chip.program (see the module docstring). `deps`:
    the program's dependencies in its block order when the caller already has them
    (the composite lower-to-chip, from chip-schedule), else computed from the IR."""
    from nnx.dialects.chip import SignalOp, WaitOp
    from nnx.lowering.deps import ACCESS_ATTR, SEQ_ATTR, instruction_dependencies, sync_tokens
    from nnx.passes.chip_schedule import check_unsynchronised

    if deps is None:
        check_unsynchronised(pass_name, prog)
        deps = instruction_dependencies(prog)
    check_order(pass_name, deps)
    n = len(deps.ops)
    signals, waits = sync_tokens(deps.units, deps.preds, range(n))
    block = prog.body.block
    for i, op in enumerate(deps.ops):
        unit = StringAttr(deps.units[i])
        for tok in waits.get(i, ()):
            block.insert_op_before(WaitOp.create(properties=_sync_props(unit, tok)), op)
        after = op
        for tok in signals.get(i, ()):
            s = SignalOp.create(properties=_sync_props(unit, tok))
            block.insert_op_after(s, after)
            after = s
        for key in (ACCESS_ATTR, SEQ_ATTR):
            if key in op.attributes:
                del op.attributes[key]


def check_order(pass_name: str, deps) -> None:
    """A PassError when the block order of `deps` puts an instruction before one it
    depends on."""
    bad = deps.order_violation()
    if bad is not None:
        i, p = bad
        raise PassError(f"{pass_name}: the instruction at position {i} ({deps.instrs[i].unit} {deps.instrs[i].mnemonic}) "
                        f"comes before the one it depends on at position {p} ({deps.instrs[p].unit} "
                        f"{deps.instrs[p].mnemonic}): the block order is not a valid schedule", deps.ops[i])


def _sync_props(unit: StringAttr, token: str) -> dict:
    from xdsl.dialects.builtin import ArrayAttr

    return {"unit": unit, "dsts": ArrayAttr([]), "srcs": ArrayAttr([]), "token": StringAttr(token)}


@dataclass(frozen=True)
class ChipSyncPass(ModulePass):
    """SIGNAL/WAIT from the dependencies in each chip.program's block order (see the
    module docstring)."""

    name = "chip-sync"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.passes.chip_allocate import chip_programs

        for p in chip_programs(self.name, op):
            synchronise_program(self.name, p)
