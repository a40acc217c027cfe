"""`lower-to-chip`: graph (+ sparse) ops of `func.func @main` -> one final `chip.program`.

The composite of two graph rewrites and the four chip passes, with today's options
and defaults:

    graph-hoist-addends, graph-transpose-views -- only with schedule=true
                                      (passes/graph_hoist_addends.py, graph_transpose_views.py)
    chip-lower{target double-buffer max-tile-elements chain schedule}   (passes/chip_lower.py)
    chip-allocate                                                      (passes/chip_allocate.py)
    chip-schedule{target}        -- only with schedule=true            (passes/chip_schedule.py)
    chip-sync                                                          (passes/chip_sync.py)

The result is a program for the accelerator described by the target TOML (README "The
accelerator"; docs/architecture.md): static storage addresses (constants first, then
inputs, intermediates, outputs), tiles that fit the caches, resident results read in
place by their consumers (README "How lower-to-chip uses the caches"), DAU/MPU/VPU/MAP
instructions list-scheduled onto the units by the target's cost model, and SIGNAL/WAIT
only on real cross-unit dependencies. Sparse ops use compacted weights and connection
data (docs/sparse-mapping.md).

The lowering machinery is the package `nnx.lowering` (one concern per module: storage,
cache slots and heaps, residency, fusion, grouped channel chains, data movement,
compute tiling, sparse weights, dependencies). The composite runs the four passes'
work on the program as plain data (nnx/lowering/program.py) and builds the
`chip.program` once at the end; `LowerToChipPass.program` assembles the program
without building chip IR at all (the mesh compiler's core lowerings: docs/mesh.md,
"Compilation time").

With schedule=true the module is lowered a second time as with schedule=false (no
graph rewrites, no list scheduling) and the program whose simulated cycles are fewer
is kept (`nnx.sim.timing.replay`: the simulator's timing without values), so the
default pipeline is never slower than schedule=false (`keep-faster=false` skips the
second lowering; docs/topological-order.md, "Scheduling never slower").

Options: `target` (path of a target TOML; default: the embedded default target),
`chain` (default true; false = every result STOREd to storage and LOADed back),
`schedule` (default true; false = the emitted op-by-op order),
`keep-faster` (default true; with schedule=true, keep the faster of the scheduled
and the unscheduled program),
`reuse` (default false; true = intermediate buffers share storage over time,
chip-allocate's `reuse`), `reuse-limit` (bytes the storage should stay within, memory
freed long ago reused first; 0: reuse as soon as freed), `concat-in-place` (default
false; true = a concat of function arguments is their one buffer, each argument
written into its range: no copy; chip-lower's option; an argument named in
`reuse_inputs`, written while the program runs, may be a strided range), `double-buffer` (default true), `max-tile-elements` (split output tiles above this
many elements even when they fit, so DMA and compute overlap; 0 = the target's
`tiling.vpu_elements` x 4, -1 = never).

    nnx-opt m.mlir -p 'lower-to-chip{target=targets/default.toml}'
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class LowerToChipPass(ModulePass):
    """graph (+ sparse) ops of @main -> a chip.program: chip-lower, chip-allocate,
    chip-schedule (with schedule=true) and chip-sync (see the module docstring)."""

    name = "lower-to-chip"

    target: str = ""
    double_buffer: bool = True
    max_tile_elements: int = 0
    chain: bool = True
    schedule: bool = True
    keep_faster: bool = True
    reuse: bool = False
    reuse_limit: int = 0
    #: with `reuse`: input symbols written while the program runs (a mesh core's
    #: received messages), whose memory is reused too (chip-allocate)
    reuse_inputs: tuple[str, ...] = ()
    #: chip-lower's `concat_in_place`: a concat of arguments is their one buffer
    concat_in_place: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lp = self.lowered(ctx, op)
        from nnx.lowering.program import program_op
        from nnx.passes.chip_lower import main_function

        if ctx.get_optional_dialect("chip") is None:
            from nnx.dialects.chip import Chip

            ctx.load_dialect(Chip)
        for f in main_function(self.name, op)[1]:
            f.detach()
            f.erase()
        op.body.block.add_op(program_op(lp))

    def lowered(self, ctx: Context, op: ModuleOp):
        """The final program of the module's @main as plain data (a
        `nnx.lowering.program.LoweredProgram` with its `instrs`); the module keeps its
        functions (rewritten by the graph rewrites with `schedule`). `apply` puts its
        chip.program in their place."""
        from nnx.target import load_pass_target

        plain = op.clone() if self.schedule and self.keep_faster else None
        lp = self._lower(ctx, op, bool(self.schedule))
        if plain is None:
            return lp
        other = self._lower(ctx, plain, False)
        target = load_pass_target(self.name, self.target)
        return other if instrs_cycles(other.instrs, target) < instrs_cycles(lp.instrs, target) else lp

    def program(self, ctx: Context, op: ModuleOp, target, asm_path: str = "prog.s"):
        """The `nnx.api.Program` of the module's @main checked against the loaded
        `target` -- what `apply` and nnx-translate make of it, without building the
        chip IR -- with `first_use` (input symbol -> position of the first instruction
        touching it: chip-allocate's `nnx.first_use`, with `reuse`) and, without
        `schedule`, `op_positions` (`LoweredProgram.op_positions`)."""
        from nnx.api import Program
        from nnx.lowering.program import assembled

        lp = self.lowered(ctx, op)
        prog = Program(*assembled(lp, target, asm_path), target)
        prog.first_use = lp.first_use
        prog.op_positions = lp.op_positions
        return prog

    def _lower(self, ctx: Context, op: ModuleOp, schedule: bool):
        """The four passes (two rewrites first with `schedule`) over `op`'s @main, on
        the program as plain data (nnx/lowering/program.py)."""
        from nnx.diagnostics import PassError
        from nnx.lowering.deps import Dependencies, dependencies
        from nnx.lowering.errors import LoweringError
        from nnx.lowering.lowering import lower_program
        from nnx.lowering.program import allocate, synchronised
        from nnx.passes.chip_lower import main_function
        from nnx.passes.chip_schedule import schedule_order
        from nnx.passes.graph_hoist_addends import GraphHoistAddendsPass
        from nnx.passes.graph_transpose_views import GraphTransposeViewsPass
        from nnx.target import load_pass_target

        # the four passes' work, with their diagnostics under this pass's name, the
        # dependency analysis done once from the accesses chip-lower emitted (the
        # separate passes parse the same accesses back from `nnx.access`) and no IR
        # until the final program
        target = load_pass_target(self.name, self.target)
        if schedule:
            # the graph rewrites chip-lower profits from in list-scheduled programs
            GraphHoistAddendsPass().apply(ctx, op)
            GraphTransposeViewsPass().apply(ctx, op)
        main, _ = main_function(self.name, op)
        try:
            lp = lower_program(main, target, self.double_buffer, int(self.max_tile_elements), bool(self.chain),
                               schedule, bool(self.concat_in_place), frozenset(self.reuse_inputs))
        except LoweringError as e:
            raise PassError(f"{self.name}: {e.message}", e.op) from None
        emitted = [ins for ins, _, _ in lp.entries]  # same sizes and shapes: same costs
        accesses = [(r, w) for _, r, w in lp.entries]
        allocate(lp, self.name, bool(self.reuse), int(self.reuse_limit), frozenset(self.reuse_inputs))
        instrs = [ins for ins, _, _ in lp.entries]
        units = [ins.unit for ins in instrs]
        if self.reuse:  # the dependencies by address see the reused memory
            accesses = [(r, w) for _, r, w in lp.entries]
        deps = Dependencies(instrs, units, dependencies(accesses, units))
        deps.__dict__["instrs"] = instrs if self.reuse else emitted
        if schedule:
            order = schedule_order(self.name, target, deps)
            if order != list(range(len(order))):
                deps = deps.reordered(order)
        lp.instrs = synchronised(self.name, deps)
        return lp


def program_cycles(module: ModuleOp, target_path: str = "") -> int:
    """Simulated cycles of the module's chip.programs, one after another (the
    simulator's timing without values, `nnx.sim.timing.replay`)."""
    from nnx.passes.chip_allocate import chip_programs
    from nnx.target import load_pass_target

    target = load_pass_target(LowerToChipPass.name, target_path)
    return sum(instrs_cycles([i.to_instr() for i in prog.instructions()], target)
               for prog in chip_programs(LowerToChipPass.name, module))


def instrs_cycles(instrs: list, target) -> int:
    """Simulated cycles of a program's instructions on the loaded `target` (what
    `keep-faster` compares)."""
    from nnx.sim.timing import replay

    return replay(instrs, target).cycles
