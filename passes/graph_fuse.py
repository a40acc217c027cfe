"""`graph-fuse-gelu`: the exact (erf) GELU written out as five elementwise ops -> one
`graph.gelu`.

Exporters that predate ONNX's Gelu (opset 20) spell GELU out:
``0.5 * x * (1 + erf(x / sqrt(2)))`` -- Div (or Mul by 1/sqrt(2)), Erf, Add 1, and two
Muls in any of the association orders ``(x * a) * 0.5``, ``(x * 0.5) * a``,
``x * (a * 0.5)`` and with operands in either order. The rewrite matches at the Erf
and replaces the whole subgraph by ``graph.gelu(x) {approximate = "none"}`` when
every intermediate has no other use, the constants are scalars (any rank, one
element) equal to sqrt(2) (1/sqrt(2)), 1 and 0.5 within 1e-6 relative, and the types
agree. The result is the same function (onnxruntime's GeluFusion does the same).

Why: on the accelerator each VPU instruction is one pass over its elements
(`targets/*.toml` `units.VPU.elements_per_cycle`, the cost model of seed 000 para.
93-98); the written-out form makes five passes and four intermediate tensors where
the op makes one (BERT-style FFNs are VPU-bound once their weights are sparse).

    nnx-opt m.mlir -p 'graph-fuse-gelu'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)


def _scalar(v: SSAValue | None) -> float | None:
    """The value of a one-element float graph.constant, else None."""
    from nnx.dialects.graph import ConstantOp

    if v is None or not isinstance(v.owner, ConstantOp):
        return None
    a = np.asarray(v.owner.numpy_value())
    if a.size != 1 or a.dtype.kind != "f":
        return None
    return float(a.reshape(-1)[0])


def _near(a: float | None, b: float) -> bool:
    return a is not None and abs(a - b) <= 1e-6 * abs(b)


def _single_user(v: SSAValue, kind: str) -> Operation | None:
    """The only user of `v` when it is a graph op of ONNX type `kind` (and uses `v`
    once)."""
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


def _other(op: Operation, v: SSAValue) -> SSAValue | None:
    ins = op.onnx_inputs()  # type: ignore[attr-defined]
    return ins[1] if ins[0] is v else ins[0]


class FuseErfGelu(RewritePattern):
    """Match at `graph.erf` (see the module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        from nnx.dialects.graph import GeluOp, GraphOp

        if not isinstance(op, GraphOp) or op.ONNX_TYPE != "Erf" or op.after:
            return
        d = op.onnx_inputs()[0]
        scale = d.owner
        if not isinstance(scale, GraphOp) or len(list(d.uses)) != 1 or scale.after:
            return
        sin = scale.onnx_inputs()
        if scale.ONNX_TYPE == "Div" and _near(_scalar(sin[1]), math.sqrt(2.0)):
            x = sin[0]
        elif scale.ONNX_TYPE == "Mul" and _near(_scalar(sin[1]), math.sqrt(0.5)):
            x = sin[0]
        elif scale.ONNX_TYPE == "Mul" and _near(_scalar(sin[0]), math.sqrt(0.5)):
            x = sin[1]
        else:
            return
        ty = x.type
        e = op.onnx_outputs()[0]
        add = _single_user(e, "Add")
        if add is None or not _near(_scalar(_other(add, e)), 1.0):
            return
        a = add.onnx_outputs()[0]
        m1 = _single_user(a, "Mul")
        if m1 is None:
            return
        chain = [scale, op, add, m1]
        o1 = _other(m1, a)
        if o1 is x:
            # (x * a) * 0.5
            m2 = _single_user(m1.onnx_outputs()[0], "Mul")
            if m2 is None or not _near(_scalar(_other(m2, m1.onnx_outputs()[0])), 0.5):
                return
            chain.append(m2)
        elif _near(_scalar(o1), 0.5):
            # x * (a * 0.5)
            m2 = _single_user(m1.onnx_outputs()[0], "Mul")
            if m2 is None or _other(m2, m1.onnx_outputs()[0]) is not x:
                return
            chain.append(m2)
        else:
            # (x * 0.5) * a
            h = o1.owner if o1 is not None else None
            if not isinstance(h, GraphOp) or h.ONNX_TYPE != "Mul" or len(list(o1.uses)) != 1 or h.after:
                return
            hin = h.onnx_inputs()
            if not ((hin[0] is x and _near(_scalar(hin[1]), 0.5)) or (hin[1] is x and _near(_scalar(hin[0]), 0.5))):
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


@dataclass(frozen=True)
class GraphFuseGeluPass(ModulePass):
    """Fuse written-out exact GELU subgraphs into `graph.gelu` (module docstring)."""

    name = "graph-fuse-gelu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseErfGelu(), apply_recursively=False).rewrite_module(op)
