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
5. **Plans that stall.** When no tensor's round trip fits its idle window any more
   and the peak is still above the budget, the greedy goes on with round trips that
   do not fit (`stall_offers`). For a tensor whose window spans the peak time, the op
   running at the peak (`hold_op`) waits for the reduction to finish (`free_by`) and
   the restoration waits for that op (`hold`): the step is slower (the simulated
   cycles say by how much), but the tensor is gone at the peak. A tensor already
   reduced whose reduction is still pending at the peak (its copy queued behind
   others on the link) gets the same edge, and a compressed one may also swap its
   compressed copy out (mode `both`). Offers are ranked by bytes freed per cycle of
   their round trip, link cycles counted in full.
6. **The synchronous plan.** When step 5 ends above the budget too (the peak hops
   between the copies queued in the forward pass and the restorations of the
   backward pass), every tensor with an idle window is reduced and waited for at
   once (`synchronous_plan`: the op after its producer waits for the reduction, the
   restoration waits for the op before its first restored reader), which brings the
   peak down to one op's working set plus what cannot move; then, the costliest
   first, each reduction is dropped, or else no longer waited for by the op after
   its producer, when the plan still fits without it (`PRUNE_TRIES`).

`plan_reductions` returns the plan; `emit` inserts it into a block (it reuses
`swap_insert.insert`, so the new ops and edges are those of the original method).
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from dataclasses import astuple, dataclass, field, replace

from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from nnx.graph_queries import forward_ops  # noqa: F401 - the planner's forward pass

DEFAULT_MAX_GRAD_ERROR = 0.05
"""Default bound on a plan's estimated gradient error (`estimated_error`): about 160
tensors in i8 (1/254 each), every tensor of the plans measured in bench/swap.py."""


STALL_PATIENCE = 12
"""Step 5 stops after this many rounds in a row that do not lower the lowest peak."""

PRUNE_TRIES = 60
"""Step 6 simulates at most this many relaxations of the synchronous plan."""


@dataclass(frozen=True)
class Accuracy:
    """What a plan may do to the values (docs/tensor-timing-and-swapping.md,
    "Compression that keeps training"):

    * `exact_forward`: a forward-pass reader (an op the training step's `loss`
      depends on) never reads a compressed copy: lossy modes restore only for
      backward-pass readers; swaps (exact) serve any reader. False: a restored copy
      serves every reader after the idle gap (the original behaviour).
    * `scales`: the i8 scale granularity (nnx/compression.py).
    * `max_grad_error`: bound on `estimated_error` of the plan; i8 tensors past it
      fall back to f16, and past that to exact swaps."""

    exact_forward: bool = True
    scales: str = "channel"
    max_grad_error: float = DEFAULT_MAX_GRAD_ERROR


def estimated_error(dtypes: list[str]) -> float:
    """Estimated relative gradient error of a plan compressing tensors to `dtypes`:
    the rounding errors of independent tensors add in quadrature (each gradient term
    reads its tensor once), sqrt(sum of UNIT_ROUNDOFF[dtype]^2)."""
    from nnx.compression import UNIT_ROUNDOFF

    return math.sqrt(sum(UNIT_ROUNDOFF[d] ** 2 for d in dtypes))


@dataclass(frozen=True)
class Reduction:
    """Reduce the tensor `result` of op `producer` (block index) with `mode`
    (compressing to `dtype` with i8 scale groups `scales`); the readers `far` ((op
    index, operand index) pairs) read the one restored copy."""

    producer: int
    result: int
    far: tuple[tuple[int, int], ...]
    nbytes: int
    mode: str
    dtype: str = "f16"
    scales: str = "tensor"
    hold: int | None = None
    """Step 5: the block index of the op the restoration waits for (None: timed by
    step 4)."""
    free_by: int | None = None
    """Step 5: the block index of the op that waits for the reduction to finish
    (None: no such edge)."""


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
    stalled: int = 0
    """Reductions of steps 5 and 6 (round trips that do not fit their idle window)."""
    floor: int = 0
    """`memory_timeline.working_set_floor` of the block: no plan's peak is lower."""
    floor_op: str = ""
    """The op whose working set gives `floor`, with its location."""


def idle_windows(ops: list[Operation], cands, start: list[int], finish: list[int],
                 near_only: frozenset[int] = frozenset()) -> list[Window]:
    """The longest idle window of each candidate tensor (step 1). `cands` are the
    seed method's candidate inputs (`swap_insert.candidates`: the inputs a
    restoration may serve); `start`/`finish` the schedule of `ops`. A view reader
    (reshape...) counts with the times of the readers of its result, since it keeps
    the tensor alive; it is never a far reader, and neither is an op of `near_only`
    (the forward pass, for a lossy restoration)."""
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
        if not ops[c.consumer].has_trait(ViewLike) and c.consumer not in near_only:
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


def mode_cost(target, nbytes: int, mode: str, dtype: str, shape: tuple[int, ...] | None = None,
              scales: str = "tensor") -> ModeCost:
    """The target's costs of reducing and restoring an `nbytes` f32 tensor of
    `shape` (default: flat) (the same formulas as `nnx.graph_costs.op_unit_cycles`)."""
    from nnx.compression import compressed_bytes

    elems = nbytes // 4
    small = compressed_bytes(shape or (elems,), dtype, scales)
    bpc = target.device.memory_bytes_per_cycle
    comp = max(target.vpu_cycles(elems), math.ceil((nbytes + small) / bpc))
    link = target.host_link.transfer_cycles
    if mode == "swap":
        return ModeCost(0, 0, link(nbytes), link(nbytes), nbytes)
    if mode == "compress":
        return ModeCost(comp, comp, 0, 0, nbytes - small)
    return ModeCost(comp, comp, link(small), link(small), nbytes)


def emit(block, target, plan: list[Reduction], start: list[int], finish: list[int]) -> None:
    """Insert `plan` into `block` (whose non-terminator ops are those the plan's
    indices and the schedule `start`/`finish` refer to): step 4's restoration
    timing, then `swap_insert.insert` per mode and compressed type without
    serialization edges."""
    from nnx.passes.swap_insert import Candidate, insert

    ops = [op for op in block.ops if op.next_op is not None]
    # as late as possible on the host-to-device link, backwards from the readers
    linked = sorted((r for r in plan if r.mode != "compress" and r.hold is None),
                    key=lambda r: -start[min(i for i, _ in r.far)])
    link_free = None
    want: dict[tuple[int, int], int] = {}
    for r in linked:
        c = _cost(target, ops, r)
        end = start[min(i for i, _ in r.far)] - c.vpu_in
        if link_free is not None:
            end = min(end, link_free)
        want[(r.producer, r.result)] = end - c.link_in
        link_free = end - c.link_in
    timed = [i for i, op in enumerate(ops) if op.results and _has_unit(target, op)]
    hold_at = {(r.producer, r.result): ops[r.hold] for r in plan if r.hold is not None}
    kinds = sorted({(r.mode, r.dtype, r.scales) for r in plan},
                   key=lambda k: (("compress", "swap", "both").index(k[0]), k[1], k[2]))
    for mode, dtype, scales in kinds:
        chosen = [r for r in plan if (r.mode, r.dtype, r.scales) == (mode, dtype, scales)]
        key_of = {(min(i for i, _ in r.far), r.producer): (r.producer, r.result) for r in chosen}
        cands = [Candidate(i, k, ops[r.producer].results[r.result], r.nbytes, 0, start[i])
                 for r in chosen for i, k in r.far]
        free = {ops[r.producer].results[r.result]: ops[r.free_by] for r in chosen if r.free_by is not None}

        def prefetch(consumer: int, _cycles: int, producer: int, _key_of=key_of) -> Operation | None:
            key = _key_of.get((consumer, producer))
            if key in hold_at:
                return hold_at[key]
            by = want.get(key)
            if by is None:
                return None
            for i in reversed(timed):
                if i <= producer:
                    break
                if i < consumer and finish[i] <= by:
                    return ops[i]
            return None

        insert(block, target, cands, 1 << 62, mode, dtype, SimpleNamespace(ops=ops), prefetch=prefetch,
               serialize=False, chain=False, scales=scales, hold=free)


def _cost(target, ops: list[Operation], r: Reduction) -> ModeCost:
    """`mode_cost` of reduction `r` of a tensor of `ops`."""
    v = ops[r.producer].results[r.result]
    return mode_cost(target, r.nbytes, r.mode, r.dtype, tuple(v.type.get_shape()), r.scales)  # type: ignore[attr-defined]




def stall_offers(target, ops: list[Operation], plan: list[Reduction], exact: dict, lossy: dict,
                 modes: tuple[str, ...], lossy_dtype: str, dtype: str, scales: str, times, tp: int,
                 waits: list[bool]) -> list:
    """Step 5's offers at the peak time `tp`, one per tensor whose idle window spans
    it, as (score, reduction, cost): a tensor not yet reduced, in its best mode
    (lossy modes only while `lossy_dtype` is not empty), or one of `plan` made to
    free its bytes by the op at the peak, compressions possibly swapped as well
    (mode `both`; cost `freed`: the bytes freed beyond what the plan frees now).
    Each reduction gets `hold` and `free_by`: the op `hold_op` picks."""
    start = times[0]
    planned = {(r.producer, r.result): r for r in plan}
    offers = []
    for key in exact.keys() | lossy.keys():
        now = planned.get(key)
        choices = []
        for m in modes:
            if now is not None and m != now.mode and not (now.mode == "compress" and m == "both"):
                continue
            w = exact.get(key) if m == "swap" else lossy.get(key)
            if w is None or not (w.begin < tp < w.end):
                continue
            h = hold_op(*times, tp, key[0], w.first_far, waits)
            if h is None:
                continue
            if now is None:
                d = dtype if m == "swap" else lossy_dtype
                if not d:
                    continue
                choices.append(Reduction(key[0], key[1], w.far, w.nbytes, m, d, scales if d == "i8" else "tensor",
                                         hold=h, free_by=h))
            elif m != now.mode:
                choices.append(replace(now, mode=m, hold=h, free_by=h))
            elif now.free_by is None or start[h] < start[now.free_by]:
                choices.append(replace(now, free_by=h))
        best = None
        for r in choices:
            c = _cost(target, ops, r)
            if now is not None:
                c = replace(c, freed=c.freed - (_cost(target, ops, now).freed if r.mode != now.mode else 0))
            score = c.freed / (c.vpu_out + c.vpu_in + c.link_out + c.link_in + 1)
            if c.freed > 0 and (best is None or score > best[0]):
                best = (score, r, c)
        if best is not None:
            offers.append(best)
    return offers


def synchronous_plan(exact: dict, lossy: dict, modes: tuple[str, ...], dtype: str, scales: str,
                     lossy_dtype, waits: list[bool]) -> list[Reduction]:
    """Step 6: a reduction of every tensor with an idle window, in the mode that
    frees most (`both`, else `swap`, else `compress`, as `modes` allow; lossy modes
    while `lossy_dtype(err2)` admits a dtype for the plan's estimated error so far),
    each waited for by the op after its producer (`free_by`) and restored after the
    op before its first restored reader (`hold`); `waits[i]`: op i can take a
    control edge."""
    from nnx.compression import UNIT_ROUNDOFF

    plan: list[Reduction] = []
    err2 = 0.0
    for key in sorted(exact.keys() | lossy.keys()):
        for m in ("both", "swap", "compress"):
            w = exact.get(key) if m == "swap" else lossy.get(key)
            d = dtype if m == "swap" else lossy_dtype(err2)
            between = [i for i in range(key[0] + 1, w.first_far) if waits[i]] if w is not None else []
            if m not in modes or d is None or len(between) < 2:
                continue
            plan.append(Reduction(key[0], key[1], w.far, w.nbytes, m, d, scales if d == "i8" else "tensor",
                                  hold=between[-1], free_by=between[0]))
            if m != "swap":
                err2 += UNIT_ROUNDOFF[d] ** 2
            break
    return plan


def hold_op(start: list[int], finish: list[int], tp: int, after: int, before: int,
            waits: list[bool] | None = None) -> int | None:
    """Step 5's `hold`: of the ops with block index strictly between `after` (the
    producer) and `before` (the first far reader), the one running at time `tp` (the
    peak) that finishes first, or else the first to start after it; None when no op
    lies between or all have finished by `tp`. `waits[i]` (default: all true): op i
    can take a control edge."""
    running = [i for i in range(after + 1, before) if finish[i] > tp and (waits is None or waits[i])]
    if not running:
        return None
    return min(running, key=lambda i: (max(start[i], tp), finish[i], i))


def _has_unit(target, op: Operation) -> bool:
    from nnx.graph_costs import op_unit_cycles

    return bool(op_unit_cycles(target, op)[0])


def plan_reductions(func: FuncOp, target, budget: int, modes: tuple[str, ...], dtype: str,
                    link_share: float = 0.8, link_weight: float = 0.005,
                    max_rounds: int = 150, accuracy: Accuracy = Accuracy(), stall: bool = True) -> PlanResult:
    """Steps 1-4: the reductions whose simulated peak fits `budget`, choosing for
    each tensor one of `modes` (see the module docstring), compressing to `dtype`
    within the bounds of `accuracy`; step 5 only with `stall`."""
    from nnx.compression import UNIT_ROUNDOFF
    from nnx.graph_costs import block_timeline
    from nnx.dialects.traits import Elementwise
    from nnx.interp.interpreter import location_text
    from nnx.memory_rules import DEFAULT
    from nnx.memory_timeline import simulate, working_set_floor
    from nnx.passes.swap_insert import candidates

    base_block = func.body.block
    cands, _ = candidates(base_block, target, "swap" if modes == ("swap",) else "compress", "asap")
    base_ops = [op for op in base_block.ops if op.next_op is not None]
    forward = forward_ops(func, base_ops) if accuracy.exact_forward else frozenset()
    scales = accuracy.scales if dtype == "i8" else "tensor"
    waits = [hasattr(op, "after") for op in base_ops]  # ops that take control edges

    def run(plan: list[Reduction], times):
        clone = func.clone()
        block = clone.body.block
        ops = [op for op in block.ops if op.next_op is not None]
        if plan:
            emit(block, target, plan, *times)
        bt = block_timeline(block, target)
        tl = simulate(bt.ops, bt.values, bt.units)
        index = {op: i for i, op in enumerate(bt.op_list)}
        st = [tl.start[index[o]] for o in ops]
        fi = [tl.finish[index[o]] for o in ops]
        return tl, (st, fi)

    def lossy_dtype(err2: float) -> str | None:
        """`dtype` while the error bound allows it, else f16, else None (exact only)."""
        for d in (dtype, "f16"):
            if err2 + UNIT_ROUNDOFF[d] ** 2 <= accuracy.max_grad_error ** 2:
                return d
        return None

    tl, times = run([], None)
    base_times = times
    res = PlanResult(None, tl.peak_bytes, tl.cycles, tl.peak_bytes, tl.cycles, lowest_peak=tl.peak_bytes,
                     dtype=dtype)
    if tl.peak_bytes <= budget:
        res.reductions = []
        return res
    bt = block_timeline(base_block, target)
    may_reuse = [DEFAULT.inplace_elementwise and op.has_trait(Elementwise) for op in bt.op_list]
    res.floor, k = working_set_floor(bt.ops, bt.values, may_reuse)
    if k >= 0:
        res.floor_op = f"'{bt.op_list[k].name}'" + (f" at {location_text(bt.op_list[k])}"
                                                      if location_text(bt.op_list[k]) else "")
    plan: list[Reduction] = []
    chosen: set[tuple[int, int]] = set()
    stalling = False  # step 5
    stale = 0  # step 5's rounds since the lowest peak last went down
    for rnd in range(max_rounds):
        res.rounds = rnd + 1
        tp, excess = tl.peak_time, tl.peak_bytes - budget
        exact = {w.key: w for w in idle_windows(base_ops, cands, *times)}
        lossy = ({w.key: w for w in idle_windows(base_ops, cands, *times, near_only=forward)}
                 if forward else exact)
        linked_before = sum(_cost(target, base_ops, r).link_out for r in plan if r.mode != "compress")
        err2 = estimated_error([r.dtype for r in plan if r.mode != "swap"]) ** 2
        offers = []
        if stalling:
            offers = stall_offers(target, base_ops, plan, exact, lossy, modes, lossy_dtype(err2) or "", dtype,
                                  scales, times, tp, waits)
        for key in (exact.keys() | lossy.keys()) - chosen if not stalling else ():
            best = None
            for m in modes:
                w = exact.get(key) if m == "swap" else lossy.get(key)
                d = dtype if m == "swap" else lossy_dtype(err2)
                if w is None or d is None or not (w.begin < tp < w.end):
                    continue
                r = Reduction(key[0], key[1], w.far, w.nbytes, m, d, scales if d == "i8" else "tensor")
                c = _cost(target, base_ops, r)
                if w.begin + c.vpu_out + c.link_out > tp or tp + c.link_in + c.vpu_in > w.end:
                    continue
                if c.link_out and linked_before + c.link_out > link_share * tp:
                    continue
                score = c.freed / (c.vpu_out + c.vpu_in + link_weight * (c.link_out + c.link_in) + 1)
                if best is None or score > best[0]:
                    best = (score, r, c)
            if best is not None:
                offers.append(best)
        if not offers:
            if stalling or not stall:
                break
            stalling = True
            continue
        offers.sort(key=lambda o: (-o[0], o[1].producer, o[1].result))
        freed = 0
        for _, r, c in offers:
            if freed >= excess:
                break
            key = (r.producer, r.result)
            if key in chosen:  # step 5: a reduction already chosen, now with a stall
                plan = [r if (q.producer, q.result) == key else q for q in plan]
                freed += c.freed
                continue
            if c.link_out and not stalling:
                if linked_before + c.link_out > link_share * tp:
                    continue
                linked_before += c.link_out
            if r.mode != "swap":
                d = lossy_dtype(err2)
                if d is None:
                    continue
                if d != r.dtype:
                    r = replace(r, dtype=d, scales="tensor")
                    c = _cost(target, base_ops, r)
                err2 += UNIT_ROUNDOFF[d] ** 2
            plan.append(r)
            chosen.add((r.producer, r.result))
            freed += c.freed
        used = times
        tl, times = run(plan, times)
        if stalling:
            stale = 0 if tl.peak_bytes < res.lowest_peak else stale + 1
            if stale > STALL_PATIENCE:
                break
        res.lowest_peak = min(res.lowest_peak, tl.peak_bytes)
        if tl.peak_bytes <= budget:
            res.reductions, res.peak, res.cycles, res.times = plan, tl.peak_bytes, tl.cycles, used
            break
    if res.reductions is None and stall:
        exact = {w.key: w for w in idle_windows(base_ops, cands, *base_times)}
        lossy = ({w.key: w for w in idle_windows(base_ops, cands, *base_times, near_only=forward)}
                 if forward else exact)
        plan = synchronous_plan(exact, lossy, modes, dtype, scales, lossy_dtype, waits)
        tl, _ = run(plan, base_times)
        res.lowest_peak = min(res.lowest_peak, tl.peak_bytes)
        if tl.peak_bytes <= budget:
            costs = {(r.producer, r.result): sum(astuple(_cost(target, base_ops, r))[:4]) for r in plan}
            tries = 0
            for key in sorted(costs, key=lambda k: -costs[k]):
                r = next(q for q in plan if (q.producer, q.result) == key)
                for relaxed in (None, replace(r, free_by=None)):  # drop it, or let the producer's successors run on
                    if tries == PRUNE_TRIES:
                        break
                    tries += 1
                    other = [relaxed if q is r else q for q in plan if q is not r or relaxed is not None]
                    t2, _ = run(other, base_times)
                    if t2.peak_bytes <= budget:
                        plan, tl = other, t2
                        break
            res.reductions, res.peak, res.cycles, res.times = plan, tl.peak_bytes, tl.cycles, base_times
    for r in res.reductions if res.reductions is not None else plan:
        res.modes[r.mode] = res.modes.get(r.mode, 0) + 1
    res.stalled = sum(r.hold is not None for r in res.reductions or plan)
    return res
