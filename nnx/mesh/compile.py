"""`compile_for_mesh(module, target)`: a graph module -> a mesh program (docs/mesh.md,
"Compilation"): partition (nnx/mesh/partition.py), stage functions
(core_graph.py), placement (placement.py), the single-core chip passes per core,
and the NoC messages (stitch.py). A graph that does not fit raises `MeshFitError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from nnx.diagnostics import PassError
from nnx.mesh import DEFAULT_SCHEDULE, stitch
from nnx.mesh.core_graph import RETURN, build_stage_module, stage_io
from nnx.mesh.errors import MeshFitError
from nnx.mesh.partition import MEMORY_FILL, MEMORY_FILLS, Plan, Stage, nbytes, op_label, plan_partition
from nnx.mesh.placement import PLACEMENTS, byte_hops, place_annotated, place_bisect, place_rowmajor
from nnx.mesh.stage_merge import merge_stages, stage_edges, stage_receipts
from nnx.mesh.stitch import CoreProgram, add_messages, mesh_program
from nnx.sim.asm_mesh import MeshProgram

#: the fractions of the bytes a merge of measured stages is estimated to save
#: (nnx/mesh/stage_merge.py) counted, tried in turn while a merged stage's lowered
#: program overflows its core (on DenseNet-121 a merged program took up to 1.08x its estimate)
MEASURED_SAVINGS = (1.0, 0.95, 0.9)

#: stages lowered (largest planned first) before the others' storage is estimated
#: from their measured-to-planned ratio, and the lowering stopped when no merge of
#: the estimates fits (`_compile_with_fill`)
STORAGE_SAMPLE = 8

#: how far `compile_for_mesh` goes: the fit checks, then the full compilation
CHECKS = ("plan", "storage", "compile")

#: the stages (most planned bytes first) whose storage the "plan" check lowers: the
#: planned bytes can miss a core's lowered storage by a quarter (ResNet-18's convs)
PLAN_CHECK_STAGES = 2

#: how much more compute a stage of whole ops may take, tried in turn until the
#: stages fit the cores
PACKING = (1.0, 2.0, 4.0, 8.0, 32.0, 1e9)


@dataclass
class MeshCompilation:
    """The mesh program, its weights file's bytes, and the placement: core of each
    stage, the stages' items, and the planned byte-hops."""

    program: MeshProgram
    data: bytes
    cores: list[int]
    plan: Plan
    planned_byte_hops: int = 0
    stage_edges: dict[tuple[int, int], int] = field(default_factory=dict)
    #: the fraction of a core's memory the plan was made for (MEMORY_FILLS)
    fill: float = MEMORY_FILL
    #: the throughput schedule's layer groups over `plan.ops` (pipeline_search.Pipeline)
    pipeline: object = None
    #: the schedule the program was compiled with (SCHEDULES): a graph the `latency`
    #: or `throughput` schedule does not fit is compiled as `stages`
    schedule: str = "stages"


@dataclass
class MeshFit:
    """What `compile_for_mesh(..., check="storage"|"plan")` found: a plan whose
    stages fit their cores (by their estimated storage, or by their planned bytes),
    and the fill it was made for."""

    plan: Plan
    fill: float

    @property
    def cores(self) -> int:
        """Cores the program would use (one per stage)."""
        return len(self.plan.stages)


def main_function(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise PassError("lower-to-mesh: no func.func @main")


def plan_for_mesh(main: func.FuncOp, ncores: int, core_memory: int, fill: float = MEMORY_FILL,
                  stage_storage: Callable[[Plan], list[int]] | None = None, saving: float = 1.0,
                  share=None) -> Plan:
    """The partition with the least packing whose stages fit the cores (+ one stage
    per split graph output, which concatenates it), planning `fill` of each core.
    When no packing fits, the stages of the plans (least packing first) are merged,
    several to a core, until they fit (nnx/mesh/stage_merge.py), their planned bytes
    within `fill` of a core. When that fails and `stage_storage` is given (the
    storage of each stage's lowered program), the plan with the fewest stages is
    merged by those measured bytes within a whole core (the planned bytes count
    every value of a stage, the lowering fuses chains of elementwise ops), counting
    `saving` of the bytes a merge is estimated to save. When no
    merge fits, a MeshFitError "cores" names the op with the most parts. `share`:
    the parts an op's compute asks for (partition.plan_partition)."""
    from nnx.dialects.graph import ConstantOp

    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    ret = main.body.block.last_op
    returned = list(ret.operands)
    plans: dict[tuple, Plan] = {}  # distinct plans, least packing first
    for pack in PACKING:
        plan = plan_partition(ops, ncores, core_memory, pack, fill, returned, share)
        if len(plan.stages) <= ncores:
            return plan
        plans.setdefault(tuple(tuple(s.items) for s in plan.stages), plan)
    from nnx.mesh.partition import act_operands, const_bytes

    # merging cannot help when the weights alone exceed the mesh's memory
    weights_fit = sum(const_bytes(op) for op in ops) <= ncores * core_memory
    receipts = {id(p): stage_receipts(p, returned) for p in plans.values()} if weights_fit else {}
    for candidate in plans.values() if weights_fit else ():
        recv = receipts[id(candidate)]
        merged = merge_stages(candidate, ncores, core_memory * fill, stage_edges(candidate, returned, recv),
                              receipts=recv)
        if merged is not None:
            return merged
    if stage_storage is not None and weights_fit:
        candidate = min(plans.values(), key=lambda p: len(p.stages))
        storage = stage_storage(candidate)
        if max(storage) <= core_memory:
            measured = replace(candidate, stages=[replace(st, bytes=b) for st, b in zip(candidate.stages, storage)])
            recv = receipts[id(candidate)]
            merged = merge_stages(measured, ncores, core_memory, stage_edges(candidate, returned, recv), saving,
                                  recv)
            if merged is not None:
                return merged
    parts = [sum(1 for s in plan.stages for it in s.items if it[0] == i) for i in range(len(ops))]
    worst = max(range(len(ops)), key=lambda i: parts[i])
    op = ops[worst]
    op_bytes = const_bytes(op) + sum(nbytes(v) for v in act_operands(op)) + sum(nbytes(r) for r in op.results)
    raise MeshFitError("cores", op_label(op), len(plan.stages), ncores, op, op_cores=parts[worst],
                       op_bytes=op_bytes, core_memory=core_memory)


#: the fills the latency schedule plans with, in turn, while a core's program
#: overflows it (a fuller plan only holds more on each core)
LATENCY_FILLS = (MEMORY_FILL, 0.45, 0.3)

#: the latency schedule writes received pieces into the value they make up (no
#: concat copy; docs/mesh.md, "Received pieces in place"); False: the concat copy
LATENCY_IN_PLACE = True

#: the latency schedule's parts from its cost model (latency.latency_shares: one-core
#: cycles, link time of a channel split's input); False: the MAC floor
#: (latency.latency_share)
LATENCY_COST_MODEL = True

#: what the latency schedule's fold checks a core's load by (docs/mesh.md, "Memory
#: reuse"): "live", the live-range estimate of what the core holds with memory reuse
#: (nnx/mesh/core_memory.py: weights, inputs and sent pieces, plus the most
#: activation bytes live at once); "planned", the sum of its parts' planned bytes
#: (every value for the whole program, the first rule: where every core is full, a
#: part goes to the least loaded, which spreads the parts evenly); "planned-then-live",
#: the planned fold when every core of it fits the planned fill by the live-range
#: estimate (ResNet-18: 291,085 cycles, against 301,896 folded by the estimate), else
#: the live fold, and the planned one where a core of the live fold overflows
LATENCY_FOLD_MEMORY = "planned-then-live"

#: the fraction of the mesh's memory the weights the latency schedule replicates may
#: take, each kind of copy on its own: a row split's (each part holds its op's
#: weights whole; core_memory.replication_caps: fewer row parts for the ops whose
#: weights cost the most per cycle saved) and a tile split's (each band holds its
#: channel groups' weights; latency.latency_tiles: the tiles that save the fewest
#: cycles per byte go back to the split before); None: no cap
LATENCY_WEIGHT_FILL = 0.3

#: the schedules (docs/mesh.md, "Schedules"): `latency` (nnx/mesh/latency.py: every
#: op over the cores its work can use, the layers one after another), `throughput`
#: (nnx/mesh/pipeline.py: a layer pipeline, groups of consecutive layers on core
#: counts searched to balance the stage times, nnx/mesh/pipeline_search.py),
#: `proportional` (nnx/mesh/throughput.py: the first throughput schedule, a pipeline
#: of stages, one per core, each op on cores in proportion to its work), `stages`
#: (the original schedule: one core per stage, an op on half its share of the cores)
SCHEDULES = ("latency", "throughput", "proportional", "stages")


def compile_for_mesh(module: ModuleOp, target: str = "mesh", placement: str = "bisect",
                     check: str = "compile", schedule: str = DEFAULT_SCHEDULE) -> MeshCompilation | MeshFit:
    """Compile the graph module for the mesh target `target` (a TOML path or a
    built-in target name). Plans with each of MEMORY_FILLS in turn (see there) until
    one compiles; raises MeshFitError when none does. `check` (one of CHECKS) says
    how far to go: "compile" (everything); "storage": whether it fits, each stage of
    a plan lowered without scheduling for its storage (`storage_estimate`, a fifth of
    the work), giving a `MeshFit`; "plan": whether the partition fits the cores by
    its planned bytes (or by the storage of its STORAGE_SAMPLE largest stages and the
    others' planned bytes scaled alike) and the PLAN_CHECK_STAGES largest stages'
    storage fits, giving a `MeshFit`. `schedule` is one of SCHEDULES; a graph the
    `latency` schedule does not fit (or a fit check, which plans as `stages` does)
    is compiled as `stages`, as is one no `throughput` pipeline fits (`placement`
    applies to `stages` and `proportional`)."""
    from nnx.target import load_target

    if placement not in PLACEMENTS:
        raise PassError(f"lower-to-mesh: unknown placement '{placement}' (one of {', '.join(PLACEMENTS)})")
    if schedule not in SCHEDULES:
        raise PassError(f"lower-to-mesh: unknown schedule '{schedule}' (one of {', '.join(SCHEDULES)})")
    tgt = load_target(target)
    main = main_function(module)
    _check_weights(main, tgt.mesh.width * tgt.mesh.height, tgt.mesh.core_memory_bytes)
    if schedule == "throughput" and check == "compile":
        for fill in PIPELINE_FILLS:
            try:
                return replace(_compile_pipeline(main, tgt, target, fill), schedule="throughput")
            except MeshFitError:
                pass  # no pipeline, or a core overflowed: an emptier plan may fit
    if schedule == "latency" and check == "compile":
        from nnx.mesh.latency import LATENCY_FLOOR_MAX, LATENCY_TILES

        for fill in LATENCY_FILLS:
            # a tiled plan that does not fit is planned again untiled at the same fill
            # before an emptier one (tiles replicate weights: docs/mesh.md, "Tiles"),
            # and a plan with the part floor capped, uncapped (fewer parts per core)
            for tiles in (True, False) if LATENCY_TILES else (False,):
                for cap in (LATENCY_FLOOR_MAX, None) if LATENCY_FLOOR_MAX is not None else (None,):
                    try:
                        return replace(_compile_latency(main, tgt, target, fill, tiles, cap), schedule="latency")
                    except MeshFitError:
                        pass  # a core overflowed: an uncapped, untiled or emptier plan may fit
    errors: list[tuple[float, MeshFitError]] = []
    for fill in MEMORY_FILLS:
        if any(f < fill and e.reason == "memory" and e.lowered for f, e in errors):
            continue  # a stage of an emptier plan overflowed already
        try:
            comp = _compile_with_fill(main, tgt, target, placement, fill, check, _shares().get(schedule))
            return replace(comp, schedule="proportional") if schedule == "proportional" and check == "compile" \
                else comp
        except MeshFitError as e:
            errors.append((fill, e))
    # the closest miss that is a real excess (a planned part above the fill but
    # within the core is not): the fewest cores needed, else the fewest bytes
    raise min((e for _, e in errors), key=lambda e: (e.needed <= e.available, e.reason != "cores", e.needed))


def _shares() -> dict:
    from nnx.mesh.throughput import throughput_share

    return {"proportional": throughput_share}


def _check_weights(main: func.FuncOp, ncores: int, core_memory: int) -> None:
    """A MeshFitError "cores" when the weights alone (each constant once) exceed the
    mesh's memory: no plan can fit then. It names the op with the most weights."""
    from nnx.dialects.graph import ConstantOp
    from nnx.graph_queries import constant_op
    from nnx.mesh.partition import const_bytes

    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    consts = {id(c): nbytes(c.results[0]) for op in ops for v in op.operands if (c := constant_op(v)) is not None}
    total = sum(consts.values())
    if ops and total > ncores * core_memory:
        big = max(ops, key=const_bytes)
        raise MeshFitError("cores", op_label(big), -(-total // core_memory), ncores, big,
                           op_cores=-(-const_bytes(big) // core_memory), op_bytes=const_bytes(big),
                           core_memory=core_memory)


def _compile_with_fill(main: func.FuncOp, tgt, target: str, placement: str, fill: float,
                       check: str = "compile", share=None) -> MeshCompilation | MeshFit:
    """compile_for_mesh with one planned fill of the cores' memory."""
    width, height = tgt.mesh.width, tgt.mesh.height
    ncores, core_memory = width * height, tgt.mesh.core_memory_bytes
    returned = list(main.body.block.last_op.operands)
    out_names = [a.data["nnx.name"].data for a in main.res_attrs.data] if main.res_attrs else []

    measured: dict[tuple, list[int]] = {}

    def lowered_storage(plan: Plan) -> list[int]:
        """The storage bytes of each stage's program, lowered alone (`storage_estimate`),
        largest planned first, until one exceeds a core (the measured merge is then
        impossible). After `STORAGE_SAMPLE` stages the others are estimated from
        their planned bytes at the measured-to-planned ratio so far; when no merge
        of those estimates fits, the lowering stops there (the list holds the
        estimates). The "plan" check always stops there."""
        key = tuple(tuple(st.items) for st in plan.stages)
        if key not in measured:
            storage = [st.bytes for st in plan.stages]
            ios = stage_io(plan, returned, out_names)
            order = sorted(range(len(plan.stages)), key=lambda s: -plan.stages[s].bytes)
            got = planned = 0
            for n, s in enumerate(order, 1):
                planned += plan.stages[s].bytes
                storage[s] = storage_estimate(build_stage_module(plan, main, ios[s], s, returned)[0], target, tgt)
                got += storage[s]
                if storage[s] > core_memory:
                    break
                if n == STORAGE_SAMPLE and n < len(order):
                    ratio = got / max(1, planned)
                    guess = storage[:]
                    for t in order[n:]:
                        guess[t] = int(plan.stages[t].bytes * ratio)
                    est = replace(plan, stages=[replace(st, bytes=b) for st, b in zip(plan.stages, guess)])
                    recv = stage_receipts(plan, returned)
                    if check == "plan" or \
                            merge_stages(est, ncores, core_memory, stage_edges(plan, returned, recv), 1.0, recv) is None:
                        storage = guess
                        break
            measured[key] = storage
        return measured[key]

    for saving in MEASURED_SAVINGS:
        plan = plan_for_mesh(main, ncores, core_memory, fill, lowered_storage, saving, share)
        ios, modules, edges = _stage_modules(plan, main)
        # the stages most likely to overflow (the most planned bytes) first: a plan
        # that does not fit fails after a few lowerings
        lowered_stages, overflow = {}, None
        order = sorted(range(len(modules)), key=lambda s: -plan.stages[s].bytes)
        for s in order[:PLAN_CHECK_STAGES] if check == "plan" else order:
            prog = None if check in ("plan", "storage") else _lower_stage(modules[s][0], tgt, target)
            storage = storage_estimate(modules[s][0], target, tgt) if prog is None else prog.program.storage_bytes
            if storage > core_memory:
                big = _largest_op(plan, plan.stages[s], returned)
                overflow = MeshFitError("memory", op_label(big), storage, core_memory, big, lowered=True)
                break
            lowered_stages[s] = prog
        if overflow is None and check in ("plan", "storage"):
            return MeshFit(plan, fill)
        if overflow is None:
            progs = [lowered_stages[s] for s in range(len(modules))]
            break
        if not measured:  # not merged by measured storage: no smaller estimate to try
            raise overflow
    else:
        raise overflow
    n = len(plan.stages)
    if placement == "rowmajor":
        cores = place_rowmajor(n)
    elif placement == "bisect":
        cores = place_bisect(n, edges, width, height)
    else:
        cores = place_annotated([_annotated_core(plan, s) for s in plan.stages], width, height)
    return _assemble(plan, ios, progs, cores, edges, tgt, fill)


def _core_program(prog, io, cores: list[int]) -> CoreProgram:
    """The lowered stage `prog` of I/O `io` as a core of the mesh, its stages on `cores`."""
    from nnx.mesh.core_graph import piece_name

    recv = {piece_name(pc): cores[src] for pc, src in io.recv.items()}
    send = {piece_name(pc): [cores[d] for d in dsts] for pc, dsts in io.send.items()}
    return CoreProgram(prog.program, prog.data, recv, send, io.slices, getattr(prog, "first_use", {}),
                       getattr(prog, "joined", False), getattr(prog, "op_positions", {}))


def _assemble(plan: Plan, ios, progs, cores: list[int], edges: dict[tuple[int, int], int], tgt,
              fill: float) -> MeshCompilation:
    """The mesh program of the lowered stages `progs`, stage s on core `cores[s]`."""
    lowered = {cores[s]: _core_program(prog, ios[s], cores) for s, prog in enumerate(progs)}
    mp, data = mesh_program(lowered, tgt.mesh.width, tgt.mesh.height, tgt.name, "prog.data")
    return MeshCompilation(mp, data, cores, plan, byte_hops(cores, edges, tgt.mesh.width), edges, fill)


def _stage_modules(plan: Plan, main: func.FuncOp):
    """Each stage's I/O and its module (core_graph.build_stage_module), and the stage
    graph: (source, destination) -> bytes sent."""
    ios = _stage_ios(plan, main)
    returned = list(main.body.block.last_op.operands)
    modules = [build_stage_module(plan, main, ios[s.index], s.index, returned) for s in plan.stages]
    return ios, modules, _stage_edges(ios, [_piece_bytes(mod, names) for mod, names, _ in modules])


def _stage_ios(plan: Plan, main: func.FuncOp):
    """Each stage's I/O (core_graph.stage_io)."""
    returned = list(main.body.block.last_op.operands)
    out_names = [a.data["nnx.name"].data for a in main.res_attrs.data] if main.res_attrs else []
    if any(v.owner not in plan.ops for v in returned):
        raise PassError("lower-to-mesh: a graph output that is an input or a constant is not supported")
    return stage_io(plan, returned, out_names)


def _piece_bytes(mod: ModuleOp, arg_names: list[str]) -> dict[str, int]:
    """The bytes of each argument of a stage's module, by name."""
    return {n: nbytes(a) for n, a in zip(arg_names, main_function(mod).body.block.args)}


def _stage_edges(ios, piece_bytes: list[dict[str, int]]) -> dict[tuple[int, int], int]:
    """The stage graph, (source, destination) -> bytes sent, from each stage's
    argument bytes (`_piece_bytes`)."""
    from nnx.mesh.core_graph import piece_name

    edges: dict[tuple[int, int], int] = {}
    for s, sizes in enumerate(piece_bytes):
        for pc, src in ios[s].recv.items():
            edges[(src, s)] = edges.get((src, s), 0) + sizes[piece_name(pc)]
    return edges


def _compile_latency(main: func.FuncOp, tgt, target: str, fill: float, tiles: bool = True,
                     floor_max: float | None = None) -> MeshCompilation:
    """The `latency` schedule (nnx/mesh/latency.py) with one planned fill: every op
    split over the cores its work can use, the parts folded onto the cores, each
    core's program lowered in graph order (`_lower_in_order`); `tiles`: convs tiled
    where the cost model finds it faster (`latency.latency_tiles`); `floor_max`: the
    part floor's cap (`latency.LATENCY_FLOOR_MAX`, None: none). Raises
    MeshFitError (`lowered`) when a core's program overflows."""
    from nnx.dialects.graph import ConstantOp
    from nnx.mesh.core_memory import part_memories, replication_caps, stage_memories
    from nnx.mesh.latency import fold, latency_share, latency_shares

    width, height = tgt.mesh.width, tgt.mesh.height
    ncores, core_memory = width * height, tgt.mesh.core_memory_bytes
    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    returned = list(main.body.block.last_op.operands)
    share = latency_shares(ops, tgt, LATENCY_WEIGHT_FILL, tiles, floor_max) if LATENCY_COST_MODEL else latency_share
    if LATENCY_WEIGHT_FILL is not None and LATENCY_COST_MODEL:
        share = replication_caps(ops, share, tgt, LATENCY_WEIGHT_FILL * ncores * core_memory)
    plan = plan_partition(ops, ncores, core_memory, 1.0, fill, returned, share, windows=True)
    folded, cores = fold(plan, width, height, core_memory * fill)
    if LATENCY_FOLD_MEMORY != "planned":
        memory = part_memories(plan, returned)
        if LATENCY_FOLD_MEMORY == "live" or \
                max(c.total() for c in stage_memories(folded, memory)) > core_memory * fill:
            live, live_cores = fold(plan, width, height, core_memory * fill, memory)
            try:
                return _lower_in_order(live, live_cores, main, tgt, target, fill, LATENCY_IN_PLACE, stitch.SEND_ON_WRITING_UNIT)
            except MeshFitError:
                if LATENCY_FOLD_MEMORY == "live":
                    raise  # else the planned fold, which may still fit
    return _lower_in_order(folded, cores, main, tgt, target, fill, LATENCY_IN_PLACE, stitch.SEND_ON_WRITING_UNIT)


#: the fractions of a core's memory the throughput schedule's search plans with, in
#: turn (nnx/mesh/pipeline_search.py, `group_memory`), while a core's lowered
#: program overflows: the memory model counts the activations the lowering keeps
#: live, so the first plan leaves only the lowering's alignment and small buffers
PIPELINE_FILLS = (0.9, MEMORY_FILL, 0.45)

#: the fill the partitioner plans the pipeline's parts with: the search has chosen
#: them by its memory model already, so the partitioner's own margins (which would
#: cut an op into more parts than its group has cores) are not applied twice
PIPELINE_PARTITION_FILL = 0.9


#: route results read two or more groups later through the groups in between
#: (nnx/mesh/pipeline.py, `forward_skips`)
FORWARD_SKIPS = True

#: searches again, after a core's lowered program overflowed, with its group's
#: layers holding more (`Layer.held`)
PIPELINE_RETRIES = 8


def _compile_pipeline(main: func.FuncOp, tgt, target: str, fill: float) -> MeshCompilation:
    """The `throughput` schedule (nnx/mesh/pipeline.py) with one planned fill: the
    layer groups and core counts of the pipeline search, each op split over its
    group's cores, the parts placed group by group, each core's program lowered
    in graph order. When a core's lowered program overflows, the search runs again
    with the layers of that core's group holding needed / available x 1.1 more
    bytes (at most PIPELINE_RETRIES times). Raises MeshFitError when no pipeline or
    no core's program fits."""
    from nnx.dialects.graph import ConstantOp
    from nnx.mesh.pipeline import (PIPELINE_IN_PLACE, forward_skips, layers_of, machine_of, pipeline_shares,
                                   place_pipeline)
    from nnx.mesh.pipeline_search import best_pipeline

    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    returned = list(main.body.block.last_op.operands)
    machine = machine_of(tgt, fill, PIPELINE_PARTITION_FILL)
    layers = layers_of(ops, tgt)
    for attempt in range(PIPELINE_RETRIES + 1):
        try:
            pipe = searched = best_pipeline(layers, machine)
        except ValueError:
            raise MeshFitError("memory", op_label(ops[0]), 0, tgt.mesh.core_memory_bytes, ops[0]) from None
        work, work_ops = main, ops
        if FORWARD_SKIPS:  # on a copy of @main: a failed plan leaves the graph as it was
            work = main.clone()
            clone_ops = [op for op in work.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
            work_ops, pipe = forward_skips(work.body.block, clone_ops, pipe)
        plan = plan_partition(work_ops, machine.ncores, tgt.mesh.core_memory_bytes, 1.0, PIPELINE_PARTITION_FILL,
                              list(work.body.block.last_op.operands), pipeline_shares(pipe), windows=True)
        plan, cores = place_pipeline(plan, pipe, tgt.mesh.width, tgt.mesh.height,
                                     list(work.body.block.last_op.operands))
        try:
            return replace(_lower_in_order(plan, cores, work, tgt, target, fill, PIPELINE_IN_PLACE), pipeline=pipe)
        except MeshFitError as e:
            i = next((j for j, op in enumerate(work_ops) if op is e.op), None)
            if not e.lowered or i is None or attempt == PIPELINE_RETRIES:
                raise
            # the lowering has the last word: the overflowing group's layers hold more
            # (group g of the forwarded pipeline is group g of the searched one)
            g = next(g for g, (a, b, _) in enumerate(pipe.groups) if a <= i < b)
            a, b, _ = searched.groups[g]
            grow = 1.1 * e.needed / e.available
            layers = [replace(x, held=x.held * grow) if a <= j < b else x for j, x in enumerate(layers)]
    raise AssertionError("unreachable")


def _lower_in_order(plan: Plan, cores: list[int], main: func.FuncOp, tgt, target: str,
                    fill: float, concat_in_place: bool = False, sends_on_writer: bool = False) -> MeshCompilation:
    """The mesh program of a plan placed on `cores` whose every core runs its items in
    graph order (the latency and throughput schedules): each core's program lowered
    without list scheduling (its messages must follow the one global order), its
    memory reused as far as it must to fit (docs/mesh.md, "Memory reuse"), the cores
    side by side (nnx/mesh/core_lowering.py), those most likely to overflow first so
    that a plan that does not fit fails early; with `concat_in_place`, received pieces
    are written into the buffer of the value they make up (chip-lower's option);
    with `sends_on_writer`, a SEND goes on the DMA queue that wrote its tile
    (`stitch.add_messages`: for one inference; in a stream a SEND may wait for its
    receiver's free buffer, and the pipeline keeps its SENDs on one queue).
    Raises MeshFitError (`lowered`) when a core's program overflows even so."""
    from nnx.mesh.core_graph import piece_name
    from nnx.mesh.core_lowering import lower_cores

    core_memory = tgt.mesh.core_memory_bytes
    returned = list(main.body.block.last_op.operands)
    ios = _stage_ios(plan, main)
    progs = {}

    def job(s: int):
        """Stage s's module built and lowered (where the lowering runs: in parallel)."""
        mod, names, _ = build_stage_module(plan, main, ios[s], plan.stages[s].index, returned)
        prog = _lower_stage(mod, tgt, target, False, core_memory, tuple(piece_name(pc) for pc in ios[s].recv),
                            concat_in_place)
        prog.piece_bytes = _piece_bytes(mod, names)
        return prog

    def join(s: int, prog):
        """The NoC messages added where the program was lowered (in parallel)."""
        if prog.program.storage_bytes <= core_memory:
            prog.program = add_messages(_core_program(prog, ios[s], cores), sends_on_writer)
            prog.joined = True
        return prog

    n = len(plan.stages)
    for s, prog in lower_cores([job] * n, sorted(range(n), key=lambda s: -plan.stages[s].bytes), finish=join):
        if prog.program.storage_bytes > core_memory:
            big = _largest_op(plan, plan.stages[s], returned)
            raise MeshFitError("memory", op_label(big), prog.program.storage_bytes, core_memory, big, lowered=True)
        progs[s] = prog
    edges = _stage_edges(ios, [progs[s].piece_bytes for s in range(n)])
    return _assemble(plan, ios, [progs[s] for s in range(n)], cores, edges, tgt, fill)


def storage_estimate(mod: ModuleOp, target: str, tgt) -> int:
    """The storage bytes of a stage's module (changed in place) after `chip-lower`
    without list scheduling and `chip-allocate`: a fifth of the work of
    `_lower_stage` (which also lowers it scheduled, keeps the faster program and
    synchronises it). What the fit checks and the measured stage merge plan with;
    a stage's final lowering checks its real storage (`_compile_with_fill`).
    Remembered by the module's structure (`stage_key`): the fit checks of
    overlapping subgraphs meet the same stages again (`tgt`, the loaded target, is
    part of the key; a module with sparse ops, whose storage depends on its weights'
    values, is not remembered)."""
    from nnx.api import run_pipeline
    from nnx.passes.chip_allocate import chip_programs

    structure = stage_key(mod)
    key = (tgt, structure)
    if structure is not None and key in _STORAGE:
        return _STORAGE[key]
    run_pipeline(mod, f'builtin.module(chip-lower{{target="{target}" schedule=false}},chip-allocate)',
                 verify_each=False)
    storage = chip_programs("lower-to-mesh", mod)[0].storage_bytes.value.data
    if structure is not None:
        if len(_STORAGE) > STORAGE_MEMO_SIZE:
            _STORAGE.clear()
        _STORAGE[key] = storage
    return storage


#: storage_estimate's memo: (Target, stage_key) -> bytes
_STORAGE: dict[tuple, int] = {}
STORAGE_MEMO_SIZE = 50_000


def stage_key(mod: ModuleOp) -> tuple | None:
    """A structural key of a module for the storage memo: every op's name,
    attributes, properties, operand numbers and result types, in walk order. A
    constant counts by its type, not its values (a dense constant's storage does not
    depend on them), and a function by its type, not its symbol or argument names
    (the names of a stage's pieces depend on where its subgraph starts). None for a
    module with sparse ops."""
    from nnx.dialects.graph import ConstantOp

    number: dict = {}
    key: list = []
    for op in mod.walk():
        if op.dialect_name() == "sparse":
            return None
        if isinstance(op, ConstantOp):
            props: tuple = (str(op.value.get_type()),)
        elif isinstance(op, func.FuncOp):
            props = (str(op.function_type),)
        else:
            props = tuple(sorted((k, str(v)) for k, v in op.properties.items()))
        attrs = tuple(sorted((k, str(v)) for k, v in op.attributes.items()))
        key.append((op.name, attrs, props, tuple(number.get(v, -1) for v in op.operands),
                    tuple(str(r.type) for r in op.results)))
        for r in op.results:
            number[r] = len(number)
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    number[a] = len(number)
    return tuple(key)


def _lower_stage(mod: ModuleOp, tgt, target: str, schedule: bool = True, reuse: int = 0,
                 received: tuple[str, ...] = (), concat_in_place: bool = False):
    """A stage's module lowered by the single-core chip passes into its program
    (`schedule=False`: in the emitted op-by-op order, no list scheduling; `reuse`
    bytes: its intermediate buffers and `received` inputs (the messages it
    receives) share memory over time to stay within them; the program then carries
    `first_use`, received input -> position of the first instruction using it;
    `concat_in_place`: received pieces written into the value they make up, no concat
    copy, docs/mesh.md "Received pieces in place")."""
    from nnx.ir_io import make_context
    from nnx.passes.lower_to_chip import LowerToChipPass

    return LowerToChipPass(target=target, schedule=schedule, reuse=bool(reuse), reuse_limit=reuse,
                           reuse_inputs=tuple(received), concat_in_place=concat_in_place).program(
        make_context(), mod, tgt, "core.s")


def _largest_op(plan: Plan, stage: Stage, returned: list):
    """The op of the stage with the most bytes (weights and results): the one to
    name when the stage does not fit its core (a stage assembling a split graph
    output names the op producing it)."""
    from nnx.mesh.partition import const_bytes

    ops = [returned[k].owner if i == RETURN else plan.ops[i] for i, k in stage.items]
    return max(ops, key=lambda op: const_bytes(op) + sum(nbytes(r) for r in op.results))


def _annotated_core(plan: Plan, stage: Stage) -> int | None:
    """The core `neuron-group-map` chose for the stage's first op part (`nnx.cores`)."""
    i, part = stage.items[0]
    if i == RETURN:
        return None
    attr = plan.ops[i].attributes.get("nnx.cores")
    if attr is None:
        return None
    cores = list(attr.get_values())
    return int(cores[(part or 0) % len(cores)]) if cores else None
