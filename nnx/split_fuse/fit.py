"""Does a range of ops compile on the mesh? Memoised fit checks and spatial
compilations, and the further-split rules (docs/subgraph-split-fuse.md, "In nnx"
and "Fit checks").

`FitChecker(f, target)` checks a range of `@main`'s scheduled ops (as
`chain.range_module`) with `nnx.mesh.compile.compile_for_mesh` at a level of
`CHECKS` once per level and remembers the result: a `MeshFit` or `MeshCompilation`,
or the `MeshFitError` that is the retry signal. `split_until_fit` splits every
failing range with a rule until all fit (`programs.settled_chain` repeats a choice until
every chosen range passes a higher level)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Operation

from nnx.diagnostics import PassError
from nnx.dialects.traits import MatrixCompute
from nnx.graph_costs import matrix_macs, value_bytes
from nnx.mesh import DEFAULT_SCHEDULE
from nnx.split_fuse.chain import Range, range_io, range_module, scheduled_ops


@dataclass
class FitChecker:
    """Memoised fit checks of ranges of `f`'s scheduled ops, at the levels of
    `nnx.mesh.compile.CHECKS` (docs/subgraph-split-fuse.md, "Fit checks"):

    * "plan": the partition fits the cores by its planned bytes (no lowering);
    * "storage": and every stage's storage, lowered without list scheduling, fits
      its core;
    * "compile": the full spatial compilation (a `MeshCompilation`).

    `fits(r)` asks `level` (what splitting and fusing search with) unless a more
    exact level was asked for r already (`verified`, `compile`): the most exact
    answer wins, so a range that passed the search but fails a higher level no
    longer fits and `programs.settled_chain` chooses again."""

    f: func.FuncOp
    target: str
    placement: str = "bisect"
    level: str = "plan"
    #: the mesh schedule each range's program is compiled with (nnx/mesh/compile.py
    #: SCHEDULES; the fit checks plan as `stages`)
    schedule: str = DEFAULT_SCHEDULE
    ops: list[Operation] = field(init=False)
    found: dict[str, dict[Range, object]] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from nnx.mesh.compile import CHECKS

        check_fit_level("subgraph-split", self.level)
        self.ops = scheduled_ops(self.f.body.block)
        for level in CHECKS:
            self.found.setdefault(level, {})
            self.calls.setdefault(level, 0)

    def at(self, r: Range, level: str):
        """Range r checked at `level`: a `MeshFit` ("plan", "storage") or
        `MeshCompilation` ("compile"), or the `MeshFitError` it raised."""
        from nnx.mesh.compile import compile_for_mesh
        from nnx.mesh.errors import MeshFitError

        memo = self.found[level]
        if r not in memo:
            self.calls[level] += 1
            t0 = time.perf_counter()
            try:
                memo[r] = compile_for_mesh(range_module(self.f, self.ops, *r), self.target, self.placement,
                                           check=level, schedule=self.schedule)
            except MeshFitError as e:
                memo[r] = e
            self.seconds[level] = self.seconds.get(level, 0.0) + time.perf_counter() - t0
        return memo[r]

    def check(self, r: Range):
        """Range r at the search level."""
        return self.at(r, self.level)

    def compile(self, r: Range):
        """The `MeshCompilation` of range r, or the `MeshFitError` it raised."""
        return self.at(r, "compile")

    def known(self, r: Range):
        """The most exact result known for range r at the search level or above, None
        when none is."""
        from nnx.mesh.compile import CHECKS

        for level in reversed(CHECKS[CHECKS.index(self.level):]):
            if r in self.found[level]:
                return self.found[level][r]
        return None

    def fits(self, r: Range) -> bool:
        """Whether range r fits by the most exact answer known (checked at the search
        level when none is). A single op that fails a check is compiled in full
        before it is said not to fit (it cannot be split further)."""
        from nnx.mesh.errors import MeshFitError

        got = self.known(r)
        if got is None:
            got = self.check(r)
        if isinstance(got, MeshFitError) and r[1] - r[0] == 1:
            got = self.compile(r)
        return not isinstance(got, MeshFitError)

    def verified(self, r: Range, level: str) -> bool:
        """Range r fits and passes `level` (checked now if not yet)."""
        from nnx.mesh.errors import MeshFitError

        return self.fits(r) and not isinstance(self.at(r, level), MeshFitError)

    def cores(self, r: Range) -> int:
        """Cores the range's program maps onto (it must fit), by the most exact result known."""
        got = self.known(r)
        if got is None:
            got = self.check(r)
        return len(got.program.cores) if hasattr(got, "program") else got.cores

    @property
    def compile_calls(self) -> int:
        """Full compilations made."""
        return self.calls["compile"]

    @property
    def check_calls(self) -> int:
        """Checks made at every level."""
        return sum(self.calls.values())


def check_fit_level(pass_name: str, level: str) -> None:
    """An unknown fit-check level is a `PassError`."""
    from nnx.mesh.compile import CHECKS

    if level not in CHECKS:
        raise PassError(f"{pass_name}: unknown fit-check '{level}' (one of {', '.join(CHECKS)})")


def verify_level(level: str) -> str:
    """What the passes' chosen subgraphs must pass: `level`, at least "storage"."""
    return "storage" if level == "plan" else level


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
    from nnx.mesh.partition import op_label

    return op_label(op)
