"""The `policy=nnx` plan of `swap-insert{memory-budget=B}`: choose which tensors to
reduce, how, and when to restore them, by the device-memory model
(docs/tensor-timing-and-swapping.md, "The nnx policy").

The original method (`policy=seed`) picks tensors by thresholds on slack and size and then searches the
thresholds; it cannot tell a tensor whose round trip fits its idle time from one
whose round trip delays the step, and it gives every tensor the same mode. This plan
works from the simulated schedule instead:

1. **Idle windows.** Simulate the block on the target's units (`nnx.memory_timeline`).
   For every tensor produced by an op of the block, sort its readers by start time
   and find the longest idle gap: after it, every reader can read a restored copy
   (`far` readers); before it, the original serves the `near` readers. The window
   runs from the finish of the last near reader (or the producer) to the start of
   the first far reader.
2. **Cost of each mode.** For a tensor of N bytes: compression costs the VPU the
   compress and decompress cycles (the target's roofline for N + compressed bytes)
   and frees N minus the compressed size; a swap costs the host link N bytes each
   way and frees N; both costs the VPU the two compressions and the link the
   compressed bytes, and frees N. A mode is feasible for a tensor when its reduction
   can finish before the peak and its restoration start after it, inside the window.
3. **Greedy on the peak.** While the simulated peak exceeds the budget: among the
   tensors whose window spans the peak time, take for each its best mode by bytes
   freed per cycle of cost (link cycles weigh `link_weight` of a VPU cycle, and the
   link transfers that must finish before the peak may fill at most `link_share` of
   the time up to it), then the best tensors until the freed bytes cover the excess;
   insert and simulate again (the peak moves).
4. **Restoration timing.** No reduction -> next-reader edges and no chain between
   restorations. Restorations that use the link are placed as late as possible on
   the host-to-device link, backwards from their readers' start times (so queued
   transfers do not overlap and each ends by its reader's start), and their prefetch
   edge comes from the latest op before the reader in block order whose simulated
   finish is at most that start. A decompression alone has no prefetch edge: it sits
   right before its reader in block order, and the VPU runs its ops in that order.

`plan_reductions` returns the plan; `emit` inserts it into a block (it reuses
`swap_insert.insert`, so the new ops and edges are those of the original method).
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

COMPRESSED_BYTES = {"f16": 2, "bf16": 2, "i8": 1}
"""Bytes per element of each compressed dtype (f32 tensors only)."""


@dataclass(frozen=True)
class Reduction:
    """Reduce the tensor `result` of op `producer` (block index) with `mode`; the
    readers `far` ((op index, operand index) pairs) read the one restored copy."""

    producer: int
    result: int
    far: tuple[tuple[int, int], ...]
    nbytes: int
    mode: str


@dataclass(frozen=True)
class Window:
    """Tensor `key` = (producer index, result index), `nbytes`, idle from `begin` to
    `end` (cycles of the current schedule); `far` as in `Reduction`; `first_far` the
    lowest block index among them."""

    key: tuple[int, int]
    nbytes: int
    begin: int
    end: int
    far: tuple[tuple[int, int], ...]
    first_far: int


@dataclass
class PlanResult:
    """What `plan_reductions` found: the reductions (None when nothing fits), the
    simulated peak and cycles with them, and what was measured."""

    reductions: list[Reduction] | None
    peak: int
    cycles: int
    base_peak: int
    base_cycles: int
    rounds: int = 0
    lowest_peak: int = 0
    modes: dict[str, int] = field(default_factory=dict)
    times: tuple[list[int], list[int]] | None = None
    """The schedule `emit` placed the prefetch edges of `reductions` by."""
    dtype: str = "f16"
    """The compressed element type the plan was made (and is emitted) with."""


def idle_windows(ops: list[Operation], cands, start: list[int], finish: list[int]) -> list[Window]:
    """The longest idle window of each candidate tensor (step 1). `cands` are the
    seed method's candidate inputs (`swap_insert.candidates`: the inputs a
    restoration may serve); `start`/`finish` the schedule of `ops`. A view reader
    (reshape...) counts with the times of the readers of its result, since it keeps
    the tensor alive; it is never a far reader."""
    from nnx.dialects.traits import ViewLike

    pos = {op: i for i, op in enumerate(ops)}
    eff_start = list(start)
    eff_finish = list(finish)
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        if not op.has_trait(ViewLike):
            continue
        users = [pos[u.operation] for r in op.results for u in r.uses if u.operation in pos]
        if users:
            eff_start[i] = min(eff_start[u] for u in users)
            eff_finish[i] = max(eff_finish[u] for u in users)
    eligible: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for c in cands:
        if not ops[c.consumer].has_trait(ViewLike):
            eligible.setdefault((pos[c.value.owner], c.value.index), set()).add((c.consumer, c.operand))
    out: list[Window] = []
    for (p, k), ok in eligible.items():
        v = ops[p].results[k]
        readers = sorted(((pos[u.operation], u.index) for u in v.uses if u.operation in pos),
                         key=lambda r: (eff_start[r[0]], r[0]))
        best = None
        busy_until = finish[p]
        for j, r in enumerate(readers):
            rest = readers[j:]
            if all(x in ok for x in rest):
                gap = eff_start[r[0]] - busy_until
                if gap > 0 and (best is None or gap > best[0]):
                    best = (gap, busy_until, eff_start[r[0]], tuple(rest))
            busy_until = max(busy_until, eff_finish[r[0]])
        if best is not None:
            nbytes = next(c.nbytes for c in cands if c.value is v)
            out.append(Window((p, k), nbytes, best[1], best[2], best[3], min(i for i, _ in best[3])))
    return out


@dataclass(frozen=True)
class ModeCost:
    """Cycles of one round trip in one mode: `vpu_out`/`vpu_in` (compress,
    decompress), `link_out`/`link_in` (swap out, in), and the bytes it frees."""

    vpu_out: int
    vpu_in: int
    link_out: int
    link_in: int
    freed: int


def mode_cost(target, nbytes: int, mode: str, dtype: str) -> ModeCost:
    """The target's costs of reducing and restoring an `nbytes` f32 tensor (the same
    formulas as `nnx.graph_costs.op_unit_cycles`)."""
    elems = nbytes // 4
    small = elems * COMPRESSED_BYTES[dtype]
    bpc = target.device.memory_bytes_per_cycle
    comp = max(target.vpu_cycles(elems), math.ceil((nbytes + small) / bpc))
    link = target.host_link.transfer_cycles
    if mode == "swap":
        return ModeCost(0, 0, link(nbytes), link(nbytes), nbytes)
    if mode == "compress":
        return ModeCost(comp, comp, 0, 0, nbytes - small)
    return ModeCost(comp, comp, link(small), link(small), nbytes)


def emit(block, target, plan: list[Reduction], dtype: str, start: list[int], finish: list[int]) -> None:
    """Insert `plan` into `block` (whose non-terminator ops are those the plan's
    indices and the schedule `start`/`finish` refer to): step 4's restoration
    timing, then `swap_insert.insert` per mode without serialization edges."""
    from nnx.passes.swap_insert import Candidate, insert

    ops = [op for op in block.ops if op.next_op is not None]
    # as late as possible on the host-to-device link, backwards from the readers
    linked = sorted((r for r in plan if r.mode != "compress"),
                    key=lambda r: -start[min(i for i, _ in r.far)])
    link_free = None
    want: dict[tuple[int, int], int] = {}
    for r in linked:
        c = mode_cost(target, r.nbytes, r.mode, dtype)
        end = start[min(i for i, _ in r.far)] - c.vpu_in
        if link_free is not None:
            end = min(end, link_free)
        want[(r.producer, r.result)] = end - c.link_in
        link_free = end - c.link_in
    timed = [i for i, op in enumerate(ops) if op.results and _has_unit(target, op)]
    for mode in ("compress", "swap", "both"):
        chosen = [r for r in plan if r.mode == mode]
        if not chosen:
            continue
        key_of = {(min(i for i, _ in r.far), r.producer): (r.producer, r.result) for r in chosen}
        cands = [Candidate(i, k, ops[r.producer].results[r.result], r.nbytes, 0, start[i])
                 for r in chosen for i, k in r.far]

        def prefetch(consumer: int, _cycles: int, producer: int, _key_of=key_of) -> Operation | None:
            by = want.get(_key_of.get((consumer, producer)))
            if by is None:
                return None
            for i in reversed(timed):
                if i <= producer:
                    break
                if i < consumer and finish[i] <= by:
                    return ops[i]
            return None

        insert(block, target, cands, 1 << 62, mode, dtype, SimpleNamespace(ops=ops), prefetch=prefetch,
               serialize=False, chain=False)


def _has_unit(target, op: Operation) -> bool:
    from nnx.graph_costs import op_unit_cycles

    return bool(op_unit_cycles(target, op)[0])


def plan_reductions(func: FuncOp, target, budget: int, modes: tuple[str, ...], dtype: str,
                    link_share: float = 0.8, link_weight: float = 0.005,
                    max_rounds: int = 60) -> PlanResult:
    """Steps 1-4: the reductions whose simulated peak fits `budget`, choosing for
    each tensor one of `modes` (see the module docstring)."""
    from nnx.graph_costs import block_timeline
    from nnx.memory_timeline import simulate
    from nnx.passes.swap_insert import candidates

    base_block = func.body.block
    cands, _ = candidates(base_block, target, "swap" if modes == ("swap",) else "compress", "asap")
    base_ops = [op for op in base_block.ops if op.next_op is not None]

    def run(plan: list[Reduction], times):
        clone = func.clone()
        block = clone.body.block
        ops = [op for op in block.ops if op.next_op is not None]
        if plan:
            emit(block, target, plan, dtype, *times)
        bt = block_timeline(block, target)
        tl = simulate(bt.ops, bt.values, bt.units)
        index = {op: i for i, op in enumerate(bt.op_list)}
        st = [tl.start[index[o]] for o in ops]
        fi = [tl.finish[index[o]] for o in ops]
        return tl, (st, fi)

    tl, times = run([], None)
    res = PlanResult(None, tl.peak_bytes, tl.cycles, tl.peak_bytes, tl.cycles, lowest_peak=tl.peak_bytes,
                     dtype=dtype)
    if tl.peak_bytes <= budget:
        res.reductions = []
        return res
    plan: list[Reduction] = []
    chosen: set[tuple[int, int]] = set()
    for rnd in range(max_rounds):
        res.rounds = rnd + 1
        tp, excess = tl.peak_time, tl.peak_bytes - budget
        windows = idle_windows(base_ops, cands, *times)
        linked_before = sum(mode_cost(target, r.nbytes, r.mode, dtype).link_out for r in plan
                            if r.mode != "compress")
        offers = []
        for w in windows:
            if w.key in chosen or not (w.begin < tp < w.end):
                continue
            best = None
            for m in modes:
                c = mode_cost(target, w.nbytes, m, dtype)
                if w.begin + c.vpu_out + c.link_out > tp or tp + c.link_in + c.vpu_in > w.end:
                    continue
                if c.link_out and linked_before + c.link_out > link_share * tp:
                    continue
                score = c.freed / (c.vpu_out + c.vpu_in + link_weight * (c.link_out + c.link_in) + 1)
                if best is None or score > best[0]:
                    best = (score, m, c)
            if best is not None:
                offers.append((best[0], w, best[1], best[2]))
        if not offers:
            break
        offers.sort(key=lambda o: -o[0])
        freed = 0
        for _, w, m, c in offers:
            if freed >= excess:
                break
            if c.link_out:
                if linked_before + c.link_out > link_share * tp:
                    continue
                linked_before += c.link_out
            plan.append(Reduction(w.key[0], w.key[1], w.far, w.nbytes, m))
            chosen.add(w.key)
            freed += c.freed
        used = times
        tl, times = run(plan, times)
        res.lowest_peak = min(res.lowest_peak, tl.peak_bytes)
        if tl.peak_bytes <= budget:
            res.reductions, res.peak, res.cycles, res.times = plan, tl.peak_bytes, tl.cycles, used
            break
    for r in plan:
        res.modes[r.mode] = res.modes.get(r.mode, 0) + 1
    return res
