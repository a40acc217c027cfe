"""Compute ops as tiles that fit the caches: slots (double-buffered operand buffers),
the tile plan (nnx/tiling/ rules, the MPU cost model), and the emission of each
tile's LOAD -> MPU/VPU -> STORE with epilogues."""

from __future__ import annotations

import math
from typing import Any, TYPE_CHECKING

import numpy as np

from nnx.lowering.cache import Layout, MAX_DEPTH, ROTATE, Slot
from nnx.dialects.traits import MatrixCompute
from nnx.graph_queries import const_value
from nnx.lowering.storage import _align, _py, ALIGN, chip_dtype_name, Tensor
from nnx.sim.isa import Instr, Tile
from nnx.tiling import Box, box_shape, Cost, CostPlan, enumerate_steps, full_box, plan, plan_cost, rule_for, Step, TilingError
from nnx.types import dtype_of_name
from nnx.lowering import fusion, plan_memo, sparse_weights
from nnx.lowering.context import LoweringContext
from nnx.lowering.residency import box_acc
from nnx.lowering.storage import broadcast_box

if TYPE_CHECKING:
    from nnx.lowering.sparse_weights import SparseInfo


PLAN_UNITS = 2  # compute units the MPU tiling is planned for (see plan_mpu)


def soft(cx: LoweringContext, vector_op: bool = False) -> int:
    """Output elements above which a tile is split although it fits. Default: half
    the target's `tiling.vpu_elements` for a VPU compute op (`vector_op`) when the
    program is list-scheduled (small vector tiles let the VPU work on one tile while
    the MPU computes the next, and two tiles of consecutive ops are in flight;
    measured best of 1, 1/2, 1/4, 1/8 on BERT-style models), 4x it otherwise."""
    if cx.max_tile < 0:
        return 0
    if cx.max_tile == 0:
        if cx.schedule and vector_op:
            return max(1, cx.target.tiling.vpu_elements // 2)
        return 4 * cx.target.tiling.vpu_elements
    return cx.max_tile


def lower_compute(cx: LoweringContext, op, kind, ins, outs, attrs, sparse: SparseInfo | None = None,
                  views: dict[int, tuple[int, ...]] | None = None, out_view=None, epilogue=()) -> None:
    views = views or {}
    for o in outs:
        cx.store.result_tensor(o)
    protect = {cx.residency.rootof(v) for v in ins if v is not None}
    for e in epilogue:
        protect |= {cx.residency.rootof(x) for x in e[2] if x is not None}
    resident_out = len(outs) == 1 and cx.residency.make_resident(outs[0], protect)
    # attempts: chained output; per-op output; evict the residents this op does not
    # read; evict every resident (the per-op STORE/LOAD path)
    attempts = ["out", "keep", "others", "all"] if resident_out else ["keep", "others", "all"]
    for ai, attempt in enumerate(attempts):
        if attempt != "out":
            cx.residency.drop_resident(outs[0])
        if attempt == "others":
            for r in [r for r in cx.residency.res if r not in protect]:
                cx.residency.evict(r)
        elif attempt == "all":
            for r in list(cx.residency.res):
                cx.residency.evict(r)
        try:
            _lower_compute(cx, op, kind, ins, outs, attrs, sparse, views, out_view, epilogue)
            if outs[0] in cx.residency.res and outs[0] in cx.residency.must_store:
                cx.residency.write_back(outs[0])
            return
        except TilingError:
            if ai == len(attempts) - 1:
                raise


def _lower_compute(cx: LoweringContext, op, kind, ins, outs, attrs, sparse, views, out_view, epilogue) -> None:
    caps = cx.residency.work_caps()
    srcs: list[Tensor | None] = []
    for j, v in enumerate(ins):
        if v is None:
            srcs.append(None)
            continue
        if sparse is not None and j == 1 and sparse.weight_value is not None and v not in cx.store.tensors:
            # compacted per tile (sparse_weight): the dense weights never reach storage
            ty = v.type
            t = Tensor(-1 - len(cx.store.tensors), tuple(ty.get_shape()), chip_dtype_name(ty), None)  # type: ignore[attr-defined]
            srcs.append(t)
            continue
        t = cx.residency.tensor(v, op)
        if j in views:
            t = t.view(views[j])
        srcs.append(t)
    dsts = [cx.residency.tensor(o) for o in outs]
    if out_view is not None:
        dsts[0] = dsts[0].view(out_view)
    const_inputs = {}
    for j, v in enumerate(ins):
        c = const_value(v)
        if c is not None:
            const_inputs[j] = c
    rule = rule_for(kind, [None if s is None else s.shape for s in srcs], [d.shape for d in dsts], attrs, const_inputs)
    mpu = op.has_trait(MatrixCompute)  # computed by the matrix unit (else the vector unit)
    unit = cx.stream.mpu if mpu else cx.stream.vpu
    nb = 2 if cx.double_buffer else 1
    isz = [0 if s is None else dtype_of_name(s.dtype).itemsize for s in srcs]
    osz = [dtype_of_name(d.dtype).itemsize for d in dsts]
    space = ["N" if j == 0 else "W" for j in range(len(srcs))]

    def slot_bytes(steps: list[Step]):
        """bytes per slot name -> (space, max bytes, varies)"""
        res: dict[str, tuple[str, int, bool]] = {}
        for j, s in enumerate(srcs):
            if s is None:
                continue
            boxes = [st.inputs[j] for st in steps if st.inputs[j] is not None]
            if not boxes:
                continue
            n = max(math.prod(box_shape(b)) for b in boxes)
            varies = any(b != boxes[0] for b in boxes)
            if s.resident:
                # chained operand: no slot; only the connection data it gets
                if sparse is not None and j == 1:
                    res["wm"] = ("W", n, varies)
                if sparse is not None and j == 0 and sparse.neuron_threshold is not None:
                    res["nm"] = ("N", n, varies)
                continue
            if sparse is not None and j == 1:
                if sparse.weight_mask is None:
                    # weights computed at run time: dense tile + its mask
                    res["w"] = ("W", n * isz[j], varies)
                    res["wm"] = ("W", n, varies)
                    continue
                # compacted values + connection data (direct mask; stride index
                # in transit when it is the cheaper transport)
                nnz = max(1, sparse.max_nnz(boxes))
                res["w"] = ("W", nnz * isz[j], varies)
                if sparse.density < 0.5:
                    # the stride index travels behind the values (same buffer)
                    res["w"] = ("W", nnz * (isz[j] + 2), varies)
                    res["wi"] = ("W", 1, False)
                res["wm"] = ("W", n, varies)
                continue
            res[f"i{j}"] = (space[j], n * isz[j], varies)
            if sparse is not None and j == 0 and sparse.neuron_threshold is not None:
                res["nm"] = ("N", n, varies)
        for j, d in enumerate(dsts):
            if d.resident:
                continue
            boxes = [st.outputs[j] for st in steps]
            n = max(math.prod(box_shape(b)) for b in boxes)
            res[f"o{j}"] = ("O", n * osz[j], len(steps) > 1)
        for e, (user, _, uins, pos, _) in enumerate(epilogue):
            for j, x in enumerate(uins):
                if x is None or j == pos:
                    continue
                t = fusion.epi_operand(cx, user, j, x, op)
                if t.resident:
                    continue
                boxes = [broadcast_box(t.shape, st.outputs[0]) for st in steps]
                n = max(math.prod(box_shape(b)) for b in boxes)
                res[f"e{e}_{j}"] = ("W", n * t.itemsize, any(b != boxes[0] for b in boxes))
        return res

    def need(steps: list[Step]) -> dict[str, int]:
        tot = {"N": 0, "W": 0, "O": 0}
        for sp, n, varies in slot_bytes(steps).values():
            tot[sp] += (nb if varies else 1) * _align(max(n, 1))
        return tot

    steps = None
    if mpu and cx.max_tile == 0 and (rule.axes or rule.k_extent):
        key = None
        if sparse is None and plan_memo.enabled():
            epi = [(e, j, t.shape, t.itemsize, t.resident, t.strides)
                   for e, (user, _, uins, pos, _) in enumerate(epilogue)
                   for j, x in enumerate(uins) if x is not None and j != pos
                   for t in (fusion.epi_operand(cx, user, j, x, op),)]
            key = plan_memo.plan_key(rule, srcs, dsts, epi, nb, cx.schedule, cx.target)
        steps = plan_mpu(cx, rule, srcs, dsts, sparse, need, caps, key)
    if steps is None and not mpu:
        steps = follow_tiles(cx, rule, ins, srcs, dsts, need, caps)
    if steps is None:
        try:
            steps = plan(rule, need, caps, soft(cx, vector_op=not mpu))
        except TilingError:
            if nb == 1:
                raise
            nb = 1  # single buffering: no DMA/compute overlap, but smaller tiles fit
            steps = plan(rule, need, caps, soft(cx, vector_op=not mpu))
    if len(dsts) == 1 and dsts[0].resident and steps and steps[0].outputs:
        cx.residency.tile_shape[cx.residency.rootof(outs[0])] = box_shape(steps[0].outputs[0])
    sizes = slot_bytes(steps)
    trial = Layout()
    for sp, n, varies in sizes.values():
        trial.add(Slot(sp, n, nb if varies else 1))
    base = None
    nreg = min([ROTATE] + [caps[s] // max(trial.top[s], 1) for s in trial.top])
    if cx.chain and nreg >= 2:
        # consecutive ops rotate over `nreg` parts of the free working region, so
        # the DMA (and connection-data conversion) of the next ops' operands
        # overlaps this op's compute
        base = {s: (caps[s] // nreg // ALIGN * ALIGN) * (cx.rotation % nreg) for s in trial.top}
        cx.rotation += 1
    depth = {name: (nb if varies else 1) for name, (sp, n, varies) in sizes.items()}
    if cx.schedule and nb == 2:
        # deeper weight buffering: the weight-cache slots that change per tile get
        # as many buffers as this op's part of the weight cache holds (up to one
        # per tile, at most MAX_DEPTH), so the list scheduler can run the DMA and
        # the CONVERTs of many tiles ahead while the compute units are busy
        region = caps["W"] // nreg // ALIGN * ALIGN if base is not None else caps["W"]
        wv = [k for k, (sp, n, varies) in sizes.items() if sp == "W" and varies]
        if wv:
            fixed = sum(depth[k] * _align(max(n, 1)) for k, (sp, n, _) in sizes.items() if sp == "W" and k not in wv)
            per = sum(_align(max(sizes[k][1], 1)) for k in wv)
            d = min(len(steps), MAX_DEPTH, (region - fixed) // per)
            if d > nb:
                for k in wv:
                    depth[k] = d
    layout = Layout(base)
    slots = {name: layout.add(Slot(sp, n, depth[name])) for name, (sp, n, varies) in sizes.items()}
    emit_steps(cx, op, kind, unit, srcs, dsts, steps, slots, sparse, epilogue)


def follow_tiles(cx: LoweringContext, rule, ins, srcs, dsts, need, caps):
    """Scheduled programs: a VPU op whose result has the shape of a resident operand
    is tiled like that operand's producer (`tile_shape`), so its tile t waits only
    for the producer's tile t and chains of ops pipeline tile by tile (one head's
    softmax while the MPU computes the next head's scores). None: no such operand,
    or those tiles do not fit."""
    if not cx.schedule or cx.max_tile != 0 or len(dsts) != 1 or not rule.axes:
        return None
    out = tuple(dsts[0].shape)
    for j, v in enumerate(ins):
        if v is None or j >= len(srcs) or srcs[j] is None or not srcs[j].resident:
            continue
        ts = cx.residency.tile_shape.get(cx.residency.rootof(v))
        if ts is None or tuple(srcs[j].shape) != out or len(ts) != len(out):
            continue
        sizes = {a: max(1, min(ts[a], out[a])) for a in rule.axes}
        if all(sizes[a] == out[a] for a in rule.axes):
            return None  # one tile: nothing to follow
        try:
            steps = enumerate_steps(rule, sizes, rule.k_extent or 0)
        except (TilingError, ValueError):
            return None
        n = need(steps)
        if all(n.get(sp, 0) <= caps[sp] for sp in caps):
            return steps
        return None
    return None


def plan_mpu(cx: LoweringContext, rule, srcs, dsts, sparse, need, caps, memo_key=None):
    """Cost-based tiling of an MPU op (nnx.tiling.plan_cost): the loop order and
    tile sizes with the fewest DMA cycles and the best DMA/compute overlap.
    `memo_key` (`plan_memo.plan_key`, None: no memo): the op's candidate tilings
    (`CostPlan`, for any free cache bytes) are kept in the plan memo."""
    t = cx.target
    isz = [0 if s is None else dtype_of_name(s.dtype).itemsize for s in srcs]
    osz = [dtype_of_name(d.dtype).itemsize for d in dsts]
    dens = 1.0
    if sparse is not None and sparse.weight_mask is not None:
        dens = sparse.density

    def in_bytes(j, box):
        if j >= len(srcs) or srcs[j] is None or srcs[j].resident:
            return 0
        n = math.prod(box_shape(box))
        if j == 1 and dens < 1.0:
            return n * (dens * isz[j] + min(1.0, 2 * dens))
        return n * isz[j]

    def out_bytes(j, box):
        if dsts[j].resident:
            return 0
        return math.prod(box_shape(box)) * osz[j]

    w = srcs[1].shape if len(srcs) > 1 and srcs[1] is not None else (1,)
    red = math.prod(w[1:]) if rule.kind == "Conv" else (rule.k_extent or 1)
    macs = math.prod(dsts[0].shape) * red * dens
    # the target's cost formulas (Target.dma_cost/mpu_cost/map_cost, those of
    # Target.instr_cycles), unrounded: averages over tiles not yet emitted
    dma, mpu, mapping = t.dma_cost(), t.mpu_cost(), t.map_cost()
    # planned for PLAN_UNITS compute units and one DMA queue whatever the target
    # declares: the tiles (hence the order of every accumulation) do not depend on
    # the unit counts, so targets that differ only in them give bit-identical
    # results; the output tiles are then spread over the units the target has
    map_cycles = None
    wfull = math.prod(srcs[1].shape) if len(srcs) > 1 and srcs[1] is not None else 0
    if dens < 0.5 and wfull * (1 + dens * (isz[1] + 2)) > caps["W"] // 2:
        # the stride index of each weight tile is converted by the mapping unit;
        # when the whole weight is too big for the next op's weights to be
        # prefetched beside it (see the rotation in _lower_compute), the DMA ->
        # CONVERT -> MPU pipeline is inside the op: tiles overlap those stages
        def map_cycles(j, box):
            if j != 1:
                return 0.0
            return mapping.estimate(math.prod(box_shape(box)))

    cost = Cost(in_bytes, out_bytes, dma.fixed, float(dma.per_cycle), float(mpu.fixed),
                mpu.rate_cycles(macs), 1, PLAN_UNITS, map_cycles)
    axes = list(rule.axes)
    orders = [axes] + [[b for b in axes if b != a] + [a] for a in axes[:-1]]
    # the target's preferred MPU tile bounds the output-channel (N) and row (M)
    # tiles from below: fewer, larger MPU instructions
    r = len(rule.out_shape)
    if rule.kind == "Conv":
        amin = {1: t.tiling.mpu_n}
    elif rule.kind == "Gemm":
        amin = {0: t.tiling.mpu_m, 1: t.tiling.mpu_n}
    else:
        amin = {r - 2: t.tiling.mpu_m, r - 1: t.tiling.mpu_n}
        if cx.schedule and math.prod(rule.out_shape[:-2]) > 1:
            # batched MatMul (attention heads): whole matrices per tile, so the
            # tiles split along the batch dims as the VPU ops' tiles do and the
            # softmax of one head overlaps the matmuls of the next
            amin[r - 2] = rule.out_shape[r - 2]
            amin[r - 1] = rule.out_shape[r - 1]
    first = plan_memo.lookup(memo_key)
    if first is None:
        first = CostPlan(rule, cost, orders, kmin=max(1, t.tiling.mpu_k), amin=amin)
        known = -1
    else:
        known = len(first.evals) + len(first.chosen)
    steps = first.choose(rule, need, caps, cost)  # plan_cost(..., kmin=, amin=)
    if len(first.evals) + len(first.chosen) != known:
        plan_memo.store(memo_key, first)  # new, or new candidates evaluated
    if steps is None:
        steps = plan_cost(rule, need, caps, cost, orders)
    return steps


def load_slot(cx: LoweringContext, slot: Slot, src: Tensor, box: Box, key) -> tuple[Tile, bool]:
    """The cache tile of `box` of `src` in `slot`, loading it unless already there."""
    shape = box_shape(box)
    if slot.cur == key:
        return Tile(slot.space, slot.current(), shape, src.dtype), False
    buf = slot.next()
    ct = Tile(slot.space, buf, shape, src.dtype)
    cx.stream.emit(
        Instr(cx.stream.next_load_unit(), "LOAD", [ct], [src.tile(box)]),
        [("S", src.key)], [(slot.space, buf, buf + ct.nbytes)],
    )
    slot.cur = key
    return ct, True


def emit_steps(cx: LoweringContext, op, kind, unit, srcs, dsts, steps, slots, sparse, epilogue=()) -> None:
    pending: list[tuple[Instr, list, list]] = []
    S = cx.stream
    utype = unit[:3]
    for st in steps:
        if not st.acc:
            # output tiles go round-robin over the unit instances (accumulation
            # chunks of one output tile stay on its unit)
            unit = cx.stream.next_unit(utype)
        tiles: list[Tile | None] = []
        reads: list[tuple] = []
        opts: dict[str, Any] = {}
        for j, s in enumerate(srcs):
            box = st.inputs[j] if j < len(st.inputs) else None
            if s is None or box is None or j in st.drop:
                tiles.append(None)
                continue
            if j in st.consts:
                src = cx.store.const_array(np.asarray(st.consts[j]).astype(dtype_of_name(s.dtype)), "p")
                box = full_box(src.shape)
                key = ("c", src.ident)
            else:
                src = s
                key = (s.ident, s.shape, box)
            if s.resident:
                # chained: the operand is read where its producer left it
                ct = s.tile(box)
                tiles.append(ct)
                reads.append(box_acc(s, box, ct))
                if sparse is not None and j == 1:
                    m = sparse_weights.runtime_mask(cx, slots, ct, key, sparse, box_acc(s, box, ct))
                    opts["wmask"] = m
                    reads.append(("W", m.offset, m.end))
                    continue
                fresh = True
            elif sparse is not None and j == 1:
                t, m = sparse_weights.sparse_weight(cx, op, slots, s, box, sparse)
                tiles.append(t)
                reads.append(("W", t.offset, t.offset + t.nbytes))
                reads.append(("W", m.offset, m.offset + m.nbytes))
                opts["wmask"] = m
                continue
            else:
                ct, fresh = load_slot(cx, slots[f"i{j}"], src, box, key)
                tiles.append(ct)
                reads.append((ct.space, ct.offset, ct.offset + ct.nbytes))
            if sparse is not None and j == 0 and sparse.neuron_threshold is not None:
                ns = slots["nm"]
                if fresh or ns.cur != key:
                    buf = ns.next()
                    mt = Tile("N", buf, ct.shape, "i1")
                    S.emit(
                        Instr(cx.stream.next_unit("MAP"), "CONN", [mt], [ct], {"threshold": float(sparse.neuron_threshold)}),
                        [reads[-1]], [("N", buf, buf + mt.nbytes)],
                    )
                    ns.cur = key
                mt = Tile("N", ns.current(), ct.shape, "i1")
                opts["nmask"] = mt
                reads.append(("N", mt.offset, mt.offset + mt.nbytes))
        # the previous output tile's store goes after this tile's loads (pipelining)
        for ins, r, w in pending:
            S.emit(ins, r, w)
        pending = []
        otiles = []
        writes = []
        for j, d in enumerate(dsts):
            if d.resident:
                # chained: computed in place into the resident buffer
                ot = d.tile(st.outputs[j])
                writes.append(box_acc(d, st.outputs[j], ot))
            else:
                sl = slots[f"o{j}"]
                if not st.acc:
                    sl.next()
                ot = Tile("O", sl.current(), box_shape(st.outputs[j]), d.dtype)
                writes.append((ot.space, ot.offset, ot.end))
            otiles.append(ot)
        if st.acc:
            opts["acc"] = True
            reads += writes
        while tiles and tiles[-1] is None:
            tiles.pop()
        S.emit(Instr(unit, kind, otiles, tiles, {k: _py(v) for k, v in st.attrs.items()}, opts), reads, writes)
        if st.last:
            ot = otiles[0]
            orange = writes[0]
            evpu = unit if utype == "VPU" else cx.stream.next_unit("VPU")
            for e, (user, ekind, uins, pos, eattrs) in enumerate(epilogue):
                esrcs: list[Tile | None] = []
                ereads = [orange]
                for j, x in enumerate(uins):
                    if j == pos:
                        esrcs.append(ot)
                        continue
                    if x is None:
                        esrcs.append(None)
                        continue
                    t = fusion.epi_operand(cx, user, j, x, op)
                    box = broadcast_box(t.shape, st.outputs[0])
                    if t.resident:
                        ct = t.tile(box)
                        ereads.append(box_acc(t, box, ct))
                    else:
                        ct, _ = load_slot(cx, slots[f"e{e}_{j}"], t, box, (t.ident, t.shape, box))
                        ereads.append((ct.space, ct.offset, ct.end))
                    esrcs.append(ct)
                while esrcs and esrcs[-1] is None:
                    esrcs.pop()
                S.emit(Instr(evpu, ekind, [ot], esrcs, eattrs), ereads, [orange])
            for j, d in enumerate(dsts):
                ot = otiles[j]
                if d.resident:
                    continue
                pending.append((
                    Instr(cx.stream.next_unit("DAU"), "STORE", [d.tile(st.outputs[j])], [ot]),
                    [("O", ot.offset, ot.offset + ot.nbytes)], [("S", d.key)],
                ))
    for ins, r, w in pending:
        S.emit(ins, r, w)
