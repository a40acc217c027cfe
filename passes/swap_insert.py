"""`swap-insert`: move or compress tensors that wait long in device memory.

    swap-insert{memory-budget=BYTES target=FILE}
    swap-insert{memory-budget=BYTES policy=seed|nnx mode=swap|compress|both|auto
                dtype=f16|bf16|i8|auto target=FILE stall=true|false}
    swap-insert{th-tts=T th-size=BYTES max-n=N mode=swap|compress|both dtype=f16|bf16|i8
                target=FILE timing=asap|schedule serialize=true|false}

Options left out take defaults that depend on `memory-budget`
(docs/tensor-timing-and-swapping.md, "Swap insertion"; `resolve_options`):

| option | with `memory-budget=B` | without |
|---|---|---|
| `policy` | `nnx` (the planner below) | `seed` (the only one) |
| `mode` | `auto` with `policy=nnx`, `swap` with `policy=seed` | `swap` |
| `dtype` | `auto` (f16 or i8, the faster plan) with `policy=nnx`, `f16` with `policy=seed` | `f16` |

So `swap-insert{memory-budget=B}` is the planner choosing the mode per tensor and the
compressed dtype; every option given explicitly is honoured (`policy=seed
mode=compress`, `policy=nnx mode=both dtype=f16`, ...).

The original insertion algorithm (`policy=seed`, and every run without a budget):

1. Timing (`tensor-timing`'s analysis, `timing=asap` by default): the slack TTS of
   every op input.
2. Candidates: data inputs with TTS > `th-tts` cycles whose tensor has more than
   `th-size` bytes, produced by an op of the block (not a parameter: constants and
   arguments stay), f32 for compression; sorted by size, largest first, the first
   `max-n` kept (-1: all).
3. Per candidate tensor: a reduction right after its producer (`graph.swap_out`,
   `graph.compress_tensor`, or compress then swap_out) and, per group of candidate
   consumers, a restoration right before the group's first consumer
   (`graph.swap_in`, `graph.decompress_tensor`, or swap_in then decompress). Candidate
   consumers whose TRTs lie more than `th-tts` apart form separate groups, each with
   its own restoration of the one reduction.
4. Control edges (`after`): serialization from the reduction to the producer's next
   consumer (so it does not allocate its output before the reduction frees memory);
   prefetch into the restoration from the op upstream of the consumer that finishes
   about one restoration time before the consumer needs the tensor (never the
   consumer itself, and always earlier in the block, so no cycle); serialization from
   each restoration into the next one so that two restorations do not run at once.

`serialize=false` leaves out the reduction -> next-reader edges (the next reader may
then allocate its output while the copy still runs; it no longer waits for the host
link). `policy=seed memory-budget=B` ignores th-tts/th-size/max-n/serialize/timing
and chooses them: it simulates candidate settings on the device-memory model
(`nnx.memory_timeline`) and keeps the one with the smallest simulated slowdown whose
peak fits B; when none fits it is an error naming the lowest peak found.

`policy=nnx` (needs `memory-budget`; the default with one) plans from the simulated
schedule instead (`nnx.passes.swap_plan`: idle windows, a per-tensor choice of mode
by cost, a greedy on the peak, restorations timed as late as possible on the link,
and, below the floor of round trips that fit their idle windows, round trips that
stall the step unless `stall=false`);
`mode=auto` lets it choose swap, compress or both per tensor, `dtype=auto` between
the f16 and the i8 plan (the one with fewer simulated cycles; f16 on a tie). When no
plan fits it is an error naming the lowest peak found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter, InsertPoint

from nnx.diagnostics import PassError
from nnx.passes.tensor_timing import TIMING_MODES, block_timing
from nnx.target import load_pass_target

MODES = ("swap", "compress", "both", "auto")
POLICIES = ("seed", "nnx")
AUTO_MODE_SETS = (("swap", "compress", "both"), ("compress", "both"), ("compress",))
"""`mode=auto` with `policy=nnx`: the mode sets planned; the fastest plan that fits wins."""
AUTO_DTYPES = ("f16", "i8")
"""`dtype=auto` with `policy=nnx`: the compressed dtypes planned, the more accurate
first (it wins a tie); bf16 costs what f16 costs with fewer mantissa bits, so it is
only used when asked for."""


@dataclass(frozen=True)
class ResolvedOptions:
    """`policy`, `mode` and `dtype` after the defaults of `resolve_options`."""

    policy: str
    mode: str
    dtype: str


def resolve_options(policy: str, mode: str, dtype: str, memory_budget: int) -> ResolvedOptions:
    """Fill the options left empty (not given) and check the combination: with a
    memory budget the planner (`policy=nnx mode=auto dtype=auto`), without one the
    original method (`policy=seed mode=swap dtype=f16`); `policy=seed` keeps
    `mode=swap dtype=f16` under a budget too. Given options are kept as they are;
    PassError for a value or combination that is not allowed."""
    from nnx.dialects.graph_memory import COMPRESSED_TYPES

    if policy and policy not in POLICIES:
        raise PassError(f"swap-insert: policy must be one of {list(POLICIES)}, got '{policy}'")
    if mode and mode not in MODES:
        raise PassError(f"swap-insert: mode must be one of {list(MODES)}, got '{mode}'")
    if dtype and dtype not in (*COMPRESSED_TYPES, "auto"):
        raise PassError(f"swap-insert: dtype must be one of {[*COMPRESSED_TYPES, 'auto']}, got '{dtype}'")
    policy = policy or ("nnx" if memory_budget else "seed")
    if policy == "nnx" and not memory_budget:
        raise PassError("swap-insert: policy=nnx needs memory-budget")
    planner = policy == "nnx"
    mode = mode or ("auto" if planner else "swap")
    dtype = dtype or ("auto" if planner else "f16")
    if not planner and "auto" in (mode, dtype):
        what = "mode=auto" if mode == "auto" else "dtype=auto"
        raise PassError(f"swap-insert: {what} needs policy=nnx (the default when memory-budget is set)")
    return ResolvedOptions(policy, mode, dtype)


@dataclass(frozen=True)
class Thresholds:
    """The original method's three user settings (docs/tensor-timing-and-swapping.md)."""

    th_tts: int
    th_size: int
    max_n: int
    serialize: bool = True
    timing: str = "asap"


@dataclass(frozen=True)
class Candidate:
    """Input `operand` of op `consumer` (block index), reading `value` of `nbytes`
    with slack `tts`; the consumer needs it at `trt`."""

    consumer: int
    operand: int
    value: SSAValue
    nbytes: int
    tts: int
    trt: int


def candidates(block: Block, target, mode: str, timing: str) -> tuple[list[Candidate], object]:
    """Every insertion point with its slack and size, largest first (step 2 without
    the thresholds)."""
    from nnx.dialects.graph import ConstantOp, GraphOp
    from nnx.dialects.traits import ViewLike
    from nnx.graph_costs import value_bytes
    from nnx.memory_rules import resident_view
    from xdsl.dialects.builtin import f32

    bt = block_timing(block, target, timing)
    out: list[Candidate] = []
    for i, op in enumerate(bt.ops):
        if not isinstance(op, GraphOp):
            continue
        data = {id(v) for v in op.onnx_inputs() if v is not None}
        for k, v in enumerate(op.operands):
            if id(v) not in data or k >= len(op.operands) - len(op.after):
                continue
            owner = v.owner
            if not isinstance(owner, Operation) or isinstance(owner, ConstantOp):
                continue
            if owner.has_trait(ViewLike):
                continue  # a view: the tensor it aliases is the candidate
            if resident_view(owner):
                continue  # a view of a parameter in the memory model (nnx/memory_rules.py)
            if mode != "swap" and getattr(v.type, "element_type", None) != f32:
                continue
            out.append(Candidate(i, k, v, value_bytes(v), bt.timing.tts[i][k], bt.timing.trt[i]))
    out.sort(key=lambda c: -c.nbytes)
    return out, bt


def select(cands: list[Candidate], th: Thresholds) -> list[Candidate]:
    """Candidates with TTS > th_tts and size > th_size, the first max_n by size."""
    kept = [c for c in cands if c.tts > th.th_tts and c.nbytes > th.th_size]
    return kept if th.max_n < 0 else kept[: th.max_n]


def _groups(cs: list[Candidate], gap: int) -> list[list[Candidate]]:
    """Candidate consumers of one tensor in block order, split where their TRTs lie
    more than `gap` apart."""
    cs = sorted(cs, key=lambda c: c.consumer)
    groups: list[list[Candidate]] = []
    for c in cs:
        if groups and gap >= 0 and c.trt - groups[-1][-1].trt <= gap:
            groups[-1].append(c)
        else:
            groups.append([c])
    return groups


def insert(block: Block, target, chosen: list[Candidate], group_gap: int, mode: str, dtype: str,
           bt, prefetch: Callable[[int, int, int], Operation | None] | None = None,
           serialize: bool = True, chain: bool = True, scales: str = "tensor",
           hold: dict[SSAValue, Operation] | None = None) -> int:
    """Insert reductions, restorations and control edges for `chosen` (steps 3-4);
    returns the number of restorations. `bt` is the block's `BlockTiming` (only its
    `ops` are read when `prefetch` is given). Consumers of one tensor whose TRTs lie more
    than `group_gap` apart get separate restorations (a negative gap: one per
    consumer). `prefetch(consumer index, restoration cycles, producer index)` picks
    the op the restoration waits for (default: the one finishing one restoration
    time before the consumer by the timing; None: no prefetch edge); it must come
    before the consumer in the block. `serialize`: the reduction -> next-reader
    edges; `chain`: the edges between consecutive restorations; `scales`: the i8
    scale granularity (nnx/compression.py); `hold`: per reduced value, an op that
    waits for its reduction to finish (a control edge: the tensor is gone while that
    op runs, at the cost of a stall; docs/tensor-timing-and-swapping.md, "Plans that
    stall")."""
    from nnx.dialects.graph_memory import CompressOp, DecompressOp, SwapInOp, SwapOutOp
    from nnx.graph_costs import op_unit_cycles

    ops = bt.ops
    pos = {op: i for i, op in enumerate(ops)}
    by_value: dict[SSAValue, list[Candidate]] = {}
    for c in chosen:
        by_value.setdefault(c.value, []).append(c)
    restorations: list[Operation] = []
    extra = {"scales": scales} if dtype == "i8" and scales != "tensor" else {}
    for v, cs in sorted(by_value.items(), key=lambda kv: pos[kv[0].owner]):
        producer = v.owner
        far = {c.consumer for c in cs}
        # reduction, right after the producer (and its earlier reductions)
        anchor = producer
        while anchor.next_op is not None and getattr(anchor.next_op, "_nnx_reduction", False):
            anchor = anchor.next_op
        new: list[Operation] = []
        if mode in ("compress", "both"):
            comp = CompressOp.build_onnx([v], {"dtype": dtype, **extra}, _compress_types(v, dtype, scales))
            new.append(comp)
            red_data = comp.results[0]
            scale = comp.results[1] if dtype == "i8" else None
        else:
            red_data, scale = v, None
        if mode in ("swap", "both"):
            so = SwapOutOp.build_onnx([red_data], {}, [red_data.type])
            new.append(so)
            red_data = so.results[0]
        for o in new:
            o._nnx_reduction = True  # type: ignore[attr-defined]
        Rewriter.insert_op(new, InsertPoint.after(anchor))
        last_red = new[-1]
        # serialization: reduction -> the producer's next consumer (a near one)
        nxt = _next_consumer(producer, ops, pos, far)
        if nxt is not None and serialize:
            _add_after(nxt, last_red.results[0])
        if hold is not None and v in hold:
            _add_after(hold[v], last_red.results[0])
        # restorations, one per far consumer group
        for group in _groups(cs, group_gap):
            first = ops[group[0].consumer]
            rest: list[Operation] = []
            data = red_data
            if mode in ("swap", "both"):
                si = SwapInOp.build_onnx([data], {}, [data.type])
                rest.append(si)
                data = si.results[0]
            if mode in ("compress", "both"):
                dc = DecompressOp.build_onnx([data, scale] if scale is not None else [data], extra, [v.type])
                rest.append(dc)
                data = dc.results[0]
            restore_cycles = sum(op_unit_cycles(target, r)[1] for r in rest)
            if prefetch is None:
                pre = _prefetch_node(bt, group[0].consumer, group[0].trt - restore_cycles, pos[producer])
            else:
                pre = prefetch(group[0].consumer, restore_cycles, pos[producer])
            Rewriter.insert_op(rest, InsertPoint.before(first))
            if pre is not None:
                _add_after(rest[0], pre.results[0] if pre.results else None)
            for c in group:
                user = ops[c.consumer]
                user.operands = [data if k == c.operand else w for k, w in enumerate(user.operands)]
            restorations.append(rest[0])
    # serialization between restorations, in block order
    if chain:
        order = {op: i for i, op in enumerate(block.ops)}
        restorations.sort(key=order.__getitem__)
        for prev, cur in zip(restorations, restorations[1:]):
            _add_after(cur, prev.results[0])
    for o in block.ops:
        if hasattr(o, "_nnx_reduction"):
            del o._nnx_reduction  # type: ignore[attr-defined]
    return len(restorations)


def _compress_types(v: SSAValue, dtype: str, scales: str = "tensor") -> list:
    from xdsl.dialects.builtin import TensorType, f32

    from nnx.compression import scale_shape
    from nnx.dialects.graph_memory import COMPRESSED_TYPES

    shape = v.type.get_shape()  # type: ignore[attr-defined]
    out = [TensorType(COMPRESSED_TYPES[dtype], shape)]
    if dtype == "i8":
        out.append(TensorType(f32, list(scale_shape(tuple(shape), scales))))
    return out


def _next_consumer(producer: Operation, ops: list[Operation], pos: dict, far: set[int]) -> Operation | None:
    """The first op after `producer` in block order that reads one of its results and
    is not a far (restored) consumer."""
    best = None
    for r in producer.results:
        for u in r.uses:
            o = u.operation
            i = pos.get(o)
            if i is None or i in far or o.next_op is None:
                continue
            if best is None or i < pos[best]:
                best = o
    return best


def _prefetch_node(bt, consumer: int, start_by: int, after_index: int) -> Operation | None:
    """The latest op before `consumer` (and after `after_index`) whose results have
    arrived by `start_by` (so a restoration started then is done when the consumer
    needs its tensor); None when no op lies between."""
    tat = bt.timing.tat
    best = None
    for i in range(consumer - 1, after_index, -1):
        if tat[i] <= start_by and bt.ops[i].results:
            best = bt.ops[i]
            break
    if best is None and consumer - 1 > after_index and bt.ops[consumer - 1].results:
        best = bt.ops[consumer - 1]  # not enough slack: at least wait for the op before
    return best


def _add_after(op: Operation, v: SSAValue | None) -> None:
    """Add control edge `op after(v)` (rebuilding the op's operand segments)."""
    if v is None or v in op.after:  # type: ignore[attr-defined]
        return
    from xdsl.dialects.builtin import DenseArrayBase, i32

    seg = op.properties.get("operandSegmentSizes")
    sizes = list(seg.get_values()) if seg is not None else None  # type: ignore[attr-defined]
    op.operands = [*op.operands, v]
    if sizes is not None:
        sizes[-1] += 1
        op.properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, sizes)


def _peak_and_cycles(block: Block, target) -> tuple[int, int]:
    from nnx.graph_costs import block_timeline
    from nnx.memory_timeline import simulate

    bt = block_timeline(block, target)
    tl = simulate(bt.ops, bt.values, bt.units)
    return tl.peak_bytes, tl.cycles


def apply_thresholds(block: Block, target, th: Thresholds, mode: str, dtype: str, scales: str = "tensor") -> int:
    """Steps 1-4 on `block` with fixed thresholds; returns the number of restorations."""
    cands, bt = candidates(block, target, mode, th.timing)
    return insert(block, target, select(cands, th), th.th_tts, mode, dtype, bt, serialize=th.serialize,
                  scales=scales)


def choose_thresholds(func: FuncOp, target, budget: int, mode: str, dtype: str, scales: str = "tensor",
                      timings: tuple[str, ...] = TIMING_MODES) -> tuple[Thresholds | None, dict]:
    """The thresholds with the smallest simulated cycles whose peak fits `budget`
    (None if no setting fits); the dict says what was measured. Tried: each timing
    of `timings`, with and without the reduction -> next-reader edges, three th-tts
    levels (quantiles of the slack), and a bisection on max-n."""
    base_peak, base_cycles = _peak_and_cycles(func.body.block, target)
    info = {"base_peak": base_peak, "base_cycles": base_cycles, "tried": 0, "lowest_peak": base_peak}
    if base_peak <= budget:
        return Thresholds(0, 0, 0), info
    best: tuple[int, Thresholds] | None = None

    def evaluate(th: Thresholds) -> tuple[int, int]:
        clone = func.clone()
        apply_thresholds(clone.body.block, target, th, mode, dtype, scales)
        peak, cycles = _peak_and_cycles(clone.body.block, target)
        info["tried"] += 1
        info["lowest_peak"] = min(info["lowest_peak"], peak)
        return peak, cycles

    for timing in timings:
        cands, _ = candidates(func.body.block, target, mode, timing)
        tts_levels = sorted({c.tts for c in cands if c.tts > 0})
        if not tts_levels:
            continue
        qs = sorted({tts_levels[int(q * (len(tts_levels) - 1))] - 1 for q in (0.0, 0.5, 0.9)})
        for serialize in (False, True):
            for q in qs:
                lo, hi = 1, len(select(cands, Thresholds(q, 0, -1)))
                # the smallest N whose peak fits (the peak falls as N grows, roughly)
                while lo <= hi:
                    mid = (lo + hi) // 2
                    th = Thresholds(q, 0, mid, serialize, timing)
                    peak, cycles = evaluate(th)
                    if peak <= budget:
                        hi = mid - 1
                        if best is None or cycles < best[0]:
                            best = (cycles, th)
                    else:
                        lo = mid + 1
    return (best[1] if best else None), info


def plan_choices(mode: str, dtype: str) -> list[tuple[tuple[str, ...], str]]:
    """The (mode set, dtype) pairs `best_plan` plans for `mode` and `dtype` (each
    of `AUTO_MODE_SETS` for `mode=auto`, each of `AUTO_DTYPES` for `dtype=auto`; a
    plan of swaps alone compresses nothing, so it is planned with one dtype), in the
    order in which a tie goes to the earlier."""
    out = []
    for modes in (AUTO_MODE_SETS if mode == "auto" else ((mode,),)):
        dtypes = AUTO_DTYPES if dtype == "auto" else (dtype,)
        out += [(modes, dt) for dt in (dtypes[:1] if modes == ("swap",) else dtypes)]
    return out


def best_plan(func: FuncOp, target, budget: int, mode: str, dtype: str, accuracy=None, stall: bool = True):
    """`policy=nnx`: of the plans of `swap_plan.plan_reductions` for `plan_choices`,
    the one with the fewest simulated cycles that fits (the earlier on a tie), or
    the result with the lowest peak when none fits. `accuracy`: a
    `swap_plan.Accuracy` (default: its defaults); `stall`: when no plan fits
    without, plans that stall (`swap_plan` steps 5 and 6)."""
    from nnx.passes.swap_plan import Accuracy, plan_reductions

    best = None
    for stalls in (False, True) if stall else (False,):  # plans that stall only when none fits without
        for modes, dt in plan_choices(mode, dtype):
            r = plan_reductions(func, target, budget, modes, dt, accuracy=accuracy or Accuracy(), stall=stalls)
            if r.reductions is None:
                if best is None or (best.reductions is None and r.lowest_peak < best.lowest_peak):
                    best = r
            elif best is None or best.reductions is None or r.cycles < best.cycles:
                best = r
        if best is not None and best.reductions is not None:
            break
    return best


def apply_plan(func: FuncOp, target, budget: int, mode: str, dtype: str, accuracy=None, stall: bool = True):
    """Plan (`best_plan`) and insert into `func`; PassError when nothing fits."""
    from nnx.passes.swap_plan import emit

    r = best_plan(func, target, budget, mode, dtype, accuracy, stall)
    if r.reductions is None:
        raise PassError(
            f"swap-insert: no plan fits memory-budget={budget} in @{func.sym_name.data} with "
            f"policy=nnx mode={mode} dtype={dtype} (no-swap peak {r.base_peak} bytes, lowest peak "
            f"found {r.lowest_peak} bytes; no plan goes below {r.floor} bytes, the resident bytes and the "
            f"working set of op {r.floor_op})", func)
    if r.reductions:
        emit(func.body.block, target, r.reductions, *r.times)
    return r


@dataclass(frozen=True)
class SwapInsertPass(ModulePass):
    """Insert swap/compress reductions and restorations (see the module docstring).
    `policy`, `mode` and `dtype` left empty take the defaults of `resolve_options`."""

    name = "swap-insert"

    th_tts: int = 0
    th_size: int = 0
    max_n: int = -1
    mode: str = ""
    dtype: str = ""
    memory_budget: int = 0
    target: str = ""
    timing: str = "asap"
    serialize: bool = True
    policy: str = ""
    scales: str = ""
    exact_forward: bool = True
    max_grad_error: int | float = 0.05
    report: str = ""
    stall: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.compression import check_scales
        from nnx.passes.swap_plan import Accuracy

        opts = resolve_options(self.policy, self.mode, self.dtype, self.memory_budget)
        if self.timing not in TIMING_MODES:
            raise PassError(f"swap-insert: timing must be one of {list(TIMING_MODES)}, got '{self.timing}'")
        if self.th_size < 0 or self.th_tts < 0 or self.memory_budget < 0:
            raise PassError("swap-insert: th-tts, th-size and memory-budget must be >= 0")
        if not float(self.max_grad_error) >= 0:
            raise PassError(f"swap-insert: max-grad-error must be >= 0, got {self.max_grad_error}")
        scales = self.scales or ("channel" if opts.policy == "nnx" else "tensor")
        if check_scales(scales):
            raise PassError(f"swap-insert: {check_scales(scales)}")
        accuracy = Accuracy(self.exact_forward, scales, float(self.max_grad_error))
        target = load_pass_target("swap-insert", self.target)
        funcs = [o for o in op.walk() if isinstance(o, FuncOp) and o.body.blocks]
        for f in funcs:
            self._apply_func(f, target, opts, accuracy)
        if self.report:
            write_report(self.report, {f.sym_name.data: reductions_report(f) for f in funcs})

    def _apply_func(self, f: FuncOp, target, opts: ResolvedOptions, accuracy) -> None:
        if opts.policy == "nnx":
            apply_plan(f, target, self.memory_budget, opts.mode, opts.dtype, accuracy, self.stall)
            return
        th = Thresholds(self.th_tts, self.th_size, self.max_n, self.serialize, self.timing)
        if self.memory_budget:
            th, info = choose_thresholds(f, target, self.memory_budget, opts.mode, opts.dtype, accuracy.scales)
            if th is None:
                raise PassError(
                    f"swap-insert: no setting fits memory-budget={self.memory_budget} in "
                    f"@{f.sym_name.data} with policy=seed mode={opts.mode} dtype={opts.dtype} "
                    f"(no-swap peak {info['base_peak']} bytes, lowest peak found "
                    f"{info['lowest_peak']} bytes)", f)
            if th.max_n == 0:
                return
        apply_thresholds(f.body.block, target, th, opts.mode, opts.dtype, accuracy.scales)


def reductions_report(func: FuncOp) -> dict:
    """What `swap-insert` put into `func`, read off its IR: per reduced tensor the
    producer, shape, bytes, mode, compressed dtype and i8 scale granularity, and how
    many readers read a restored copy; the plan's `estimated_grad_error`
    (`swap_plan.estimated_error` of its compressed tensors)."""
    from nnx.compression import scale_count
    from nnx.dialects.graph_memory import CompressOp, DecompressOp, SwapInOp, SwapOutOp
    from nnx.graph_costs import value_bytes
    from nnx.interp.interpreter import location_text
    from nnx.passes.swap_plan import estimated_error

    rows = []
    for op in func.body.block.ops:
        if not isinstance(op, CompressOp | SwapOutOp) or isinstance(op.input.owner, CompressOp):
            continue
        v = op.input
        comp = op if isinstance(op, CompressOp) else None
        swapped = isinstance(op, SwapOutOp) or any(isinstance(u.operation, SwapOutOp) for u in op.output.uses)
        users = [u.operation for u in op.output.uses]
        if comp and swapped:
            users = [u.operation for so in users if isinstance(so, SwapOutOp) for u in so.output.uses]
        shape = tuple(v.type.get_shape())  # type: ignore[attr-defined]
        dtype = comp.attr("dtype") if comp else None
        scales = comp.attr("scales", "tensor") if comp and dtype == "i8" else None
        rows.append({
            "producer": v.owner.name if isinstance(v.owner, Operation) else "argument",
            "location": location_text(v.owner) if isinstance(v.owner, Operation) else "",
            "shape": list(shape),
            "bytes": value_bytes(v),
            "mode": "both" if comp and swapped else ("compress" if comp else "swap"),
            "dtype": dtype,
            "scales": scales,
            "scale_count": scale_count(shape, scales) if scales else None,
            "restorations": sum(isinstance(u, DecompressOp | SwapInOp) for u in users),
        })
    lossy = [r["dtype"] for r in rows if r["dtype"]]
    return {"reductions": rows, "compressed": len(lossy), "swapped": sum(r["mode"] != "compress" for r in rows),
            "estimated_grad_error": estimated_error(lossy)}


def write_report(path: str, report: dict) -> None:
    """The JSON report of `report=PATH` (`-`: stderr), written whole or not at all."""
    import json
    import sys

    text = json.dumps(report, indent=1) + "\n"
    if path == "-":
        sys.stderr.write(text)
        return
    from nnx.atomic_file import atomic_open

    try:
        with atomic_open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise PassError(f"swap-insert: cannot write report '{path}': {e.strerror}") from None
