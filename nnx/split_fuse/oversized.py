"""Ops that do not fit the whole mesh alone (docs/subgraph-split-fuse.md, "Ops larger
than the mesh").

A chain is split until every range compiles (`fit.split_until_fit`); a range of one
op that does not compile cannot be split by cutting the chain. Such an op is:

* a *host op* when it only moves data (the `DataMovement` trait: a concat of pieces,
  a slice of a big tensor, a reshape, ...): it runs on the host between programs, on
  host memory (a host step of the package, nnx/sim/package.py);
* else, when its weights fit the mesh, split in the IR into pieces over slices
  (`graph.slice` -> pieces of the same op -> one `graph.concat`, `split_op_to_fit`)
  so that each piece's data are at most a threshold: half the mesh's core memory at
  first, half the op's data when a piece still does not compile. The pieces are
  scheduled ops of their own and go through the chain like any other; the slices of
  the op's inputs are moved before the first piece so that they form one host step
  (or one program) and the pieces can be fused into programs;
* else (its weights alone exceed the mesh, or it cannot be split any further) the
  one-line error naming it.

An op whose data (operands and results) exceed the mesh's core memory cannot compile
(an op's result never overwrites its input), so such ops are made host ops or split
before the chain is compiled (`presplit`); the others are found by compiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.traits import IsTerminator

from nnx.dialects.traits import DataMovement
from nnx.split_fuse.chain import Range, is_constant, scheduled_ops

#: the first threshold of an op split, as a fraction of the mesh's core memory
MESH_FRACTION = 2


def mesh_bytes(target) -> int:
    """The mesh's total core memory: width x height x core_memory_bytes."""
    m = target.mesh
    return m.width * m.height * m.core_memory_bytes


def op_data_bytes(op: Operation) -> int:
    """Bytes of the op's operands (inputs and weights) and results."""
    from nnx.passes.op_split import op_bytes

    return op_bytes(op)


def op_weight_bytes(op: Operation) -> int:
    """Bytes of the op's constant operands (its weights)."""
    from nnx.graph_costs import value_bytes

    seen: set[int] = set()
    total = 0
    for v in op.operands:
        if isinstance(v.owner, Operation) and is_constant(v.owner) and id(v) not in seen:
            seen.add(id(v))
            total += value_bytes(v)
    return total


def is_host_op(op: Operation) -> bool:
    """An op that may run on the host: it only moves data (`DataMovement`)."""
    return op.has_trait(DataMovement)


def split_op_to_fit(op: Operation, threshold: int, target) -> bool:
    """Split `op` in place into `graph.slice` -> pieces -> one `graph.concat`, again
    and again until each piece's data are at most `threshold` bytes or cannot be cut
    further (batch, channels, then spatial rows with halos: op-split's
    `split_to_fit`, docs/topological-order.md "Operator splitting"); False when
    nothing was split."""
    from nnx.passes.op_split import split_to_fit

    return bool(split_to_fit(op, threshold, target, spatial=True))


def _slices_first(block, new_ops: Sequence[Operation]) -> None:
    """Move the `graph.slice` ops among `new_ops` that slice a value from before them
    (an input of the split op), with the constants they read, before the first of the
    other new ops, keeping their order."""
    from nnx.dialects.graph import SliceOp

    inside = {id(o) for o in new_ops}
    moved: list[Operation] = []
    for s in new_ops:
        data = s.operands[0].owner if isinstance(s, SliceOp) else None
        if isinstance(data, Operation) and id(data) not in inside:
            moved += [v.owner for v in s.operands[1:]
                      if isinstance(v.owner, Operation) and is_constant(v.owner) and id(v.owner) in inside]
            moved.append(s)
    taken = {id(o) for o in moved}
    anchor = next((o for o in new_ops if id(o) not in taken and not is_constant(o)), None)
    if anchor is None:
        return
    for o in moved:
        o.detach()
        block.insert_op_before(o, anchor)


def fold_slices_of_concats(block) -> None:
    """`graph.slice(graph.concat(a_0, ..., a_n), lo, hi)` along the concat's axis with
    [lo, hi) exactly the span of one a_i is a_i: an op split into pieces feeding an op
    split along the same cuts passes the pieces on (no join and slice on the host).
    Concats left without uses are erased."""
    from nnx.dialects.graph import ConcatOp, SliceOp
    from nnx.graph_queries import const_value

    for s in [o for o in block.ops if isinstance(o, SliceOp)]:
        cat = s.operands[0].owner
        if not isinstance(cat, ConcatOp) or len(s.operands) not in (4, 5):
            continue
        vals = [const_value(v) for v in s.operands[1:]]
        if any(v is None or v.size != 1 for v in vals) or (len(vals) == 4 and int(vals[3][0]) != 1):
            continue
        rank = len(cat.results[0].type.get_shape())
        lo, hi, axis = (int(v.reshape(-1)[0]) for v in vals[:3])
        cat_axis = int(cat.attr("axis"))
        if axis % rank != cat_axis % rank:
            continue
        start = 0
        for v in cat.operands:
            extent = v.type.get_shape()[cat_axis % rank]
            if (start, start + extent) == (lo, hi) and v.type == s.results[0].type:
                s.results[0].replace_all_uses_with(v)
                block.erase_op(s)
                break
            start += extent
    for c in [o for o in block.ops if isinstance(o, ConcatOp)]:
        if not c.results[0].uses:
            block.erase_op(c)


def interleave_pieces(block, new: set[int], budget: int) -> None:
    """Move each scheduled op created by `presplit` (ids in `new`) right after the
    last of its producers, but not before the nearest earlier host op (data-movement
    ops larger than the mesh, `budget` bytes) or op from before the split: pieces of
    consecutive split ops then alternate (conv piece 0, relu piece 0, conv piece
    1, ...), so a program can take a piece through several ops without parking it
    on the host in between, while host ops keep their place and their grouping.
    Constants a moved op reads move with it."""
    barrier: Operation | None = None  # last op a moved op may not pass
    for op in list(block.ops):
        if is_constant(op) or op.parent_block() is not block:
            continue
        if id(op) not in new or (is_host_op(op) and op_data_bytes(op) > budget) or op.has_trait(IsTerminator):
            barrier = op
            continue
        anchor = barrier
        for v in op.operands:
            p = v.owner
            if isinstance(p, Operation) and not is_constant(p) and p.parent_block() is block:
                if anchor is None or block.get_operation_index(p) > block.get_operation_index(anchor):
                    anchor = p
        if anchor is None or anchor.next_op is op:
            continue
        consts = [v.owner for v in op.operands if isinstance(v.owner, Operation) and is_constant(v.owner)]
        after = anchor
        for c in [*consts, op]:
            if c.parent_block() is not block or block.get_operation_index(c) < block.get_operation_index(after):
                continue  # a constant defined earlier stays
            c.detach()
            block.insert_op_after(c, after)
            after = c


def presplit(f, target) -> int:
    """Split every scheduled op of `f` whose data exceed the mesh's core memory and
    whose weights fit it (`split_in_chain`, threshold: the mesh's memory over
    `MESH_FRACTION`), then fold slices of the joins (`fold_slices_of_concats`).
    Returns the number of ops split. Run it before numbering the ops (`FitChecker`)."""
    block = f.body.block
    budget = mesh_bytes(target)
    before = {id(o) for o in block.ops}
    count = k = 0
    while k < len(ops := scheduled_ops(block)):
        op = ops[k]
        if (op_data_bytes(op) > budget and not is_host_op(op) and op_weight_bytes(op) <= budget
                and split_in_chain(f, k, budget // MESH_FRACTION, target)):
            count += 1
            continue  # look at the pieces
        k += 1
    if count:
        fold_slices_of_concats(block)
        interleave_pieces(block, {id(o) for o in block.ops if id(o) not in before}, budget)
    return count


def split_in_chain(f, k: int, threshold: int, target) -> int:
    """Split the k-th scheduled op of `f` (`split_op_to_fit`): its replacement ops
    take its place (consecutive, input slices first); returns how many scheduled ops
    replace it (0: it cannot be split)."""
    block = f.body.block
    ops = scheduled_ops(block)
    before = {id(o) for o in block.ops}
    following = ops[k + 1] if k + 1 < len(ops) else block.last_op
    if not split_op_to_fit(ops[k], threshold, target):
        return 0
    new_ops = [o for o in block.ops if id(o) not in before]
    for o in new_ops:  # consecutive where the op was (their operands come before it)
        o.detach()
        block.insert_op_before(o, following)
    _slices_first(block, new_ops)
    return len(scheduled_ops(block)) - len(ops) + 1


def expand_range(r: Range, k: int, m: int) -> Range:
    """Range `r` after scheduled op k became m ops."""
    lo, hi = r
    if hi <= k:
        return r
    if lo > k:
        return lo + m - 1, hi + m - 1
    return lo, hi + m - 1


def expand_chain(chain: Sequence[Range], k: int, m: int) -> list[Range]:
    """The chain after scheduled op k became m ops: the range (k, k + 1) becomes
    (k, k + m), the ranges after it shift."""
    return [expand_range(r, k, m) for r in chain]


def rebuilt_checker(check, k: int, m: int):
    """A `FitChecker` over the function after scheduled op k became m ops, keeping the
    checks and compilations of the ranges before op k (their programs and the names of their
    inputs and outputs, `chain.crossing_name`, do not change) and the failures of all
    others under their new numbers: a range that did not fit with op k whole does not
    fit with its pieces either (they hold the same data at once)."""
    from nnx.mesh.errors import MeshFitError
    from nnx.split_fuse.fit import FitChecker

    new = FitChecker(check.f, check.target, check.placement, check.level)
    for level, memo in check.found.items():
        new.found[level] = {expand_range(r, k, m): v for r, v in memo.items()
                            if r[1] <= k or isinstance(v, MeshFitError)}
    new.calls = dict(check.calls)
    new.seconds = dict(check.seconds)
    return new


def isolate(chain: Sequence[Range], k: int) -> list[Range]:
    """The chain with scheduled op k in a range of its own."""
    out: list[Range] = []
    for lo, hi in chain:
        if lo <= k < hi:
            out += [r for r in ((lo, k), (k, k + 1), (k + 1, hi)) if r[1] > r[0]]
        else:
            out.append((lo, hi))
    return out


@dataclass
class FittedChain:
    """A chain every range of which compiles or runs on the host (`host[i]`), with
    the checker of the (possibly rewritten) function."""

    check: object
    chain: list[Range]
    host: list[bool]

    def segments(self) -> list[tuple[bool, list[Range]]]:
        """Maximal runs of consecutive program ranges or of host ranges, in order."""
        out: list[tuple[bool, list[Range]]] = []
        for r, h in zip(self.chain, self.host):
            if out and out[-1][0] == h:
                out[-1][1].append(r)
            else:
                out.append((h, [r]))
        return out


def fit_chain(check, chain: Sequence[Range], rule: str, pass_name: str) -> FittedChain:
    """Split `chain` until every range compiles on the mesh or is a host op (module
    docstring). A non-host op that does not compile alone is split in `check.f`'s IR
    (with half its data as the threshold, so each retry makes progress), so the
    returned checker and chain may number more ops than the given ones; `presplit`
    has split the ops whose data exceed the mesh before. Consecutive host ops form
    one host range."""
    from nnx.split_fuse.fit import OpDoesNotFit, split_until_fit
    from nnx.target import load_target

    tgt = load_target(check.target)
    budget = mesh_bytes(tgt)
    chain = list(chain)
    host_ops: set[int] = set()

    def split(k: int, threshold: int) -> int:
        nonlocal check, chain
        m = split_in_chain(check.f, k, threshold, tgt)
        if m:
            check = rebuilt_checker(check, k, m)
            chain = expand_chain(chain, k, m)
        return m

    # data-movement ops whose data exceed the mesh: host ops without compiling
    for k, op in enumerate(check.ops):
        if is_host_op(op) and op_data_bytes(op) > budget:
            host_ops.add(id(op))
            chain = isolate(chain, k)

    def accept(r: Range) -> bool:
        return all(id(o) in host_ops for o in check.ops[r[0]:r[1]])

    while True:
        try:
            chain = split_until_fit(check, chain, rule, pass_name, accept)
            break
        except OpDoesNotFit as e:
            k, chain = e.index, list(e.chain)
            op = check.ops[k]
            if is_host_op(op):
                host_ops.add(id(op))
                continue
            if op_weight_bytes(op) > budget or not split(k, min(budget // MESH_FRACTION, op_data_bytes(op) // 2)):
                raise
    merged: list[Range] = []
    host: list[bool] = []
    for r in chain:
        h = accept(r)
        if h and host and host[-1]:
            merged[-1] = (merged[-1][0], r[1])
        else:
            merged.append(r)
            host.append(h)
    return FittedChain(check, merged, host)
