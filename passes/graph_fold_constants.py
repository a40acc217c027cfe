"""`graph-fold-constants`: evaluate graph ops whose inputs are all constants.

A graph op whose data inputs are all results of `graph.constant` is replaced by one
`graph.constant` per result, holding the value computed by the numpy kernel that
defines the op (`nnx.interp.kernels.run_kernel(op.ONNX_TYPE, inputs,
op.onnx_attributes())`, with the number of results as the interpreter passes it;
the same function the interpreter runs, so folding cannot
change what the model computes). Folding proceeds in block order, so chains of
constant ops fold in one run. Input constants left without uses are erased.

What is not folded (left unchanged, no error):

* ops without a kernel (`run_kernel` raises `KernelError`), or whose kernel fails or
  returns values whose shape differs from the op's result types (a warning);
* ops with no data inputs at all (e.g. random generators);
* ops whose `after(...)` control edges come from non-constant ops: the edge orders
  the op after a computation, so it is kept (docs/architecture.md, section 4,
  "Control edges");
* ops with a result of more than `max-elements` elements (default 2**20), so a pass
  run does not materialise huge tensors (e.g. a broadcast `expand`).

Folded results of at most 16 elements become inline `dense<...>`; larger ones become
`dense_resource` blobs (nnx/resources.py) named after the folded value, so they are
not printed as decimal text. The new constants take the location of the op they
replace. A `dense_resource` input whose blob is missing from the file is a
`PassError` at that constant.

    nnx-opt model.mlir --pass-pipeline='builtin.module(graph-fold-constants{max-elements=4096})'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from nnx.diagnostics import PassError, emit_warning

INLINE_MAX_ELEMENTS = 16
"""Folded results with at most this many elements are printed inline as dense<...>."""


class FoldConstantGraphOp(RewritePattern):
    """Replace a graph op whose inputs are all `graph.constant` by its value."""

    def __init__(self, max_elements: int):
        super().__init__()
        self.max_elements = max_elements

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        from nnx.dialects.graph import ConstantOp, GraphOp, dense_attr
        from nnx.interp import kernels
        from nnx.resources import ResourceError, register_array
        from nnx.types import numpy_dtype_of

        if not isinstance(op, GraphOp) or not op.ONNX_TYPE:
            return
        if op.ONNX_TYPE not in kernels.KERNELS:
            return
        inputs = op.onnx_inputs()
        if not any(v is not None for v in inputs):
            return
        input_consts: list[ConstantOp | None] = []
        for v in inputs:
            if v is None:
                input_consts.append(None)
            elif isinstance(v.owner, ConstantOp):
                input_consts.append(v.owner)
            else:
                return
        if not all(isinstance(v.owner, ConstantOp) for v in op.after):
            return
        result_types: list[TensorType] = []
        for r in op.results:
            t = r.type
            if not isinstance(t, TensorType):
                return
            shape = t.get_shape()
            if any(d < 0 for d in shape):
                return
            if int(np.prod(shape, dtype=np.int64)) > self.max_elements:
                return
            result_types.append(t)

        arrays: list[np.ndarray | None] = []
        for c in input_consts:
            if c is None:
                arrays.append(None)
                continue
            try:
                arrays.append(c.numpy_value())
            except ResourceError as e:
                raise PassError(str(e), c) from None
        attrs = op.onnx_attributes()
        attrs[getattr(kernels, "NUM_OUTPUTS_ATTR", "_num_outputs")] = len(op.results)
        try:
            outs = kernels.run_kernel(op.ONNX_TYPE, arrays, attrs)
        except kernels.KernelError:
            return
        except Exception as e:  # noqa: BLE001 - a kernel rejecting these values
            emit_warning(op, f"not folded: the kernel failed: {type(e).__name__}: {e}")
            return
        if len(outs) != len(result_types):
            emit_warning(
                op,
                f"not folded: the kernel returned {len(outs)} values for "
                f"{len(result_types)} results",
            )
            return
        values: list[np.ndarray] = []
        for i, (arr, t) in enumerate(zip(outs, result_types)):
            arr = np.asarray(arr)
            shape = tuple(t.get_shape())
            if arr.shape != shape:
                emit_warning(
                    op,
                    f"not folded: the kernel's result #{i} has shape "
                    f"{list(arr.shape)}, the op's result type is {t}",
                )
                return
            try:
                dtype = numpy_dtype_of(t.element_type)
            except Exception:  # noqa: BLE001 - element type without numpy dtype
                return
            values.append(np.ascontiguousarray(arr.astype(dtype, copy=False)))

        new_ops: list[ConstantOp] = []
        for arr, r in zip(values, op.results):
            finite = arr.dtype.kind != "f" or bool(np.isfinite(arr.astype(np.float32)).all())
            if arr.size <= INLINE_MAX_ELEMENTS and finite:
                # (NaN/Inf go to blobs: xDSL's generic printer writes them as bare hex,
                # which its parser reads back as an integer)
                attr = dense_attr(arr)
            else:
                attr = register_array(arr, hint=r.name_hint or "folded")
            c = ConstantOp(attr)
            c.location = op.location
            new_ops.append(c)
        dead_candidates = [c for c in input_consts if c is not None]
        dead_candidates += [v.owner for v in op.after if isinstance(v.owner, ConstantOp)]
        rewriter.replace(op, new_ops, [c.output for c in new_ops])
        seen: set[int] = set()
        for c in dead_candidates:
            if id(c) in seen or c.parent is None:
                continue
            seen.add(id(c))
            if all(r.first_use is None for r in c.results):
                rewriter.erase(c)


@dataclass(frozen=True)
class GraphFoldConstantsPass(ModulePass):
    """Fold graph ops whose inputs are all constants into constants (see module doc)."""

    name = "graph-fold-constants"

    max_elements: int = 1 << 20
    """Do not fold an op with a result of more elements than this."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_elements < 0:
            raise PassError(
                f"graph-fold-constants: max-elements must be >= 0, got {self.max_elements}"
            )
        PatternRewriteWalker(
            FoldConstantGraphOp(self.max_elements), apply_recursively=True
        ).rewrite_module(op)
