"""The latency schedule (docs/mesh.md, "Schedules"): one input through the mesh as
fast as its layers allow.

Today's schedule (`stages`, nnx/mesh/compile.py) gives every op part a core of its
own for the whole program, so an op gets the cores its share of the model's work
buys and, with one input, the cores of one layer work while the rest wait. Here
every op is split over as many cores as its own work can use (`latency_shares`,
the cost model below; the first rule, `latency_share`, at least
LATENCY_PART_COST MACs or elements per part, stays selectable) by the
partitioner's rules (nnx/mesh/partition.py: rows where activations outweigh
weights, output channels, reduction or 2-D splits where they do not), and the
parts are *folded* onto the cores (`fold`): each core then holds weight slices of
many layers and runs its parts layer after layer, in graph order.

Folding puts part j of an op's k parts on the core at position
`offset + j * n / k` of a snake through the mesh (consecutive positions are
neighbours), n the cores: two row-split layers cut alike land part for part on the
same cores, so they exchange only halo rows between neighbours; a part of different
k reads the band of its neighbours'. A row split, a tile split (its part b c + j:
band b's c parts side by side, the bands along the snake) or a follower inherits the
offset of the producer it reads; other ops start where the last one ended, so small ops do not
all pile on one core. A core that the planned bytes of its parts would overflow
passes the part on to the next position; or, with a live-range estimate of what
each core keeps with memory reuse (nnx/mesh/core_memory.py), a core that estimate
says would overflow (the lowered programs' storage has the last word).

The core graph is cyclic (core a sends to b for one layer and b to a for the next),
which today's acyclic stage merging forbids; every core instead runs its parts in
one global order (graph order) and its program is lowered without list scheduling,
so its NoC instructions follow that order: a RECV of layer i waits only on SENDs of
layers before i, which no RECV of a later layer blocks, and a SEND never waits, so
no run can deadlock (by induction on the layer).

Cost model (`latency_shares`): an op of one-core cycles T (compute, or its bytes
over the core's memory bandwidth) on k parts takes about T / k, plus, split by
channels, the time its whole input takes over a link (every part receives all of
it); the layers add. The part floor grows with the graph's work over the mesh
(LATENCY_PARTS_PER_CORE), which keeps the pieces exchanged, and the size of the
core programs (the compile time), proportional to the mesh rather than the model.
A core receives a value's pieces straight into the value's memory (chip-lower's
`concat_in_place`), so a channel split's input costs no copy on top of its
transfer (docs/mesh.md, "Received pieces in place"). Where cutting a conv into row
bands x output-channel groups at once is faster by the same model, it is tiled
(`latency_tiles`, nnx/mesh/tile_splits.py; docs/mesh.md, "Tiles"): each part then
receives about its band of the input, not all of it; where cutting an op split by
output channels also along the input channels it sums over is faster (a 2-D split,
`latency_blocks`), each part receives 1/ki of its input.
"""

from __future__ import annotations

from dataclasses import replace

from nnx.mesh.partition import RETURN, Plan, Stage

#: the least work (MACs, or output elements) a part of an op gets under the latency
#: schedule: 256 cycles of a 256-MAC/cycle MPU, about what sending a part its
#: inputs costs on a 32-byte/cycle link
LATENCY_PART_COST = float(1 << 16)


def latency_share(cost: float, total: float, ncores: int, pack: float) -> int:
    """Parts an op of `cost` asks for under the latency schedule: as many as its work
    can use, up to the whole mesh (`total`, the graph's work, plays no part: layers
    run one after another)."""
    return min(ncores, int(cost // (LATENCY_PART_COST * pack)))


#: the least one-core cycles (graph_costs.op_unit_cycles: the MPU's or VPU's
#: cycles, or the op's bytes over the core's memory bandwidth where that is more)
#: a part of an op gets under the latency schedule's cost model (`latency_shares`):
#: 256 cycles, about what sending a part its inputs costs
LATENCY_PART_CYCLES = 256

#: parts per core the latency schedule's cost model aims at over the whole graph:
#: the part floor rises to the graph's one-core cycles / (cores x this), so that
#: the pieces exchanged (and the core programs' size: compile time) scale with
#: the mesh, not with the model's work
LATENCY_PARTS_PER_CORE = 8.0

#: the most the part floor may rise to (one-core cycles); None: no cap (the first
#: rule). The layers run one after another, so every layer of work above the floor
#: takes at least the floor, and a deep model pays it once per layer (ResNet-50's
#: floor, 8,390 cycles, over its 53 convs). At 3,600 (just above ResNet-18's 3,588,
#: whose plan and compile time stay as they were; MobileNetV2's is 842) ResNet-50
#: runs in 9.4x its MAC bound where it took 12.0x (with LATENCY_BLOCKS off),
#: DenseNet-121 (light zoo) in 1,776,021 cycles where it took 1,933,960, the 2-layer
#: BERT (floor 4,105) in 617,832 where it took 662,041, for more compile time
#: (ResNet-50 114 s on an idle machine, 117 s for 685c1ab's `stages`; 42 s
#: uncapped). Its capped plan first deadlocked the
#: BERT in the simulator: pieces passed on through views, now in order
#: (stitch.PASS_ON_IN_ORDER; bench/RESULTS.md, "Latency schedule: the part floor capped").
#: A capped plan that does not fit is planned uncapped (compile.compile_for_mesh):
#: on 8 x 8 cores ResNet-18's floor, 14,352, capped gives 32 parts per core, which
#: do not fit its 128 MiB
LATENCY_FLOOR_MAX: float | None = 3600.0

#: the part floor is at most the median one-core cycles of the graph's matrix ops
#: (convs, gemms, matmuls) over this many parts; None: no such cap (the rule before).
#: A model of many small layers then still cuts its typical layer: DenseNet-121's
#: 120 convs have a median of 34,504 one-core cycles, so at the cap of 3,600 its
#: 3 x 3 convs of block 4 ran whole on one core and the latency came to 1,776,021
#: cycles; at 16 parts (floor 2,156) 1,433,465 (bench/RESULTS.md, "DenseNet-121: the
#: floor under the median layer"). ResNet-18/-50, MobileNetV2, SqueezeNet and BERT
#: keep their floors (a median of 200,712 one-core cycles on ResNet-50); Inception
#: v1's falls from 2,954 to 2,322
LATENCY_LAYER_PARTS: float | None = 16.0


def layer_floor(matrix_cycles: list[float]) -> float:
    """The most the part floor may be for a graph whose matrix ops (convs, gemms,
    matmuls: `graph_costs.op_unit_cycles` on the MPU) take `matrix_cycles` one-core
    cycles: their median over LATENCY_LAYER_PARTS, at least LATENCY_PART_CYCLES;
    infinite when the rule is off or there is no matrix op."""
    from statistics import median

    if LATENCY_LAYER_PARTS is None or not matrix_cycles:
        return float("inf")
    return max(float(LATENCY_PART_CYCLES), median(matrix_cycles) / LATENCY_LAYER_PARTS)


#: a channel split's parts each receive the whole input, over one link of
#: `link_bytes_per_cycle` at best, whatever their number: beyond the parts whose
#: compute is 1 / LATENCY_LINK_RATIO of that transfer, more save less than that
#: fraction of the layer's time (`latency_shares`)
LATENCY_LINK_RATIO = 4.0


def latency_shares(ops: list, target, weight_fill: float | None = None, tiles: bool | None = None,
                   floor_max: float | None | str = "default") -> "OpShares":
    """The parts each op asks for under the latency schedule's cost model
    (docs/mesh.md, "Schedules"). An op's work is its one-core cycles
    (`graph_costs.op_unit_cycles`: a gemm bound by loading its weights counts those
    bytes, not its few MACs); it gets work / floor parts, up to the mesh, the floor
    being LATENCY_PART_CYCLES or, when more, the graph's one-core cycles over
    cores x LATENCY_PARTS_PER_CORE (an op whose input arrives over a link within
    LATENCY_PART_CYCLES keeps the base floor: its parts receive little), at most
    LATENCY_FLOOR_MAX. Split by
    channels, every part receives the whole input, which takes its bytes over a
    link whatever the parts: at most as many parts as keep each part's compute
    above 1 / LATENCY_LINK_RATIO of that transfer. Every root of a group of
    elementwise followers (`_follow_groups`: the convs whose results reach a
    residual add through relus and earlier adds; LATENCY_ALIGN_ROOTS False: an
    elementwise op's direct producers) gets the largest of their channel parts, so
    that the adds follow them piece by piece.
    Convs whose tile split is faster by the same model get one (`latency_tiles`),
    their replicated weights within `weight_fill` of the mesh's memory (None: no cap);
    `tiles` False: none (None: LATENCY_TILES); `floor_max`: the floor's cap
    ("default": LATENCY_FLOOR_MAX; None: no cap), with it the layers' cap
    (`layer_floor`, LATENCY_LAYER_PARTS)."""
    from nnx.dialects.traits import Elementwise
    from nnx.graph_costs import op_unit_cycles
    from nnx.mesh.partition import OpShares, act_operands, nbytes

    n = target.mesh.width * target.mesh.height
    link = target.mesh.noc.link_bytes_per_cycle
    index = {id(op): i for i, op in enumerate(ops)}
    units = [op_unit_cycles(target, op) for op in ops]
    one_core = [c for _, c in units]
    floor = max(LATENCY_PART_CYCLES, sum(one_core) / (n * LATENCY_PARTS_PER_CORE))
    floor_max = LATENCY_FLOOR_MAX if floor_max == "default" else floor_max
    if floor_max is not None:
        floor = min(floor, max(LATENCY_PART_CYCLES, float(floor_max)),
                    layer_floor([c for unit, c in units if unit == "MPU"]))
    rows, channels = [], []
    for op, cycles in zip(ops, one_core):
        received = sum(nbytes(v) for v in act_operands(op))
        # an op whose input arrives within the base floor over a link (a classifier's
        # gemm, bound by loading its weights) splits down to the base floor
        least = LATENCY_PART_CYCLES if received <= link * LATENCY_PART_CYCLES else floor
        k = min(n, int(cycles // least))
        rows.append(k)
        cap = int(LATENCY_LINK_RATIO * cycles * link // max(1, received))
        channels.append(max(1, min(k, cap)) if k else 0)
    if LATENCY_SPREAD_JOINS:
        _spread_joins(ops, index, one_core, floor, rows)
    if LATENCY_ALIGN_ROOTS:  # the roots of every group of followers (through relus and adds)
        find, follows, _ = _follow_groups(ops, index)
        joined_roots: dict[int, list[int]] = {}
        for i in range(len(ops)):
            if not follows[i]:
                joined_roots.setdefault(find(i), []).append(i)
        joined = list(joined_roots.values())
    else:  # the direct producers of each elementwise op
        joined = [[index[id(v.owner)] for v in act_operands(op) if id(v.owner) in index]
                  for op in ops if op.has_trait(Elementwise)]
    for prods in joined:
        if len(prods) < 2:
            continue
        top = max(channels[p] for p in prods)
        for p in prods:
            channels[p] = top
    tiles = latency_tiles(ops, target, one_core, rows, weight_fill) if (LATENCY_TILES if tiles is None else tiles) \
        else ()
    blocks = latency_blocks(ops, target, one_core, channels, tiles) if LATENCY_BLOCKS else ()
    return OpShares(tuple(rows), tuple(channels), tiles=tiles, blocks=blocks)


#: the latency schedule cuts an op it splits by output channels also along the axis
#: it sums over (a 2-D split, nnx/mesh/reduction_splits.py) where its cost model says
#: that is faster: each part then receives 1/ki of the input instead of all of it
#: (`latency_blocks`); False: output channels alone, as before. Off by default since
#: the part floor is capped (LATENCY_FLOOR_MAX): ResNet-50 then runs in 589,203
#: cycles without them against 592,168 with, and Inception v1's thirteen 2-D
#: splits made it 12 % slower (319,843 against 286,102: every range part receives
#: a slice of every row piece of a concat or pool, messages the model does not
#: count); uncapped they took ResNet-50 from 767,280 to 749,512 (bench/RESULTS.md)
LATENCY_BLOCKS = False

#: a 2-D split costs its chains' steps and more parts (messages, instructions) than
#: the model counts: it is taken only where the model finds it at most this fraction
#: of the output split's time (ResNet-50's layer-4 convs: 0.22-0.42; MobileNetV2's
#: 1 x 1 convs at 0.61-0.76 ran 4 % slower cut in 2-D, bench/RESULTS.md)
LATENCY_BLOCK_GAIN = 0.5


def latency_blocks(ops: list, target, one_core: list[float], channels: list[int], tiles: tuple) -> tuple:
    """Per op, the (input ranges ki, output pieces kj) of a 2-D split, or None. An op
    the partitioner splits by output channels (a conv or gemm whose activation is
    lighter than its weights, not tiled) sends every part the whole input, which
    costs its bytes over a link whatever the parts; cut also into ki ranges of the
    input channels, each part receives 1/ki of it, and the partial sums of each
    output piece pass along a chain of ki parts (`reduction_splits.block_shape`, the
    ki of least estimated time, where that is at most LATENCY_BLOCK_GAIN of the output
    split's). kj stays the op's channel parts, so that the
    elementwise ops following its pieces, aligned with other roots, still follow;
    ki x kj at most the mesh's cores, so no core holds two parts of one chain. Convs
    only: the 2-layer BERT's projections (model ratio 0.37) ran 7 % slower cut so."""
    from nnx.dialects.graph import ConvOp
    from nnx.mesh.partition import act_operands, const_bytes, nbytes
    from nnx.mesh.reduction_splits import block_shape

    n = target.mesh.width * target.mesh.height
    link, dma = target.mesh.noc.link_bytes_per_cycle, target.storage.dma_bytes_per_cycle
    out = []
    for i, op in enumerate(ops):
        acts = act_operands(op)
        if not isinstance(op, ConvOp) or (tiles and tiles[i] is not None) or channels[i] < 1 or len(acts) != 1 \
                or nbytes(acts[0]) >= const_bytes(op):
            out.append(None)
            continue
        out.append(block_shape(op, acts[0], one_core[i], channels[i], n, link, dma, LATENCY_BLOCK_GAIN))
    return tuple(out)


#: the cost model gives every root of a group of elementwise followers (the convs
#: whose results reach a residual add through relus and earlier adds,
#: `_follow_groups`) the largest of their channel parts, so that the adds follow
#: them piece by piece; False: only the add's direct operands' producers (a relu
#: between them kept its conv's parts: ResNet-50's last residual adds ran whole on
#: one core, their convs split in 47 and 23 parts)
LATENCY_ALIGN_ROOTS = True


#: an op of less work than the part floor that would run on one core (a concat
#: joining two convs' channel parts) takes the most row parts of its readers, so
#: that each of its parts gathers one band of its inputs and sends it on. Off by
#: default: it changed nothing on SqueezeNet (its concats' own shares cut them by
#: rows already) and made Inception v1 5 % slower (more, smaller pieces); on the
#: fire-module CNN of test_mesh_schedules.py it is 31 % faster (bench/RESULTS.md)
LATENCY_SPREAD_JOINS = False


def _spread_joins(ops: list, index: dict, one_core: list[float], floor: float, rows: list[int]) -> None:
    """`rows` with every op of less than `floor` one-core cycles and at most one row
    part given its readers' most row parts (the graph backwards, so a chain of such
    ops takes its last reader's). Not a view (a dropout, a reshape): its parts would
    receive pieces no instruction reads and pass them on, which the core programs
    cannot place in the layers' order; it follows its producer's parts instead."""
    from nnx.lowering.storage import is_alias
    from nnx.mesh.partition import act_operands

    for i in range(len(ops) - 1, -1, -1):
        readers = _readers(ops[i], index)
        if rows[i] <= 1 and one_core[i] < floor and act_operands(ops[i]) and readers and not is_alias(ops[i]):
            rows[i] = max(rows[i], max(rows[r] for r in readers))


#: the latency schedule may cut a conv into row bands x output-channel groups at once
#: (nnx/mesh/tile_splits.py) where its cost model says that is faster; False: rows or
#: output channels alone, as before
LATENCY_TILES = True


def latency_tiles(ops: list, target, one_core: list[float], parts: list[int],
                  weight_fill: float | None = None) -> tuple:
    """Per op, the (bands, channel groups) of its tile split (`tile_splits.tile_shape`
    within its `parts`), or None. The values an elementwise op joins (a residual add)
    must be tiled alike for it to follow them tile by tile: the convs at the roots of
    its operands (through elementwise ops and batch norm) take the tiles of the one of
    most work, or none when one of those roots cannot be tiled. Every band holds its
    channel groups' weights; while those copies exceed `weight_fill` of the mesh's
    memory (None: no cap), the group whose next step loses the fewest estimated
    cycles per byte saved takes it: fewer bands (LATENCY_TILE_BANDS), else the split
    before."""
    from nnx.mesh.partition import const_bytes, nbytes
    from nnx.mesh.tile_splits import tile_shape, tile_time, tileable

    link = target.mesh.noc.link_bytes_per_cycle
    dma = target.storage.dma_bytes_per_cycle
    index = {id(op): i for i, op in enumerate(ops)}
    tiles: list = [None] * len(ops)
    for i, op in enumerate(ops):
        if tileable(op) and parts[i] > 1:
            tiles[i] = tile_shape(op, one_core[i], parts[i], nbytes(op.operands[0]), const_bytes(op), link, dma)
    find, follows, graph_read = _follow_groups(ops, index)
    groups: dict[int, list[int]] = {}
    for i in range(len(ops)):  # the ops at the roots of each group (convs, pools, ...)
        if not follows[i] or i in graph_read:
            groups.setdefault(find(i), []).append(i)
    every: dict[int, list[int]] = {}
    for i in range(len(ops)):
        every.setdefault(find(i), []).append(i)
    for root, members in groups.items():
        lead = max(members, key=lambda m: one_core[m])
        shape = tiles[lead] if all(tileable(ops[m]) for m in members) else None
        if shape is not None and not all(_reads_tiles(ops, index, j) for m in every[root] for j in
                                         _readers(ops[m], index) if find(j) != root):
            shape = None
        for m in members:
            tiles[m] = shape if tileable(ops[m]) else None
    # every band holds its channel groups' weights: r copies of a layer's weights.
    # Within `weight_fill` of the mesh's memory, the group whose next step (fewer
    # bands, or with LATENCY_TILE_BANDS False none at all: the split before) loses
    # the fewest estimated cycles per byte it saves takes it, until the copies fit.
    shapes = {root: tiles[max(members, key=lambda m: one_core[m])] for root, members in groups.items()}
    shapes = {root: sh for root, sh in shapes.items() if sh is not None}

    def extra_gain(root, shape) -> tuple[float, float]:
        """(weight bytes the group's tiles add, estimated cycles they save)."""
        if shape is None:
            return 0.0, 0.0
        r, c = shape
        extra = gain = 0.0
        for m in groups[root]:
            if tileable(ops[m]):
                op = ops[m]
                args = (nbytes(op.operands[0]), const_bytes(op), link, dma)
                extra += const_bytes(op) * (r - 1)
                gain += tile_time(op, one_core[m], 1, max(1, parts[m]), *args) - tile_time(op, one_core[m], r, c, *args)
        return extra, gain

    def fewer_bands(root, shape):
        """The group's next shape: its lead's best with fewer bands (None: untiled)."""
        if not LATENCY_TILE_BANDS or shape[0] <= 2:
            return None
        lead = max(groups[root], key=lambda m: one_core[m])
        op = ops[lead]
        return tile_shape(op, one_core[lead], parts[lead], nbytes(op.operands[0]), const_bytes(op), link, dma,
                          max_bands=shape[0] - 1)

    if weight_fill is not None:
        cap = weight_fill * target.mesh.width * target.mesh.height * target.mesh.core_memory_bytes
        now = {root: extra_gain(root, sh) for root, sh in shapes.items()}
        total = sum(const_bytes(op) for op in ops) + sum(e for e, _ in now.values())
        while total > cap and shapes:
            steps = []
            for root, sh in shapes.items():
                nxt = fewer_bands(root, sh)
                e, g = extra_gain(root, nxt)
                saved = now[root][0] - e
                if saved > 0:
                    steps.append(((now[root][1] - g) / saved, root, nxt, (e, g)))
            if not steps:
                break
            _, root, nxt, eg = min(steps, key=lambda x: x[0])
            total -= now[root][0] - eg[0]
            if nxt is None:
                del shapes[root], now[root]
            else:
                shapes[root], now[root] = nxt, eg
    for root, members in groups.items():
        for m in members:
            tiles[m] = shapes.get(root) if tileable(ops[m]) else None
    return tuple(tiles)


#: when a tiled plan's weight copies exceed the latency schedule's weight budget,
#: a group of tiled convs first takes fewer bands (fewer copies of its weights, more
#: channel groups) before going back to the split before (`latency_tiles`); False:
#: the first rule, whole groups back to the split before (on ResNet-50 all but 11
#: convs)
LATENCY_TILE_BANDS = True


def _follow_groups(ops: list, index: dict[int, int]):
    """The ops an elementwise op or batch norm joins, through every such op, as
    union-find groups: (find: op -> its group's root, follows: per op whether it is
    one of those followers, graph_read: followers reading a graph input). The ops of
    a group that are not followers (its convs, pools, ...) are its roots: a
    follower runs on their pieces, so they must be cut alike."""
    from nnx.dialects.graph import BatchNormalizationOp
    from nnx.dialects.traits import Elementwise
    from nnx.mesh.partition import act_operands

    parent = list(range(len(ops)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    follows = [op.has_trait(Elementwise) or isinstance(op, BatchNormalizationOp) for op in ops]
    graph_read: set[int] = set()
    for i, op in enumerate(ops):
        if follows[i]:
            for v in act_operands(op):  # an elementwise op joins the groups of its operands
                if id(v.owner) in index:
                    parent[find(index[id(v.owner)])] = find(i)
                else:
                    graph_read.add(i)
    return find, follows, graph_read


def _readers(op, index: dict[int, int]) -> list[int]:
    """Indices of the ops (in `index`: id -> index) that read `op`'s results."""
    return [index[id(u.operation)] for r in op.results for u in r.uses if id(u.operation) in index]


def _reads_tiles(ops: list, index: dict[int, int], j: int) -> bool:
    """May op j read a tiled value without running whole on one core: a conv that can
    be tiled (it reads bands of every channel group), or an op with at most one
    output row (a global pool, a flatten: whole either way). A depthwise conv or a
    windowed pool cannot: the partitioner splits by rows only a value split by rows."""
    from nnx.mesh.tile_splits import tileable

    op = ops[j]
    out = tuple(int(d) for d in op.results[0].type.get_shape()) if op.results else ()
    return tileable(op) or len(out) < 4 or out[2] <= 1


def snake(width: int, height: int) -> list[int]:
    """The cores along a boustrophedon through the mesh (row y left to right when y
    is even, right to left when odd): consecutive positions are neighbours."""
    return [y * width + (x if y % 2 == 0 else width - 1 - x) for y in range(height) for x in range(width)]


def _producer_op(plan: Plan, i: int) -> int | None:
    """The op whose split op i follows or reads by rows: the producer of its first
    activation operand, if it is split."""
    index = {id(op): n for n, op in enumerate(plan.ops)}
    for v in plan.ops[i].operands:
        p = index.get(id(v.owner))
        if p is not None and p in plan.splits:
            return p
    return None


def _units(plan: Plan) -> list[tuple[list[tuple[int, int | None]], float]]:
    """What `fold` places, in stage order, with their planned bytes: every item of a
    stage holding split op parts on its own (the partitioner may have grouped two
    parts of one op on a stage, which would serialise them), a stage of whole ops
    as one (their chain stays on one core)."""
    out = []
    for s in plan.stages:
        if s.split:
            out.extend(([it], s.bytes / len(s.items)) for it in s.items)
        else:
            out.append((list(s.items), float(s.bytes)))
    return out


def fold(plan: Plan, width: int, height: int, budget: float,
         memory: dict | None = None) -> tuple[Plan, list[int]]:
    """The plan's op parts folded onto the width x height cores (see the module
    docstring): a plan with one stage per used core, its items in graph order, and
    the core of each stage. A part goes to the first position from its wanted one
    that holds no other part of its op and whose planned bytes stay within
    `budget`; when none has room, to the least loaded (planned bytes count an input
    once per part that reads it, a core holds it once: the lowered programs' storage
    decides). With `memory` (item -> `core_memory.PartMemory`; compile.
    LATENCY_FOLD_MEMORY), a core's load is instead the live-range estimate of what it holds with memory
    reuse (`core_memory.CoreMemory`: its parts' weights plus the most activation
    bytes live at once), and a part no core has room for goes where that estimate
    grows least."""
    from nnx.mesh.core_memory import CoreMemory, place_part

    n = width * height
    cores = [CoreMemory() for _ in range(n)] if memory is not None else None
    path = snake(width, height)
    parts, rank = part_ranks(plan)
    offset: dict[int, int] = {}
    nxt = 0
    load = [0.0] * n
    held: list[set[int]] = [set() for _ in range(n)]  # ops with a part on each slot
    slot_of: dict[tuple[int, int | None], int] = {}
    for items, nb in _units(plan):
        i, part = next(((i, p or 0) for i, p in items if i != RETURN), (None, 0))
        k = len(parts.get(i, ())) or 1
        if i is not None and i not in offset:
            p = _producer_op(plan, i) if plan.kinds[i] in ("rows", "follow", "tile") else None
            if p is not None and p in offset:
                offset[i] = offset[p]
            else:
                offset[i] = nxt
                nxt = (nxt + k) % n
        base = offset.get(i, nxt)
        want = (base + (rank[i][part] if i is not None else 0) * n // k) % n
        order = [(want + step) % n for step in range(n)]
        if cores is None:
            slot = next((t for t in order if load[t] + nb <= budget and i not in held[t]), None)
            if slot is None:  # planned bytes overcount inputs parts share: the lowering decides
                slot = min(order, key=lambda t: (i in held[t], load[t]))
        else:
            slot = next((t for t in order if i not in held[t]
                         and _live_need(cores[t], items, memory, slot_of, t) <= budget), None)
            if slot is None:  # the lowering decides
                slot = min(order, key=lambda t: (i in held[t], _live_need(cores[t], items, memory, slot_of, t)))
            for it in items:
                place_part(cores, slot, memory[it], slot_of)
        load[slot] += nb
        held[slot].add(i)
        for it in items:
            slot_of[it] = slot
    return plan_on_slots(plan, slot_of, path)


def _live_need(core, items, memory: dict, slot_of: dict, slot: int) -> float:
    """The live-range estimate of core `core` (at `slot`) with `items` appended."""
    if len(items) == 1:
        return core.need(memory[items[0]], lambda src: slot_of.get(src) == slot)
    from copy import deepcopy

    trial = deepcopy(core)
    for it in items[:-1]:
        trial.add(memory[it], lambda src: slot_of.get(src) == slot)
    return trial.need(memory[items[-1]], lambda src: slot_of.get(src) == slot)


def part_ranks(plan: Plan) -> tuple[dict[int, list[int]], dict[int, dict[int, int]]]:
    """Per split op (index in `plan.ops`), its part numbers, and each part's rank
    among them."""
    parts: dict[int, list[int]] = {}
    for s in plan.stages:
        for i, part in s.items:
            if i != RETURN:
                parts.setdefault(i, []).append(part or 0)
    return parts, {i: {p: r for r, p in enumerate(sorted(ps))} for i, ps in parts.items()}


def plan_on_slots(plan: Plan, slot_of: dict, path: list[int]) -> tuple[Plan, list[int]]:
    """The plan with one stage per used slot (`slot_of`: item -> slot, a position
    of `path`, the cores in placement order), its items in graph order, bytes and
    cost shared out from the stages they came from, and the core of each stage."""
    from nnx.mesh.stage_merge import item_order

    used = sorted(set(slot_of.values()))
    new_index = {slot: k for k, slot in enumerate(used)}
    stages = [Stage(k, [], 0, 0.0, False) for k in range(len(used))]
    for it, slot in slot_of.items():
        stages[new_index[slot]].items.append(it)
    for s in plan.stages:
        for it in s.items:
            st = stages[new_index[slot_of[it]]]
            st.bytes += s.bytes // len(s.items)
            st.cost += s.cost / len(s.items)
            st.split = st.split or s.split
    for st in stages:
        st.items.sort(key=lambda it: item_order(it, plan))
    where = {}
    for key, s in plan.where.items():
        if key not in slot_of:  # a reduction's result: on the stage of its last part
            key_item = max((it for it in plan.stages[s].items if it[0] == key[0]), key=lambda it: it[1] or 0)
            where[key] = new_index[slot_of[key_item]]
        else:
            where[key] = new_index[slot_of[key]]
    return replace(plan, stages=stages, where=where), [path[slot] for slot in used]
