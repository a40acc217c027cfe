"""Matches around one op that change how it is lowered: elementwise epilogues applied in
the output cache, MatMul + bias as one Gemm, accumulator initialisation from an Add.
(Transpose views and the hoisting of Add operands are graph passes run before
chip-lower: passes/graph_transpose_views.py, passes/graph_hoist_addends.py.)"""

from __future__ import annotations

import math

from xdsl.ir import BlockArgument, SSAValue

from nnx.dialects.traits import Elementwise
from nnx.graph_queries import constant_op
from nnx.lowering.storage import _py, Tensor
from nnx.lowering.context import LoweringContext


def epilogue_chain(cx: LoweringContext, op, outs) -> list:
    """Elementwise ops applied to `op`'s single result in the output cache before
    it is stored (the intermediate never goes to storage): each is the only user of
    the previous result, keeps its shape and type, and its other inputs are
    constants or tensors already computed (read by broadcasting: a bias, the
    shortcut of a residual add). Lowered in op order (`cx.schedule` False: a mesh
    core's program, whose messages keep the order of its ops), an op reading an
    argument of the function (a received piece) is fused only where it directly
    follows: fused from further on, its read, and the RECV placed before it, would
    move ahead of the ops in between and their SENDs, which other cores may wait
    on while they hold what that RECV waits for (docs/mesh.md, "Compilation")."""
    from nnx.dialects.graph import GraphOp

    chain = []
    v = outs[0]
    prev = op
    while True:
        uses = list(v.uses)
        if len(uses) != 1:
            break
        user = uses[0].operation
        if not isinstance(user, GraphOp) or not user.has_trait(Elementwise):
            break
        if v in cx.returned:
            break
        uins = user.onnx_inputs()
        uouts = user.onnx_outputs()
        if len(uouts) != 1 or uouts[0].type != v.type:
            break
        if sum(1 for x in uins if x is v) != 1:
            break
        consts = []
        ok = True
        for j, x in enumerate(uins):
            if x is v or x is None:
                continue
            # constants, or tensors already in storage when `op` runs (e.g. the
            # shortcut of a residual add; not an in-place concat still to be copied into)
            if constant_op(x) is None and (x not in cx.store.tensors or x in cx.unfilled):
                ok = False
                break
            if not cx.schedule and isinstance(x, BlockArgument) and not _follows(prev, user):
                ok = False
                break
            xs = tuple(x.type.get_shape())
            vs = tuple(v.type.get_shape())
            if len(xs) > len(vs) or any(a != 1 and a != b for a, b in zip(xs[::-1], vs[::-1])):
                ok = False
                break
        if not ok:
            break
        pos = next(j for j, x in enumerate(uins) if x is v)
        attrs = {k: _py(a) for k, a in user.onnx_attributes().items()}
        chain.append((user, user.ONNX_TYPE, uins, pos, attrs))
        cx.fused.add(user)
        v = uouts[0]
        prev = user
    return chain


def _follows(a, b) -> bool:
    """Whether op `b` comes right after op `a` in their block, constants apart."""
    from nnx.dialects.graph import ConstantOp

    n = a.next_op
    while isinstance(n, ConstantOp):
        n = n.next_op
    return n is b


def epi_operand(cx: LoweringContext, user, j: int, x: SSAValue, op) -> Tensor:
    """Operand `j` of the epilogue op `user`, viewed like the output it is applied to."""
    t = cx.residency.tensor(x, op)
    vw = cx.epi_views.get((user, j))
    return t if vw is None else t.view(vw)


def bias_gemm(cx: LoweringContext, a: SSAValue, w: SSAValue, epi: list):
    """MatMul A[..., K] x W[K, N] followed by an Add of a constant bias along N (the
    Linear layers of exported transformers): the MPU computes it as Gemm(A as
    [M, K], W, bias) -- the bias initialises the accumulators, as Gemm's C and
    Conv's B already do (the MPU does the layer, the VPU only what the MPU cannot;
    docs/architecture.md, section 7.1), instead of a VPU Add pass over the result.
    Returns (ins, views, out_view, epilogue left) or None. Epilogue ops after the
    Add stay fused when their other operands can be read through the [M, N] view;
    the rest are lowered as ops of their own."""
    from nnx.dialects.graph import AddOp

    ws = tuple(w.type.get_shape())
    xs = tuple(a.type.get_shape())
    if len(ws) != 2 or len(xs) < 2 or not epi or not isinstance(epi[0][0], AddOp):
        return None
    if cx.store.storage(a).strides is not None:
        return None  # a Transpose view cannot be reshaped to [M, K]
    k, n = ws
    user, _, uins, pos, _ = epi[0]
    b = uins[1 - pos]
    if constant_op(b) is None or b.type.element_type != w.type.element_type:
        return None
    bs = tuple(b.type.get_shape())
    if not bs or bs[-1] != n or any(d != 1 for d in bs[:-1]):
        return None
    m = math.prod(xs[:-1])
    out_full = (*xs[:-1], n)
    keep = []
    for e in epi[1:]:
        eu, _, euins, epos, _ = e
        ok = True
        vws = {}
        for j, x in enumerate(euins):
            if x is None or j == epos:
                continue
            s2 = tuple(x.type.get_shape())
            if cx.store.storage(x).strides is not None:
                ok = False  # a Transpose view cannot be read through [M, N]
                break
            if len(s2) <= 1:
                continue
            if s2 == out_full:
                vws[(eu, j)] = (m, n)
            elif all(d == 1 for d in s2[:-1]):
                vws[(eu, j)] = (s2[-1],)
            else:
                ok = False
        if not ok:
            break
        cx.epi_views.update(vws)
        keep.append(e)
    for e in epi[1 + len(keep):]:
        cx.fused.discard(e[0])  # lowered on their own, after this op
    return [a, w, b], {0: (m, k), 2: (n,)}, (m, n), keep


def acc_init(cx: LoweringContext, a: SSAValue, b: SSAValue, epi: list):
    """MatMul followed by an Add of a tensor that broadcasts to its result (the
    attention mask added to the scores, a residual): the MPU starts the
    accumulators from it (MatMul's optional C, as Gemm's C), no VPU pass. Returns
    (ins, epilogue left) or None."""
    from nnx.dialects.graph import AddOp

    if not epi or not isinstance(epi[0][0], AddOp):
        return None
    user, _, uins, pos, _ = epi[0]
    c = uins[1 - pos]
    out = user.onnx_outputs()[0]
    if c is None or c.type.element_type != out.type.element_type:  # type: ignore[attr-defined]
        return None
    cs = tuple(c.type.get_shape())  # type: ignore[attr-defined]
    os_ = tuple(out.type.get_shape())  # type: ignore[attr-defined]
    if len(cs) > len(os_) or any(d != 1 and d != o for d, o in zip(cs[::-1], os_[::-1])):
        return None
    return [a, b, c], epi[1:]
