"""The `pipeline` schedule (docs/mesh.md, "Schedules"): a stream of inputs through a
layer pipeline whose groups of consecutive layers and core counts the search of
nnx/mesh/pipeline_search.py balances.

* `layers_of(ops, target)`: the search's plain data for each op, by the target's
  cost definitions (`graph_costs.op_unit_cycles`) and the partitioner's byte and
  split rules (nnx/mesh/partition.py, nnx/mesh/rows.py);
* `pipeline_shares(pipe)`: the parts of every op, which the partitioner takes as
  its compute share (`plan_partition(..., share=[...])`; its memory and row rules
  may still ask for more);
* `place_pipeline(plan, pipe, width, height, returned)`: `place_groups` along
  the paths of PIPELINE_BANDS, the one with the least loaded busiest link taken;
* `place_groups(plan, pipe, width, height, band)`: the plan's parts onto the
  cores, group g on its own run of positions of a path through the mesh in bands
  of `band` rows (nnx/mesh/placement.py, `band_snake`: a run is a block whose
  boundary with the next run is `band` links wide), part j of an op of k
  parts at position `j x n / k` of its group's n, so that the layers of a group
  cut alike sit part for part on the same cores (row splits then exchange only
  halo rows with neighbours) and consecutive groups are neighbours.

Each core then runs its parts in graph order, lowered without list scheduling, as
the latency schedule does (its deadlock-freedom argument holds unchanged); with
`nnx-run --stream N` a group works on input k + 1 while the next works on input k,
every receive buffer holding two inputs.
"""

from __future__ import annotations

from dataclasses import replace

from xdsl.ir import Operation

from nnx.mesh.partition import RETURN, Plan, const_bytes, nbytes, shape, split_axis
from nnx.mesh.pipeline_search import Layer, Machine, Pipeline


def layer_of(op: Operation, target) -> Layer:
    """The search's view of one op (pipeline_search.Layer): its one-core cycles by the
    target's cost definitions, bytes, and how the partitioner would split it."""
    from nnx.graph_costs import op_unit_cycles
    from nnx.mesh.partition import act_operands
    from nnx.mesh.rows import ROW_AXIS, can_split_rows, row_window, windowed_operands

    _, cycles = op_unit_cycles(target, op)
    w = const_bytes(op)
    ins = sum(nbytes(v) for v in act_operands(op))
    outs = sum(nbytes(r) for r in op.results)
    parts, by_rows = 1, False
    if can_split_rows(op) and sum(nbytes(op.operands[k]) for k in windowed_operands(op)) >= w:
        out = op.results[0].type.get_shape()
        by_rows, parts = True, int(out[ROW_AXIS] if len(out) == 4 else out[-2] if len(out) >= 2 else 1)

    elif (ax := split_axis(op)) is not None and ax[2] == "concat":
        parts = int(ax[1])
    # a band of output rows reads other input rows than its own (kernel or stride)
    halo = by_rows and len(out) == 4 and parts > 1 and row_window(op, 1, 2)[:2] != (1, 2)
    return Layer(float(cycles), w, ins, outs, parts, by_rows, halo=halo)


#: an op that cannot split on its own follows the pieces of a layer before it cut
#: by channels only where the partitioner lets it (`partition.can_follow`, every
#: activation operand cut alike); else it runs whole on one core, and the search
#: counts it whole (docs/mesh.md, "Schedules": a transformer's LayerNorm, the
#: residual add reading a whole value). After a row split the first rule stays (a
#: CNN's global pool, which the partitioner runs whole, planned on the rows' cores:
#: counted whole, SqueezeNet's 676 KB pool bounded the search's stages at its
#: input's link time and the lowered pipeline streamed at 31,922 cycles against
#: 20,220). False: every such op follows the layer before (the first rule, which
#: planned BERT's LayerNorms as split over their group's cores)
FOLLOW_AS_PARTITIONED = True


#: a row view (reshape, transpose: nnx/mesh/rows.py) counts the rows of the
#: output axis its input's row axis maps to, which the partitioner splits
#: (`rows.mapped_row_axis`). False: the first rule, the view's own row axis (BERT's
#: head transposes: 12 heads or 64 columns where the partitioner cuts 128 rows, so
#: a view's parts read pieces of other cores, and a received piece a view sends on
#: deadlocked the stream)
ROW_VIEWS_MAPPED = True


def _view_row_axis(op: Operation, in_axis: int | None) -> int | None:
    """The output axis a row view's input row axis maps to (`in_axis`: the
    producer's row split axis, else the input's default row axis, as the
    partitioner takes it), or None (not a row view, or no such axis)."""
    from nnx.mesh.rows import default_row_axis, is_row_view, mapped_row_axis

    if not is_row_view(op):
        return None
    axis = default_row_axis(op.operands[0]) if in_axis is None else in_axis
    return None if axis is None else mapped_row_axis(op, axis)


def layers_of(ops: list[Operation], target) -> list[Layer]:
    """`layer_of` for every op, in order, with its operands' producers; an op that the partitioner would run on
    the pieces of the op before it (not a matrix op, an activation operand that
    op's result, not split by channels of its own) `joins` its group. With
    FOLLOW_AS_PARTITIONED, an op that cannot split on its own joins only where
    the partitioner would run it on those pieces (`follows`), else it is whole."""
    from dataclasses import replace as with_

    from nnx.dialects.traits import MatrixCompute
    from nnx.mesh.partition import act_operands

    out: list[Layer] = []
    cuts: list[tuple | None] = []  # per layer: how its result is cut (`follows`), None: whole
    index = {id(op): i for i, op in enumerate(ops)}
    for i, op in enumerate(ops):
        x = layer_of(op, target)
        acts = act_operands(op)
        x = with_(x, operands=tuple((index.get(id(v.owner), -1), nbytes(v)) for v in acts))
        if ROW_VIEWS_MAPPED and x.by_rows and acts:
            src = cuts[index[id(acts[0].owner)]] if id(acts[0].owner) in index else None
            axis = _view_row_axis(op, src[0] if src is not None and src[2] else None)
            if axis is not None:  # a row view: split where its input's rows map
                x = with_(x, max_parts=int(shape(op.results[0])[axis]))
        cut = _own_cut(op, x)
        if i > 0 and any(v.owner is ops[i - 1] for v in acts) and not op.has_trait(MatrixCompute) \
                and split_axis(op) is None:
            if x.max_parts > 1 or not FOLLOW_AS_PARTITIONED or out[-1].by_rows:
                x = with_(x, joins=True)
                if x.max_parts == 1:  # it follows the pieces of the layer before
                    x = with_(x, max_parts=out[-1].max_parts, by_rows=out[-1].by_rows)
            else:
                cut = follows(op, [cuts[index[id(v.owner)]] if id(v.owner) in index else None for v in acts])
                if cut is not None:  # on the pieces of the layer before
                    x = with_(x, joins=True, max_parts=out[-1].max_parts, by_rows=out[-1].by_rows)
        cuts.append(cut)
        out.append(x)
    return out


def _own_cut(op: Operation, x: Layer) -> tuple | None:
    """How the partitioner cuts an op's result when it splits the op on its own
    (axis, size, by rows, the op), None when whole (`Layer.max_parts` 1). Two
    values are cut alike only when cut by the same op: the pipeline's groups give
    different ops different parts, whose bounds then differ."""
    from nnx.mesh.rows import ROW_AXIS

    if x.max_parts <= 1:
        return None
    ax = split_axis(op)
    axis = ROW_AXIS if x.by_rows or ax is None else ax[0]
    if x.by_rows and ROW_VIEWS_MAPPED:  # a row view: the output axis of max_parts rows
        out = shape(op.results[0])
        axis = next((a for a in range(len(out)) if a == ROW_AXIS and out[a] == x.max_parts),
                    next((a for a in range(len(out)) if out[a] == x.max_parts), axis))
    return (axis, x.max_parts, x.by_rows, id(op))


def follows(op: Operation, cuts: list[tuple | None]) -> tuple | None:
    """The cut of op's result when the partitioner runs it on the pieces of its
    activation operands (cut as `cuts`: every one cut, and alike, and
    `partition.can_follow` for that cut), else None (it runs whole)."""
    from nnx.mesh.partition import Split, act_operands, bounds_of, can_follow, shape

    if not cuts or cuts[0] is None or any(c != cuts[0] for c in cuts):
        return None
    axis, size, rows, _ = cuts[0]
    sp = Split(axis, bounds_of(size, min(2, size)), rows=rows)
    return cuts[0] if can_follow(op, sp, shape(act_operands(op)[0])) else None


#: the pipeline's cores write received pieces into the value they make up (no
#: concat copy; docs/mesh.md, "Received pieces in place"). A core runs one inference
#: at a time, so a piece's place in its value is that inference's. False: the copy
PIPELINE_IN_PLACE = True


#: the search counts the input of a channel split whose parts cannot hold it whole
#: as the range of the 2-D split the partitioner then makes (`Machine.split_budget`,
#: `pipeline_search.block_cut`), not as 1/k of it. Off by default (the first rule:
#: 1/k whenever the input is more than half the search's budget): BERT's pipeline
#: is the same with it, ResNet-50's (its 1.6 MB-input downsampling conv) streams
#: slower, 153,116 against 145,831 cycles per inference (bench/RESULTS.md, "BERT
#: pipelined")
INPUT_AS_PARTITIONED = False


def machine_of(target, fill: float, split_fill: float = 0.0) -> Machine:
    """The search's view of a mesh target, planning `fill` of each core's memory;
    `split_fill`, the fill the partitioner plans the parts with (with
    INPUT_AS_PARTITIONED)."""
    m = target.mesh
    split = m.core_memory_bytes * split_fill if INPUT_AS_PARTITIONED else 0.0
    return Machine(m.width * m.height, m.core_memory_bytes * fill, float(m.noc.link_bytes_per_cycle),
                   float(target.storage.dma_bytes_per_cycle), concat_copy=not PIPELINE_IN_PLACE,
                   split_budget=split)


def pipeline_shares(pipe: Pipeline) -> list[int]:
    """The parts the pipeline gives each op: the partitioner's per-op share."""
    return list(pipe.parts)


#: a stage of whole ops that the partitioner packed across the pipeline's groups
#: is placed group by group, each group's ops on a core of that group. False: the
#: first rule, the stage on one core of its first op's group, which then ran later
#: groups' ops (BERT's residual values forwarded through six groups stayed on the
#: LayerNorm's core, their messages skipped those groups, and the stream stalled
#: every third inference)
WHOLE_STAGES_BY_GROUP = True

#: the heights (rows) of the bands of the paths through the mesh the pipeline's
#: groups are placed along (placement.band_snake), the one whose busiest link
#: carries the fewest bytes taken (`place_pipeline`). On targets/mesh.toml the
#: busiest link of ResNet-50 carried 119,168 cycles of messages per inference with
#: band 1 (a row snake), 69,888 with 4; ResNet-18 streams faster with band 1
PIPELINE_BANDS = (1, 2, 4)


def place_pipeline(plan: Plan, pipe: Pipeline, width: int, height: int,
                   returned: list) -> tuple[Plan, list[int]]:
    """`place_groups` along the path of each of PIPELINE_BANDS, the placement whose
    busiest link carries the fewest bytes (`placement.busiest_link`; each piece a
    stage receives sent once to all the stages receiving it) taken."""
    from nnx.mesh.placement import busiest_link
    from nnx.mesh.stage_merge import stage_receipts

    best = None
    for band in PIPELINE_BANDS:
        placed, cores = place_groups(plan, pipe, width, height, band)
        sends: dict[tuple, tuple[int, list[int], int]] = {}
        for s, recv in enumerate(stage_receipts(placed, returned)):
            for pc, (nb, src) in recv.items():
                sends.setdefault((src, pc), (src, [], nb))[1].append(s)
        load = busiest_link(cores, list(sends.values()), width)
        if best is None or load < best[0]:
            best = (load, placed, cores)
    return best[1], best[2]


def place_groups(plan: Plan, pipe: Pipeline, width: int, height: int, band: int = 1) -> tuple[Plan, list[int]]:
    """The plan's parts on the cores by the pipeline's groups (module docstring): a
    plan with one stage per used core, its items in graph order, and each stage's
    core. A part takes the first position of its group's run, from its wanted one,
    that holds no other part of its op (the search has checked that the group's
    cores hold its layers: the planned bytes, which count every value of a core
    for the whole program, would scatter the parts that memory reuse lets share a
    core, and cut alike layers apart); a stage of whole ops stays together on the position of the
    whole op its first op reads in the same group (so a view, whose result is its
    input's tile, is never sent before it is received: a deadlock), else on the
    least loaded position of its first op's group (with WHOLE_STAGES_BY_GROUP, each
    group's ops of a stage the partitioner packed across groups on their own
    group's cores); an assembled graph output goes with its producer's group."""
    from nnx.mesh.latency import part_ranks, plan_on_slots
    from nnx.mesh.placement import band_snake

    path = band_snake(width, height, band)
    index = {id(op): i for i, op in enumerate(plan.ops)}
    group_of, start = {}, []
    pos = 0
    for g, (a, b, n) in enumerate(pipe.groups):
        start.append(pos)
        for i in range(a, b):
            group_of[i] = g
        pos += n
    parts, rank = part_ranks(plan)
    load = [0.0] * len(path)
    held: list[set[int]] = [set() for _ in path]
    slot_of: dict[tuple[int, int | None], int] = {}

    def group_slots(i: int) -> list[int]:
        g = group_of[i]
        return list(range(start[g], start[g] + pipe.groups[g][2]))

    def group_of_item(it) -> int:
        i, part = it
        return group_of[plan.ops.index(_returned_owner(plan, part)) if i == RETURN else i]

    for s in plan.stages:
        if s.split:
            units = [([it], s.bytes / len(s.items)) for it in s.items]
        elif WHOLE_STAGES_BY_GROUP:  # the whole ops the partitioner packed, group by group
            by_group: dict[int, list] = {}
            for it in s.items:
                by_group.setdefault(group_of_item(it), []).append(it)
            units = [(its, s.bytes * len(its) / len(s.items)) for its in by_group.values()]
        else:
            units = [(list(s.items), float(s.bytes))]
        for items, nb in units:
            i, part = items[0]
            if i == RETURN:  # an assembled output: with the op producing it
                i = plan.ops.index(_returned_owner(plan, part))
            slots = group_slots(i)
            if len(items) == 1 and items[0][0] != RETURN and len(parts[i]) > 1:
                k = len(parts[i])
                want = rank[i][part or 0] * len(slots) // k
                order = slots[want:] + slots[:want]
                slot = next((t for t in order if i not in held[t]), order[0])
            else:  # with the whole op it reads in its group (a view's result is its input's tile), else least loaded
                src = [slot_of[(q, None)] for v in plan.ops[i].operands if (q := index.get(id(v.owner))) is not None
                       and (q, None) in slot_of and group_of.get(q) == group_of[i]]
                slot = src[0] if src else min(slots, key=lambda t: load[t])
            load[slot] += nb
            held[slot].add(i)
            for it in items:
                slot_of[it] = slot
    return plan_on_slots(plan, slot_of, path)


def _returned_owner(plan: Plan, k: int) -> Operation:
    """The op producing graph output k (an assembled split output's RETURN item)."""
    from xdsl.dialects import func

    block = plan.ops[0].parent_block()
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    return ret.operands[k].owner


def forward_skips(block, ops: list[Operation], pipe: Pipeline) -> tuple[list[Operation], Pipeline]:
    """Route every result read two or more groups after its producer's through each
    group in between (docs/mesh.md, "Schedules": under double buffering a message
    that skips a stage lets that stage's producer run only one inference ahead of
    its reader): a copy of the value (`graph.max(v, v)`, elementwise, so it runs on
    the value's pieces) is inserted at the end of each group in between, and the
    reader reads the last copy. Changes `block` (a clone of @main's); returns the
    new op list and the pipeline over it (each copy with its value's parts)."""
    from nnx.dialects.graph import MaxOp

    index = {id(op): i for i, op in enumerate(ops)}
    group_of = {i: g for g, (a, b, _) in enumerate(pipe.groups) for i in range(a, b)}
    after: dict[int, list[Operation]] = {}  # group -> copies appended to it
    copies: dict[tuple[int, int], Operation] = {}  # (value's producer, group) -> its copy there
    part_of: dict[int, int] = {}  # id(copy) -> parts
    for i, op in enumerate(ops):
        for n, v in enumerate(op.operands):
            p = index.get(id(v.owner))
            if p is None or group_of[i] - group_of[p] < 2:
                continue
            cur = v
            for g in range(group_of[p] + 1, group_of[i]):
                key = (p, g) if cur is v or (p, g - 1) in copies else (p, g)
                if key not in copies:
                    cp = MaxOp.build(operands=[[cur, cur], []], result_types=[cur.type])
                    copies[key] = cp
                    after.setdefault(g, []).append(cp)
                    part_of[id(cp)] = pipe.parts[p]
                cur = copies[key].results[0]
            op.operands[n] = cur
    if not copies:
        return ops, pipe
    new_ops: list[Operation] = []
    parts: list[int] = []
    groups = []
    for g, (a, b, n) in enumerate(pipe.groups):
        start = len(new_ops)
        for i in range(a, b):
            new_ops.append(ops[i])
            parts.append(pipe.parts[i])
        for cp in after.get(g, ()):
            block.insert_op_after(cp, new_ops[-1])
            new_ops.append(cp)
            parts.append(part_of[id(cp)])
        groups.append((start, len(new_ops), n))
    return new_ops, Pipeline(tuple(groups), tuple(parts), pipe.stage_times)
