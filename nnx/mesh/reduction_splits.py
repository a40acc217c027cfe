"""Reduction and 2-D splits (docs/mesh.md, "Compilation" and "2-D splits"): a conv
or gemm/matmul with constant weights split along the axis it sums over (input
channels, K) into partial sums chained from part to part, alone (`reduction_split`,
for an op whose input is too big for a core) or together with its output axis
(`block_split`, ki x kj parts), and the pieces a producer is cut into so that such
a split can take runs of them (`pieces_for_reduction`). The partitioner
(nnx/mesh/partition.py) chooses among these and the output and row splits."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue

from nnx.dialects import graph as g
from nnx.graph_queries import constant_op
from nnx.mesh.partition import (BlockSplit, Split, act_operands, bounds_of, can_follow, const_bytes, nbytes,
                                parts_needed, shape, split_axis)

#: full-size results a part of a reduction split plans room for within the planning
#: budget (MEMORY_FILL of a core): its partial product; the running sum received and
#: their sum live in the remaining 40 % (the lowering's storage check has the last word)
REDUCTION_OUTPUTS = 1

#: full-size results a part of a 2-D split made for a schedule's own parts (a list
#: share, planned near a full core: no rest of the core to hold the others) plans
#: room for: its partial product, the running sum received and their sum
CHAINED_OUTPUTS = 3


#: a 2-D split within a schedule's parts (the throughput pipeline's: a list share)
#: whose input is more than half the planning budget takes the shortest chain that
#: fits and then as many of the parts as it can (`block_split`'s `want` with
#: `chain_first`, `pipeline_want`), so that its group's cores work on it. False:
#: the fewest parts that fit (BERT's FFN down-projection: 7 x 2 parts on a group
#: of 23 cores)
PIPELINE_BLOCK_PARTS = True


def pipeline_want(parts: int, in_bytes: int, budget: float) -> int:
    """The parts a 2-D split within a schedule's `parts` asks for (`block_split`'s
    `want`): all of them for an input of more than half the budget with
    PIPELINE_BLOCK_PARTS, else 0 (the fewest that fit)."""
    return parts if PIPELINE_BLOCK_PARTS and 2 * in_bytes > budget else 0


def reduction_axis(op: Operation, act: SSAValue) -> int | None:
    """The axis of activation `act` that `op` sums over (a conv's input channels, a
    matmul/gemm's K), when `op` can be split along it into partial sums, else None."""
    if isinstance(op, g.ConvOp) and int(op.attr("group", 1)) == 1 and len(shape(act)) == 4 \
            and constant_op(op.operands[1]) is not None and op.operands[0] is act:
        return 1
    if isinstance(op, (g.GemmOp, g.MatMulOp)) and op.operands[0] is act \
            and constant_op(op.operands[1]) is not None and len(shape(op.operands[1])) == 2 \
            and not (isinstance(op, g.GemmOp) and op.attr("transA", 0)):
        return len(shape(act)) - 1
    return None



def reduction_split(op: Operation, acts: list[SSAValue], in_split: Split | None, budget: float) -> Split | None:
    """Split `op` along its reduction axis into partial sums (docs/mesh.md,
    "Compilation"), for an op whose input alone is too big for one core: its single
    activation operand must come split (concat) along that axis; each part takes a
    run of consecutive input pieces, as many as fit `budget` with the matching slice
    of the weights and a full-size partial output. None when that is impossible."""
    if in_split is None or len(acts) != 1 or in_split.combine != "concat":
        return None
    axis = reduction_axis(op, acts[0])
    if axis is None or in_split.axis != axis:
        return None
    n = in_split.bounds[-1]
    per_unit = (nbytes(acts[0]) + const_bytes(op)) / n
    out_bytes = REDUCTION_OUTPUTS * sum(nbytes(r) for r in op.results)
    bounds = [0]
    for j in range(in_split.k):
        lo, hi = in_split.bounds[j], in_split.bounds[j + 1]
        if (hi - lo) * per_unit + out_bytes > budget:
            return None
        if (hi - bounds[-1]) * per_unit + out_bytes > budget:
            bounds.append(lo)
    bounds.append(n)
    return Split(axis, tuple(bounds), "sum")


def block_split(op: Operation, act: SSAValue, in_split: Split | None, band_bytes, budget: float,
                max_parts: int, outputs: int = REDUCTION_OUTPUTS, want: int = 0,
                chain_first: bool = False, ki_kj: tuple[int, int] | None = None) -> BlockSplit | None:
    """The 2-D split of `op` (docs/mesh.md, "2-D splits") into the fewest parts, at
    most `max_parts`, whose every part fits `budget`: its band of input `act` along
    the reduction axis (`band_bytes(lo, hi)`: the bytes a part holds for it), its
    weight block and `outputs` output pieces (one: the running sum received and the
    sum live in the rest of the core, as for reduction splits). Ties go to the least traffic
    (the input sent to kj parts, the running sums passed ki - 1 times), then to
    input ranges that are runs of whole pieces of `in_split` (how `act` arrives;
    no piece sliced by its producer), then to the shorter chain. With `want` (the
    parts the latency schedule's cost model asks for), the split instead has at
    least `want` parts where it can, with the shortest chain (fewest ki): the parts
    run side by side, and a chain's partial sums pass one after another; with
    `chain_first` too, the shortest chain comes first and then the most parts up
    to `want` (a pipeline group's cores: `pipeline_want`). With `ki_kj` (the
    latency schedule's `block_shape`), exactly ki input ranges and kj output
    pieces, where each part fits. None when no such split exists."""
    in_axis = reduction_axis(op, act)
    ax = split_axis(op)
    if in_axis is None or ax is None or ax[2] != "concat" or act_operands(op) != [act]:
        return None
    out_axis, n_out, _ = ax
    n_in = shape(act)[in_axis]
    w_bytes, out_bytes = const_bytes(op), sum(nbytes(r) for r in op.results)
    piece_bounds = set(in_split.bounds) if in_split is not None and in_split.axis == in_axis \
        and in_split.combine == "concat" else None
    best: tuple[tuple[int, int, int, int], tuple[int, ...], int] | None = None
    for ki in (ki_kj[:1] if ki_kj else range(1, min(n_in, max_parts) + 1)):
        candidates = [bounds_of(n_in, ki)]
        if piece_bounds is not None and in_split.k >= ki:  # runs of whole pieces
            runs = tuple(in_split.bounds[round(t * in_split.k / ki)] for t in range(ki + 1))
            if runs != candidates[0]:
                candidates.append(runs)
        for ib in candidates:
            band = max(band_bytes(ib[r], ib[r + 1]) for r in range(ki))
            w_frac = max(ib[r + 1] - ib[r] for r in range(ki)) / n_in
            kj = parts_needed(n_out, w_bytes * w_frac + outputs * out_bytes, budget - band)
            if want:
                kj = max(kj, min(n_out, max_parts // ki, -(-want // ki)))
            if ki_kj:  # the pieces asked for, when they fit
                kj = ki_kj[1] if kj <= ki_kj[1] else n_out + 1
            if kj > n_out or ki * kj < 2 or ki * kj > max_parts:
                continue
            sliced = 0 if piece_bounds is None else sum(b not in piece_bounds for b in ib)
            key = (ki * kj, nbytes(act) * kj + out_bytes * (ki - 1), sliced, ki)
            if want:
                key = ((ki, max(0, want - ki * kj)) if chain_first else (max(0, want - ki * kj), ki)) \
                    + (sliced,) + key
            if best is None or key < best[0]:
                best = (key, ib, kj)
    if best is None:
        return None
    _, ib, kj = best
    return BlockSplit(Split(in_axis, ib), Split(out_axis, bounds_of(n_out, kj)))


#: cycles a step of a 2-D split's chain costs beyond moving its partial sum: the
#: RECV's and SEND's issue, the add of the running sum (`block_time`)
CHAIN_STEP_CYCLES = 200


def block_time(cycles: float, ki: int, kj: int, in_bytes: int, w_bytes: int, out_bytes: int,
               link: float, dma: float) -> float:
    """Estimated cycles of an op of one-core `cycles` on a ki x kj 2-D split: its
    compute share, its input range over a link and through a DMA, its weight block
    through a DMA, and the ki - 1 later steps of a chain, each receiving the running
    sum of its output piece (over a link and through a DMA) and adding it
    (CHAIN_STEP_CYCLES). ki = 1 is an output split, every part receiving the
    whole input (as `tile_splits.tile_time` with one band)."""
    piece = out_bytes / kj
    return (cycles / (ki * kj) + in_bytes / ki * (1.0 / link + 1.0 / dma) + w_bytes / (ki * kj) / dma
            + (ki - 1) * (piece * (1.0 / link + 1.0 / dma) + CHAIN_STEP_CYCLES))


def block_shape(op: Operation, act: SSAValue, cycles: float, kj: int, max_parts: int,
                link: float, dma: float, gain: float = 1.0) -> tuple[int, int] | None:
    """The (ki, kj) of least `block_time` for `op` (one-core `cycles`) split into the
    kj output pieces it has (so that the ops following its pieces still do), its
    activation `act` cut into ki ranges along the axis it sums over, at most
    `max_parts` parts; None when that time is above `gain` x the output split's
    (ki = 1) or `op` cannot be split so."""
    axis = reduction_axis(op, act)
    ax = split_axis(op)
    if axis is None or ax is None or ax[2] != "concat" or kj < 1:
        return None
    args = (nbytes(act), const_bytes(op), sum(nbytes(r) for r in op.results), link, dma)
    ki = min(range(1, min(shape(act)[axis], max_parts // kj) + 1),
             key=lambda k: block_time(cycles, k, kj, *args), default=1)
    return (ki, kj) if ki > 1 and block_time(cycles, ki, kj, *args) <= gain * block_time(cycles, 1, kj, *args) \
        else None


def pieces_for_reduction(op: Operation, axis: int, budget: float, max_parts: int, depth: int = 8) -> int:
    """The number of pieces `op`'s result must be split into along `axis` so that a
    later reduction split fits `budget` (1 if none is needed): a conv/gemm/matmul
    reading the result through ops that follow the split (elementwise, depthwise
    conv, ...; see `can_follow`), whose input alone
    is too big for a core, takes runs of those pieces (see `reduction_split`). A
    reduction that would need more than `max_parts` parts (the mesh's cores) asks
    for nothing: it cannot fit, and the op is split in 2-D instead."""
    need, seen = 1, set()
    todo = [(op.results[0], depth)]
    while todo:
        v, d = todo.pop()
        for use in list(v.uses):
            user = use.operation
            if id(user) in seen or not user.results:
                continue
            seen.add(id(user))
            if reduction_axis(user, v) == axis:
                out = sum(nbytes(r) for r in user.results)
                room = budget - REDUCTION_OUTPUTS * out
                parts = int(np.ceil((nbytes(v) + const_bytes(user)) / room)) if room > 0 else 0
                if nbytes(v) + out > budget and 0 < parts <= max_parts:
                    need = max(need, parts)
            elif d > 0 and can_follow(user, Split(axis, (0, shape(v)[axis])), shape(v)):
                todo.append((user.results[0], d - 1))
    return need
