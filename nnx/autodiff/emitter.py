"""Emitting graph ops for the backward pass: one builder that infers result types.

`Emitter.emit("MatMul", [a, b])` builds the graph op registered for that operator
type (an ONNX operator, or a training op of dialects/graph_training.py), inserts it
before the function's terminator and returns its results. Result types come from the
op's own `infer_result_types` (the verifier's shape rules), so the backward rules
never repeat shape arithmetic; `Emitter.const` makes `graph.constant`s (small ones
inline, scalars shared). Every op gets the location of the forward op whose rule is
running (`Emitter.at`), so a diagnostic about a backward op names its source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import Float32Type, TensorType, f32
from xdsl.ir import Attribute, Block, Operation, SSAValue

from nnx.dialects.graph import ONNX_OPS, ConstantOp, GraphOp, dense_attr
from nnx.dialects.graph_training import TRAINING_OPS
from nnx.types import numpy_dtype_of, shape_of


class EmitError(ValueError):
    """A backward op could not be built (its operands do not fit the operator)."""


def op_class(onnx_type: str) -> type[GraphOp]:
    """The graph op class of an ONNX operator or training op type."""
    cls = ONNX_OPS.get(onnx_type) or TRAINING_OPS.get(onnx_type)
    if cls is None:
        raise EmitError(f"no graph op for {onnx_type}")
    return cls


class Emitter:
    """Appends ops before `anchor` (the terminator) in `block`."""

    def __init__(self, block: Block, anchor: Operation):
        self.block = block
        self.anchor = anchor
        self.location: Any = None
        self._scalars: dict[tuple[str, float], SSAValue] = {}

    def at(self, op: Operation | None) -> None:
        """Give the ops emitted from now on the location of `op`."""
        self.location = None if op is None else op.location

    def _insert(self, op: Operation) -> Operation:
        if self.location is not None:
            op.location = self.location
        self.block.insert_op_before(op, self.anchor)
        return op

    # ---- generic ----------------------------------------------------------------

    def emit(
        self,
        onnx_type: str,
        inputs: Sequence[SSAValue | None],
        attrs: dict[str, Any] | None = None,
        n_results: int = 1,
    ) -> SSAValue | list[SSAValue]:
        """Build `onnx_type(inputs){attrs}` with `n_results` results; one SSAValue when
        n_results is 1, else the list."""
        cls = op_class(onnx_type)
        attrs = dict(attrs or {})
        placeholder = TensorType(f32, [1])
        probe = None
        try:
            probe = cls.build_onnx(list(inputs), attrs, [placeholder] * n_results)
            types = probe.infer_result_types()
        except Exception as e:  # noqa: BLE001 - verifier messages: report as one line
            raise EmitError(f"{onnx_type}: {str(e).splitlines()[0] if str(e) else e}") from None
        finally:
            if probe is not None:
                probe.drop_all_references()  # the probe's operand uses
        if types is None or any(t is None for t in types) or len(types) != n_results:
            raise EmitError(f"{onnx_type}: result types cannot be inferred")
        op = cls.build_onnx(list(inputs), attrs, list(types))
        self._insert(op)
        res = list(op.results)
        return res[0] if n_results == 1 else res

    def const(self, value: Any, dtype: Any = np.float32) -> SSAValue:
        """A `graph.constant` holding `value` (scalars of the same value are shared)."""
        arr = np.asarray(value, dtype=dtype)
        key = None
        if arr.ndim == 0:
            key = (arr.dtype.str, float(arr))
            hit = self._scalars.get(key)
            if hit is not None:
                return hit
        if arr.size <= 64:
            attr: Attribute = dense_attr(arr)
        else:
            from nnx.resources import register_array

            attr = register_array(arr, "autodiff")
        op = ConstantOp(attr)
        # constants go first in the backward region so that they dominate every user
        self._insert(op)
        if key is not None:
            self._scalars[key] = op.output
        return op.output

    def ints(self, values: Sequence[int]) -> SSAValue:
        """An int64 1-d constant (shapes, axes, indices)."""
        return self.const(np.asarray(list(values), np.int64).reshape(-1), np.int64)

    # ---- shorthands ---------------------------------------------------------------

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit("Add", [a, b])

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit("Sub", [a, b])

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit("Mul", [a, b])

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit("Div", [a, b])

    def neg(self, a: SSAValue) -> SSAValue:
        return self.emit("Neg", [a])

    def scale(self, a: SSAValue, k: float) -> SSAValue:
        """a * k (k a Python number, as a constant of a's element type)."""
        return self.mul(a, self.const(k, dtype_of(a)))

    def reduce_sum(self, x: SSAValue, axes: Sequence[int], keepdims: bool = True) -> SSAValue:
        if not axes:
            return x
        return self.emit("ReduceSum", [x, self.ints(axes)], {"keepdims": int(keepdims)})

    def reduce_mean(self, x: SSAValue, axes: Sequence[int], keepdims: bool = True) -> SSAValue:
        return self.emit("ReduceMean", [x, self.ints(axes)], {"keepdims": int(keepdims)})

    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(shape_of(x.type)) == tuple(shape):
            return x
        return self.emit("Reshape", [x, self.ints(shape)])

    def transpose(self, x: SSAValue, perm: Sequence[int]) -> SSAValue:
        if list(perm) == list(range(len(perm))):
            return x
        return self.emit("Transpose", [x], {"perm": [int(p) for p in perm]})

    def expand(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(shape_of(x.type)) == tuple(shape):
            return x
        return self.emit("Expand", [x, self.ints(shape)])

    def where(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit("Where", [c, a, b])

    def cast(self, x: SSAValue, onnx_code: int) -> SSAValue:
        return self.emit("Cast", [x], {"to": onnx_code})

    def zeros_like(self, x: SSAValue) -> SSAValue:
        """Zeros of x's type (a constant broadcast by Expand: no big blob)."""
        return self.expand(self.const(0.0, dtype_of(x)), shape_of(x.type))

    def sum_to_shape(self, g: SSAValue, shape: Sequence[int]) -> SSAValue:
        """Undo numpy broadcasting: sum g (of a broadcast shape) down to `shape`."""
        gs = tuple(shape_of(g.type))
        shape = tuple(shape)
        if gs == shape:
            return g
        lead = len(gs) - len(shape)
        axes = list(range(lead))
        for i, d in enumerate(shape):
            if d == 1 and gs[lead + i] != 1:
                axes.append(lead + i)
        r = self.reduce_sum(g, axes, keepdims=True)
        return self.reshape(r, shape)


def dtype_of(v: SSAValue) -> np.dtype:
    """The numpy element type of a tensor value."""
    t = v.type
    assert isinstance(t, TensorType)
    return np.dtype(numpy_dtype_of(t.element_type))


def is_float(v: SSAValue) -> bool:
    """Whether v is a tensor of a floating-point element type."""
    t = v.type
    if not isinstance(t, TensorType):
        return False
    try:
        return np.dtype(numpy_dtype_of(t.element_type)).kind == "f"
    except Exception:  # noqa: BLE001 - element types numpy does not know
        return isinstance(t.element_type, Float32Type)
