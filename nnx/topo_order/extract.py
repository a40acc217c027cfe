"""Orders applied to IR: a subgraph as its own function, a block put in an order.

* `extract_function(dag, order)`: a module with one `func.func @main` whose
  arguments are the subgraph's inputs (values defined outside it, constants cloned
  in) and whose results are its values used outside it, ops in `order`: it compiles
  on its own (per-subgraph compilation, docs/topological-order.md).
* `ordered_clone(module, block_of, order)`: a copy of the module with the block in
  `order`; `apply_order(block, dag, order)` reorders in place.

Constants (operand-free ops) are not scheduled: they keep their place, and the
scheduled ops follow them, so every order written is a valid topological order.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import IsTerminator

from nnx.topo_order.dag import OpDag


def extract_function(dag: OpDag, order: Sequence[int]) -> ModuleOp:
    """The subgraph `order` (node indices of `dag`, a topological order) as a module."""
    inside = {id(dag.ops[i]) for i in order}
    ext: list[SSAValue] = []
    consts: list[Operation] = []
    seen: set[int] = set()
    for i in order:
        for v in dag.ops[i].operands:
            owner = v.owner
            if isinstance(owner, Operation) and id(owner) in inside:
                continue
            if id(v) in seen:
                continue
            seen.add(id(v))
            if isinstance(owner, Operation) and not owner.operands and len(owner.results) == 1:
                consts.append(owner)
            else:
                ext.append(v)
    block = Block(arg_types=[v.type for v in ext])
    mapping: dict[SSAValue, SSAValue] = dict(zip(ext, block.args))
    for c in consts:
        nc = c.clone(value_mapper=mapping)
        block.add_op(nc)
        mapping[c.results[0]] = nc.results[0]
    outs: list[SSAValue] = []
    for i in order:
        op = dag.ops[i]
        new = op.clone(value_mapper=mapping)
        block.add_op(new)
        for r, nr in zip(op.results, new.results):
            mapping[r] = nr
            if not r.uses or any(id(u.operation) not in inside for u in r.uses):
                outs.append(nr)
    block.add_op(func.ReturnOp(*outs))
    f = func.FuncOp("main", ([a.type for a in block.args], [o.type for o in outs]), Region(block))
    return ModuleOp([f])


def apply_order(block: Block, dag: OpDag, order: Sequence[int]) -> bool:
    """Put `block`'s scheduled ops in `order` (before the terminator); False (and the
    block untouched) when `order` is already the block's order."""
    if list(order) == list(range(len(dag))):
        return False
    term = block.last_op
    assert term is not None and term.has_trait(IsTerminator)
    for i in order:
        op = dag.ops[i]
        op.detach()
        block.insert_op_before(op, term)
    return True


def ordered_clone(module: ModuleOp, func_name: str, order: Sequence[int]) -> ModuleOp:
    """A copy of `module` whose function `func_name` has its ops in `order`."""
    from nnx.topo_order.dag import build_dag

    clone = module.clone()
    f = next(op for op in clone.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == func_name)
    block = f.body.block
    apply_order(block, build_dag(block), order)
    return clone
