"""Does a range of ops compile on the mesh? Memoised spatial compilations, and the
further-split rules (docs/subgraph-split-fuse.md, "In nnx").

`FitChecker(f, target)` compiles a range of `@main`'s scheduled ops (as
`chain.range_module`) with `nnx.mesh.compile.compile_for_mesh` once and remembers
the result: a `MeshCompilation`, or the `MeshFitError` that is the retry signal.
`split_until_fit` splits every failing range with a rule until all compile.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Operation

from nnx.diagnostics import PassError
from nnx.dialects.traits import MatrixCompute
from nnx.graph_costs import matrix_macs, value_bytes
from nnx.split_fuse.chain import Range, range_io, range_module, scheduled_ops


@dataclass
class FitChecker:
    """Memoised `compile_for_mesh` over ranges of `f`'s scheduled ops."""

    f: func.FuncOp
    target: str
    placement: str = "bisect"
    ops: list[Operation] = field(init=False)
    results: dict[Range, object] = field(default_factory=dict)
    compile_calls: int = 0
    compile_seconds: float = 0.0

    def __post_init__(self) -> None:
        self.ops = scheduled_ops(self.f.body.block)

    def compile(self, r: Range):
        """The `MeshCompilation` of range r, or the `MeshFitError` it raised."""
        from nnx.mesh.compile import compile_for_mesh
        from nnx.mesh.errors import MeshFitError

        if r not in self.results:
            self.compile_calls += 1
            t0 = time.perf_counter()
            try:
                self.results[r] = compile_for_mesh(range_module(self.f, self.ops, *r), self.target, self.placement)
            except MeshFitError as e:
                self.results[r] = e
            self.compile_seconds += time.perf_counter() - t0
        return self.results[r]

    def fits(self, r: Range) -> bool:
        from nnx.mesh.errors import MeshFitError

        return not isinstance(self.compile(r), MeshFitError)

    def cores(self, r: Range) -> int:
        """Cores the range's program maps onto (it must fit)."""
        return len(self.compile(r).program.cores)


def range_compute(ops: Sequence[Operation], r: Range) -> int:
    """Compute of a range: multiply-accumulates of its matrix ops plus one per output
    element of the others (the Target-independent graph-level measure)."""
    total = 0
    for op in ops[r[0]:r[1]]:
        if op.has_trait(MatrixCompute):
            total += matrix_macs(op)
        else:
            total += sum(value_bytes(v) // 4 for v in op.results)
    return total


def range_weights(ops: Sequence[Operation], r: Range) -> int:
    """Bytes of the constants (weights) the range uses."""
    return sum(value_bytes(c.results[0]) for c in range_io(ops, *r).constants)


# ---------------------------------------------------------------- further-split rules

SplitRule = Callable[[Sequence[Operation], Range], int]


def split_halve(ops: Sequence[Operation], r: Range) -> int:
    """Cut a range of at least two ops in the middle of its topological order."""
    lo, hi = r
    return lo + (hi - lo) // 2


def split_key_nodes(ops: Sequence[Operation], r: Range) -> int:
    """Cut after the key node (an op on every input-to-output path of the range,
    docs/topological-order.md "Key nodes") nearest the middle; halve when the range
    has no key node that leaves two non-empty parts."""
    from nnx.topo_order.key_nodes import key_nodes

    lo, hi = r
    index = {id(op): i - lo for i, op in enumerate(ops[lo:hi], start=lo)}
    preds = [sorted({index[id(v.owner)] for v in op.operands if id(v.owner) in index}) for op in ops[lo:hi]]
    outs = range_io(ops, lo, hi).outputs
    sinks = frozenset(index[id(v.owner)] for v in outs if id(v.owner) in index) or frozenset({hi - lo - 1})
    mid = (hi - lo) / 2
    cands = [k for k in key_nodes(preds, sinks) if 0 <= k < hi - lo - 1]
    if not cands:
        return split_halve(ops, r)
    best = min(cands, key=lambda k: abs(k + 1 - mid))
    return lo + best + 1


SPLIT_RULES: dict[str, SplitRule] = {"halve": split_halve, "key-nodes": split_key_nodes}


class OpDoesNotFit(PassError):
    """A single op that does not compile on the whole mesh (`split_until_fit`): the
    one-line error naming it, with its index among the scheduled ops and the chain
    as far as it was split (the op in a range of its own), so that a caller that can
    split the op (nnx/split_fuse/oversized.py) continues from there."""

    def __init__(self, message: str, op: Operation, index: int, chain: Sequence[Range]):
        super().__init__(message, op)
        self.index = index
        self.chain = list(chain)


def split_until_fit(check: FitChecker, chain: Sequence[Range], rule: str, pass_name: str,
                    accept: Callable[[Range], bool] | None = None) -> list[Range]:
    """Compile every range; split each failing one with `rule` and retry, recursively.
    Ranges for which `accept` is true are kept without compiling (host steps). A
    single op that does not fit the whole mesh is an `OpDoesNotFit` naming it."""
    if rule not in SPLIT_RULES:
        raise PassError(f"{pass_name}: unknown split rule '{rule}' (one of {', '.join(SPLIT_RULES)})")
    cut = SPLIT_RULES[rule]
    out: list[Range] = []
    todo = list(reversed(chain))
    while todo:
        r = todo.pop()
        if (accept is not None and accept(r)) or check.fits(r):
            out.append(r)
            continue
        lo, hi = r
        if hi - lo == 1:
            err = check.compile(r)
            op = check.ops[lo]
            raise OpDoesNotFit(f"{pass_name}: op {_label(op)} does not fit the whole mesh even alone: {err.message}",
                               op, lo, [*out, r, *reversed(todo)])
        m = cut(check.ops, r)
        if not lo < m < hi:  # a rule must make progress: fall back to halving
            m = split_halve(check.ops, r)
        todo.append((m, hi))
        todo.append((lo, m))
    return out


def _label(op: Operation) -> str:
    name = op.attributes.get("nnx.name")
    return f"{op.name} '{name.data}'" if name is not None and hasattr(name, "data") else op.name
