"""`graph-hoist-addends`: compute the addend of `MatMul -> Add` before the MatMul.

chip-lower starts a MatMul's accumulators from the tensor an Add adds to its result
(the attention mask added to the scores, a residual): no VPU pass over the result
(docs/architecture.md section 7.1, "On-chip chaining"). That needs the addend to exist
when the MatMul runs, but exporters often build it after the MatMul (the mask
arithmetic of a BERT layer comes after the `Q x K^T` in the ONNX node order). This
pass moves the ops that compute the addend, and that come after the MatMul in the
block, to just before it, in their order, when

* the MatMul (`graph.matmul` or `sparse.matmul`) has one result with exactly one
  user, an Add, whose other operand is the result of an op (not a block argument);
* those ops do not depend on the MatMul, and there are at most 16 of them.

Any topological order of a block computes the same values; the block stays
topological. `lower-to-chip` runs this pass before chip-lower when `schedule=true`.

    nnx-opt m.mlir -p graph-hoist-addends
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

MAX_HOISTED = 16
"""Most ops moved for one MatMul (a longer addend computation is left in place)."""


def _is_matmul(op: Operation) -> bool:
    from nnx.dialects import sparse as sd
    from nnx.dialects.graph import MatMulOp

    return isinstance(op, (MatMulOp, sd.MatMulOp))


def hoist_addends(block: Block) -> None:
    """Move, for each MatMul of `block` in block order, the ops computing its Add's
    other operand before it (see the module docstring)."""
    from nnx.dialects.graph import AddOp

    ops = list(block.ops)
    pos = {o: i for i, o in enumerate(ops)}
    for mm in ops:
        if not _is_matmul(mm) or len(mm.results) != 1:
            continue
        uses = list(mm.results[0].uses)
        if len(uses) != 1:
            continue
        add = uses[0].operation
        if not isinstance(add, AddOp):
            continue
        other = [x for x in add.onnx_inputs() if x is not mm.results[0]]
        if len(other) != 1 or other[0] is None or not isinstance(other[0].owner, Operation):
            continue
        # the ops after the MatMul that the addend needs
        need: set[Operation] = set()
        stack, ok = [other[0].owner], True
        while stack and ok:
            o = stack.pop()
            if o in need or o.parent_block() is not block or pos[o] < pos[mm]:
                continue
            if o is mm or len(need) > MAX_HOISTED:
                ok = False
                break
            need.add(o)
            stack += [v.owner for v in o.operands if isinstance(v.owner, Operation)]
        if not ok or not need:
            continue
        for o in sorted(need, key=lambda x: pos[x]):
            o.detach()
            block.insert_op_before(o, mm)
        ops = list(block.ops)
        pos = {o: i for i, o in enumerate(ops)}


@dataclass(frozen=True)
class GraphHoistAddendsPass(ModulePass):
    """Move the computation of a MatMul's Add operand before the MatMul (module
    docstring)."""

    name = "graph-hoist-addends"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects import func as fdialect

        for f in op.body.block.ops:
            if isinstance(f, fdialect.FuncOp) and f.body.blocks:
                for b in f.body.blocks:
                    hoist_addends(b)
