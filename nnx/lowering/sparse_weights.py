"""Sparse ops (sparse.fc / sparse.matmul / sparse.conv): compacted surviving weights
with their connection data, the mapping unit's CONVERT/CONN, and the MPU masks
(docs/sparse-mapping.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue

from nnx.graph_queries import const_value
from nnx.lowering.errors import LoweringError
from nnx.lowering.storage import _py, Tensor
from nnx.sim.isa import Instr, Tile
from nnx.tiling import Box, box_shape, full_box
from nnx.lowering import compute, fusion, group_chain
from nnx.lowering.context import LoweringContext


@dataclass
class SparseInfo:
    """How a sparse compute op's weight (input 1) and neurons (input 0) are masked."""

    weight_mask: np.ndarray | None  # compile-time weight connection data (weight layout)
    weight_value: np.ndarray | None
    form: str  # "direct" | "stride"
    weight_threshold: float
    neuron_threshold: float | None

    def __post_init__(self) -> None:
        self._sat = None
        self._grid: dict = {}
        m = self.weight_mask
        self.density = 1.0 if m is None or m.size == 0 else float(np.count_nonzero(m)) / m.size

    def _table(self) -> np.ndarray:
        if self._sat is None:
            m = np.asarray(self.weight_mask)
            c = m.reshape(m.shape[0], m.shape[1], -1).sum(-1) if m.ndim >= 2 else m.reshape(1, -1)
            sat = np.zeros((c.shape[0] + 1, c.shape[1] + 1), np.int64)
            sat[1:, 1:] = c.cumsum(0).cumsum(1)
            self._sat = sat
        return self._sat

    def max_nnz(self, boxes: list[Box]) -> int:
        """Most surviving weights in any of `boxes` -- and in any box of the grid of the
        first box's size (planning sees sample tiles only)."""
        m = self.weight_mask
        assert m is not None
        if m.ndim < 2:
            return int(np.count_nonzero(m))
        sat = self._table()
        a0 = np.array([b[0][0] for b in boxes])
        a1 = a0 + np.array([b[0][1] for b in boxes])
        b0 = np.array([b[1][0] for b in boxes])
        b1 = b0 + np.array([b[1][1] for b in boxes])
        best = int((sat[a1, b1] - sat[a0, b1] - sat[a1, b0] + sat[a0, b0]).max())
        na, nb = boxes[0][0][1], boxes[0][1][1]
        g = self._grid.get((na, nb))
        if g is None:
            d0, d1 = sat.shape[0] - 1, sat.shape[1] - 1
            ga0 = np.arange(0, d0, na)
            gb0 = np.arange(0, d1, nb)
            ga1 = np.minimum(ga0 + na, d0)
            gb1 = np.minimum(gb0 + nb, d1)
            g = int((sat[np.ix_(ga1, gb1)] - sat[np.ix_(ga0, gb1)] - sat[np.ix_(ga1, gb0)] + sat[np.ix_(ga0, gb0)]).max())
            self._grid[(na, nb)] = g
        return max(best, g)


def runtime_mask(cx: LoweringContext, slots, wt: Tile, key, sp: SparseInfo, wacc) -> Tile:
    """The direct index of run-time weights already in a cache (chained)."""
    wm = slots["wm"]
    if wm.cur == key:
        return Tile("W", wm.current(), wt.shape, "ui8")
    mbuf = wm.next()
    mt = Tile("W", mbuf, wt.shape, "ui8")
    cx.stream.emit(
        Instr(cx.stream.next_unit("MAP"), "CONN", [mt], [wt], {"threshold": float(max(sp.weight_threshold, 0.0))}),
        [wacc], [("W", mbuf, mbuf + mt.nbytes)],
    )
    wm.cur = key
    return mt


def sparse_weight(cx: LoweringContext, op, slots, w: Tensor, box: Box, sp: SparseInfo) -> tuple[Tile, Tile]:
    """The weight tile of `box` in W and its direct-index mask: for constant weights the
    *compacted* surviving values (1-D) + the connection data, which is all the DMA moves
    and all the weight cache holds (docs/sparse-mapping.md, section 5); the MPU then
    computes on the surviving pairs only."""
    S = cx.stream
    key = (w.ident, box)
    ws, wm = slots["w"], slots["wm"]
    shape = box_shape(box)
    if ws.cur == key:
        return ws.cur_tile, Tile("W", wm.current(), shape, "ui8")
    sl = tuple(slice(s, s + n * st, st) for s, n, st in box)
    unit = cx.stream.next_load_unit()
    if sp.weight_value is None or sp.weight_mask is None:
        # weights computed at run time: load them and build the connection data
        buf = ws.next()
        wt = Tile("W", buf, shape, w.dtype)
        S.emit(Instr(unit, "LOAD", [wt], [w.tile(box)]), [("S", w.key)], [("W", buf, buf + wt.nbytes)])
        mbuf = wm.next()
        mt = Tile("W", mbuf, shape, "ui8")
        S.emit(
            Instr(cx.stream.next_unit("MAP"), "CONN", [mt], [wt], {"threshold": float(max(sp.weight_threshold, 0.0))}),
            [("W", buf, buf + wt.nbytes)], [("W", mbuf, mbuf + mt.nbytes)],
        )
        ws.cur = key
        ws.cur_tile = wt
        return wt, mt
    vals = np.ascontiguousarray(sp.weight_value[sl])
    mask = np.ascontiguousarray(sp.weight_mask[sl])
    packed = vals[mask]
    if packed.size == 0:
        packed = np.zeros(1, vals.dtype)
    mbuf = wm.next()
    mt = Tile("W", mbuf, shape, "ui8")
    L = mask.size
    pos = np.flatnonzero(mask.reshape(-1))
    stride = np.diff(pos, prepend=0)
    pbuf = ws.next()
    pt = Tile("W", pbuf, (packed.size,), w.dtype)
    if stride.size and "wi" in slots and stride.max() < 2**15 and 2 * stride.size < L:
        # the cheaper transport: the stride index (only the kept weights' distances)
        # travels and the mapping unit converts it to the direct index the MPU reads
        # (docs/sparse-mapping.md, section 5). Values and index are one constant, moved
        # by one DMA (one fixed transfer cost instead of two)
        idx = stride.astype(np.int16)
        blob = np.concatenate([packed.view(np.uint8).reshape(-1), idx.view(np.uint8).reshape(-1)])
        bc = cx.store.const_array(blob, "wpk")
        bt = Tile("W", pbuf, (blob.size,), "ui8")
        S.emit(Instr(unit, "LOAD", [bt], [bc.tile(full_box(bc.shape))]), [("S", bc.key)], [("W", pbuf, pbuf + blob.size)])
        it = Tile("W", pbuf + packed.nbytes, (stride.size,), "i16")
        flat_m = Tile("W", mbuf, (L,), "ui8")
        S.emit(Instr(cx.stream.next_unit("MAP"), "CONVERT", [flat_m], [it]), [("W", it.offset, it.end)],
               [("W", mbuf, mbuf + L)])
    else:
        pk = cx.store.const_array(packed, "wpk")
        S.emit(Instr(unit, "LOAD", [pt], [pk.tile(full_box(pk.shape))]), [("S", pk.key)], [("W", pbuf, pbuf + pt.nbytes)])
        mc = cx.store.const_array(mask.astype(np.uint8), "wconn")
        S.emit(Instr(unit, "LOAD", [mt], [mc.tile(full_box(mc.shape))]), [("S", mc.key)], [("W", mbuf, mbuf + mt.nbytes)])
    ws.cur = key
    ws.cur_tile = pt
    return pt, mt


def conn_info(cx: LoweringContext, op, conn: SSAValue, weight: SSAValue, layout_in_out: bool) -> SparseInfo:
    from nnx.dialects import sparse as sd

    wthr: float | None = None
    nthr: float | None = None
    form = "direct"
    stack = [conn]
    while stack:
        v = stack.pop()
        o = v.owner
        if isinstance(o, sd.ConnectOp):
            if o.result.type.order_name == "neuron":  # type: ignore[attr-defined]
                nthr = o.threshold_value
            else:
                wthr = o.threshold_value
                form = o.result.type.form_name  # type: ignore[attr-defined]
        elif isinstance(o, sd.ConvertOp):
            stack.append(o.input)
        elif isinstance(o, sd.CombineOp):
            stack += [o.lhs, o.rhs]
        else:
            raise LoweringError(f"{op.name}: connection data from {o.name if isinstance(o, Operation) else 'a block argument'} is not supported", op)
    if wthr is None:
        wthr = 0.0
    mask = None
    value = const_value(weight)
    if value is not None:
        mask = np.abs(value) > max(wthr, 0.0)
    return SparseInfo(mask, value, form, wthr, nthr)


def lower_sparse(cx: LoweringContext, op) -> None:
    from nnx.dialects import sparse as sd

    if isinstance(op, (sd.ConnectOp, sd.ConvertOp, sd.CombineOp)):
        for u in op.results[0].uses:
            if not isinstance(u.operation, (sd.FcOp, sd.MatMulOp, sd.ConvOp, sd.ConvertOp, sd.CombineOp)):
                raise LoweringError(f"connection data used by {u.operation.name} is not supported", op)
        return
    if isinstance(op, sd.FcOp):
        x = cx.residency.tensor(op.input, op)
        out_n, in_n = tuple(op.weight.type.get_shape())
        m = math.prod(x.shape[:-1])
        info = conn_info(cx, op, op.conn, op.weight, False)
        ins = [op.input, op.weight] + ([op.bias] if op.bias is not None else [])
        views = {0: (m, in_n)}
        if op.bias is not None:
            views[2] = (out_n,)
        epi = fusion.epilogue_chain(cx, op, [op.output]) if len(x.shape) == 2 else []
        out = epi[-1][0].onnx_outputs()[0] if epi else op.output
        compute.lower_compute(cx, op, "Gemm", ins, [out], {"transB": 1}, info, views, (m, out_n), epilogue=epi)
        return
    if isinstance(op, sd.MatMulOp):
        info = conn_info(cx, op, op.conn, op.weight, True)
        epi = fusion.epilogue_chain(cx, op, [op.output])
        bg = fusion.bias_gemm(cx, op.input, op.weight, epi)
        if bg is not None:
            gins, views, out_view, rest = bg
            last = rest[-1][0] if rest else epi[0][0]
            compute.lower_compute(cx, op, "Gemm", gins, [last.onnx_outputs()[0]], {}, info, views, out_view, epilogue=rest)
            return
        ai = fusion.acc_init(cx, op.input, op.weight, epi) if cx.schedule else None
        if ai is not None:
            mins, rest = ai
            last = rest[-1][0] if rest else epi[0][0]
            compute.lower_compute(cx, op, "MatMul", mins, [last.onnx_outputs()[0]], {}, info, epilogue=rest)
            return
        out = epi[-1][0].onnx_outputs()[0] if epi else op.output
        compute.lower_compute(cx, op, "MatMul", [op.input, op.weight], [out], {}, info, epilogue=epi)
        return
    if isinstance(op, sd.ConvOp):
        if group_chain.try_group_chain(cx, op):
            return
        info = conn_info(cx, op, op.conn, op.weight, False)
        if info.neuron_threshold is not None:
            raise LoweringError("sparse.conv with neuron connection data is not supported", op)
        attrs = {k: _py(v) for k, v in op.conv_params().items()}
        ins = [op.input, op.weight] + ([op.bias] if op.bias is not None else [])
        epi = fusion.epilogue_chain(cx, op, [op.output])
        out = epi[-1][0].onnx_outputs()[0] if epi else op.output
        compute.lower_compute(cx, op, "Conv", ins, [out], attrs, info, epilogue=epi)
        return
    raise LoweringError(f"cannot lower {op.name} (not a sparse compute op)", op)
