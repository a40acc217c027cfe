"""Merge stages until a plan fits the cores (docs/mesh.md, "Compilation", stage merging).

The partitioner (nnx/mesh/partition.py) gives every part of a split op a stage of its
own, so a large model can need more stages than the mesh has cores although its
weights fit the mesh's memory many times over. `merge_stages` then puts several
stages on one core: the merged stage runs their items one after another, in graph
order (op index order, the items assembling split graph outputs last).

Rules:

* **Acyclic.** Stages s and t may merge only when no path s -> x -> ... -> t through
  another stage exists (in either direction): the merged stage graph stays acyclic,
  which the per-core programs rely on never to deadlock (nnx/mesh/stitch.py).
* **Memory.** A merged stage's planned bytes must fit `budget` (the plan's
  core_memory x fill): the sum of its stages' less the pieces one sent the other
  (now held once) and the inputs both received (now received once); the lowered
  program's storage check has the last word (nnx/mesh/compile.py).
* **Cheapest first.** A producer -> consumer pair (the consumer waits for the
  producer anyway, and their message disappears) costs no parallelism: such pairs
  merge first, the pair whose merge saves the most bytes first (the message, and the
  inputs both receive), then the smallest combined compute. When none is left, the stage of least compute merges with a stage it has
  no path to or from (a part of the same op, or any other): the parallelism lost is
  that stage's compute; among its partners, the one sharing the most input bytes
  with it (it then receives them once), then the one of least compute.

The merged plan's stages are renumbered in a topological order of the stage graph
(ties by the smallest original index), and `Plan.where` is remapped to them.
Everything here is a pure function of the plan and its stage edges; reachability is
kept as Python integer bit sets, updated per merge in O(stages) big-integer operations.
"""

from __future__ import annotations

import heapq
from dataclasses import replace

from nnx.mesh.partition import RETURN, Plan, Split, Stage, nbytes, shape
from nnx.mesh.tile_splits import TileSplit


def item_order(item: tuple[int, int | None], plan: Plan | None = None) -> tuple[float, int, int]:
    """Sort key of a stage item in graph order: op index, then part (a whole op's
    None first); the items assembling graph outputs (op index RETURN) last. The parts
    of a 2-D split (`plan.blocks`) go by input range, then output piece: each part
    adds the running sum of the part before it in its chain, and the last part of
    chain j is numbered j, below the earlier ones."""
    i, part = item
    if plan is not None and part is not None and i in plan.blocks:
        r, j = plan.blocks[i].coords(part)
        return float(i), r, j
    return (float("inf") if i == RETURN else float(i), -1 if part is None else part, 0)


def piece_bytes(plan: Plan, piece: tuple) -> int:
    """The bytes of a message piece (nnx/mesh/core_graph.py `Piece`): a value, one
    piece of its split (a full-size partial sum for a reduction, output piece j's
    partial sum for part (r, j) of a 2-D split), or a band of rows of a piece."""
    i, r, j = piece[:3]
    if i == RETURN:
        return 0
    v = plan.ops[i].results[r]
    total = nbytes(v)
    sp: Split | None = plan.splits.get(i)
    frac = 1.0
    if j is not None and i in plan.blocks:  # a 2-D split's part: a running sum of its output piece
        j = plan.blocks[i].coords(j)[1]
    if isinstance(sp, TileSplit):  # a tile (or a band of its rows)
        if len(piece) == 4:
            lo, hi, axis = piece[3]
            a, b = sp.extent(j, axis)
            return int(total * sp.fraction(j) * (hi - lo) / (b - a))
        return int(total * sp.fraction(j))
    if j is not None and sp is not None and sp.combine == "concat":
        frac = (sp.bounds[j + 1] - sp.bounds[j]) / sp.bounds[-1]
    if len(piece) == 4:
        lo, hi, axis = piece[3]
        rows = shape(v)[axis]
        band = (hi - lo) / rows
        frac = band if sp is not None and sp.axis == axis else frac * band
    return int(total * frac)


def stage_receipts(plan: Plan, returned: list) -> list[dict[tuple, tuple[int, int]]]:
    """What each stage of `plan` receives: piece -> (bytes, source stage), from
    core_graph.stage_io."""
    from nnx.mesh.core_graph import stage_io

    ios = stage_io(plan, returned, [""] * len(returned))
    return [{pc: (piece_bytes(plan, pc), src) for pc, src in io.recv.items()} for io in ios]


def stage_edges(plan: Plan, returned: list,
                receipts: list[dict[tuple, tuple[int, int]]] | None = None) -> dict[tuple[int, int], int]:
    """The stage graph of `plan`: (source stage, destination stage) -> bytes sent
    (from `stage_receipts`)."""
    edges: dict[tuple[int, int], int] = {}
    for s, recv in enumerate(receipts if receipts is not None else stage_receipts(plan, returned)):
        for w, src in recv.values():
            edges[(src, s)] = edges.get((src, s), 0) + w
    return edges


class _StageGraph:
    """The stage graph under contraction: stages are merged into representatives
    (the merged stage keeps the smaller index); `desc[s]` is the bit set of the
    stages reachable from s (s excluded)."""

    def __init__(self, plan: Plan, edges: dict[tuple[int, int], int], saving: float = 1.0,
                 receipts: list[dict[tuple, tuple[int, int]]] | None = None):
        self.saving = saving
        n = len(plan.stages)
        self.rep = list(range(n))  # original stage -> the stage it is merged into
        #: per stage, the pieces it receives: piece -> (bytes, original source stage)
        self.recv = [dict(r) for r in receipts] if receipts is not None else None
        self.alive = set(range(n))
        self.members = {s: [s] for s in range(n)}
        self.cost = [st.cost for st in plan.stages]
        self.bytes = [st.bytes for st in plan.stages]
        self.succ: list[dict[int, int]] = [{} for _ in range(n)]  # s -> {t: bytes}
        self.pred: list[dict[int, int]] = [{} for _ in range(n)]
        for (a, b), w in edges.items():
            if a != b:
                self.succ[a][b] = self.succ[a].get(b, 0) + w
                self.pred[b][a] = self.pred[b].get(a, 0) + w
        self.desc = [0] * n
        for s in reversed(self.topological()):
            d = 0
            for t in self.succ[s]:
                d |= self.desc[t] | (1 << t)
            self.desc[s] = d

    def topological(self) -> list[int]:
        """The live stages in a topological order, ties by the smallest index."""
        indeg = {s: len(self.pred[s]) for s in self.alive}
        ready = [s for s, d in indeg.items() if d == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            s = heapq.heappop(ready)
            order.append(s)
            for t in self.succ[s]:
                indeg[t] -= 1
                if indeg[t] == 0:
                    heapq.heappush(ready, t)
        if len(order) != len(self.alive):
            raise ValueError("the stage graph has a cycle")
        return order

    def reaches(self, a: int, b: int) -> bool:
        return bool(self.desc[a] >> b & 1)

    def can_merge(self, a: int, b: int) -> bool:
        """No path a -> x -> ... -> b or b -> x -> ... -> a through another stage."""
        if self.reaches(b, a):
            a, b = b, a
        if not self.reaches(a, b):
            return True
        return not any(self.reaches(x, b) for x in self.succ[a] if x != b)

    def shared_inputs(self, a: int, b: int) -> int:
        """Bytes a and b both receive: a merged stage receives them once (a band of a
        piece the other receives whole not at all). Without the stages' receipts:
        per common source, the smaller of the bytes each receives from it."""
        if self.recv is not None:
            ra, rb = self.recv[a], self.recv[b]
            return sum(w for pc, (w, _) in ra.items() if pc in rb or (len(pc) == 4 and pc[:3] in rb)) \
                + sum(w for pc, (w, _) in rb.items() if len(pc) == 4 and pc not in ra and pc[:3] in ra)
        pa, pb = self.pred[a], self.pred[b]
        if len(pa) > len(pb):
            pa, pb = pb, pa
        return sum(min(w, pb[p]) for p, w in pa.items() if p in pb)

    def merged_bytes(self, a: int, b: int) -> int:
        """The planned bytes of a and b merged: their sum less what one sends the
        other (held once, no longer received) and the inputs both receive."""
        saved = self.succ[a].get(b, 0) + self.succ[b].get(a, 0) + self.shared_inputs(a, b)
        return max(self.bytes[a], self.bytes[b], self.bytes[a] + self.bytes[b] - int(self.saving * saved))

    def merge(self, a: int, b: int) -> int:
        """Merge a and b into the smaller index; returns it."""
        a, b = min(a, b), max(a, b)
        self.bytes[a] = self.merged_bytes(a, b)
        self.alive.discard(b)
        for m in self.members[b]:
            self.rep[m] = a
        if self.recv is not None:  # received once; none from inside; no band of a piece received whole
            got = {**self.recv[b], **self.recv[a]}
            self.recv[a] = {pc: (w, src) for pc, (w, src) in got.items()
                            if self.rep[src] != a and not (len(pc) == 4 and pc[:3] in got)}
            self.recv[b] = {}
        self.members[a] += self.members.pop(b)
        self.cost[a] += self.cost[b]
        for src, w in self.pred[b].items():
            del self.succ[src][b]
            if src != a:
                self.succ[src][a] = self.succ[src].get(a, 0) + w
                self.pred[a][src] = self.pred[a].get(src, 0) + w
        for dst, w in self.succ[b].items():
            del self.pred[dst][b]
            if dst != a:
                self.pred[dst][a] = self.pred[dst].get(a, 0) + w
                self.succ[a][dst] = self.succ[a].get(dst, 0) + w
        self.pred[b], self.succ[b] = {}, {}
        self.succ[a].pop(a, None)
        self.pred[a].pop(a, None)
        bit_a, bit_b = 1 << a, 1 << b
        d = (self.desc[a] | self.desc[b]) & ~(bit_a | bit_b)
        self.desc[a], self.desc[b] = d, 0
        for x in self.alive:
            if x != a and self.desc[x] & (bit_a | bit_b):
                self.desc[x] = (self.desc[x] | d | bit_a) & ~bit_b
        return a


def _edge_key(gr: _StageGraph, a: int, b: int) -> tuple:
    """Order of producer -> consumer merges: the most bytes saved first (their
    message and the inputs both receive: the merged stage holds them once), then the
    least combined compute."""
    return gr.merged_bytes(a, b) - gr.bytes[a] - gr.bytes[b], gr.cost[a] + gr.cost[b]


def _sibling_key(gr: _StageGraph, s: int, t: int) -> tuple:
    """Order of the partners t of stage s in a merge without an edge: the most input
    bytes shared with s, then the least compute."""
    return -gr.shared_inputs(s, t), gr.cost[t], t


def may_fit(plan: Plan, ncores: int, budget: float, edges: dict[tuple[int, int], int], saving: float = 1.0,
            receipts: list[dict[tuple, tuple[int, int]]] | None = None) -> bool:
    """A necessary condition for `merge_stages` with `receipts` to succeed, in
    O(stages): every merge saves pieces a stage receives (its message from the other,
    or a piece both receive, then received once), each received piece at most once,
    so merging cannot bring the stages' total below their bytes less `saving` x every
    byte received; and at most `ncores` stages remain, each within `budget` (or an
    unmerged stage's own bytes). Without receipts (shared inputs estimated per
    source) there is no such bound: True."""
    if receipts is None:
        return True
    total = sum(st.bytes for st in plan.stages)
    most = max([budget] + [st.bytes for st in plan.stages])
    received = sum(w for recv in receipts for w, _ in recv.values())
    return total - saving * received <= ncores * most


def merge_stages(plan: Plan, ncores: int, budget: float, edges: dict[tuple[int, int], int],
                 saving: float = 1.0, receipts: list[dict[tuple, tuple[int, int]]] | None = None) -> Plan | None:
    """`plan` with stages merged until at most `ncores` remain (see the module
    docstring), or None when no valid merge is left before that. `edges` is the
    stage graph (source, destination) -> bytes (`stage_edges`); `receipts` (from
    `stage_receipts`), when given, say which pieces the stages receive, so that the
    inputs two stages share are counted exactly; `saving` is the fraction of the
    estimated savings a merged stage's bytes count. A plan that fits already is
    returned unchanged."""
    if len(plan.stages) <= ncores:
        return plan
    if not may_fit(plan, ncores, budget, edges, saving, receipts):
        return None
    gr = _StageGraph(plan, edges, saving, receipts)
    heap: list[tuple[tuple, int, int]] = []

    def push_edges(s: int) -> None:
        for t in gr.succ[s]:
            heapq.heappush(heap, (_edge_key(gr, s, t), s, t))
        for t in gr.pred[s]:
            heapq.heappush(heap, (_edge_key(gr, t, s), t, s))

    heap = [(_edge_key(gr, s, t), s, t) for s in range(len(plan.stages)) for t in gr.succ[s]]
    heapq.heapify(heap)
    stuck: set[int] = set()  # stages with no partner for a sibling merge (forever: paths and bytes only grow)

    def best_edge() -> tuple[int, int] | None:
        while heap:
            key, a, b = heapq.heappop(heap)
            if a not in gr.alive or b not in gr.alive or b not in gr.succ[a]:
                continue  # stale: a merged stage's edges were pushed again
            now = _edge_key(gr, a, b)
            if now != key:  # merges elsewhere changed it: back in line
                heapq.heappush(heap, (now, a, b))
                continue
            if gr.merged_bytes(a, b) <= budget and gr.can_merge(a, b):
                return a, b
        return None

    def best_sibling() -> tuple[int, int] | None:
        for s in sorted((x for x in gr.alive if x not in stuck), key=lambda x: (gr.cost[x], x)):
            best, key = None, None
            for t in gr.alive:
                if t == s or gr.reaches(s, t) or gr.reaches(t, s) or gr.merged_bytes(s, t) > budget:
                    continue
                k = _sibling_key(gr, s, t)
                if key is None or k < key:
                    best, key = t, k
            if best is not None:
                return s, best
            stuck.add(s)
        return None

    while len(gr.alive) > ncores:
        pair = best_edge() or best_sibling()
        if pair is None:
            return None
        push_edges(gr.merge(*pair))
    return _renumbered(plan, gr)


def _renumbered(plan: Plan, gr: _StageGraph) -> Plan:
    """The plan of the merged stage graph: stages in topological order, items in
    graph order, `where` remapped."""
    order = gr.topological()
    new_index = {}
    stages = []
    for k, rep in enumerate(order):
        olds = sorted(gr.members[rep])
        items = sorted((it for s in olds for it in plan.stages[s].items), key=lambda it: item_order(it, plan))
        stages.append(Stage(k, items, gr.bytes[rep], gr.cost[rep], any(plan.stages[s].split for s in olds)))
        for s in olds:
            new_index[s] = k
    where = {key: new_index[s] for key, s in plan.where.items()}
    return replace(plan, stages=stages, where=where)
