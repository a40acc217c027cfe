"""What a topological order costs on the target: three measures of cycles.

* `estimate` (no compilation, the original method's faster variant): a graph-level timeline of the
  ops on the target's DAU/MPU/VPU units in the given order. Each op loads the inputs
  that are not resident in the output cache (`Target.dma_cycles`), computes on the MPU
  (`Target.mpu_cycles` of its MACs) or the VPU (`Target.vpu_cycles` of its elements),
  and keeps its result resident while the cache has room (least recently used results
  are stored, `Target.dma_cycles`, when it does not). Units run in parallel; an op
  waits for its unit, its loads and its producers.
* `model` (the original method's cost model over compiled instructions, docs/topological-order.md): T1 + T2 with T1 the
  instruction fetch (`Target.fetch_cycles`) plus the DAU's data-read time (the sum of
  `Target.instr_cycles` of its instructions) and T2 the busiest compute unit's
  `Target.instr_cycles` in the given order; waits between units are ignored.
* `simulate`: the compiled instructions replayed on the units as the simulator does
  (`nnx.sim.timing.replay`: in-order queues, instruction fetch times, SIGNAL/WAIT
  tokens), timing only.

Every cycle figure comes from the target's definitions (`Target.instr_cycles`,
`Target.dma_cycles`, ...): nothing here re-derives a formula.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from nnx.sim.isa import MPU_KINDS, Instr
from nnx.target import Target

COSTS = ("estimate", "model", "simulate")


# --------------------------------------------------------------------------------------
# graph level
# --------------------------------------------------------------------------------------


def _nbytes(t) -> int:
    if not isinstance(t, TensorType):
        return 0
    n = int(np.prod(t.get_shape(), dtype=np.int64)) if t.get_shape() else 1
    w = getattr(t.element_type, "bitwidth", 32) or 32
    return max(1, n * w // 8)


def _nelems(t) -> int:
    if not isinstance(t, TensorType):
        return 0
    return int(np.prod(t.get_shape(), dtype=np.int64)) if t.get_shape() else 1


@dataclass(frozen=True)
class OpCost:
    """One op at graph level: its compute unit and cycles, its operands' and results'
    bytes (for loads and stores)."""

    unit: str
    compute: int
    in_bytes: tuple[int, ...]
    out_bytes: int


def op_cost(op: Operation, target: Target) -> OpCost:
    """Graph-level cost of `op` by the target's formulas (MACs on the MPU for its
    kinds, elements on the VPU otherwise)."""
    kind = getattr(op, "ONNX_TYPE", op.name)
    outs = [r.type for r in op.results]
    out_elems = sum(_nelems(t) for t in outs)
    ins = [v.type for v in op.operands]
    in_bytes = tuple(_nbytes(t) for t in ins)
    out_bytes = sum(_nbytes(t) for t in outs)
    if kind in MPU_KINDS and ins:
        w = ins[1] if len(ins) > 1 else ins[0]
        wshape = w.get_shape() if isinstance(w, TensorType) else ()
        if kind in ("Conv", "ConvTranspose") and len(wshape) >= 2:
            red = int(np.prod(wshape[1:], dtype=np.int64))
        elif wshape:
            trans_b = bool(getattr(op, "attr", lambda *_: 0)("transB", 0)) if kind == "Gemm" else False
            red = int(wshape[-1] if trans_b else (wshape[-2] if len(wshape) >= 2 else wshape[0]))
        else:
            red = 1
        return OpCost("MPU", target.mpu_cycles(out_elems * red), in_bytes, out_bytes)
    elems = max([out_elems] + [_nelems(t) for t in ins[:1]])
    return OpCost("VPU", target.vpu_cycles(elems), in_bytes, out_bytes)


def estimate_order(order: Sequence[int], preds: Sequence[Sequence[int]],
                   costs: Sequence[OpCost], target: Target,
                   producers: Sequence[Sequence[int]] | None = None) -> int:
    """Cycles of the graph-level timeline for `order` (see the module docstring).

    `producers[i][k]` is the node producing op i's k-th operand, or -1 (a constant or
    an input: always loaded)."""
    return Timeline(preds, costs, target, producers).run(order).cycles()


class Timeline:
    """The graph-level timeline of `estimate_order`, op by op: `run(ops)` appends
    ops, `copy()` forks the state, so the orders of a subgraph after a common
    prefix are timed without replaying the prefix each time (the same cycles as
    `estimate_order(prefix + order)`)."""

    def __init__(self, preds, costs, target: Target, producers=None):
        self.preds, self.costs, self.target, self.producers = preds, costs, target, producers
        self.cache = target.cache("output").bytes
        self.resident: OrderedDict[int, int] = OrderedDict()  # node -> bytes, LRU first
        self.used = 0
        self.free = {"DAU": 0, "MPU": 0, "VPU": 0}
        self.done: dict[int, int] = {}

    def copy(self) -> "Timeline":
        t = Timeline.__new__(Timeline)
        t.preds, t.costs, t.target, t.producers, t.cache = self.preds, self.costs, self.target, self.producers, self.cache
        t.resident, t.used, t.free, t.done = self.resident.copy(), self.used, dict(self.free), dict(self.done)
        return t

    def cycles(self) -> int:
        return max([0, *self.free.values(), *self.done.values()])

    def run(self, order: Sequence[int]) -> "Timeline":
        preds, costs, target, producers = self.preds, self.costs, self.target, self.producers
        cache, resident, free, done = self.cache, self.resident, self.free, self.done
        used = self.used
        for v in order:
            ready = max((done[p] for p in preds[v] if p in done), default=0)
            load_end = free["DAU"]
            srcs = producers[v] if producers is not None else [-1] * len(costs[v].in_bytes)
            loaded = False
            for k, b in enumerate(costs[v].in_bytes):
                p = srcs[k] if k < len(srcs) else -1
                if p >= 0 and p in resident:
                    resident.move_to_end(p)
                    continue
                start = max(load_end, done.get(p, 0) if p >= 0 else 0)
                load_end = start + target.dma_cycles(b)
                loaded = True
            if loaded:
                free["DAU"] = load_end
            u = costs[v].unit
            start = max(free[u], ready, load_end if loaded else 0)
            end = start + costs[v].compute
            free[u] = end
            ob = costs[v].out_bytes
            while resident and used + ob > cache:
                old, ob_old = resident.popitem(last=False)
                used -= ob_old
                free["DAU"] = max(free["DAU"], done.get(old, 0)) + target.dma_cycles(ob_old)
            if ob <= cache:
                resident[v] = ob
                used += ob
            else:
                free["DAU"] = max(free["DAU"], end) + target.dma_cycles(ob)
            done[v] = end
        self.used = used
        return self


# --------------------------------------------------------------------------------------
# compiled instructions
# --------------------------------------------------------------------------------------


def compile_instrs(module: ModuleOp, target_path: str, schedule: bool, keep_faster: bool = False) -> list[Instr]:
    """`lower-to-chip` the module (consumed) and return its program's instructions.
    `keep_faster`: the pass's option (default here: off, the scheduled program
    itself; the search checks the unscheduled one for its final choice only)."""
    from nnx.dialects.chip import ProgramOp
    from nnx.ir_io import make_context
    from nnx.passes.lower_to_chip import LowerToChipPass

    LowerToChipPass(target=target_path, schedule=schedule, keep_faster=keep_faster).apply(make_context(), module)
    prog = next(op for op in module.walk() if isinstance(op, ProgramOp))
    return [op.to_instr() for op in prog.instructions()]


def direct_instrs(module: ModuleOp, target_path: str, schedule: bool, keep_faster: bool = False) -> list[Instr]:
    """The instructions `compile_instrs` returns, as far as their timing goes, without
    building chip IR: the lowering's emitted (instruction, reads, writes)
    (`nnx.lowering.lowering.lower_entries`), their dependencies, the list schedule
    (with `schedule`) and SIGNAL/WAIT (`nnx.lowering.deps.sync_tokens`) on plain
    lists, as `lower-to-chip` computes them. Storage tiles keep their `@buffer`
    symbols (chip-allocate's addresses change no cycle count), so `replay` and
    `model_cycles` of the result equal those of the compiled program (tested on
    random orders: test/python/test_topo_direct_timing.py). Consumes `module`."""
    from nnx.ir_io import make_context
    from nnx.lowering.deps import dependencies, sync_tokens
    from nnx.lowering.lowering import lower_entries
    from nnx.passes.chip_lower import main_function
    from nnx.passes.graph_hoist_addends import GraphHoistAddendsPass
    from nnx.passes.graph_transpose_views import GraphTransposeViewsPass
    from nnx.passes.lower_to_chip import LowerToChipPass
    from nnx.schedule import best_order, estimate_cycles
    from nnx.sim.timing import replay
    from nnx.target import load_pass_target

    defaults = LowerToChipPass()
    target = load_pass_target(LowerToChipPass.name, target_path)
    plain = module.clone() if schedule and keep_faster else None

    def lower(m: ModuleOp, sched: bool) -> list[Instr]:
        if sched:
            ctx = make_context()
            GraphHoistAddendsPass().apply(ctx, m)
            GraphTransposeViewsPass().apply(ctx, m)
        main, _ = main_function(LowerToChipPass.name, m)
        entries = lower_entries(main, target, defaults.double_buffer, int(defaults.max_tile_elements),
                                defaults.chain, sched)
        instrs = [ins for ins, _, _ in entries]
        units = [ins.unit for ins in instrs]
        preds = dependencies([(r, w) for _, r, w in entries], units)
        if sched:
            order, _, _ = best_order(units, [estimate_cycles(target, i) for i in instrs], preds)
            if order != list(range(len(order))):
                pos = [0] * len(order)
                for k, i in enumerate(order):
                    pos[i] = k
                instrs = [instrs[i] for i in order]
                units = [units[i] for i in order]
                preds = [sorted(pos[p] for p in preds[i]) for i in order]
        signals, waits = sync_tokens(units, preds, range(len(instrs)))
        out: list[Instr] = []
        for i, ins in enumerate(instrs):
            out.extend(Instr(units[i], "WAIT", token=t) for t in waits.get(i, ()))
            out.append(ins)
            out.extend(Instr(units[i], "SIGNAL", token=t) for t in signals.get(i, ()))
        return out

    instrs = lower(module, schedule)
    if plain is not None:
        other = lower(plain, False)
        if replay(other, target).cycles < replay(instrs, target).cycles:
            instrs = other
    return instrs


def model_cycles(instrs: Sequence[Instr], target: Target) -> int:
    """The original method's cost model over compiled instructions: T1 (instruction fetch + the
    DAU's data reads) + T2 (the busiest compute unit), waits ignored."""
    from nnx.schedule import estimate_cycles

    per_unit: dict[str, int] = {}
    for ins in instrs:
        if ins.mnemonic in ("SIGNAL", "WAIT"):
            continue
        per_unit[ins.unit] = per_unit.get(ins.unit, 0) + estimate_cycles(target, ins)
    t1 = target.fetch_cycles(len(instrs)) + sum(c for u, c in per_unit.items() if u.startswith("DAU"))
    t2 = max((c for u, c in per_unit.items() if not u.startswith("DAU")), default=0)
    return t1 + t2
