"""Numpy implementations of the `sparse` dialect (docs/sparse-mapping.md), keyed by op name.

Each implementation takes the op and the values of its data operands (the operands
returned by `sparse_operands(op)`: everything but the `after` control group, an
absent optional bias omitted) and returns the list of result values. Connection data
at run time are numpy arrays: `uint8` 0/1 strings (direct) or left-packed `int32`
strides padded with -1 (stride), of the `!sparse.conn` type's shape. The semantics
are nnx/connection_data.py's.

Hooking into the interpreter (nnx/interp/interpreter.py, `_plan`)::

    from nnx.interp.sparse_impls import SPARSE_IMPLS, sparse_kernel, sparse_operands
    ...
    elif op.name in SPARSE_IMPLS:
        st = _Step(op, "kernel", fn=sparse_kernel(op), inputs=sparse_operands(op),
                   outputs=list(op.results))

`sparse_kernel(op)` adapts an implementation to the graph kernels' calling
convention ``fn(inputs, attrs)``. Errors are `ConnectionDataError` (a ValueError).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue

from nnx import connection_data as cd
from nnx.dialects import sparse as sp

SparseImpl = Callable[[Operation, list[np.ndarray]], list[np.ndarray]]

SPARSE_IMPLS: dict[str, SparseImpl] = {}


def _impl(op_class: type[Operation]) -> Callable[[SparseImpl], SparseImpl]:
    def register(fn: SparseImpl) -> SparseImpl:
        SPARSE_IMPLS[op_class.name] = fn
        return fn

    return register


def sparse_operands(op: Operation) -> list[SSAValue]:
    """The data operands of a sparse op in order (no `after`, no absent bias)."""
    after = set(getattr(op, "after", ()))
    return [v for v in op.operands if v not in after]


def sparse_kernel(op: Operation) -> Callable[[Sequence[Any], dict[str, Any]], list[np.ndarray]]:
    """`SPARSE_IMPLS[op.name]` bound to `op`, as a graph-kernel-style ``fn(inputs, attrs)``."""
    fn = SPARSE_IMPLS[op.name]
    return lambda inputs, attrs: fn(op, list(inputs))


def run_sparse_op(op: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    fn = SPARSE_IMPLS.get(op.name)
    if fn is None:
        raise cd.ConnectionDataError(f"no implementation for {op.name}")
    return fn(op, inputs)


def _ctype(v: SSAValue) -> sp.ConnType:
    t = v.type
    assert isinstance(t, sp.ConnType)
    return t


def _check_conn(value: np.ndarray, t: sp.ConnType, what: str) -> np.ndarray:
    value = np.asarray(value)
    if value.shape != t.get_shape():
        raise cd.ConnectionDataError(
            f"{what}: connection data of shape {list(value.shape)}, the type says "
            f"{list(t.get_shape())}"
        )
    return value


@_impl(sp.ConnectOp)
def _connect(op: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    assert isinstance(op, sp.ConnectOp)
    t = _ctype(op.result)
    x, th = inputs[0], op.threshold_value
    if t.order_name == cd.NEURON:
        return [cd.neuron_connection(x, th, t.form_name)]
    if op.layout_name == sp.IN_OUT:
        x = np.asarray(x).T  # [in, out] -> [out, in], one row per output neuron
    return [cd.weight_connection(x, th, t.form_name, t.order_name)]


@_impl(sp.ConvertOp)
def _convert(op: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    assert isinstance(op, sp.ConvertOp)
    a, b = _ctype(op.input), _ctype(op.result)
    v = _check_conn(inputs[0], a, op.name)
    form = a.form_name
    if a.order_name != b.order_name:
        v = cd.reorder(v, form)
    return [cd.convert(v, form, b.form_name)]


@_impl(sp.CombineOp)
def _combine(op: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    assert isinstance(op, sp.CombineOp)
    a, b, r = _ctype(op.lhs), _ctype(op.rhs), _ctype(op.result)
    va = _check_conn(inputs[0], a, op.name)
    vb = _check_conn(inputs[1], b, op.name)
    if a.order_name == cd.NEURON and r.order_name == cd.PER_OUTPUT:
        va = np.expand_dims(va, -2)
    if b.order_name == cd.NEURON and r.order_name == cd.PER_OUTPUT:
        vb = np.expand_dims(vb, -2)
    out, form = cd.combine(va, a.form_name, vb, b.form_name, mixed=r.form_name)
    assert form == r.form_name
    return [np.ascontiguousarray(np.broadcast_to(out, r.get_shape()))]


@_impl(sp.SelectOp)
def _select(op: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    assert isinstance(op, sp.SelectOp)
    c = _ctype(op.conn)
    conn = _check_conn(inputs[0], c, op.name)
    return list(cd.select_packed(conn, c.form_name, inputs[1], inputs[2], c.order_name))


@_impl(sp.GroupPruneOp)
def _group_prune(op: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    assert isinstance(op, sp.GroupPruneOp)
    groups, th, count, axis = op.params
    return [cd.group_prune(inputs[0], groups, th, count, axis)[0]]


@_impl(sp.FcOp)
def _fc(op: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    assert isinstance(op, sp.FcOp)
    c = _ctype(op.conn)
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if op.bias is not None else None
    conn = _check_conn(inputs[-1], c, op.name)
    if bias is not None:
        bias = np.asarray(bias).reshape(-1)
    return [cd.fc(x, w, conn, c.form_name, c.order_name, bias)]


@_impl(sp.MatMulOp)
def _matmul(op: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    assert isinstance(op, sp.MatMulOp)
    c = _ctype(op.conn)
    x, b = inputs[0], inputs[1]
    conn = _check_conn(inputs[2], c, op.name)
    # B[K, N] is W^T with W[out=N, in=K]: its per_input strings are B's rows
    return [cd.fc(x, np.asarray(b).T, conn, c.form_name, c.order_name)]


@_impl(sp.ConvOp)
def _conv(op: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    assert isinstance(op, sp.ConvOp)
    c = _ctype(op.conn)
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if op.bias is not None else None
    conn = _check_conn(inputs[-1], c, op.name)
    p = op.conv_params()
    return [
        cd.conv(
            x,
            w,
            conn,
            c.form_name,
            c.order_name,
            bias,
            strides=p["strides"],  # type: ignore[arg-type]
            pads=p["pads"],  # type: ignore[arg-type]
            dilations=p["dilations"],  # type: ignore[arg-type]
            group=p["group"],  # type: ignore[arg-type]
        )
    ]
