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
compute tiling, sparse weights, dependencies).

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
        plain = op.clone() if self.schedule and self.keep_faster else None
        self._lower(ctx, op, bool(self.schedule))
        if plain is None:
            return
        self._lower(ctx, plain, False)
        if program_cycles(plain, self.target) < program_cycles(op, self.target):
            block = op.body.block
            for o in list(block.ops):
                o.detach()
                o.erase()
            for o in list(plain.body.block.ops):
                o.detach()
                block.add_op(o)

    def _lower(self, ctx: Context, op: ModuleOp, schedule: bool) -> None:
        """The four passes (two rewrites first with `schedule`) over `op`."""
        from nnx.passes.chip_allocate import allocate_program, chip_programs
        from nnx.passes.chip_lower import lower_module
        from nnx.target import load_pass_target
        from nnx.passes.chip_schedule import schedule_program
        from nnx.passes.chip_sync import synchronise_program

        from nnx.lowering.deps import emitted_dependencies
        from nnx.passes.graph_hoist_addends import GraphHoistAddendsPass
        from nnx.passes.graph_transpose_views import GraphTransposeViewsPass

        # the four passes' work, with their diagnostics under this pass's name and the
        # dependency analysis done once, from the accesses chip-lower emitted (the
        # separate passes parse the same accesses back from `nnx.access`)
        target = load_pass_target(self.name, self.target)
        if schedule:
            # the graph rewrites chip-lower profits from in list-scheduled programs
            GraphHoistAddendsPass().apply(ctx, op)
            GraphTransposeViewsPass().apply(ctx, op)
        entries = lower_module(ctx, op, self.name, self.target, self.double_buffer, int(self.max_tile_elements),
                               bool(self.chain), schedule, bool(self.concat_in_place),
                               frozenset(self.reuse_inputs))
        from nnx.lowering.deps import instruction_dependencies

        for prog in chip_programs(self.name, op):
            allocate_program(self.name, prog, bool(self.reuse), int(self.reuse_limit), frozenset(self.reuse_inputs))
            # reused memory: the dependencies by address see it, not the emitted ones
            deps = instruction_dependencies(prog) if self.reuse else emitted_dependencies(prog, entries)
            if schedule:
                deps = schedule_program(self.name, prog, target, deps)
            synchronise_program(self.name, prog, deps)


def program_cycles(module: ModuleOp, target_path: str = "") -> int:
    """Simulated cycles of the module's chip.programs, one after another (the
    simulator's timing without values, `nnx.sim.timing.replay`)."""
    from nnx.passes.chip_allocate import chip_programs
    from nnx.sim.timing import replay
    from nnx.target import load_pass_target

    target = load_pass_target(LowerToChipPass.name, target_path)
    return sum(replay([i.to_instr() for i in prog.instructions()], target).cycles
               for prog in chip_programs(LowerToChipPass.name, module))
