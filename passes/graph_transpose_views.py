"""`graph-transpose-views`: mark the Transposes that chip-lower may lower as strided views.

A `graph.transpose` whose every reader takes tiles of its result as they are needs no
VPU pass on the accelerator: its result can be the input's storage read with
permuted strides (docs/architecture.md section 7.1, "On-chip chaining"). That holds
when

* the result is used, and not returned (graph outputs are stored row-major);
* every user is a compute op that neither reshapes its operands (the `ViewLike` ops:
  Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout; the fc/Gemm views of
  `sparse.fc`) nor copies or gathers them (Concat, Split, Slice, Gather), is no
  Transpose itself, and no Conv (the Conv tiling reads row-major windows): other
  graph ops, `sparse.matmul` and `sparse.conv`;
* the Transpose has no `after` ordering edges.

The pass sets the discardable unit attribute `nnx.view` on each such Transpose
(`VIEW_ATTR`); chip-lower lowers a marked Transpose as a view (no instruction) and
rejects a mark these rules do not allow. `lower-to-chip` runs this pass before
chip-lower when `schedule=true` (the list-scheduled programs, where the VPU pass
would sit on the critical path); without it every Transpose is a VPU op.

    nnx-opt m.mlir -p graph-transpose-views
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from nnx.dialects.traits import ViewLike

VIEW_ATTR = "nnx.view"
"""Unit attribute of a `graph.transpose` lowered as a strided view (see the module docstring)."""


def _needs_row_major(reader: Operation) -> bool:
    """Does graph op `reader` reshape (a `ViewLike` op), copy or re-window (Concat,
    Split, Slice, Gather, Transpose) or Conv-tile its operand, so that it needs a
    Transpose's result row-major?"""
    from nnx.dialects.graph import ConcatOp, ConvOp, GatherOp, SliceOp, SplitOp, TransposeOp

    return reader.has_trait(ViewLike) or isinstance(reader, (ConcatOp, SplitOp, SliceOp, GatherOp, TransposeOp, ConvOp))


def is_transpose_view(op: Operation) -> bool:
    """May this op be lowered as a strided view of its input (module docstring)?"""
    from xdsl.dialects import func as fdialect

    from nnx.dialects import sparse as sd
    from nnx.dialects.graph import GraphOp, TransposeOp

    if not isinstance(op, TransposeOp) or op.after:
        return False
    out = op.onnx_outputs()[0]
    if out is None or not out.uses:
        return False
    for u in out.uses:
        o = u.operation
        if isinstance(o, (fdialect.ReturnOp, sd.FcOp)):
            return False
        if isinstance(o, GraphOp) and _needs_row_major(o):
            return False
        if not isinstance(o, (GraphOp, sd.MatMulOp, sd.ConvOp)):
            return False
    return True


class MarkTransposeView(RewritePattern):
    """Set `nnx.view` on a Transpose that `is_transpose_view` allows."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if VIEW_ATTR in op.attributes or not is_transpose_view(op):
            return
        op.attributes[VIEW_ATTR] = UnitAttr()
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class GraphTransposeViewsPass(ModulePass):
    """Mark the Transposes chip-lower may lower as strided views (module docstring)."""

    name = "graph-transpose-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MarkTransposeView(), apply_recursively=False).rewrite_module(op)
