"""Conv -> depthwise Conv -> Conv chains (inverted-residual blocks) computed per group
of expanded channels, software-pipelined over double buffers."""

from __future__ import annotations

import math
from typing import Any

from nnx.graph_queries import constant_op, sole_user
from nnx.lowering.cache import Layout, Slot
from nnx.lowering.storage import _py, chip_dtype_name, Tensor
from nnx.sim.isa import Instr, Tile
from nnx.tiling import box_shape, full_box
from nnx.types import dtype_of_name
from nnx.lowering import compute, fusion, sparse_weights
from nnx.lowering.context import LoweringContext
from nnx.lowering.residency import box_acc
from nnx.lowering.storage import broadcast_box


def conv_parts(cx: LoweringContext, op):
    """(input, weight, bias, attrs, sparse info) of a graph or sparse Conv, else None."""
    from nnx.dialects import sparse as sd
    from nnx.dialects.graph import ConvOp

    if isinstance(op, sd.ConvOp):
        info = sparse_weights.conn_info(cx, op, op.conn, op.weight, False)
        if info.neuron_threshold is not None or info.weight_value is None:
            return None
        return op.input, op.weight, op.bias, {k: _py(v) for k, v in op.conv_params().items()}, info, op.output
    if isinstance(op, ConvOp):
        ins = op.onnx_inputs()
        outs = op.onnx_outputs()
        if len(outs) != 1 or len(ins) < 2:
            return None
        attrs = {k: _py(v) for k, v in op.onnx_attributes().items()}
        if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET"):
            return None
        return ins[0], ins[1], ins[2] if len(ins) > 2 else None, attrs, None, outs[0]
    return None


def try_group_chain(cx: LoweringContext, op) -> bool:
    """Conv A -> depthwise Conv B -> Conv C (each with its elementwise epilogue), as
    in MobileNetV2's inverted-residual blocks, whose expanded tensors are too large
    to stay resident: computed per group of g expanded channels without the
    intermediates ever leaving the chip: A[g] (all of A's input, g output channels)
    into the output cache, B[g] (depthwise: only those channels) into the neuron
    cache, and C accumulating the chunk g of its reduction (acc) into its output."""
    if not cx.chain:
        return False
    pa = conv_parts(cx, op)
    if pa is None or int(pa[3].get("group", 1)) != 1:
        return False
    undo: list = []

    def fail() -> bool:
        for e in undo:
            cx.fused.discard(e[0])
        return False

    def single_user(v):
        return None if v in cx.returned else sole_user(v)

    epa = fusion.epilogue_chain(cx, op, [pa[5]])
    undo += epa
    va = epa[-1][0].onnx_outputs()[0] if epa else pa[5]
    opb = single_user(va)
    pb = conv_parts(cx, opb) if opb is not None else None
    if pb is None or pb[0] is not va:
        return fail()
    ca = tuple(va.type.get_shape())
    wb = tuple(pb[1].type.get_shape())
    if len(ca) != 4 or int(pb[3].get("group", 1)) != ca[1] or wb[0] != ca[1] or wb[1] != 1:
        return fail()
    epb = fusion.epilogue_chain(cx, opb, [pb[5]])
    undo += epb
    vb = epb[-1][0].onnx_outputs()[0] if epb else pb[5]
    opc = single_user(vb)
    pc = conv_parts(cx, opc) if opc is not None else None
    if pc is None or pc[0] is not vb or int(pc[3].get("group", 1)) != 1:
        return fail()
    big = max(storage_bytes(cx, va), storage_bytes(cx, vb))
    if big <= cx.residency.caps["O"] - cx.residency.reserve("O"):
        return fail()  # resident chaining handles it
    for p in (pa, pb, pc):
        for v in p[:3]:
            if v is not None and chip_dtype_name(v.type) != "f32":
                return fail()
        if constant_op(p[1]) is None or (p[2] is not None and constant_op(p[2]) is None):
            return fail()
    epc = fusion.epilogue_chain(cx, opc, [pc[5]])
    undo += epc
    vc = epc[-1][0].onnx_outputs()[0] if epc else pc[5]
    if not emit_group_chain(cx, op, (pa, epa, va), (opb, pb, epb, vb), (opc, pc, epc, vc)):
        return fail()
    cx.fused.add(opb)
    cx.fused.add(opc)
    return True


def storage_bytes(cx: LoweringContext, v) -> int:
    return math.prod(v.type.get_shape()) * dtype_of_name(chip_dtype_name(v.type)).itemsize


def emit_group_chain(cx: LoweringContext, opa, A, B, C) -> bool:
    pa, epa, va = A
    opb, pb, epb, vb = B
    opc, pc, epc, vc = C
    S = cx.stream
    x = cx.residency.tensor(pa[0], opa)
    sa = tuple(va.type.get_shape())
    sb = tuple(vb.type.get_shape())
    ca = sa[1]
    out_s = cx.store.result_tensor(vc)
    protect = {cx.residency.rootof(pa[0])} | {cx.residency.rootof(e) for ch in (epa, epb, epc) for c in ch for e in c[2] if e is not None}
    resident = cx.residency.make_resident(vc, protect)
    out = cx.residency.tensor(vc)
    caps = cx.residency.work_caps()

    def wshape(p):
        return tuple(p[1].type.get_shape())

    def epi_inputs(chain, shape):
        res = []
        for e, (_, _, uins, pos, _) in enumerate(chain):
            for j, u in enumerate(uins):
                if u is None or j == pos:
                    continue
                res.append((e, j, cx.residency.tensor(u)))
        return res

    def layout_for(g: int, nb: int, spa: str, spb: str):
        lay = Layout()
        sl: dict[str, Slot] = {}
        if not x.resident:
            sl["x"] = lay.add(Slot("N", x.nbytes, 1))
        sl["ta"] = lay.add(Slot(spa, g * sa[0] * sa[2] * sa[3] * 4, nb))
        sl["tb"] = lay.add(Slot(spb, g * sb[0] * sb[2] * sb[3] * 4, nb))
        if not out.resident:
            sl["out"] = lay.add(Slot("O", out.nbytes, 1))
        for name, p, n in (("A", pa, g * math.prod(wshape(pa)[1:])), ("B", pb, g * math.prod(wshape(pb)[1:])),
                           ("C", pc, g * wshape(pc)[0] * math.prod(wshape(pc)[2:]))):
            if p[4] is not None:
                sl[name + "w"] = lay.add(Slot("W", n * 6, nb))  # values (+ stride index)
                sl[name + "wm"] = lay.add(Slot("W", n, nb))
                if p[4].density < 0.5:
                    sl[name + "wi"] = Slot("W", 1, 1)  # marker: the stride transport
            else:
                sl[name + "w"] = lay.add(Slot("W", n * 4, nb))
            if p[2] is not None:
                sl[name + "b"] = lay.add(Slot("W", (g if name != "C" else wshape(pc)[0]) * 4, nb if name != "C" else 1))
        for tag, chain, shape, n in (("a", epa, sa, g), ("b", epb, sb, g), ("c", epc, tuple(vc.type.get_shape()), None)):
            for e, j, t in epi_inputs(chain, shape):
                if t.resident:
                    continue
                if n is None:
                    box = full_box(t.shape)
                else:
                    box = broadcast_box(t.shape, ((0, shape[0], 1), (0, n, 1), (0, shape[2], 1), (0, shape[3], 1)))
                sp = "N" if tag == "c" else "W"
                sl[f"e{tag}{e}_{j}"] = lay.add(Slot(sp, math.prod(box_shape(box)) * t.itemsize, 1 if tag == "c" else nb))
        return sl, lay

    # the largest group that fits double-buffered (the stages then overlap), else
    # single-buffered
    choice = None
    for nb in (2, 1):
        g = ca
        while g >= 1 and choice is None:
            for spa, spb in (("O", "N"), ("N", "O"), ("N", "N"), ("O", "O")):
                sl, lay = layout_for(g, nb, spa, spb)
                if all(lay.top[s] <= caps[s] for s in lay.top):
                    choice = (g, nb, sl)
                    break
            g = g // 2 if g > 8 else g - 1
        if choice is not None:
            break
    if choice is None:
        cx.residency.drop_resident(vc)
        return False
    g, nb, sl = choice

    # A's input, whole, once
    if x.resident:
        xt = x.tile(full_box(x.shape))
        xacc = box_acc(x, full_box(x.shape), xt)
    else:
        buf = sl["x"].next()
        xt = Tile("N", buf, x.shape, x.dtype)
        S.emit(Instr(cx.stream.next_load_unit(), "LOAD", [xt], [x.tile(full_box(x.shape))]), [x.access()], [("N", buf, buf + xt.nbytes)])
        xacc = ("N", buf, buf + xt.nbytes)

    def weight(name, p, box, opx):
        """(tile, mask tile | None, reads) of the weight box of conv `p`."""
        w = cx.store.storage(p[1]) if p[4] is None else Tensor(-1 - len(cx.store.tensors), wshape(p), "f32", None)
        if p[4] is not None:
            slots = {"w": sl[name + "w"], "wm": sl[name + "wm"]}
            if name + "wi" in sl:
                slots["wi"] = sl[name + "wi"]
            t, m = sparse_weights.sparse_weight(cx, opx, slots, w, box, p[4])
            return t, m, [(t.space, t.offset, t.end), (m.space, m.offset, m.end)]
        buf = sl[name + "w"].next()
        wt = Tile("W", buf, box_shape(box), "f32")
        S.emit(Instr(cx.stream.next_load_unit(), "LOAD", [wt], [w.tile(box)]), [("S", w.key)], [("W", buf, wt.end)])
        return wt, None, [("W", buf, wt.end)]

    def bias(name, p, box):
        if p[2] is None:
            return None, []
        b = cx.store.storage(p[2])
        slot = sl[name + "b"]
        buf = slot.next()
        bt = Tile("W", buf, box_shape(box), "f32")
        S.emit(Instr(cx.stream.next_load_unit(), "LOAD", [bt], [b.tile(box)]), [("S", b.key)], [("W", buf, bt.end)])
        return bt, [("W", buf, bt.end)]

    def epilogue(tag, chain, ot, oacc, obox):
        vpu = cx.stream.next_unit("VPU")
        for e, (_, ekind, uins, pos, eattrs) in enumerate(chain):
            esrcs: list = []
            ereads = [oacc]
            for j, u in enumerate(uins):
                if j == pos:
                    esrcs.append(ot)
                    continue
                if u is None:
                    esrcs.append(None)
                    continue
                t = cx.residency.tensor(u)
                box = broadcast_box(t.shape, obox)
                if t.resident:
                    ct = t.tile(box)
                    ereads.append(box_acc(t, box, ct))
                else:
                    slot = sl[f"e{tag}{e}_{j}"]
                    ct, _ = compute.load_slot(cx, slot, t, box, (t.ident, t.shape, box))
                    ereads.append((ct.space, ct.offset, ct.end))
                esrcs.append(ct)
            while esrcs and esrcs[-1] is None:
                esrcs.pop()
            S.emit(Instr(vpu, ekind, [ot], esrcs, eattrs), ereads, [oacc])

    cc = wshape(pc)[0]
    sc = tuple(vc.type.get_shape())
    if out.resident:
        ot_c = out.tile(full_box(sc))
        oacc_c = box_acc(out, full_box(sc), ot_c)
    else:
        buf = sl["out"].next()
        ot_c = Tile("O", buf, sc, "f32")
        oacc_c = ("O", buf, ot_c.end)
    battrs = dict(pb[3])
    groups = [(c0, min(g, ca - c0)) for c0 in range(0, ca, g)]
    ta_t: dict[int, tuple] = {}
    tb_t: dict[int, tuple] = {}

    def stage_a(k: int) -> None:
        c0, n = groups[k]
        wa = wshape(pa)
        wt, wm, rd = weight("A", pa, ((c0, n, 1),) + tuple((0, d, 1) for d in wa[1:]), opa)
        bt, brd = bias("A", pa, ((c0, n, 1),))
        ta_buf = sl["ta"].next()
        ta = Tile(sl["ta"].space, ta_buf, (sa[0], n, sa[2], sa[3]), "f32")
        tacc = (ta.space, ta_buf, ta.end)
        srcs = [xt, wt] + ([bt] if bt is not None else [])
        S.emit(Instr(cx.stream.next_unit("MPU"), "Conv", [ta], srcs, dict(pa[3]), {"wmask": wm} if wm is not None else {}),
               [xacc] + rd + brd, [tacc])
        abox = ((0, sa[0], 1), (c0, n, 1), (0, sa[2], 1), (0, sa[3], 1))
        epilogue("a", epa, ta, tacc, abox)
        ta_t[k] = (ta, tacc)

    def stage_b(k: int) -> None:
        # depthwise on the same channels
        c0, n = groups[k]
        ta, tacc = ta_t.pop(k)
        wt, wm, rd = weight("B", pb, ((c0, n, 1),) + tuple((0, d, 1) for d in wshape(pb)[1:]), opb)
        bt, brd = bias("B", pb, ((c0, n, 1),))
        tb_buf = sl["tb"].next()
        tb = Tile(sl["tb"].space, tb_buf, (sb[0], n, sb[2], sb[3]), "f32")
        tbacc = (tb.space, tb_buf, tb.end)
        battrs["group"] = n
        srcs = [ta, wt] + ([bt] if bt is not None else [])
        S.emit(Instr(cx.stream.next_unit("MPU"), "Conv", [tb], srcs, dict(battrs), {"wmask": wm} if wm is not None else {}),
               [tacc] + rd + brd, [tbacc])
        bbox = ((0, sb[0], 1), (c0, n, 1), (0, sb[2], 1), (0, sb[3], 1))
        epilogue("b", epb, tb, tbacc, bbox)
        tb_t[k] = (tb, tbacc)

    def stage_c(k: int) -> None:
        # chunk k of C's reduction, accumulated in C's output
        c0, n = groups[k]
        tb, tbacc = tb_t.pop(k)
        wc = wshape(pc)
        wt, wm, rd = weight("C", pc, ((0, cc, 1), (c0, n, 1)) + tuple((0, d, 1) for d in wc[2:]), opc)
        srcs = [tb, wt]
        brd = []
        if k == 0 and pc[2] is not None:
            bt, brd = bias("C", pc, ((0, cc, 1),))
            srcs.append(bt)
        opts: dict[str, Any] = {"wmask": wm} if wm is not None else {}
        reads = [tbacc] + rd + brd
        if k > 0:
            opts["acc"] = True
            reads.append(oacc_c)
        S.emit(Instr(cx.stream.next_unit("MPU"), "Conv", [ot_c], srcs, dict(pc[3]), opts), reads, [oacc_c])

    # software pipeline (double buffers): step k issues A[k], B[k-1], C[k-2], so the
    # MPU computes A[k] while the VPU runs B[k-1]'s epilogue, and so on
    skew = 1 if nb == 2 else 0
    for k in range(len(groups) + 2 * skew):
        if k < len(groups):
            stage_a(k)
        if 0 <= k - skew < len(groups):
            stage_b(k - skew)
        if 0 <= k - 2 * skew < len(groups):
            stage_c(k - 2 * skew)
    epilogue("c", epc, ot_c, oacc_c, full_box(sc))
    if not out.resident:
        S.emit(Instr(cx.stream.next_unit("DAU"), "STORE", [out_s.tile(full_box(sc))], [ot_c]), [oacc_c], [("S", out_s.key)])
    elif vc in cx.residency.must_store:
        cx.residency.write_back(vc)
    return True
