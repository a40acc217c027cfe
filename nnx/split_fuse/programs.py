"""A graph module -> the mesh programs of its chain (docs/subgraph-split-fuse.md,
"Program packages"): split at target nodes, split further until every subgraph
compiles, fuse with a strategy, and return each program's `MeshCompilation`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from nnx.split_fuse.chain import Range, inline, main_function, ranges_from_cuts, scheduled_ops, target_nodes
from nnx.split_fuse.fit import FitChecker, split_until_fit
from nnx.split_fuse.fuse import Fuser, FusionWindow, fuse_chain


@dataclass
class ChainCompilation:
    """The chosen chain, each range's compilation, the model's output names, and the
    number of compile calls made."""

    chain: list[Range]
    compilations: list
    outputs: list[str]
    compile_calls: int


def compile_chain(module: ModuleOp, target: str, strategy: str = "greedy", rule: str = "halve",
                  window: FusionWindow = FusionWindow(), placement: str = "bisect",
                  checker: FitChecker | None = None) -> ChainCompilation:
    """Compile the module's @main as a chain of mesh programs (see the module docstring).
    A single op that does not fit the whole mesh raises a `PassError` naming it."""
    f = main_function(module, "nnx-compile")
    ops = scheduled_ops(f.body.block)
    chain = ranges_from_cuts(len(ops), target_nodes(ops, f.body.block.last_op))
    check = checker or FitChecker(f, target, placement)
    chain = split_until_fit(check, chain, rule, "subgraph-split")
    chain = fuse_chain(Fuser(check, window), chain, strategy)
    outputs = [d.data["nnx.name"].data for d in f.res_attrs.data] if f.res_attrs else []
    return ChainCompilation(chain, [check.compile(r) for r in chain], outputs, check.compile_calls)


def write_mesh_programs(module: ModuleOp, target: str, asm_path: str, strategy: str = "greedy") -> int:
    """nnx-compile for a mesh target: the whole model as one mesh program when it
    fits, else a package of programs (nnx/sim/package.py); returns the program count.
    When @main is already a chain of `graph.subgraph` ops (a `--pipeline` ending in
    `subgraph-split`/`subgraph-fuse`), that chain is kept: each subgraph is one
    program (one that does not compile is split further). Files are written all or
    none."""
    from nnx.dialects.graph import SubgraphOp
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.package import write_package

    f = main_function(module, "nnx-compile")
    if any(isinstance(op, SubgraphOp) for op in f.body.block.ops):
        chain = inline(f)
        check = FitChecker(f, target)
        chain = split_until_fit(check, chain, "halve", "nnx-compile")
        outputs = [d.data["nnx.name"].data for d in f.res_attrs.data] if f.res_attrs else []
        cc = ChainCompilation(chain, [check.compile(r) for r in chain], outputs, check.compile_calls)
    else:
        check = FitChecker(f, target)
        whole = (0, len(check.ops))
        if check.fits(whole):
            save_mesh_program(check.compile(whole), asm_path)
            return 1
        cc = compile_chain(module, target, strategy, checker=check)
    if len(cc.chain) == 1:
        save_mesh_program(cc.compilations[0], asm_path)
        return 1
    write_package(cc.compilations, cc.outputs, asm_path)
    return len(cc.chain)
