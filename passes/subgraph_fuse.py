"""`subgraph-fuse`: fuse neighbouring `graph.subgraph` ops of @main's chain while the
fused subgraph still compiles on the mesh (docs/subgraph-split-fuse.md).

Input: the chain `subgraph-split` writes (ops outside any subgraph count as one
subgraph each). Every subgraph that does not compile is first split further (as
`subgraph-split` with a target does); then neighbours are fused with `strategy` when
the sums over the fused parts of compute (multiply-accumulates, one per output
element for other ops), weight bytes and mapped cores each lie within their
[min, max] window and the fused subgraph compiles. The chain is outlined again.

Options:

* `strategy=pairwise|greedy|bidirectional|optimal` (greedy), `group=K` (2) for
  pairwise, `objective=programs|time` (programs) for optimal;
* `min-compute`, `max-compute`, `min-weights`, `max-weights`, `min-cores`,
  `max-cores`: the windows; a max of -1 (the default) is no limit;
* `target` (mesh), `rule` (halve), `placement` (bisect), `fit-check` (plan): as for
  `subgraph-split` (what "compiles" means while searching; every subgraph kept
  passes at least the "storage" check).

    nnx-opt m.mlir -p 'subgraph-split,subgraph-fuse{target="mesh4x4.toml" strategy=optimal}'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError


def _limit(v: int) -> float:
    return math.inf if v < 0 else v


@dataclass(frozen=True)
class SubgraphFusePass(ModulePass):
    """Fuse neighbouring subgraphs of @main while they compile (module docstring)."""

    name = "subgraph-fuse"

    target: str = "mesh"
    strategy: str = "greedy"
    objective: str = "programs"
    group: int = 2
    min_compute: int = 0
    max_compute: int = -1
    min_weights: int = 0
    max_weights: int = -1
    min_cores: int = 0
    max_cores: int = -1
    rule: str = "halve"
    placement: str = "bisect"
    fit_check: str = "plan"

    def window(self):
        from nnx.split_fuse.fuse import FusionWindow

        w = FusionWindow(self.min_compute, _limit(self.max_compute), self.min_weights, _limit(self.max_weights),
                         self.min_cores, _limit(self.max_cores))
        w.check(self.name)
        return w

    def validate(self) -> None:
        """Bad options are one-line `PassError`s."""
        from nnx.split_fuse.fit import check_fit_level
        from nnx.split_fuse.fuse import OBJECTIVES, STRATEGIES

        if self.strategy not in STRATEGIES:
            raise PassError(f"subgraph-fuse: unknown strategy '{self.strategy}' (one of {', '.join(STRATEGIES)})")
        if self.objective not in OBJECTIVES:
            raise PassError(f"subgraph-fuse: unknown objective '{self.objective}' (one of {', '.join(OBJECTIVES)})")
        check_fit_level(self.name, self.fit_check)
        if self.group < 2:
            raise PassError(f"subgraph-fuse: group must be at least 2, got {self.group}")
        self.window()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.target import load_pass_target
        from nnx.split_fuse.chain import inline, main_function, outline

        self.validate()
        load_pass_target(self.name, self.target)
        f = main_function(op, self.name)
        chain = inline(f)
        outline(f, fuse_function_chain(f, chain, self))


def fuse_function_chain(f, chain, opts: SubgraphFusePass, checker=None):
    """Split `chain` (ranges of `f`'s scheduled ops) until every range compiles, then
    fuse it as `opts` says; returns the new chain."""
    return fused_function_chain(f, chain, opts, checker).chain


def fused_function_chain(f, chain, opts: SubgraphFusePass, checker=None):
    """`fuse_function_chain` as a `FittedChain` (which ranges are host steps, and the
    checker of the function, whose ops larger than the mesh are split first)."""
    from nnx.split_fuse.fit import FitChecker, verify_level
    from nnx.split_fuse.programs import presplit_chain, settled_chain
    from nnx.target import load_target

    if checker is None:
        chain = presplit_chain(f, load_target(opts.target), chain)
    check = checker or FitChecker(f, opts.target, opts.placement, opts.fit_check)
    return settled_chain(check, chain, opts.rule, opts.name, opts.strategy, opts.window(),
                         verify_level(check.level), opts.objective, opts.group)
