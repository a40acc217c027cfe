"""An example pass plugin: replace nnx's instruction scheduler with another policy.

    nnx-opt model.mlir --load-pass-plugin examples/plugin_scheduler.py \\
      --pass-pipeline='builtin.module(chip-lower,chip-allocate,chip-schedule-reverse-rank,chip-sync)'
    nnx-compile model.onnx -o prog.s --load-pass-plugin examples/plugin_scheduler.py \\
      --pipeline='builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce,chip-lower,chip-allocate,chip-schedule-reverse-rank{window=64},chip-sync)'

The built-in `chip-schedule` pass list-schedules the instructions of a `chip.program`
onto the units, most critical first (docs/architecture.md).
This file defines two other policies, each a `ModulePass` that takes the place of
`chip-schedule` between `chip-allocate` and `chip-sync` (it reorders instructions that
carry no SIGNAL/WAIT yet; `chip-sync` then inserts them from the dependencies):

* `chip-schedule-program-order`: keep the order the instructions were emitted in
  (op by op, tile by tile), i.e. no scheduling;
* `chip-schedule-reverse-rank{window=N}`: among the instructions whose predecessors
  are all placed, take the one with the *shortest* remaining path to the end of the
  program first: the opposite of a critical-path list scheduler, a deliberately poor
  policy that shows how much scheduling matters. `window` (0 = unlimited) limits the
  choice to the N oldest ready instructions.

Any order that respects the dependencies computes the same outputs; only the cycle
count changes (test/python/test_plugins.py checks both). The dependencies come from
`nnx.lowering.deps.instruction_dependencies(program)`: for each instruction (in
`program.instructions()` order) the indices of the instructions it must follow.

Everything a plugin needs is here: a frozen dataclass `ModulePass` subclass with a
`name` and option fields, defined in the file passed to `--load-pass-plugin`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError


def ranks(preds: Sequence[Sequence[int]]) -> list[int]:
    """Length (in instructions) of the longest path from each instruction to the end
    of the dependency graph; `preds[i]` lists the instructions i must follow."""
    succs: list[list[int]] = [[] for _ in preds]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    rank = [1] * len(preds)
    for i in reversed(range(len(preds))):  # emission order is a topological order
        if succs[i]:
            rank[i] = 1 + max(rank[s] for s in succs[i])
    return rank


def reverse_rank_order(preds: Sequence[Sequence[int]], window: int = 0) -> list[int]:
    """A topological order of the instructions taking, among the ready ones, the
    lowest rank first (ties: the earliest emitted). `window` > 0: only the `window`
    earliest-emitted ready instructions are candidates."""
    for i, ps in enumerate(preds):
        if any(not 0 <= p < i for p in ps):
            raise ValueError(f"instruction {i} depends on {list(ps)}: not an earlier instruction")
    rank = ranks(preds)
    waiting = [len(set(ps)) for ps in preds]
    succs: list[list[int]] = [[] for _ in preds]
    for i, ps in enumerate(preds):
        for p in set(ps):
            succs[p].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    order: list[int] = []
    while ready:
        ready.sort()
        candidates = ready[:window] if window > 0 else ready
        pick = min(candidates, key=lambda i: (rank[i], i))
        ready.remove(pick)
        order.append(pick)
        for s in succs[pick]:
            waiting[s] -= 1
            if waiting[s] == 0:
                ready.append(s)
    return order


def _programs(module: ModuleOp):
    from nnx.dialects.chip import ProgramOp

    return [op for op in module.walk() if isinstance(op, ProgramOp)]


def _reorder(program, order: Sequence[int]) -> None:
    """Put the instructions of `program` in `order` (indices into instructions())."""
    instrs = list(program.instructions())
    block = program.body.block
    for op in instrs:
        op.detach()
    for i in order:
        block.add_op(instrs[i])


def _check_unsynchronised(program) -> None:
    from nnx.dialects.chip import SignalOp, WaitOp

    for op in program.instructions():
        if isinstance(op, (SignalOp, WaitOp)):
            raise PassError(
                "the program already has SIGNAL/WAIT: run the scheduler before chip-sync",
                op,
            )


def _dependencies(program) -> list[list[int]]:
    """Per instruction (block position), the positions it must follow."""
    from nnx.lowering.deps import instruction_dependencies

    return [list(p) for p in instruction_dependencies(program).preds]


@dataclass(frozen=True)
class ReverseRankSchedulePass(ModulePass):
    """Schedule the instructions of every chip.program lowest-rank first."""

    name = "chip-schedule-reverse-rank"

    window: int = 0
    """consider only the `window` oldest ready instructions (0: all of them)"""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.window < 0:
            raise PassError(f"window must be >= 0, got {self.window}")
        for program in _programs(op):
            _check_unsynchronised(program)
            _reorder(program, reverse_rank_order(_dependencies(program), self.window))


@dataclass(frozen=True)
class ProgramOrderSchedulePass(ModulePass):
    """Leave the instructions in the order they were emitted (no scheduling)."""

    name = "chip-schedule-program-order"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in _programs(op):
            _check_unsynchronised(program)
