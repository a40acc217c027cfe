"""List scheduling of lowered instructions onto the accelerator's units
(docs/architecture.md, section 7.3 "chip-schedule").

The original topological-order search (*A compilation method, apparatus, device and
storage medium*; docs/topological-order.md, "Problem" and "Method") observes that on a
chip whose unit types run in parallel (DAU memory access, MPU matrix, VPU vector) the
order in which work is issued decides how well the units overlap, and times candidate
orders with a cost model (T1 = instruction/data read time from bandwidth and volume,
T2 = compute time from the unit's throughput). `lower-to-chip` emits instructions op by op
(the graph's order, split into tiles like the operator splitting of
docs/topological-order.md); every unit runs its own queue in order, so a unit that
reaches an instruction whose inputs are late stalls although later work in its queue
could run.

`list_schedule` picks one topological order of the *instruction* DAG (nodes: the tiles'
LOAD/GATHER/CONVERT/MPU/VPU/STORE instructions; edges: the read-after-write,
write-after-read and write-after-write dependencies on cache byte ranges and storage
tensors that the lowering recorded) with the target's cost model: it simulates the
units, and whenever a unit is free it starts, among its instructions whose predecessors
have all finished, the one with the longest remaining path to the end of the program
(its upward rank; ties in program order). Each unit's queue is then its subsequence of
that order. This is list scheduling, not the original's enumeration or sampling of whole
orders per subgraph (exponential; the graph-level search belongs to a `topo-reorder`
pass): it costs O(E log N) for N instructions and E dependencies, which matters at
hundreds of thousands of tiles. Any topological order is correct (the dependencies
include buffer reuse), so the simulator's outputs do not change; only the cycles do.
"""

from __future__ import annotations

import heapq
import os
import sys
import random
from collections.abc import Sequence

from nnx.sim.isa import Instr, dense_macs, is_packed
from nnx.target import Target

_DEBUG = bool(os.environ.get("NNX_SCHEDULE_DEBUG"))


def estimate_cycles(target: Target, ins: Instr) -> int:
    """Cycles of one instruction by the target's formulas (`Target.instr_cycles`, the
    simulator's own); the MACs of a sparse MPU instruction are estimated from the
    packed weights' share of the dense tile (the simulator counts the surviving
    pairs exactly)."""
    macs = None
    if ins.unit_type == "MPU" and is_packed(ins):
        w, wm = ins.srcs[1], ins.opts["wmask"]
        assert w is not None
        macs = dense_macs(ins) * w.nelems // max(wm.nelems, 1)
    return target.instr_cycles(ins, macs)


def upward_ranks(cost: Sequence[int], preds: Sequence[Sequence[int]]) -> list[int]:
    """Longest path (sum of costs) from each instruction to the end of the program;
    `preds[i]` only holds indices < i (program order is topological)."""
    rank = list(cost)
    for i in range(len(cost) - 1, -1, -1):
        r = rank[i]
        for p in preds[i]:
            if rank[p] < r + cost[p]:
                rank[p] = r + cost[p]
    return rank


def makespan(units: Sequence[str], cost: Sequence[int], preds: Sequence[Sequence[int]], order: Sequence[int]) -> int:
    """Cycles of running `order` (a topological order) on in-order unit queues by the
    cost model: an instruction starts when its unit has finished the previous one of
    its queue and all its predecessors have finished (T2 of docs/topological-order.md,
    "Method", with the waits)."""
    finish = [0] * len(cost)
    free: dict[str, int] = {}
    end = 0
    for i in order:
        t = free.get(units[i], 0)
        for p in preds[i]:
            if finish[p] > t:
                t = finish[p]
        finish[i] = t + cost[i]
        free[units[i]] = finish[i]
        if finish[i] > end:
            end = finish[i]
    return end


def critical_path(units: Sequence[str], cost: Sequence[int], preds: Sequence[Sequence[int]],
                  order: Sequence[int]) -> list[int]:
    """The instructions that determine `makespan(order)`: from the last to finish,
    back through whichever bound its start (a predecessor or the previous
    instruction of its unit's queue)."""
    finish = [0] * len(cost)
    why = [-1] * len(cost)
    prev: dict[str, int] = {}
    for i in order:
        u = units[i]
        t, w = 0, -1
        if u in prev:
            t, w = finish[prev[u]], prev[u]
        for p in preds[i]:
            if finish[p] > t:
                t, w = finish[p], p
        finish[i] = t + cost[i]
        why[i] = w
        prev[u] = i
    if not order:
        return []
    i = max(order, key=lambda k: finish[k])
    path = []
    while i >= 0:
        path.append(i)
        i = why[i]
    return path[::-1]


def best_order(units: Sequence[str], cost: Sequence[int], preds: Sequence[Sequence[int]],
               samples: int = 4) -> tuple[list[int], int, int]:
    """The original's choice between candidate orders (docs/topological-order.md,
    "Method"), timed by the cost model: the program order as emitted and the list
    schedule; returns (order, cycles of the emitted order, cycles of the chosen one)."""
    n = len(cost)
    emitted = list(range(n))
    t0 = makespan(units, cost, preds, emitted)
    best, tb = emitted, t0
    rank = upward_ranks(cost, preds)
    # the same with each unit's emitted sequence as extra edges: a unit's later work
    # lengthens its earlier work's path, so the tiles of one op's chain (one head's
    # softmax) finish before the next op's start (the unit then feeds its consumers
    # tile by tile)
    chained = [list(ps) for ps in preds]
    last: dict[str, int] = {}
    for i in range(n):
        u = units[i]
        if u in last:
            chained[i].append(last[u])
        last[u] = i
    urank = upward_ranks(cost, chained)
    # candidate priorities (higher first): the longest remaining path, with and
    # without the unit sequences; the oldest instruction (out-of-order issue of the
    # emitted order); and, as the original samples orders at random, `samples` random
    # perturbations of the path lengths (seeded: the result is deterministic)
    cands = [rank, urank, [n - i for i in range(n)]]
    rng = random.Random(0)
    for k in range(samples):
        base = rank if k % 2 == 0 else urank
        cands.append([int(r * (1.0 + rng.uniform(-0.25, 0.25))) for r in base])
    succs = successors(preds)
    for prio in cands:
        ls = list_schedule(units, cost, preds, prio, succs)
        t1 = makespan(units, cost, preds, ls)
        if _DEBUG:
            print(f"schedule candidate: {t1}", file=sys.stderr)
        if t1 < tb:
            best, tb = ls, t1
    return best, t0, tb


def successors(preds: Sequence[Sequence[int]]) -> list[list[int]]:
    """The inverse of `preds`: the instructions that wait for each one."""
    succs: list[list[int]] = [[] for _ in preds]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    return succs


def list_schedule(units: Sequence[str], cost: Sequence[int], preds: Sequence[Sequence[int]],
                  priority: Sequence[int] | None = None,
                  succs: Sequence[Sequence[int]] | None = None) -> list[int]:
    """A topological order of the instructions (indices) that keeps the units busy:
    simulate the units; a free unit starts its ready instruction of highest
    `priority` (default: the upward rank; ties: program order). `succs`:
    `successors(preds)` when the caller has it already (several priorities)."""
    n = len(cost)
    if succs is None:
        succs = successors(preds)
    indeg = [len(ps) for ps in preds]
    rank = upward_ranks(cost, preds) if priority is None else priority
    ready: dict[str, list[tuple[int, int]]] = {u: [] for u in set(units)}
    busy_until = {u: 0 for u in ready}
    for i in range(n):
        if indeg[i] == 0:
            heapq.heappush(ready[units[i]], (-rank[i], i))
    events: list[tuple[int, int]] = []
    order: list[int] = []
    now = 0
    idle = set(ready)
    while len(order) < n:
        for u in sorted(idle):
            q = ready[u]
            if q and busy_until[u] <= now:
                _, i = heapq.heappop(q)
                order.append(i)
                fin = now + cost[i]
                busy_until[u] = fin
                heapq.heappush(events, (fin, i))
        idle = set()
        if not events:
            break  # pragma: no cover - a cycle (impossible: preds[i] < i)
        now = events[0][0]
        while events and events[0][0] == now:
            _, i = heapq.heappop(events)
            idle.add(units[i])
            for s in succs[i]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(ready[units[s]], (-rank[s], s))
                    idle.add(units[s])
        idle = {u for u in idle if busy_until[u] <= now}
    if len(order) != n:  # pragma: no cover - see above
        raise RuntimeError("list_schedule: the dependencies have a cycle")
    return order
