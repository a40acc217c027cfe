"""A graph module -> the mesh programs of its chain (docs/subgraph-split-fuse.md,
"Program packages"): split at target nodes, split further until every subgraph
compiles, fuse with a strategy, and return each program's `MeshCompilation`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from nnx.split_fuse.chain import Range, main_function, ranges_from_cuts, scheduled_ops, target_nodes
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
                  window: FusionWindow = FusionWindow(), placement: str = "bisect") -> ChainCompilation:
    """Compile the module's @main as a chain of mesh programs (see the module docstring).
    A single op that does not fit the whole mesh raises a `PassError` naming it."""
    f = main_function(module, "nnx-compile")
    ops = scheduled_ops(f.body.block)
    chain = ranges_from_cuts(len(ops), target_nodes(ops, f.body.block.last_op))
    check = FitChecker(f, target, placement)
    chain = split_until_fit(check, chain, rule, "subgraph-split")
    chain = fuse_chain(Fuser(check, window), chain, strategy)
    outputs = [d.data["nnx.name"].data for d in f.res_attrs.data] if f.res_attrs else []
    return ChainCompilation(chain, [check.compile(r) for r in chain], outputs, check.compile_calls)
