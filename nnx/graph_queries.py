"""Queries on graph-dialect IR shared by the passes: who uses a value, the other
operand of a binary op, and the one constant lookup (`constant_op`, `const_value`,
with the scalar helper `const_scalar` built on it)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue


def sole_user(v: SSAValue) -> Operation | None:
    """The only operation using `v` (once or more), or None."""
    users = {id(u.operation): u.operation for u in v.uses}
    return next(iter(users.values())) if len(users) == 1 else None


def sole_graph_user(v: SSAValue, kind: str | type[Operation]) -> Operation | None:
    """The only user of `v` when it is a graph op of class `kind` (or of ONNX type
    `kind`, a string) reading `v` exactly once, else None."""
    from nnx.dialects.graph import ONNX_OPS

    uses = list(v.uses)
    if len(uses) != 1:
        return None
    u = uses[0].operation
    cls = ONNX_OPS.get(kind) if isinstance(kind, str) else kind
    if cls is None or not isinstance(u, cls):
        return None
    if sum(1 for x in u.onnx_inputs() if x is v) != 1:
        return None
    return u


def other_input(op: Operation, v: SSAValue) -> SSAValue | None:
    """The operand of a binary graph op that is not `v`."""
    ins = op.onnx_inputs()  # type: ignore[attr-defined]
    return ins[1] if ins[0] is v else ins[0]


def constant_op(v: SSAValue | None) -> Operation | None:
    """The `graph.constant` producing `v`, else None."""
    from nnx.dialects.graph import ConstantOp

    if v is not None and isinstance(v.owner, ConstantOp):
        return v.owner
    return None


def const_value(v: SSAValue | None) -> np.ndarray | None:
    """The numpy value of `v` when a `graph.constant` produces it, else None. A
    constant whose weights cannot be read raises `nnx.resources.ResourceError`."""
    const = constant_op(v)
    return None if const is None else np.asarray(const.numpy_value())  # type: ignore[attr-defined]


def const_scalar(v: SSAValue | None) -> float | None:
    """The value of a one-element float `graph.constant` (any rank), else None."""
    a = const_value(v)
    if a is None or a.size != 1 or a.dtype.kind != "f":
        return None
    return float(a.reshape(-1)[0])


def forward_ops(func, ops: list[Operation]) -> frozenset[int]:
    """Indices (in `ops`) of the forward pass of a training step: the ops its result
    named `loss` depends on (graph-autodiff names it so; docs/training.md). Without
    such a result the function has no backward pass: every op is forward."""
    from nnx.interp.interpreter import output_names

    names = output_names(func)
    if "loss" not in names:
        return frozenset(range(len(ops)))
    pos = {op: i for i, op in enumerate(ops)}
    ret = func.body.block.last_op
    seen: set[int] = set()
    stack = [ret.operands[names.index("loss")]]  # type: ignore[union-attr]
    while stack:
        owner = stack.pop().owner
        i = pos.get(owner)
        if i is None or i in seen:
            continue
        seen.add(i)
        stack.extend(owner.operands)  # type: ignore[union-attr]
    return frozenset(seen)
