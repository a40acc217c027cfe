"""Queries on graph-dialect IR shared by the passes: who uses a value, the other
operand of a binary op, the value of a one-element constant."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue


def sole_user(v: SSAValue) -> Operation | None:
    """The only operation using `v` (once or more), or None."""
    users = {id(u.operation): u.operation for u in v.uses}
    return next(iter(users.values())) if len(users) == 1 else None


def sole_graph_user(v: SSAValue, kind: str) -> Operation | None:
    """The only user of `v` when it is a graph op of ONNX type `kind` reading `v`
    exactly once, else None."""
    from nnx.dialects.graph import GraphOp

    uses = list(v.uses)
    if len(uses) != 1:
        return None
    u = uses[0].operation
    if not isinstance(u, GraphOp) or u.ONNX_TYPE != kind:
        return None
    if sum(1 for x in u.onnx_inputs() if x is v) != 1:
        return None
    return u


def other_input(op: Operation, v: SSAValue) -> SSAValue | None:
    """The operand of a binary graph op that is not `v`."""
    ins = op.onnx_inputs()  # type: ignore[attr-defined]
    return ins[1] if ins[0] is v else ins[0]


def const_scalar(v: SSAValue | None) -> float | None:
    """The value of a one-element float `graph.constant` (any rank), else None."""
    from nnx.dialects.graph import ConstantOp

    if v is None or not isinstance(v.owner, ConstantOp):
        return None
    a = np.asarray(v.owner.numpy_value())
    if a.size != 1 or a.dtype.kind != "f":
        return None
    return float(a.reshape(-1)[0])
