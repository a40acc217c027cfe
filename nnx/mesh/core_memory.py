"""What a mesh core holds when it runs many op parts one after another with memory
reuse (docs/mesh.md, "Memory reuse"): a live-range estimate for the latency
schedule's fold (nnx/mesh/latency.py).

A core lowered with memory reuse (`chip-allocate{reuse=true}`) keeps its weights
for the whole program but each activation buffer only from its first to its last
use. So what a core needs is not the sum of its parts' planned bytes (every value
for the whole program: on DenseNet-121, 80 parts a core, several times a core's
memory) but, as the throughput schedule's memory model (`pipeline_search.
group_memory`) counts it for a group of layers:

* held for the whole program: the weights of all its parts (each part's slice: 1/k
  of an output-channel split, the whole of a row split, a block of a 2-D split),
  the graph inputs it loads, and every piece it sends to another core (a stage
  function's results are `output` buffers, which chip-allocate does not reuse);
* plus the most activation bytes live at once while its parts run in order. At
  part t the core holds what t reads -- every piece of an activation operand
  (received, or produced on this core: a piece that is not the whole read, or a
  band sliced from one, is copied into the value once more) and graph inputs (a
  window when the part loads only its window) -- and t's result pieces; and every
  piece read again by a later part of the core stays live from its producer (or
  its first reader, when received) to that reader (a residual, DenseNet's
  concatenations).

The pieces and bytes each part reads are the ones the stage functions are built
from (`core_graph.item_reads`), so the model and the lowering agree on what moves;
the lowering's alignment and small buffers, and its fused elementwise chains, put
the lowered storage within about 0.8x-1.2x of the estimate; the lowered program's
storage has the last word.

Every part of a row split holds its op's weights whole, so a layer chain cut into
bands over the mesh replicates its weights once per band; `replication_caps` caps
the row parts of the ops with weights so that the replicas fit a share of the mesh.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nnx.mesh.core_graph import RETURN, _Producers, item_reads
from nnx.mesh.partition import Plan, const_bytes, nbytes, shape
from nnx.mesh.stage_merge import piece_bytes
from nnx.mesh.tile_splits import TileSplit


@dataclass(frozen=True)
class PartMemory:
    """What one op part (a plan item) needs on its core: its weight bytes, the
    pieces it reads (key, bytes, producing item or None for a graph input) and the
    bytes of its result pieces (key, bytes)."""

    weights: float
    reads: tuple[tuple[tuple, float, tuple | None], ...]
    results: tuple[tuple[tuple, float], ...]


def weight_fraction(plan: Plan, i: int, part: int | None) -> float:
    """The fraction of op i's constants part `part` holds: its slice of an output
    split (or of a follower of one), its channel group's of a tile split, its input
    range of a reduction split, its block of a 2-D split, all of a row split or a
    whole op."""
    kind = plan.kinds[i]
    if part is None or kind in ("rows", "whole"):
        return 1.0
    if kind == "block":
        blk = plan.blocks[i]
        r, j = blk.coords(part)
        fi = (blk.inputs.bounds[r + 1] - blk.inputs.bounds[r]) / max(1, blk.inputs.bounds[-1])
        fj = (blk.outputs.bounds[j + 1] - blk.outputs.bounds[j]) / max(1, blk.outputs.bounds[-1])
        return fi * fj
    sp = plan.reductions.get(i) if kind == "reduce" else plan.splits.get(i)
    if isinstance(sp, TileSplit):  # its channel group's weights, whatever its band
        _, j = sp.coords(part)
        return (sp.groups[j + 1] - sp.groups[j]) / max(1, sp.groups[-1])
    if sp is None or sp.rows or part >= sp.k:
        return 1.0
    return (sp.bounds[part + 1] - sp.bounds[part]) / max(1, sp.bounds[-1] - sp.bounds[0])


def part_memories(plan: Plan, returned: list) -> dict[tuple, PartMemory]:
    """The `PartMemory` of every item of the plan."""
    prod = _Producers(plan)
    inputs = plan.ops[0].parent_block().args if plan.ops else ()  # @main's arguments
    last_part = {}
    for s in plan.stages:
        for i, part in s.items:
            if i != RETURN:
                last_part[i] = max(last_part.get(i, -1), part if part is not None else -1)
    out: dict[tuple, PartMemory] = {}
    for s in plan.stages:
        for item in s.items:
            i, part = item
            args, pieces = item_reads(plan, prod, item, returned)
            reads = []
            for a in args:
                full = float(nbytes(inputs[a]))
                if i != RETURN and i in plan.sliced_inputs and plan.kinds[i] == "rows":
                    full *= (plan.splits[i].bounds[part + 1] - plan.splits[i].bounds[part]) / max(
                        1, plan.splits[i].bounds[-1])
                reads.append((("arg", a, item), full, None))
            for pc in pieces:
                src = (pc[0], pc[2])
                if src not in plan.where:  # a reduction's result: held by its last part
                    src = (pc[0], last_part.get(pc[0], None))
                reads.append((pc, float(piece_bytes(plan, pc)), src))
            if i == RETURN:
                v = returned[part]
                results = (((RETURN, part, None), float(nbytes(v))),)
                weights = 0.0
            else:
                op = plan.ops[i]
                results = tuple(((i, r, part), float(piece_bytes(plan, (i, r, part)))) for r in range(len(op.results)))
                weights = const_bytes(op) * weight_fraction(plan, i, part)
            out[item] = PartMemory(weights, tuple(reads), results)
    return out


@dataclass
class CoreMemory:
    """The live-range estimate of one core's memory as parts are appended to it in
    the order it runs them (see the module docstring)."""

    #: bytes held for the whole program: weights, graph inputs, and the pieces sent
    #: to other cores (the lowering keeps a stage function's results, `kind =
    #: "output"` buffers, for the whole program)
    weights: float = 0.0
    #: the pieces charged to `weights` as sent or loaded
    held: set = field(default_factory=set)
    #: per part on the core: the bytes it touches itself (reads and results)
    foot: list = field(default_factory=list)
    #: per part: bytes of earlier pieces live across it (read again later)
    across: list = field(default_factory=list)
    #: piece key -> (index of its last use on this core, bytes)
    live: dict = field(default_factory=dict)
    peak: float = 0.0

    def total(self) -> float:
        """The bytes the core holds (weights and the like, plus its peak)."""
        return self.weights + self.peak

    def hold(self, key, nbytes: float) -> None:
        """Hold piece `key` for the whole program (sent to another core)."""
        if key not in self.held:
            self.held.add(key)
            self.weights += nbytes

    def _footprint(self, pm: PartMemory, here) -> tuple[float, list[tuple[int, float]]]:
        """(the part's own bytes, [(last use, bytes)] of the live pieces it extends);
        `here(item)`: whether the item producing a piece runs on this core."""
        fp = sum(b for _, b in pm.results)
        extend = []
        for key, b, src in pm.reads:
            if src is None:  # a graph input, loaded for the whole program
                continue
            # every piece read has its place in the value it makes up (received there,
            # or copied there from where the core holds it: chip-lower's in-place
            # concats), and a piece held since its producer or an earlier reader stays
            fp += b
            whole = key if len(key) == 3 else None
            if whole is not None and whole in self.live:
                extend.append((self.live[whole][0], b))
        return fp, extend

    def need(self, pm: PartMemory, here) -> float:
        """The bytes the core would hold with part `pm` appended."""
        fp, extend = self._footprint(pm, here)
        peak = max(self.peak, fp)
        inputs = sum(b for key, b, src in pm.reads if src is None and key[:2] not in self.held)
        n = len(self.foot)
        if extend and n:
            add = np.zeros(n + 1)
            for t0, b in extend:
                add[t0 + 1] += b
            bump = np.cumsum(add)[:n]
            peak = max(peak, float(np.max(np.asarray(self.foot) + np.asarray(self.across) + bump)))
        return self.weights + pm.weights + inputs + peak

    def add(self, pm: PartMemory, here) -> None:
        """Append part `pm` to the core."""
        fp, extend = self._footprint(pm, here)
        n = len(self.foot)
        for t0, b in extend:
            for t in range(t0 + 1, n):
                self.across[t] += b
                self.peak = max(self.peak, self.foot[t] + self.across[t])
        self.foot.append(fp)
        self.across.append(0.0)
        self.peak = max(self.peak, fp)
        self.weights += pm.weights
        for key, b, src in pm.reads:
            if src is None:
                self.hold(key[:2], b)
            elif len(key) == 3:
                self.live[key] = (n, b)
        for key, b in pm.results:
            self.live[key] = (n, b)


def replication_caps(ops: list, shares, target, budget: float):
    """`shares` (a `partition.OpShares`) with `rows_max` set so that the weights the
    row splits replicate fit `budget` bytes over the mesh (docs/mesh.md, "Memory
    reuse"). Every part of a row split holds its op's weights whole, so an op of W
    weight bytes on k row parts holds k W; the activations a core holds are reused
    over time, its weights are not. An op of one-core cycles T on k parts takes about
    T / k, so the parts that minimise the summed time sum(T_i / k_i) within
    sum(k_i W_i) <= budget are k_i proportional to sqrt(T_i / W_i)
    (a Lagrange multiplier), found by bisection on the factor and capped at what the
    cost model asked for. Only ops the partitioner may split by rows (their windowed
    activations outweigh their weights) count; the rest hold a slice of their
    weights per part. None when the asked parts fit."""
    from dataclasses import replace

    from nnx.graph_costs import op_unit_cycles
    from nnx.mesh.partition import act_operands
    from nnx.mesh.rows import can_split_rows

    from nnx.mesh.rows import ROW_AXIS

    n = target.mesh.width * target.mesh.height
    # a row split takes at least its input's row pieces: up to every output row
    asked = [max(1, min(n, shape(op.results[0])[ROW_AXIS] if can_split_rows(op) and len(shape(op.results[0])) == 4
                        else r)) for op, r in zip(ops, shares.rows)]
    weights = [float(const_bytes(op)) if can_split_rows(op) and const_bytes(op) and
               sum(nbytes(v) for v in act_operands(op)) >= const_bytes(op) else 0.0 for op in ops]
    if sum(k * w for k, w in zip(asked, weights)) <= budget:
        return shares
    cycles = [float(op_unit_cycles(target, op)[1]) for op in ops]
    ratio = [np.sqrt(t / w) if w else 0.0 for t, w in zip(cycles, weights)]

    def parts(lam: float) -> list[int]:
        return [k if not w else int(min(k, max(1.0, lam * r))) for k, w, r in zip(asked, weights, ratio)]

    lo, hi = 0.0, max(asked) / max(min((r for r in ratio if r), default=1.0), 1e-12)
    for _ in range(60):
        mid = (lo + hi) / 2
        if sum(k * w for k, w in zip(parts(mid), weights)) <= budget:
            lo = mid
        else:
            hi = mid
    caps = [k if w else n for k, w in zip(parts(lo), weights)]
    return replace(shares, rows_max=tuple(caps))


def place_part(cores: list[CoreMemory], k: int, pm: PartMemory, where: dict) -> None:
    """Append part `pm` to core k of `cores`; `where`: item -> core of the parts placed
    so far. A piece it receives from another core is held there for the whole
    program (the sender keeps its result buffer)."""
    cores[k].add(pm, lambda src: where.get(src) == k)
    for key, b, src in pm.reads:
        if src is not None and where.get(src, k) != k:
            cores[where[src]].hold(key, b)


def stage_memories(plan: Plan, memory: dict) -> list[CoreMemory]:
    """The live-range estimate of every stage of a plan (a core each, its items in
    the order it runs them; `memory`: `part_memories` of the plan), the pieces it
    sends to other stages held for the whole program."""
    stage_of = {it: s.index for s in plan.stages for it in s.items}
    cores = [CoreMemory() for _ in plan.stages]
    for s in plan.stages:
        for it in s.items:
            place_part(cores, s.index, memory[it], stage_of)
    return cores
