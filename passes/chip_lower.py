"""`chip-lower`: graph (+ sparse) ops of `func.func @main` -> chip instructions.

The first of the chip passes (`lower-to-chip` runs them all: passes/lower_to_chip.py).
Storage gets no addresses here: every storage tensor (constant, program input,
intermediate, graph output) is declared as `chip.buffer @tK {bytes, kind}` in
allocation order and storage tiles point into their buffer, `#chip.tile<@tK:OFFSET,
...>` (nnx/lowering/storage.py); `chip-allocate` assigns the addresses. Each op is
tiled so that its operands fit the caches, results that fit stay resident (README
"How lower-to-chip uses the caches"), and its instructions are emitted in op order
with their exact reads and writes as the `nnx.access` attribute (storage buffers as
`S:@tK`; nnx/lowering/deps.py) and their sequential position `nnx.seq`, without
SIGNAL/WAIT (`chip-sync`) and unscheduled (`chip-schedule`). Diagnostics name the
pass that runs the lowering (`chip-lower:` here, `lower-to-chip:` in the composite).

Cache addresses are decided here, not in chip-allocate: the tiling of an op depends on
what fits beside the resident buffers, so residency, tile sizes and cache addresses are
one decision.

Options (those of `lower-to-chip`): `target`, `double-buffer`, `max-tile-elements`,
`chain`, and `schedule` (default true: plan for a program that chip-schedule will
reorder: next-fit cache reuse, small VPU tiles that follow their producer's tiles,
MatMul accumulators started from an Add's operand), `concat-in-place` (default
false: a concat whose operands are function arguments read by no other concat, each
a contiguous byte range of the result, is their one buffer: the arguments are
written into it, no copy; a mesh core's received pieces, which `lower-to-chip` also
takes as strided views when its `reuse-inputs` name them). Transposes marked `nnx.view`
(graph-transpose-views) are lowered as strided views; the composite runs that pass
and graph-hoist-addends first when `schedule` is true.

    nnx-opt m.mlir -p 'graph-hoist-addends,graph-transpose-views,chip-lower,chip-allocate,chip-schedule,chip-sync'
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError


def main_function(pass_name: str, module: ModuleOp):
    """(`func.func @main` -- or the only function --, all functions) of a module."""
    from xdsl.dialects import func as fdialect

    funcs = [o for o in module.body.block.ops if isinstance(o, fdialect.FuncOp)]
    main = next((f for f in funcs if f.sym_name.data == "main"), None)
    if main is None:
        if len(funcs) != 1:
            raise PassError(f"{pass_name}: expected a func.func @main")
        main = funcs[0]
    return main, funcs


@dataclass(frozen=True)
class ChipLowerPass(ModulePass):
    """Graph (+ sparse) ops of @main -> an unscheduled chip.program on symbolic storage
    buffers whose instructions carry their accesses (see the module docstring)."""

    name = "chip-lower"

    target: str = ""
    double_buffer: bool = True
    max_tile_elements: int = 0
    chain: bool = True
    schedule: bool = True
    #: a concat of function arguments is their one buffer: each argument is written
    #: into its range of the result (a mesh core's received pieces), no copy
    concat_in_place: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(ctx, op, self.name, self.target, self.double_buffer, int(self.max_tile_elements),
                     bool(self.chain), bool(self.schedule), bool(self.concat_in_place))


def lower_module(ctx: Context, module: ModuleOp, pass_name: str, target_path: str, double_buffer: bool,
                 max_tile_elements: int, chain: bool, schedule: bool, concat_in_place: bool = False,
                 written: frozenset[str] = frozenset()) -> list:
    """Replace the functions of `module` by the chip.program of its @main; problems
    are PassErrors named `pass_name` (chip-lower, or the composite lower-to-chip).
    Returns the emitted (instruction, reads, writes), in the program's order."""
    from nnx.lowering.errors import LoweringError
    from nnx.lowering.lowering import lower_function

    from nnx.target import load_pass_target

    target = load_pass_target(pass_name, target_path)
    main, funcs = main_function(pass_name, module)
    if ctx.get_optional_dialect("chip") is None:
        from nnx.dialects.chip import Chip

        ctx.load_dialect(Chip)
    try:
        prog, entries = lower_function(main, target, double_buffer, max_tile_elements, chain, schedule,
                                       concat_in_place, written)
    except LoweringError as e:
        raise PassError(f"{pass_name}: {e.message}", e.op) from None
    for f in funcs:
        f.detach()
        f.erase()
    module.body.block.add_op(prog)
    return entries
