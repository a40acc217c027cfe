"""Split ops over cores and group the work into stages (docs/mesh.md, "Compilation").

An op of `@main` is one of:

* **split** over k cores by its output (`conv` with constant weights and one group,
  `gemm`/`matmul` with a constant right operand: output channels / features; `gather`
  on axis 0 of a constant table, the word-embedding: the table's columns), or, for a
  table with too few columns, by the rows of the table (each core gathering the
  indices in its range, the partial results summed along a chain of the parts, as
  for a reduction split below); k is the larger of its share of the mesh's compute
  and the number of cores its weights and activations need;
* **rows**: split by output rows (nnx/mesh/rows.py) -- convs of any group, pools,
  batch norm, elementwise ops, softmax, batched matmuls on rank-4 activations, and
  views and transposes that keep the rows as an axis of their own -- when
  its activations outweigh its weights and it must be split, or its input comes
  split by rows; each part reads the band of input rows it needs (with the kernel's
  halo) from the pieces that hold them;
* **reduced** (a conv with one group, a gemm/matmul with a constant right operand,
  whose input alone is too big for one core, so that no split by output fits): split
  along the reduction axis (input channels, K) into partial sums, part i taking a run
  of consecutive pieces of its input (which must come split along that axis), the
  matching slice of the weights, and the bias on part 0; part i adds the running sum
  of parts 0..i-1 it receives to its own, and the last part holds the result;
* **block** (2-D; docs/mesh.md, "2-D splits"; reduction and block splits are in
  nnx/mesh/reduction_splits.py): a conv/gemm/matmul of the kinds above that fits
  neither way (or whose output split needs more parts than the mesh has cores) is
  split over ki x kj parts: part (r, j) reads input range r along the reduction
  axis, holds the weight block (j, r) and output piece j; the partial sums of piece
  j are chained over r, the last part of chain j holding output piece j, so that
  consumers see a split by output channels;
* **tile** (the latency schedule's, nnx/mesh/tile_splits.py): a conv cut into row
  bands x output-channel groups, part (b, j) reading its band of input rows (with
  the halo) of every channel and the weights of channels j; elementwise ops and
  batch norm on values tiled alike follow tile by tile;
* **groups**: a pool, batch norm or depthwise conv reading a tiled value whole per
  channel: part j reads channel group j of every band, its result split by channels;
* a **follower** of such a split (elementwise ops, pools, batch norm, depthwise
  convolutions): every activation operand is split the same way, so part i runs on
  the pieces i, beside them;
* **whole**: the op runs on one core, packed with neighbouring whole ops while one
  core's memory and compute budget allow.

A *stage* is the work of one core. Stages are formed in the graph's order, and an op
joins a stage only when that keeps the stage graph acyclic, so that the per-core
programs cannot deadlock on their messages (nnx/mesh/stitch.py). An op is split into
at most cost / MIN_PART_COST parts, and stages of whole ops take at least that much
work, so small ops stay on few cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation, SSAValue

from nnx.dialects import graph as g
from nnx.dialects.traits import Elementwise, MatrixCompute
from nnx.graph_costs import value_bytes
from nnx.graph_queries import constant_op
from nnx.mesh.errors import MeshFitError
from nnx.mesh.tile_splits import CHANNEL_AXIS, TileSplit, can_follow_tiles
from nnx.mesh.rows import (ROW_AXIS, can_split_rows, default_row_axis, is_row_view, mapped_row_axis, row_window,
                           windowed_operands)

#: fractions of a core's memory the partitioner plans to fill, tried in turn: the
#: lowering adds alignment, the storage copies of cached results and the
#: concatenations of received pieces, so when a stage's lowered program exceeds its
#: core the plan is redone with the next, smaller fill (nnx/mesh/compile.py)
#: the fill of the default plan; when it does not plan (an op needs more cores or
#: memory than it leaves), fuller plans are tried, and when a stage's lowered
#: program overflows its core, emptier ones; last, full cores (FULL_CORES)
MEMORY_FILL = 0.6
#: the fill of the last plan tried, for programs that load or write graph inputs or
#: outputs in slices (docs/mesh.md, "Inputs and outputs"): a package's cut at an
#: activation bigger than a core, where an op's input and output bands (or a big
#: conv's weights) alone fill the cores; for other programs it plans as the fullest fill
FULL_CORES = 1.0
MEMORY_FILLS = (MEMORY_FILL, 0.75, 0.9, 0.45, 0.3, FULL_CORES)

#: the least work (MACs, or output elements) worth a core of its own: an op is split
#: into at most cost / MIN_PART_COST parts, and a stage of whole ops may take at least
#: this much, so that small ops are not spread thin over cores whose messages would
#: cost more than their compute (about 4000 cycles of a 256-MAC/cycle MPU)
MIN_PART_COST = float(1 << 20)


@dataclass(frozen=True)
class Split:
    """How a value is cut into pieces: along `axis` at `bounds` (k+1 offsets) and
    joined by `combine` ("concat" along the axis, or "sum" of partial results)."""

    axis: int
    bounds: tuple[int, ...]
    combine: str = "concat"
    #: a row split (nnx/mesh/rows.py): `axis` is the value's row axis, whose bands
    #: consumers may read
    rows: bool = False

    @property
    def k(self) -> int:
        return len(self.bounds) - 1


@dataclass(frozen=True)
class BlockSplit:
    """A 2-D split (docs/mesh.md, "2-D splits"): `inputs` cuts the op's activation
    along its reduction axis into ki ranges, `outputs` (concat) its result into kj
    pieces. Part (r, j) computes the partial sum of output piece j over input range r
    and adds the running sum of parts (0..r-1, j) received from part (r-1, j). The
    last part of chain j is numbered j, so that it holds piece j of the result like
    part j of an output split; the others are numbered from kj on."""

    inputs: Split
    outputs: Split

    @property
    def ki(self) -> int:
        return self.inputs.k

    @property
    def kj(self) -> int:
        return self.outputs.k

    def part(self, r: int, j: int) -> int:
        """The part number of (input range r, output piece j)."""
        return j if r == self.ki - 1 else self.kj + j * (self.ki - 1) + r

    def coords(self, part: int) -> tuple[int, int]:
        """(input range, output piece) of part number `part`."""
        if part < self.kj:
            return self.ki - 1, part
        return (part - self.kj) % (self.ki - 1), (part - self.kj) // (self.ki - 1)


@dataclass
class Stage:
    """The work of one core: (op index, part index or None for a whole op) items in
    graph order, with its planned bytes and cost."""

    index: int
    items: list[tuple[int, int | None]] = field(default_factory=list)
    bytes: int = 0
    cost: float = 0.0
    split: bool = False


@dataclass
class Plan:
    """The partition of `ops` (the non-constant ops of @main, in order): the split of
    each split or follower op's results (`splits[op index]`; a `TileSplit` for a tile
    split and its followers), its kind ("split"/"reduce"/"block"/"rows"/"tile"/
    "groups"/"follow"/"whole"), the stages, and which stage holds each op part."""

    ops: list[Operation]
    kinds: list[str]
    splits: dict[int, Split]
    stages: list[Stage]
    where: dict[tuple[int, int | None], int]
    #: reduction splits (kind "reduce"): part j adds part j-1's running sum to its own
    #: partial result, so the last part holds the whole result (where[(op, None)])
    reductions: dict[int, Split] = field(default_factory=dict)
    #: row splits (kind "rows"): the row axis of the operands whose bands a part reads
    #: (ROW_AXIS unless a row view maps another axis to its output's rows)
    row_inputs: dict[int, int] = field(default_factory=dict)
    #: row splits whose parts load only their window of a graph input from off-chip
    #: memory (the input too big for a core to hold whole; docs/mesh.md, "Inputs and outputs")
    sliced_inputs: set[int] = field(default_factory=set)
    #: graph outputs (indices into the values @main returns) written by their pieces'
    #: cores, each its slice, instead of being assembled on one core by a RETURN item
    sliced_outputs: set[int] = field(default_factory=set)
    #: 2-D splits (kind "block"); `splits[op]` is their `outputs`
    blocks: dict[int, BlockSplit] = field(default_factory=dict)


#: bytes of a tensor value (the one definition, nnx/graph_costs.py)
nbytes = value_bytes


def shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(int(d) for d in v.type.get_shape())


def op_label(op: Operation) -> str:
    """The op's name for messages, with its ONNX node name (the importer's location,
    or an `nnx.name` attribute) when it has one: `graph.gemm 'fc1'`."""
    from nnx.diagnostics import name_of_loc

    name = op.attributes.get("nnx.name")
    node = name.data if name is not None and hasattr(name, "data") else name_of_loc(op.location)
    return f"{op.name} '{node}'" if node else op.name


def compute_share(cost: float, total: float, ncores: int, pack: float) -> int:
    """Today's parts for an op of `cost` (of `total` over the graph): half its share
    of the mesh's compute, scaled down by `pack`, at least MIN_PART_COST each."""
    return min(int(cost / total * ncores * 0.5 / pack), int(cost // MIN_PART_COST))


@dataclass(frozen=True)
class OpShares:
    """Parts a schedule's cost model asks for, per op (index in the ops planned):
    `rows` for a split by rows (at least the input's row pieces, as for a callable
    share), `channels` for a split by output channels or features (each part then
    receives the whole input, which bounds what more parts gain). A list share's
    parts, by contrast, stand as they are (the throughput pipeline's)."""

    rows: tuple[int, ...]
    channels: tuple[int, ...]
    #: at most this many parts by rows, even where the input comes in more row
    #: pieces (a part then reads several): every part of a row split holds the op's
    #: weights whole (core_memory.replication_caps); None: no cap
    rows_max: tuple[int, ...] | None = None
    #: (bands, channel groups) of a tile split (nnx/mesh/tile_splits.py) per op, or
    #: None: split as `rows` and `channels` say
    tiles: tuple = ()
    #: (input ranges, output pieces) of a 2-D split (nnx/mesh/reduction_splits.py) per op, or None
    blocks: tuple = ()


def op_cost(op: Operation) -> float:
    """The op's work: MACs of matrix ops, else its output elements."""
    out = shape(op.results[0]) if op.results else ()
    elems = float(np.prod(out)) if out else 1.0
    if op.has_trait(MatrixCompute):
        ins = [v for v in op.operands]
        if isinstance(op, g.ConvOp):
            w = shape(op.operands[1])
            return elems * float(np.prod(w[1:]))
        if len(ins) >= 2 and len(shape(ins[1])) >= 2:
            b = shape(ins[1])
            gemm_k = b[-1] if isinstance(op, g.GemmOp) and op.attr("transB", 0) else b[-2]
            return elems * float(gemm_k)
    return elems


def const_bytes(op: Operation) -> int:
    return sum(nbytes(v) for v in op.operands if constant_op(v) is not None)


def act_operands(op: Operation) -> list[SSAValue]:
    return [v for v in op.operands if constant_op(v) is None]


def bounds_of(n: int, k: int) -> tuple[int, ...]:
    """k+1 offsets cutting n into k near-equal pieces."""
    return tuple(int(round(i * n / k)) for i in range(k + 1))


def split_axis(op: Operation) -> tuple[int, int, str] | None:
    """(output axis, its size, combine) of an op that can be split by its output or
    table rows, else None."""
    if not op.results or len(op.results) != 1:
        return None
    out = shape(op.results[0])
    if isinstance(op, g.ConvOp) and len(op.operands) >= 2 and constant_op(op.operands[1]) is not None \
            and int(op.attr("group", 1)) == 1 and len(out) == 4 and out[0] == 1:
        return 1, out[1], "concat"
    if isinstance(op, (g.GemmOp, g.MatMulOp)) and constant_op(op.operands[1]) is not None \
            and len(shape(op.operands[1])) == 2 and not (isinstance(op, g.GemmOp) and op.attr("transA", 0)):
        return len(out) - 1, out[-1], "concat"
    if is_table_gather(op):
        table = shape(op.operands[0])
        if len(table) >= 2:  # by the table's columns: no full-size partial results
            return len(out) - 1, table[-1], "concat"
        return 0, table[0], "sum"
    return None


def is_table_gather(op: Operation) -> bool:
    """A Gather of rows (axis 0) of a constant table at computed indices (an embedding)."""
    return isinstance(op, g.GatherOp) and constant_op(op.operands[0]) is not None \
        and int(op.attr("axis", 0)) == 0 and constant_op(op.operands[1]) is None


def parts_needed(size: int, split_bytes: float, room: float) -> int:
    """The fewest parts of `size` units (channels, columns, rows) whose largest, with
    `split_bytes` spread evenly over the units, fits `room` (size + 1: none does).
    Whole units: `bounds_of` gives parts of ceil(size / k) units at most."""
    per_unit = split_bytes / size if size else 0.0
    if room <= 0 or per_unit > room:
        return size + 1
    if per_unit == 0:
        return 1
    return int(np.ceil(size / int(room // per_unit)))


def can_follow(op: Operation, sp: Split, in_shape: tuple[int, ...]) -> bool:
    """May `op` run piecewise on operands split by `sp` (same split for its result)?"""
    if len(op.results) != 1 or sp.combine != "concat":
        return False
    out = shape(op.results[0])
    if op.has_trait(Elementwise):
        if out != in_shape:
            return False
        for v in op.operands:
            if constant_op(v) is not None:
                cs = shape(v)
                # broadcast constant: its dim at the split axis must be 1 or the full size
                r = len(out) - len(cs)
                if sp.axis >= r and cs[sp.axis - r] not in (1, out[sp.axis]):
                    return False
        return True
    if len(out) == 4 and sp.axis == ROW_AXIS and out == in_shape and isinstance(op, g.BatchNormalizationOp):
        return True  # per-channel constants: every row piece uses them whole
    if len(out) == 4 and sp.axis == 1 and out[0] == 1 and out[1] == in_shape[1]:
        if isinstance(op, (g.MaxPoolOp, g.AveragePoolOp, g.GlobalAveragePoolOp, g.BatchNormalizationOp)):
            return True
        if isinstance(op, g.ConvOp) and constant_op(op.operands[1]) is not None \
                and int(op.attr("group", 1)) == out[1] == in_shape[1] and shape(op.operands[1])[1] == 1:
            return True
    return False


def piece_count(sp, axis: int) -> int:
    """How many pieces of split `sp` share each slice along `axis` (a split along
    another axis: all of them; a tile split along rows: its channel groups)."""
    if isinstance(sp, TileSplit):
        return sp.c if axis == ROW_AXIS else sp.r
    return sp.k if sp is not None and sp.axis != axis else 1


def covered_pieces(sp: Split, lo: int, hi: int) -> list[int]:
    """The pieces of split `sp` lying inside [lo, hi) (whose bounds are among sp's)."""
    return [j for j in range(sp.k) if sp.bounds[j] >= lo and sp.bounds[j + 1] <= hi]


def window_pieces(sp: Split | None, rows: int, a: int, b: int,
                  axis: int = ROW_AXIS) -> list[tuple[int | None, int, int, bool]]:
    """The pieces of a value (split `sp`; None or a sum: one whole value, piece None)
    that rows [a, b) of it (along `axis`, `rows` in all) lie in: (piece, first row,
    end row, whether that is the whole piece). A split along `axis` gives the pieces
    overlapping [a, b), each cut to the overlap; a split along another axis (channels)
    gives every piece, cut to [a, b)."""
    if sp is None or sp.combine == "sum":
        return [(None, a, b, (a, b) == (0, rows))]
    if isinstance(sp, TileSplit):
        return sp.window(rows, a, b, axis)
    if sp.axis == axis:
        out = []
        for q in range(sp.k):
            lo, hi = max(a, sp.bounds[q]), min(b, sp.bounds[q + 1])
            if lo < hi:
                out.append((q, lo, hi, (lo, hi) == (sp.bounds[q], sp.bounds[q + 1])))
        return out
    return [(q, a, b, (a, b) == (0, rows)) for q in range(sp.k)]


#: op index of the pseudo-op assembling a split graph output (item (RETURN, output index))
RETURN = -1


def plan_partition(ops: list[Operation], ncores: int, core_memory: int, pack: float = 1.0,
                   fill: float = MEMORY_FILL, returned: list[SSAValue] = (), share=None,
                   windows: bool = False) -> Plan:
    """Split the ops and form stages (see the module docstring). `pack` scales the
    compute a stage of whole ops may take (larger: fewer, fuller stages); `fill` is
    the fraction of a core's memory a stage plans to use. A graph output that is
    split (of `returned`, the values @main returns) is assembled by an item
    (RETURN, output index), in the stage of one of its pieces when it has room; when
    one core cannot hold it, or none of its pieces' stages has room and the mesh no
    core to spare, each piece's core writes its slice instead (`Plan.sliced_outputs`).
    `share(cost, total, ncores, pack)` gives the parts an op's compute asks for (a
    schedule's choice; default `compute_share`), or is a list of every op's parts,
    or an `OpShares` (per op, by rows and by channels).
    `windows`: a row split of a graph input always loads each part's window alone
    (docs/mesh.md, "Inputs and outputs")."""
    from nnx.mesh import reduction_splits as red_splits

    share = share or compute_share
    index = {id(op): i for i, op in enumerate(ops)}
    budget = core_memory * fill
    costs = [op_cost(op) for op in ops]
    total = sum(costs) or 1.0
    stage_cost = max(total / ncores, MIN_PART_COST) * pack

    def op_share(i: int, channels: bool = False) -> int:
        if isinstance(share, OpShares):
            return share.channels[i] if channels else share.rows[i]
        return share[i] if isinstance(share, list) else share(costs[i], total, ncores, pack)
    kinds: list[str] = []
    splits: dict[int, Split] = {}
    reductions: dict[int, Split] = {}
    row_inputs: dict[int, int] = {}
    sliced_inputs: set[int] = set()
    sliced_outputs: set[int] = set()
    blocks: dict[int, BlockSplit] = {}
    stages: list[Stage] = []
    where: dict[tuple[int, int | None], int] = {}
    succ: list[set[int]] = []

    def producer(v: SSAValue) -> int | None:
        owner = v.owner
        return index.get(id(owner)) if isinstance(owner, Operation) else None

    def source_stages(v: SSAValue, part: int | None) -> set[int]:
        p = producer(v)
        if p is None:
            return set()
        if p in splits:
            if part is not None:
                return {where[(p, part)]}
            return {where[(p, j)] for j in range(splits[p].k)}
        return {where[(p, None)]}

    def reaches(a: int, b: int) -> bool:
        seen, todo = {a}, [a]
        while todo:
            x = todo.pop()
            if x == b:
                return True
            for y in succ[x]:
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        return False

    def new_stage(is_split: bool) -> Stage:
        s = Stage(len(stages), split=is_split)
        stages.append(s)
        succ.append(set())
        return s

    def add(s: Stage, i: int, part: int | None, srcs: set[int], nbytes_: int, cost: float) -> None:
        s.items.append((i, part))
        s.bytes += nbytes_
        s.cost += cost
        where[(i, part)] = s.index
        for t in srcs - {s.index}:
            succ[t].add(s.index)

    def hold_bands(sliced: dict[int, int]) -> None:
        """The producers' stages hold the bands they send (stage -> bytes)."""
        for t, n in sliced.items():
            stages[t].bytes += n

    def can_join(s: Stage, srcs: set[int]) -> bool:
        return all(t == s.index or not reaches(s.index, t) for t in srcs)

    def row_sources(v: SSAValue, a: int, b: int, axis: int, load_window: bool = False,
                    joined: bool = True) -> tuple[set[int], int, dict[int, int]]:
        """Stages holding rows [a, b) (along `axis`) of activation `v`, the bytes a
        part holds for them (received pieces and, when several and `joined`, their
        concatenation), and the bytes of the bands those stages slice to send
        (stage -> bytes). A graph input is loaded whole and its band sliced locally,
        or with `load_window`, only the band is loaded."""
        p = producer(v)
        rows = shape(v)[axis]
        pcs = window_pieces(splits.get(p) if p is not None else None, rows, a, b, axis)
        per_row = nbytes(v) // rows
        win = per_row * (b - a)
        if p is None:  # a graph input: its band loaded, or held whole and the band sliced locally
            return set(), win if load_window else nbytes(v) + (0 if (a, b) == (0, rows) else win), {}
        sliced: dict[int, int] = {}
        for q, lo, hi, whole in pcs:
            if not whole:
                st = where[(p, q)]
                sliced[st] = sliced.get(st, 0) + per_row * (hi - lo) // piece_count(splits.get(p), axis)
        return {where[(p, q)] for q, _, _, _ in pcs}, win * (1 if len(pcs) == 1 or not joined else 2), sliced

    def plan_rows(i: int, op: Operation, ax, need: int) -> bool:
        """Split op i by output rows (nnx/mesh/rows.py) when its activations outweigh
        its weights, or under the latency schedule's shares it has no output split (a
        grouped conv), and it must be split (memory, compute share, or a row-split
        input); False: not this way."""
        acts = act_operands(op)
        win_pos = windowed_operands(op)
        win_vals = [op.operands[k] for k in win_pos]
        w_bytes = const_bytes(op)
        if sum(nbytes(v) for v in win_vals) < w_bytes and (split_axis(op) or not isinstance(share, OpShares)):
            return False
        in_axis, out_axis = ROW_AXIS, ROW_AXIS
        if is_row_view(op):  # the input's row axis: its row split's, else H
            psp = splits.get(producer(win_vals[0]))
            in_axis = psp.axis if isinstance(psp, Split) and psp.rows else default_row_axis(win_vals[0])
            out_axis = None if in_axis is None else mapped_row_axis(op, in_axis)
            if out_axis is None:
                return False
        fed = [splits[producer(v)].k for v in win_vals
               if isinstance(splits.get(producer(v)), Split) and splits[producer(v)].axis == in_axis]
        k_compute = op_share(i)
        if need <= budget and not fed and ((ax is None and not isinstance(share, OpShares)) or k_compute <= 1) \
                and not (isinstance(share, list) and k_compute > 1):
            return False  # a schedule's own parts (a list share; the latency model's: OpShares) split it by rows too
        out_bytes = nbytes(op.results[0])
        rows = shape(op.results[0])[out_axis]
        whole_acts = [v for v in acts if all(v is not u for u in win_vals)]
        other = w_bytes + sum(nbytes(v) for v in whole_acts)

        def part(lo: int, hi: int, load_windows: bool) -> tuple[int, set[int], dict[int, int]]:
            a, b, _, _ = row_window(op, lo, hi)
            srcs: set[int] = set().union(*(source_stages(v, None) for v in whole_acts)) if whole_acts else set()
            pb = other + out_bytes * (hi - lo) // rows
            sliced: dict[int, int] = {}
            for v in win_vals:
                st, nb, sl = row_sources(v, a, b, in_axis, load_windows)
                srcs |= st
                pb += nb
                for t, n in sl.items():
                    sliced[t] = sliced.get(t, 0) + n
            return pb, srcs, sliced

        def fit(load_windows: bool) -> tuple[int, tuple[int, ...], list] | None:
            """The fewest parts (from the compute share or the input's split on) whose
            every part fits the budget: (k, bounds, parts), or None."""
            # a schedule's own parts (a list share) stand; else at least the input's pieces
            k = max(1, min(max([k_compute] + ([] if isinstance(share, list) else fed)), rows))
            if isinstance(share, OpShares) and share.rows_max is not None:
                k = max(1, min(k, share.rows_max[i]))
            while k <= rows:
                bounds = bounds_of(rows, k)
                parts = [part(bounds[j], bounds[j + 1], load_windows) for j in range(k)]
                if all(pb <= budget for pb, _, _ in parts):
                    return k, bounds, parts
                k = k + max(1, k // 8)
            return None

        # graph inputs held whole by every part; only their windows loaded when that
        # does not fit the mesh, or always with `windows` (docs/mesh.md, "Inputs and outputs")
        reads_input = any(producer(v) is None for v in win_vals)
        found, load_windows = (None, False) if windows and reads_input else (fit(False), False)
        if (found is None or found[0] > ncores) and reads_input:
            by_window = fit(True)
            if by_window is not None and (found is None or by_window[0] < found[0]):
                found, load_windows = by_window, True
        if found is None:
            return False
        k, bounds, parts = found
        if k == 1:
            return False
        if load_windows:
            sliced_inputs.add(i)
        sp = Split(out_axis, bounds, rows=True)
        kinds.append("rows")
        splits[i] = sp
        row_inputs[i] = in_axis
        for j, (pb, srcs, sliced) in enumerate(parts):
            hold_bands(sliced)
            frac = (bounds[j + 1] - bounds[j]) / rows
            home = None
            for v in win_vals:  # the stage of the input rows this part mostly reads
                p = producer(v)
                if isinstance(splits.get(p), Split) and splits[p].axis == in_axis:
                    a, b, _, _ = row_window(op, bounds[j], bounds[j + 1])
                    mid = (a + b) // 2
                    q = next((q for q in range(splits[p].k) if splits[p].bounds[q] <= mid < splits[p].bounds[q + 1]),
                             splits[p].k - 1)
                    home = stages[where[(p, q)]]
                    break
            if home is not None and home.bytes + pb <= budget and can_join(home, srcs):
                add(home, i, j, srcs, pb, costs[i] * frac)
            else:
                add(new_stage(True), i, j, srcs, pb, costs[i] * frac)
        return True

    def plan_tile(i: int, op: Operation) -> bool:
        """Split conv op i into the tiles its share asks for (nnx/mesh/tile_splits.py),
        each part on a stage of its own; False: a part does not fit."""
        out = shape(op.results[0])
        r, c = share.tiles[i]
        ts = TileSplit(bounds_of(out[ROW_AXIS], r), bounds_of(out[CHANNEL_AXIS], c))
        v = op.operands[0]
        w_bytes, out_bytes = const_bytes(op), nbytes(op.results[0])
        parts = []
        for p in range(ts.k):
            (lo, hi), (clo, chi) = ts.extent(p, ROW_AXIS), ts.extent(p, CHANNEL_AXIS)
            a, b, _, _ = row_window(op, lo, hi)
            srcs, band, sliced = row_sources(v, a, b, ROW_AXIS)
            if isinstance(splits.get(producer(v)), TileSplit):  # its tiles joined in place, no copy
                band = nbytes(v) // shape(v)[ROW_AXIS] * (b - a)
            pb = band + int((w_bytes * (chi - clo)) // out[CHANNEL_AXIS]) + int(out_bytes * ts.fraction(p))
            if pb > budget:
                return False
            parts.append((srcs, pb, sliced))
        kinds.append("tile")
        splits[i] = ts
        row_inputs[i] = ROW_AXIS
        for p, (srcs, pb, sliced) in enumerate(parts):
            hold_bands(sliced)
            add(new_stage(True), i, p, srcs, pb, costs[i] * ts.fraction(p))
        return True

    def plan_block(i: int, op: Operation, max_parts: int, want: int = 0, chain_first: bool = False,
                   ki_kj=None) -> bool:
        """Split op i in 2-D (`block_split`, `want` parts where it can, or the
        (ki, kj) `ki_kj`), each part on a stage of its own; False: no 2-D split fits."""
        acts = act_operands(op)
        if len(acts) != 1:
            return False
        v = acts[0]
        axis = red_splits.reduction_axis(op, v)
        if axis is None:
            return False
        in_split = splits.get(producer(v)) if producer(v) is not None else None
        in_split = in_split if isinstance(in_split, Split) else None
        # a graph input: every part loads only its input range from off-chip memory
        # (docs/mesh.md, "Inputs and outputs")
        load = producer(v) is None
        # a schedule's parts share their cores: no rest of the core holds the sums
        outputs = red_splits.CHAINED_OUTPUTS if isinstance(share, (list, OpShares)) else red_splits.REDUCTION_OUTPUTS
        # a part multiplies each received piece of its range on its own (no join):
        # the latency schedule plans its band so; the other schedules keep the
        # joined band they were tuned with (ResNet-50's pipeline streams 5.8 %
        # slower without it, bench/RESULTS.md)
        joined = not isinstance(share, OpShares)
        blk = red_splits.block_split(op, v, in_split, lambda lo, hi: row_sources(v, lo, hi, axis, load, joined)[1],
                                     budget, max_parts, outputs, want, chain_first, ki_kj)
        if blk is None:
            return False
        if load:
            sliced_inputs.add(i)
        kinds.append("block")
        blocks[i] = blk
        splits[i] = blk.outputs
        ib, ob = blk.inputs.bounds, blk.outputs.bounds
        bands = []
        for r in range(blk.ki):
            srcs, band, sliced = row_sources(v, ib[r], ib[r + 1], axis, load, joined)
            hold_bands(sliced)
            bands.append((srcs, band))
        w_bytes, out_bytes = const_bytes(op), sum(nbytes(r) for r in op.results)
        for j in range(blk.kj):
            fj = (ob[j + 1] - ob[j]) / ob[-1]
            for r in range(blk.ki):
                fi = (ib[r + 1] - ib[r]) / ib[-1]
                srcs, band = bands[r]
                srcs = set(srcs)
                if r > 0:  # the running sum of output piece j over the ranges before
                    srcs.add(where[(i, blk.part(r - 1, j))])
                pb = band + int(w_bytes * fi * fj) + int(outputs * out_bytes * fj)
                add(new_stage(True), i, blk.part(r, j), srcs, pb, costs[i] * fi * fj)
        return True

    for i, op in enumerate(ops):
        acts = act_operands(op)
        in_bytes = sum(nbytes(v) for v in acts)
        out_bytes = sum(nbytes(r) for r in op.results)
        w_bytes = const_bytes(op)
        ax = split_axis(op)
        # follower?
        act_splits = [splits.get(producer(v)) if producer(v) is not None else None for v in acts]
        if len(acts) == 1 and isinstance(act_splits[0], TileSplit) \
                and can_follow(op, Split(CHANNEL_AXIS, act_splits[0].groups), shape(acts[0])) \
                and not can_follow_tiles(op, shape(acts[0])):
            # a pool (or depthwise conv) of a tiled value: channel group j of every band
            ts, p = act_splits[0], producer(acts[0])
            kinds.append("groups")
            splits[i] = Split(CHANNEL_AXIS, ts.groups)
            for j in range(ts.c):
                frac = (ts.groups[j + 1] - ts.groups[j]) / ts.groups[-1]
                srcs = {where[(p, ts.part(b, j))] for b in range(ts.r)}
                add(new_stage(True), i, j, srcs, int((in_bytes + w_bytes + out_bytes) * frac), costs[i] * frac)
            continue
        if acts and act_splits[0] is not None and all(s == act_splits[0] for s in act_splits) \
                and (can_follow_tiles(op, shape(acts[0])) if isinstance(act_splits[0], TileSplit)
                     else can_follow(op, act_splits[0], shape(acts[0]))):
            sp = act_splits[0]
            kinds.append("follow")
            splits[i] = sp
            last = max(producer(v) for v in acts)
            for j in range(sp.k):
                srcs = set().union(*(source_stages(v, j) for v in acts))
                home = stages[where[(last, j)]]
                part_bytes = (w_bytes + out_bytes) // sp.k
                if home.bytes + part_bytes <= budget and can_join(home, srcs):
                    add(home, i, j, srcs, part_bytes, costs[i] / sp.k)
                else:
                    add(new_stage(True), i, j, srcs, part_bytes + in_bytes // sp.k, costs[i] / sp.k)
            continue
        need = w_bytes + in_bytes + out_bytes
        if isinstance(share, OpShares) and share.tiles and share.tiles[i] is not None and plan_tile(i, op):
            continue
        if isinstance(share, OpShares) and share.blocks and share.blocks[i] is not None \
                and plan_block(i, op, ncores, ki_kj=share.blocks[i]):
            continue
        if can_split_rows(op):
            done = plan_rows(i, op, ax, need)
            if done:
                continue
        if ax is not None and ax[2] == "concat" and is_table_gather(op) and need > budget \
                and (budget <= in_bytes or np.ceil((w_bytes + out_bytes) / (budget - in_bytes)) > ax[1]):
            ax = (0, shape(op.operands[0])[0], "sum")  # too few columns: by table rows, summed
        if ax is not None:
            axis, size, combine = ax
            full_in = in_bytes
            room = budget - full_in
            split_bytes = w_bytes + out_bytes
            if combine == "sum":  # every part holds a full-size partial result
                room = budget - full_in - out_bytes
                split_bytes = w_bytes
            k_mem = 1 if need <= budget else parts_needed(size, split_bytes, room)
            k_compute = op_share(i, True) if combine == "concat" else 1
            k = max(k_mem, min(k_compute, size), 1)
            if combine == "concat":  # fine enough pieces for a reduction split downstream
                k = max(k, min(red_splits.pieces_for_reduction(op, axis, budget, ncores), size))
            if k > size or (k_mem > 1 and room <= 0):
                if isinstance(share, OpShares) and combine == "concat" and plan_block(i, op, ncores, k_compute):
                    continue  # the latency schedule: its parts side by side, short chains of sums
                in_split = splits.get(producer(acts[0])) if len(acts) == 1 and producer(acts[0]) is not None else None
                red = red_splits.reduction_split(op, acts, in_split if isinstance(in_split, Split) else None, budget)
                if red is not None:
                    kinds.append("reduce")
                    reductions[i] = red
                    p = producer(acts[0])
                    for j in range(red.k):
                        lo, hi = red.bounds[j], red.bounds[j + 1]
                        srcs = {where[(p, q)] for q in covered_pieces(splits[p], lo, hi)}
                        if j > 0:  # the running sum of the parts before
                            srcs.add(where[(i, j - 1)])
                        frac = (hi - lo) / red.bounds[-1]
                        pb = int((in_bytes + w_bytes) * frac) + red_splits.REDUCTION_OUTPUTS * out_bytes
                        add(new_stage(True), i, j, srcs, pb, costs[i] * frac)
                    where[(i, None)] = where[(i, red.k - 1)]
                    continue
                if combine == "concat" and plan_block(i, op, ncores):
                    continue
                raise MeshFitError("memory", op_label(op), need if k_mem > size else full_in + out_bytes,
                                   core_memory, op)
            if combine == "concat" and k_mem > ncores and plan_block(i, op, ncores):
                continue  # an output split needs more parts than the mesh has cores
            if isinstance(share, list) and combine == "concat" and k_mem > k_compute > 1 \
                    and plan_block(i, op, k_compute, red_splits.pipeline_want(k_compute, full_in, budget), True):
                continue  # a schedule's parts (its cores) hold the op when cut along its input too
            if k > 1:
                sp = Split(axis, bounds_of(size, k), combine)
                if combine == "sum":  # table rows: partial results summed along a chain
                    kinds.append("reduce")
                    reductions[i] = sp
                else:
                    kinds.append("split")
                    splits[i] = sp
                base = set().union(*(source_stages(v, None) for v in acts)) if acts else set()
                for j in range(k):
                    frac = (sp.bounds[j + 1] - sp.bounds[j]) / size
                    pb = in_bytes + int((w_bytes + out_bytes) * frac)
                    srcs = set(base)
                    if combine == "sum":
                        pb = in_bytes + out_bytes + int(w_bytes * frac)
                        if j > 0:
                            srcs.add(where[(i, j - 1)])
                    add(new_stage(True), i, j, srcs, pb, costs[i] * frac)
                if combine == "sum":
                    where[(i, None)] = where[(i, k - 1)]
                continue
        kinds.append("whole")
        # pieces of split operands are received and concatenated: twice their bytes
        need += sum(nbytes(v) for v in acts if producer(v) in splits)
        if need > core_memory:
            raise MeshFitError("memory", op_label(op), need, core_memory, op)
        srcs = set().union(*(source_stages(v, None) for v in acts)) if acts else set()
        # join the stage of the latest whole producer, if it has room
        cands = sorted((t for t in srcs if not stages[t].split), reverse=True)
        if not cands and stages and not stages[-1].split:
            cands = [stages[-1].index]
        for t in cands[:1]:
            s = stages[t]
            # what the op adds to the stage: weights, results, and the operands it
            # receives from other stages (with the concatenation of split ones)
            extra = w_bytes + out_bytes + sum(
                nbytes(v) * (2 if producer(v) in splits else 1) for v in acts
                if producer(v) is not None and source_stages(v, None) - {s.index})
            if s.bytes + extra <= budget and s.cost + costs[i] <= stage_cost and can_join(s, srcs):
                add(s, i, None, srcs, extra, costs[i])
                break
        else:
            add(new_stage(False), i, None, srcs, need, costs[i])
    for k, v in enumerate(returned):
        p = producer(v)
        if p not in splits:
            continue
        srcs = source_stages(v, None)
        need = 2 * nbytes(v)  # the pieces received and their concatenation
        sliceable = isinstance(splits[p], Split)  # a tile split's output is assembled
        if need > core_memory and sliceable:  # too big for one core: written in slices by the pieces' cores
            sliced_outputs.add(k)
            continue
        home = next((t for t in sorted(srcs, reverse=True)
                     if stages[t].bytes + need <= budget and can_join(stages[t], srcs)), None)
        if home is None and len(stages) >= ncores and sliceable:  # no core left to assemble it
            sliced_outputs.add(k)
            continue
        add(stages[home] if home is not None else new_stage(False), RETURN, k, srcs, need, 0.0)
    if fill >= FULL_CORES and not (sliced_inputs or sliced_outputs):  # whole I/O: keep the margins
        return plan_partition(ops, ncores, core_memory, pack, max(f for f in MEMORY_FILLS if f < FULL_CORES),
                              returned, share, windows)
    return Plan(list(ops), kinds, splits, stages, where, reductions, row_inputs, sliced_inputs, sliced_outputs,
                blocks)
