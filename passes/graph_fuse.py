"""`graph-fuse`: ONNX functions that exporters write out as several ops -> the one op.

Exporters targeting opsets before an op existed spell it out; on the accelerator each
VPU instruction is one pass over its elements (`units.VPU.elements_per_cycle`; the
VPU formula in docs/architecture.md, section 10 "The target file and the one cost
definition"), so the written-out forms cost one pass per piece
plus their intermediate tensors. The pass recognises, with every intermediate used
only inside the pattern and types unchanged (onnxruntime's GeluFusion and
LayerNormFusion do the same):

* exact GELU (opset 20 `Gelu`): ``0.5 * x * (1 + erf(x / sqrt(2)))`` -- Div by sqrt(2)
  (or Mul by 1/sqrt(2)), Erf, Add 1 and two Muls in any association order
  (``(x * a) * 0.5``, ``(x * 0.5) * a``, ``x * (a * 0.5)``), operands in either
  order; constants are one-element floats within 1e-6 relative
  -> ``graph.gelu(x) {approximate = "none"}`` (matched at the Erf);
* LayerNormalization (opset 17): ``m = ReduceMean(x)``, ``d = x - m``,
  ``v = ReduceMean(d ^ 2)`` (Pow 2 or d * d), ``n = d / Sqrt(v + eps)``, then
  ``n * gamma`` and optionally ``+ beta`` with constants of the normalised shape, the
  means over the same trailing axes with keepdims -> ``graph.layer_normalization(x,
  gamma[, beta]) {axis, epsilon}`` (matched at the first ReduceMean).

    nnx-opt m.mlir -p 'graph-fuse,dce'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from nnx.graph_queries import const_scalar, const_value, constant_op, other_input, sole_graph_user


def _near(a: float | None, b: float) -> bool:
    return a is not None and abs(a - b) <= 1e-6 * abs(b)


class FuseErfGelu(RewritePattern):
    """Match at `graph.erf` (see the module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        from nnx.dialects.graph import AddOp, DivOp, ErfOp, GeluOp, GraphOp, MulOp

        if not isinstance(op, ErfOp) or op.after:
            return
        d = op.onnx_inputs()[0]
        scale = d.owner
        if not isinstance(scale, GraphOp) or len(list(d.uses)) != 1 or scale.after:
            return
        sin = scale.onnx_inputs()
        if isinstance(scale, DivOp) and _near(const_scalar(sin[1]), math.sqrt(2.0)):
            x = sin[0]
        elif isinstance(scale, MulOp) and _near(const_scalar(sin[1]), math.sqrt(0.5)):
            x = sin[0]
        elif isinstance(scale, MulOp) and _near(const_scalar(sin[0]), math.sqrt(0.5)):
            x = sin[1]
        else:
            return
        ty = x.type
        e = op.onnx_outputs()[0]
        add = sole_graph_user(e, AddOp)
        if add is None or not _near(const_scalar(other_input(add, e)), 1.0):
            return
        a = add.onnx_outputs()[0]
        m1 = sole_graph_user(a, MulOp)
        if m1 is None:
            return
        chain = [scale, op, add, m1]
        o1 = other_input(m1, a)
        if o1 is x:
            # (x * a) * 0.5
            m2 = sole_graph_user(m1.onnx_outputs()[0], MulOp)
            if m2 is None or not _near(const_scalar(other_input(m2, m1.onnx_outputs()[0])), 0.5):
                return
            chain.append(m2)
        elif _near(const_scalar(o1), 0.5):
            # x * (a * 0.5)
            m2 = sole_graph_user(m1.onnx_outputs()[0], MulOp)
            if m2 is None or other_input(m2, m1.onnx_outputs()[0]) is not x:
                return
            chain.append(m2)
        else:
            # (x * 0.5) * a
            h = o1.owner if o1 is not None else None
            if not isinstance(h, MulOp) or len(list(o1.uses)) != 1 or h.after:
                return
            hin = h.onnx_inputs()
            if not ((hin[0] is x and _near(const_scalar(hin[1]), 0.5)) or (hin[1] is x and _near(const_scalar(hin[0]), 0.5))):
                return
            chain.insert(0, h)
        last = chain[-1]
        out = last.onnx_outputs()[0]
        if any(c.after for c in chain) or out.type != ty or any(c.onnx_outputs()[0].type != ty for c in chain):
            return
        gelu = GeluOp.build_onnx([x], {"approximate": "none"}, [ty])
        gelu.attributes.update({k: v for k, v in last.attributes.items() if k.startswith("nnx.")})
        rewriter.insert(gelu, InsertPoint.before(last))
        rewriter.replace_all_uses_with(out, gelu.results[0])
        for c in reversed(chain):
            rewriter.erase(c)


def _reduce_axes(op: Operation, rank: int) -> list[int] | None:
    """Normalised axes of a keepdims ReduceMean (attribute or constant input)."""
    if op.attr("keepdims", 1) != 1:  # type: ignore[attr-defined]
        return None
    if op.axes is not None:  # type: ignore[attr-defined]
        value = const_value(op.axes)  # type: ignore[attr-defined]
        if value is None:
            return None
        axes = [int(a) for a in value.reshape(-1)]
    else:
        axes = op.attr("axes")  # type: ignore[attr-defined]
        if axes is None:
            return None
        axes = [int(a) for a in axes]
    return sorted(a + rank if a < 0 else a for a in axes)


def _const_of_shape(v: SSAValue | None, shape: tuple[int, ...]) -> bool:
    return constant_op(v) is not None and tuple(v.type.get_shape()) == shape  # type: ignore[attr-defined]


class FuseLayerNorm(RewritePattern):
    """Match at the first `graph.reduce_mean` (see the module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        from nnx.dialects.graph import AddOp, DivOp, LayerNormalizationOp, MulOp, PowOp, ReduceMeanOp, SqrtOp, SubOp

        if not isinstance(op, ReduceMeanOp) or op.after:
            return
        x = op.onnx_inputs()[0]
        ty = x.type
        shape = tuple(ty.get_shape())  # type: ignore[attr-defined]
        if str(ty.element_type) not in ("f16", "bf16", "f32", "f64"):  # type: ignore[attr-defined]
            return
        axes = _reduce_axes(op, len(shape))
        if not axes or axes != list(range(axes[0], len(shape))):
            return
        mean = op.onnx_outputs()[0]
        sub = sole_graph_user(mean, SubOp)
        if sub is None or sub.onnx_inputs()[0] is not x:
            return
        d = sub.onnx_outputs()[0]
        users = list({id(u.operation): u.operation for u in d.uses}.values())
        if len(users) != 2:
            return
        sq = next((u for u in users if isinstance(u, (PowOp, MulOp))), None)
        div = next((u for u in users if isinstance(u, DivOp)), None)
        if sq is None or div is None or sq is div or div.onnx_inputs()[0] is not d:
            return
        sin = sq.onnx_inputs()
        if isinstance(sq, PowOp) and not (sin[0] is d and _near(const_scalar(sin[1]), 2.0)):
            return
        if isinstance(sq, MulOp) and not (sin[0] is d and sin[1] is d):
            return
        var_op = sole_graph_user(sq.onnx_outputs()[0], ReduceMeanOp)
        if var_op is None or _reduce_axes(var_op, len(shape)) != axes:
            return
        v = var_op.onnx_outputs()[0]
        add_eps = sole_graph_user(v, AddOp)
        if add_eps is None:
            return
        eps = const_scalar(other_input(add_eps, v))
        if eps is None or eps < 0:
            return
        sqrt = sole_graph_user(add_eps.onnx_outputs()[0], SqrtOp)
        if sqrt is None or div.onnx_inputs()[1] is not sqrt.onnx_outputs()[0] or len(list(sqrt.onnx_outputs()[0].uses)) != 1:
            return
        n = div.onnx_outputs()[0]
        mul = sole_graph_user(n, MulOp)
        norm_shape = shape[axes[0]:]
        if mul is None or not _const_of_shape(other_input(mul, n), norm_shape):
            return
        gamma = other_input(mul, n)
        chain = [op, sub, sq, var_op, add_eps, sqrt, div, mul]
        beta = None
        y = mul.onnx_outputs()[0]
        badd = sole_graph_user(y, AddOp)
        if badd is not None and _const_of_shape(other_input(badd, y), norm_shape):
            beta = other_input(badd, y)
            chain.append(badd)
        last = chain[-1]
        out = last.onnx_outputs()[0]
        if any(c.after for c in chain) or out.type != ty:
            return
        ln = LayerNormalizationOp.build_onnx(
            [x, gamma, beta], {"axis": axes[0], "epsilon": float(eps)}, [ty, None, None]
        )
        ln.attributes.update({k: v2 for k, v2 in last.attributes.items() if k.startswith("nnx.")})
        rewriter.insert(ln, InsertPoint.before(last))
        rewriter.replace_all_uses_with(out, ln.results[0])
        for c in reversed(chain):
            rewriter.erase(c)


@dataclass(frozen=True)
class GraphFusePass(ModulePass):
    """Fuse written-out GELU and LayerNormalization subgraphs into the ONNX ops
    (module docstring)."""

    name = "graph-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([FuseErfGelu(), FuseLayerNorm()]), apply_recursively=False).rewrite_module(op)
