"""`chip-schedule`: order a program's instructions by the list scheduler.

Reads the dependencies of the `chip.program`'s instructions from the IR alone
(`nnx.lowering.deps.instruction_dependencies`: the instructions' `nnx.access`, else
their tiles), times each instruction with the target's cost formulas
(`nnx.schedule.estimate_cycles`, i.e. `Target.instr_cycles`) and reorders the block by
`nnx.schedule.best_order`: the given order or a list schedule, whichever the cost
model times faster. Any topological order computes the same results; only the cycles
change. (The cost model is not the simulator: the composite `lower-to-chip` therefore
also lowers without scheduling and keeps whichever program the simulator's timing
finds faster, its `keep-faster` option.) Run it before `chip-sync` (a program that already has SIGNAL/WAIT is an
error). A plugin may replace this pass by any other order of the same dependencies
and run `chip-sync` after it.

Options: `target` (the target TOML whose costs are used; default: the embedded one).
`NNX_SCHEDULE_DEBUG=1` prints the cost model's times and the critical path.

    nnx-opt prog.mlir -p 'chip-schedule{target="targets/default.toml"},chip-sync'
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError

if TYPE_CHECKING:
    from nnx.lowering.deps import Dependencies


def reorder_instructions(program, ops: list, order: list[int]) -> None:
    """Put the instruction ops `ops` of `program` in the block in `order` (indices
    into `ops`), after the storage symbols."""
    block = program.body.block
    for op in ops:
        block.detach_op(op)
    for i in order:
        block.add_op(ops[i])


def check_unsynchronised(pass_name: str, program) -> None:
    from nnx.dialects.chip import SignalOp, WaitOp

    for op in program.instructions():
        if isinstance(op, (SignalOp, WaitOp)):
            raise PassError(f"{pass_name}: the program already has SIGNAL/WAIT (run it before chip-sync)", op)


def schedule_program(pass_name: str, prog, target, deps: "Dependencies | None" = None) -> "Dependencies":
    """Reorder one chip.program by the list scheduler (see the module docstring); the
    dependencies of the new block order (what chip-sync needs: the composite
    lower-to-chip hands them on instead of computing them again). `deps`: the
    program's dependencies when the caller has them, else read from the IR."""
    from nnx.lowering.deps import instruction_dependencies

    if deps is None:
        check_unsynchronised(pass_name, prog)
        deps = instruction_dependencies(prog)
    order = schedule_order(pass_name, target, deps)
    if order == list(range(len(order))):
        return deps
    reorder_instructions(prog, deps.ops, order)
    return deps.reordered(order)


def schedule_order(pass_name: str, target, deps: "Dependencies") -> list[int]:
    """The list scheduler's order of the instructions of `deps` (indices into its
    block order; the given order when the cost model times it no slower)."""
    from nnx.schedule import best_order, critical_path, estimate_cycles

    bad = deps.order_violation()
    if bad is not None:
        raise PassError(f"{pass_name}: the block order puts instruction {bad[0]} before its dependency {bad[1]}",
                        deps.ops[bad[0]])
    cost = [estimate_cycles(target, i) for i in deps.instrs]
    order, t0, t1 = best_order(deps.units, cost, deps.preds)
    if os.environ.get("NNX_SCHEDULE_DEBUG"):
        from collections import Counter

        print(f"{pass_name}: cost model: given order {t0} cycles, chosen {t1}", file=sys.stderr)
        crit: Counter = Counter()
        for i in critical_path(deps.units, cost, deps.preds, order):
            crit[(deps.units[i], deps.instrs[i].mnemonic)] += cost[i]
        print(f"{pass_name}: critical path: " + ", ".join(f"{u} {m} {c}" for (u, m), c in crit.most_common()),
              file=sys.stderr)
    return order


@dataclass(frozen=True)
class ChipSchedulePass(ModulePass):
    """Reorder each chip.program's instructions by the cost-model list scheduler
    (see the module docstring)."""

    name = "chip-schedule"

    target: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.dialects.chip import ProgramOp
        from nnx.target import load_pass_target

        target = load_pass_target(self.name, self.target)
        for prog in [o for o in op.body.block.ops if isinstance(o, ProgramOp)]:
            schedule_program(self.name, prog, target)
