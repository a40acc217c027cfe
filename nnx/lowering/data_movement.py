"""Data movement without compute: Concat/Split/Slice as strided DMA copies, Gather along
axis 0 of a storage tensor as indirect DMA (GATHER)."""

from __future__ import annotations

import math

from nnx.graph_queries import const_value
from nnx.lowering.cache import Layout, Slot
from nnx.lowering.storage import _align, Tensor
from nnx.sim.isa import Instr, Tile
from nnx.tiling import box_shape, CopyRule, full_box, plan
from nnx.types import dtype_of_name
from nnx.lowering import compute, plan_memo
from nnx.lowering.context import LoweringContext
from nnx.lowering.residency import box_acc


def copy(cx: LoweringContext, src: Tensor, dst: Tensor, shape, src_off, src_step, dst_off) -> None:
    if src.resident:
        # chained source: one (strided) STORE straight from the cache
        sbox = tuple((o, n, st) for o, n, st in zip(src_off, shape, src_step))
        dbox = tuple((o, n, 1) for o, n in zip(dst_off, shape))
        ct = src.tile(sbox)
        cx.stream.emit(
            Instr(cx.stream.next_unit("DAU"), "STORE", [dst.tile(dbox)], [ct]),
            [box_acc(src, sbox, ct)], [("S", dst.key)],
        )
        return
    rule = CopyRule(shape, src_off, src_step, dst_off)
    isz = dtype_of_name(src.dtype).itemsize
    nb = 2 if cx.double_buffer else 1

    def need(steps):
        m = max(math.prod(box_shape(s.inputs[0])) for s in steps) * isz
        return {"N": nb * _align(m)}

    cap, soft = cx.residency.work_caps()["N"], compute.soft(cx)
    key = copy_key(shape, src_off, src_step, dst_off, isz, nb, cap, soft)
    steps = plan_memo.lookup(key)
    if steps is None:
        steps = plan(rule, need, {"N": cap}, soft)
        plan_memo.store(key, steps)
    size = max(math.prod(box_shape(s.inputs[0])) for s in steps) * isz
    slot = Layout().add(Slot("N", size, min(nb, len(steps))))
    for st in steps:
        sbox, dbox = st.inputs[0], st.outputs[0]
        buf = slot.next()
        ct = Tile("N", buf, box_shape(sbox), src.dtype)
        cx.stream.emit(
            Instr(cx.stream.next_load_unit(), "LOAD", [ct], [src.tile(sbox)]),
            [("S", src.key)], [("N", buf, buf + ct.nbytes)],
        )
        cx.stream.emit(
            Instr(cx.stream.next_unit("DAU"), "STORE", [dst.tile(dbox)], [ct]),
            [("N", buf, buf + ct.nbytes)], [("S", dst.key)],
        )


def copy_key(shape, src_off, src_step, dst_off, *rest) -> tuple | None:
    """The plan memo's key of a copy's tiling (nnx/lowering/plan_memo.py; None: the
    memo is off): the copy's boxes, the element size, the buffering depth, the free
    neuron-cache bytes and the split size (all the plan depends on)."""
    if not plan_memo.enabled():
        return None
    return ("copy", *(tuple(int(x) for x in v) for v in (shape, src_off, src_step, dst_off)), *rest)


def lower_concat(cx: LoweringContext, op, ins, outs, attrs, placed: frozenset | None = None) -> None:
    """Copy each operand into the result; with `placed` (an in-place concat,
    lowering.in_place_concats: the result's storage is set beforehand) all but
    those, which are already in its buffer."""
    out = cx.store.result_tensor(outs[0]) if placed is None else cx.store.tensors[outs[0]]
    placed = placed or frozenset()
    r = len(out.shape)
    ax = int(attrs.get("axis", 0))
    ax = ax + r if ax < 0 else ax
    pos = 0
    for v in ins:
        shape = tuple(v.type.get_shape())
        if v not in placed and math.prod(shape) > 0:
            copy(cx, cx.residency.tensor(v, op), out, shape, [0] * r, [1] * r, [pos if a == ax else 0 for a in range(r)])
        pos += shape[ax]


def lower_split(cx: LoweringContext, op, ins, outs, attrs) -> None:
    src = cx.residency.tensor(ins[0], op)
    r = len(src.shape)
    ax = int(attrs.get("axis", 0))
    ax = ax + r if ax < 0 else ax
    pos = 0
    for v in outs:
        dst = cx.store.result_tensor(v)
        copy(cx, src, dst, dst.shape, [pos if a == ax else 0 for a in range(r)], [1] * r, [0] * r)
        pos += dst.shape[ax]


def lower_slice(cx: LoweringContext, op, ins, outs, attrs) -> bool:
    src = cx.residency.tensor(ins[0], op)
    r = len(src.shape)
    vals = []
    for v in ins[1:]:
        if v is None:
            vals.append(None)
            continue
        c = const_value(v)
        if c is None:
            return False
        vals.append([int(x) for x in c.reshape(-1)])
    while len(vals) < 4:
        vals.append(None)
    starts, ends, axes, steps = vals
    if starts is None or ends is None:
        return False
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    off, stp = [0] * r, [1] * r
    for s, a, st in zip(starts, axes, steps):
        a = a + r if a < 0 else a
        if st <= 0:
            return False
        d = src.shape[a]
        s = s + d if s < 0 else s
        off[a] = min(max(s, 0), d)
        stp[a] = st
    out = cx.store.result_tensor(outs[0])
    if math.prod(out.shape) > 0:
        copy(cx, src, out, out.shape, off, stp, [0] * r)
    return True


def lower_gather(cx: LoweringContext, op, ins, outs, attrs) -> bool:
    """Gather along axis 0 of a tensor in storage (an embedding table): indirect DMA
    (`GATHER`) of only the rows the indices name, instead of loading the whole
    table for a VPU Gather. Chunks of indices: LOAD the index chunk into the neuron
    cache unless it is resident, GATHER its rows into the output (its resident
    buffer, or an output-cache slot that is STOREd). False: not this form (the VPU
    path handles it)."""
    data = cx.residency.tensor(ins[0], op)
    if data.resident or not data.shape:
        return False
    r = len(data.shape)
    ax = int(attrs.get("axis", 0))
    if (ax + r if ax < 0 else ax) != 0:
        return False
    idx = cx.residency.tensor(ins[1], op)
    if idx.dtype not in ("i32", "i64") or idx.strides is not None:
        return False
    n = math.prod(idx.shape)
    row = math.prod(data.shape[1:])
    isz = data.itemsize
    if n == 0 or row == 0:
        return False
    t = cx.target
    if t.gather_cycles(n, row * isz) > t.dma_cycles(data.nbytes) + t.vpu_cycles(n * row + n + math.prod(data.shape)):
        return False  # a small table (token types): one LOAD + a VPU Gather is cheaper
    caps = cx.residency.work_caps()
    nb = 2 if cx.double_buffer else 1
    cx.store.result_tensor(outs[0])
    resident = cx.residency.make_resident(outs[0], {cx.residency.rootof(ins[0]), cx.residency.rootof(ins[1])})
    caps = cx.residency.work_caps()
    per_o = 0 if resident else row * isz
    per_n = 0 if idx.resident else idx.itemsize
    # rows per chunk: the double-buffered slots fit, and chunks stay around the
    # soft tile size so that the DMA of chunk t+1 overlaps the consumers of chunk t
    c = n
    soft = compute.soft(cx)
    if soft > 0:
        c = min(c, max(1, soft // row))
    while c > 1 and (nb * _align(c * per_o) > caps["O"] or nb * _align(c * per_n) > caps["N"]):
        c = (c + 1) // 2
    if nb * _align(max(c * per_o, 1)) > caps["O"] or nb * _align(max(c * per_n, 1)) > caps["N"]:
        cx.residency.drop_resident(outs[0])
        return False
    out = cx.residency.tensor(outs[0])
    iv = idx.view((n,))
    ov = out.view((n, *data.shape[1:]))
    dv = data
    lay = Layout()
    oslot = lay.add(Slot("O", c * per_o, nb)) if not resident else None
    islot = lay.add(Slot("N", c * per_n, nb)) if not idx.resident else None
    table = dv.tile(full_box(dv.shape))
    for s0 in range(0, n, c):
        k = min(c, n - s0)
        ibox = ((s0, k, 1),)
        if idx.resident:
            it = iv.tile(ibox)
            racc = box_acc(iv, ibox, it)
        else:
            it, _ = compute.load_slot(cx, islot, iv, ibox, (iv.ident, iv.shape, ibox))
            racc = (it.space, it.offset, it.end)
        obox = ((s0, k, 1),) + tuple((0, d, 1) for d in data.shape[1:])
        if resident:
            ot = ov.tile(obox)
            wacc = box_acc(ov, obox, ot)
        else:
            buf = oslot.next()
            ot = Tile("O", buf, (k, *data.shape[1:]), data.dtype)
            wacc = ("O", buf, ot.end)
        cx.stream.emit(Instr(cx.stream.next_unit("DAU"), "GATHER", [ot], [table, it]), [("S", data.key), racc], [wacc])
        if not resident:
            cx.stream.emit(
                Instr(cx.stream.next_unit("DAU"), "STORE", [ov.tile(obox)], [ot]),
                [wacc], [("S", out.key)],
            )
    if outs[0] in cx.residency.res and outs[0] in cx.residency.must_store:
        cx.residency.write_back(outs[0])
    return True
