"""A function as a chain of serial subgraphs (docs/subgraph-split-fuse.md, "In nnx").

The scheduled ops of `@main` (every op but constants and the terminator, in block
order, which is a topological order) are numbered 0..N-1. A *chain* is a list of
half-open ranges `(lo, hi)` of those numbers that cover 0..N-1 in order; each range
is one subgraph, i.e. one program. Splitting and fusing work on ranges only (plain
data); this module turns ranges into IR and back:

* `target_nodes(ops, ret)`: where `subgraph-split` cuts first;
* `range_module(...)`: a range as a module with one `@main` whose arguments are its
  inputs, the unit that is compiled;
* `outline(...)` / `inline(...)`: ranges <-> `graph.subgraph` ops in the function.

Constants are not scheduled: each subgraph gets its own clone of the constants it
uses (its weights, loaded when its program starts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import IsTerminator

from nnx.diagnostics import PassError

Range = tuple[int, int]


def is_constant(op: Operation) -> bool:
    """An operand-free single-result op (a weight): cloned into each subgraph using it."""
    return not op.operands and len(op.results) == 1 and not op.regions


def main_function(module: ModuleOp, pass_name: str) -> func.FuncOp:
    """`@main` (or the only function) of the module."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for f in funcs:
        if f.sym_name.data == "main":
            return f
    if len(funcs) == 1:
        return funcs[0]
    raise PassError(f"{pass_name}: no func.func @main")


def scheduled_ops(block: Block) -> list[Operation]:
    """The block's ops that run: all but constants and the terminator."""
    return [op for op in block.ops if not is_constant(op) and not op.has_trait(IsTerminator)]


def target_nodes(ops: Sequence[Operation], ret: Operation) -> list[int]:
    """Indices of the target nodes among `ops`.

    A target node is an op one of whose results is a graph output (an operand of the
    function's return, the "data output node") and one of whose results -- the same
    result or another one -- is also used by an op other than the return (it "feeds
    further computation"). An op whose outputs only leave the graph, or only feed
    further ops, is not one.
    """
    returned = {id(v) for v in ret.operands}
    found = []
    for i, op in enumerate(ops):
        outs = any(id(r) in returned for r in op.results)
        feeds = any(u.operation is not ret for r in op.results for u in r.uses)
        if outs and feeds:
            found.append(i)
    return found


def ranges_from_cuts(n: int, cuts: Sequence[int]) -> list[Range]:
    """The chain of ranges over n ops cut after each op index in `cuts`."""
    bounds = sorted({c + 1 for c in cuts if 0 <= c < n - 1})
    edges = [0, *bounds, n]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


@dataclass(frozen=True)
class RangeIO:
    """A range's inputs (values from outside, constants excluded), the constants it
    uses, and its outputs (results used after it or returned), in first-use order."""

    inputs: list[SSAValue]
    constants: list[Operation]
    outputs: list[SSAValue]


def range_io(ops: Sequence[Operation], lo: int, hi: int) -> RangeIO:
    inside = {id(op) for op in ops[lo:hi]}
    inputs: list[SSAValue] = []
    constants: list[Operation] = []
    seen: set[int] = set()
    for op in ops[lo:hi]:
        for inner in op.walk():
            for v in inner.operands:
                owner = v.owner
                if isinstance(owner, Operation) and (id(owner) in inside or _nested_in(owner, op)):
                    continue
                if isinstance(owner, Block) and _block_nested_in(owner, op):
                    continue
                if id(v) in seen:
                    continue
                seen.add(id(v))
                if isinstance(owner, Operation) and is_constant(owner):
                    constants.append(owner)
                else:
                    inputs.append(v)
    outputs = [r for op in ops[lo:hi] for r in op.results
               if any(_top_op(u.operation, op.parent_block()) is not None
                      and id(_top_op(u.operation, op.parent_block())) not in inside for u in r.uses)]
    return RangeIO(inputs, constants, outputs)


def _nested_in(inner: Operation, outer: Operation) -> bool:
    p = inner.parent_op()
    while p is not None:
        if p is outer:
            return True
        p = p.parent_op()
    return False


def _block_nested_in(block: Block, outer: Operation) -> bool:
    p = block.parent_op()
    return p is outer or (p is not None and _nested_in(p, outer))


def _top_op(op: Operation, block: Block | None) -> Operation | None:
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def value_names(f: func.FuncOp) -> dict[int, str]:
    """id(value) -> name for the function's arguments and returned values
    (`nnx.name`), so that a program's inputs and outputs keep the model's names."""
    names: dict[int, str] = {}
    if f.arg_attrs is not None:
        for a, d in zip(f.body.block.args, f.arg_attrs.data):
            if "nnx.name" in d.data:
                names[id(a)] = d.data["nnx.name"].data
    ret = f.body.block.last_op
    if f.res_attrs is not None and ret is not None:
        for v, d in zip(ret.operands, f.res_attrs.data):
            if "nnx.name" in d.data:
                names.setdefault(id(v), d.data["nnx.name"].data)
    return names


def crossing_name(ops: Sequence[Operation], v: SSAValue, names: dict[int, str]) -> str:
    """The name of a value passed between programs: its model name, else
    `t<op index>_<result index>` (unique within the function)."""
    if id(v) in names:
        return names[id(v)]
    owner = v.owner
    if isinstance(owner, Operation):
        idx = next(i for i, op in enumerate(ops) if op is owner)
        return f"t{idx}_{v.index}"
    return f"arg{v.index}"


def _named(names: Sequence[str]) -> ArrayAttr:
    return ArrayAttr([DictionaryAttr({"nnx.name": StringAttr(n)}) for n in names])


def _cloned_range(ops: Sequence[Operation], io, lo: int, hi: int) -> tuple[Block, dict[SSAValue, SSAValue]]:
    """A block whose arguments are the range's inputs, holding clones of the constants
    it reads and of `ops[lo:hi]` (no terminator yet), and the old -> new value map."""
    block = Block(arg_types=[v.type for v in io.inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(io.inputs, block.args))
    for c in io.constants:
        nc = c.clone(value_mapper=mapping)
        block.add_op(nc)
        mapping[c.results[0]] = nc.results[0]
    for op in ops[lo:hi]:
        new = op.clone(value_mapper=mapping)
        block.add_op(new)
        for r, nr in zip(op.results, new.results):
            mapping[r] = nr
    return block, mapping


def range_module(f: func.FuncOp, ops: Sequence[Operation], lo: int, hi: int) -> ModuleOp:
    """The range as a module with one `@main`: arguments are the range's inputs,
    results its outputs, all named (`nnx.name`) as `crossing_name` says."""
    io = range_io(ops, lo, hi)
    names = value_names(f)
    block, mapping = _cloned_range(ops, io, lo, hi)
    block.add_op(func.ReturnOp(*[mapping[v] for v in io.outputs]))
    fn = func.FuncOp(
        "main", ([v.type for v in io.inputs], [v.type for v in io.outputs]), Region(block),
        arg_attrs=_named([crossing_name(ops, v, names) for v in io.inputs]),
        res_attrs=_named([crossing_name(ops, v, names) for v in io.outputs]),
    )
    return ModuleOp([fn])


def outline(f: func.FuncOp, chain: Sequence[Range]) -> list[Operation]:
    """Replace the function's scheduled ops by one `graph.subgraph` per range of
    `chain`, in order; returns the subgraph ops. Constants left unused are erased."""
    from nnx.dialects.graph import SubgraphOp, YieldOp

    block = f.body.block
    ops = scheduled_ops(block)
    subs = []
    for lo, hi in chain:
        io = range_io(ops, lo, hi)
        body, mapping = _cloned_range(ops, io, lo, hi)
        body.add_op(YieldOp([mapping[v] for v in io.outputs]))
        sub = SubgraphOp.create(operands=list(io.inputs), result_types=[v.type for v in io.outputs],
                                regions=[Region(body)])
        block.insert_op_before(sub, ops[lo])
        for old, new in zip(io.outputs, sub.results):
            old.replace_all_uses_with(new)
        for op in reversed(ops[lo:hi]):
            block.erase_op(op)
        subs.append(sub)
    for op in reversed(list(block.ops)):
        if is_constant(op) and not op.results[0].uses:
            block.erase_op(op)
    return subs


def inline(f: func.FuncOp) -> list[Range]:
    """Undo `outline`: move every top-level `graph.subgraph`'s ops into the function;
    returns the chain of ranges the subgraphs were (ops outside subgraphs each form
    a range of their own)."""
    from nnx.dialects.graph import SubgraphOp

    block = f.body.block
    chain: list[Range] = []
    n = 0
    for op in list(block.ops):
        if op.has_trait(IsTerminator) or is_constant(op):
            continue
        if not isinstance(op, SubgraphOp):
            chain.append((n, n + 1))
            n += 1
            continue
        body = op.body.block
        for arg, v in zip(body.args, op.inputs):
            arg.replace_all_uses_with(v)
        yielded = list(body.last_op.operands)
        count = 0
        for inner in list(body.ops):
            if inner.has_trait(IsTerminator):
                continue
            inner.detach()
            block.insert_op_before(inner, op)
            count += 0 if is_constant(inner) else 1
        for r, v in zip(op.results, yielded):
            r.replace_all_uses_with(v)
        block.erase_op(op)
        if count:
            chain.append((n, n + count))
            n += count
    return chain
