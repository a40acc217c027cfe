"""`subgraph-split`: cut @main into a chain of serial `graph.subgraph` ops at its
target nodes; with a `target`, split further wherever a subgraph does not compile on
the mesh (docs/subgraph-split-fuse.md).

A target node is an op one of whose results is a graph output (an operand of the
function's return) and one of whose results -- the same one or another -- also feeds
further computation (`nnx.split_fuse.chain.target_nodes`). The function is cut right
after each target node (in block order, a topological order), so the target node
ends its subgraph and what consumes it starts the next. Each subgraph becomes a
`graph.subgraph` with explicit inputs (block arguments) and outputs (its yielded
values used later or returned); its constants are cloned into it. Every result of
a subgraph is parked in host memory: later subgraphs read it from there. Existing
`graph.subgraph` ops of @main are inlined first.

Options:

* `target=T` (empty: no compilation) the mesh target (a TOML path or built-in name);
  each subgraph is compiled with the mesh's spatial compilation and, when it does
  not fit, split further with `rule` and retried, recursively. An op too big for
  the whole mesh is first split into pieces (slices, pieces, a concat; the joins
  too big for the mesh become subgraphs of their own, run on the host by
  nnx-compile's packages: docs/subgraph-split-fuse.md, "Ops larger than the mesh");
  one whose weights alone exceed the mesh is an error naming it.
* `rule=halve|key-nodes` (halve): the further split: the middle of the subgraph's
  topological order, or the key node nearest it (halving when there is none); both
  always make progress.
* `placement` (bisect) the mesh placement used when compiling.
* `fit-check=plan|storage|compile` (plan): what "compiles" means while searching
  (docs/subgraph-split-fuse.md, "Fit checks"): the partition fits the cores by its
  planned bytes; and every core's storage, lowered without list scheduling, fits;
  or the full spatial compilation (the original, slowest). Every subgraph kept
  passes at least the "storage" check (one that fails it is split further);
  nnx-compile compiles the subgraphs in full and splits any that then fails.

    nnx-opt m.mlir -p 'subgraph-split{target="mesh4x4.toml" rule=key-nodes}'
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from nnx.split_fuse.chain import inline, main_function, outline, ranges_from_cuts, scheduled_ops, target_nodes


def split_chain(f, target: str = "", rule: str = "halve", placement: str = "bisect", checker=None,
                fit_check: str = "plan"):
    """The chain of ranges of `f`'s scheduled ops: cut at the target nodes, then (with
    a target) split until every range compiles. Returns (chain, FitChecker or None)."""
    from nnx.split_fuse.fit import FitChecker, verify_level
    from nnx.split_fuse.programs import presplit_chain, settled_chain
    from nnx.target import load_target

    ops = scheduled_ops(f.body.block)
    chain = ranges_from_cuts(len(ops), target_nodes(ops, f.body.block.last_op))
    if not target:
        return chain, None
    if checker is None:
        chain = presplit_chain(f, load_target(target), chain)
    check = checker or FitChecker(f, target, placement, fit_check)
    fitted = settled_chain(check, chain, rule, "subgraph-split", level=verify_level(check.level))
    return fitted.chain, fitted.check


@dataclass(frozen=True)
class SubgraphSplitPass(ModulePass):
    """Outline @main as a chain of subgraphs cut at target nodes (module docstring)."""

    name = "subgraph-split"

    target: str = ""
    rule: str = "halve"
    placement: str = "bisect"
    fit_check: str = "plan"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.split_fuse.fit import SPLIT_RULES

        if self.rule not in SPLIT_RULES:
            from nnx.diagnostics import PassError

            raise PassError(f"subgraph-split: unknown rule '{self.rule}' (one of {', '.join(SPLIT_RULES)})")
        from nnx.split_fuse.fit import check_fit_level

        check_fit_level(self.name, self.fit_check)
        if self.target:
            from nnx.target import load_pass_target

            load_pass_target(self.name, self.target)
        f = main_function(op, self.name)
        inline(f)  # an existing chain is cut afresh
        chain, _ = split_chain(f, self.target, self.rule, self.placement, fit_check=self.fit_check)
        outline(f, chain)
