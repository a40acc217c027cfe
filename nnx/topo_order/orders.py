"""Topological orders of a subgraph: all of them, random ones, a beam search, HEFT.

A subgraph is a list of node indices with `preds` restricted to it (predecessors
outside the subgraph are already done). Orders are tuples of node indices.

* `all_orders(nodes, preds, limit)`: every order, or None when there are more than
  `limit` (Knuth's backtracking over the ready set, stopped at limit + 1);
* `random_orders(nodes, preds, count, rng)`: orders drawn by picking a uniformly
  random ready node at each step (distinct, at most `count`);
* `beam_order(nodes, preds, width, score)`: beam search over prefixes, keeping the
  `width` prefixes with the lowest `score(prefix)` (a partial-order cost);
* `heft_order(nodes, preds, succs, cost)`: list order by decreasing upward rank
  (the longest cost path to the graph's end, HEFT's priority), ties in ONNX order;
* `perturbed_order(order, preds, succs, rng, moves)`: a neighbour of a whole order
  for the local search: `moves` ops, each moved to a random other position between
  its last predecessor and its first successor.

See docs/topological-order.md, "Orders".
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

Order = tuple[int, ...]


def _local_preds(nodes: Sequence[int], preds: Sequence[Sequence[int]]) -> dict[int, list[int]]:
    inside = set(nodes)
    return {v: [p for p in preds[v] if p in inside] for v in nodes}


def _indegrees_and_successors(
    nodes: Sequence[int], preds: Sequence[Sequence[int]]
) -> tuple[dict[int, int], dict[int, list[int]]]:
    """In-degree and successors of every node of the subgraph induced by `nodes`."""
    lp = _local_preds(nodes, preds)
    succ: dict[int, list[int]] = {v: [] for v in nodes}
    for v in nodes:
        for p in lp[v]:
            succ[p].append(v)
    return {v: len(lp[v]) for v in nodes}, succ


def all_orders(nodes: Sequence[int], preds: Sequence[Sequence[int]], limit: int) -> list[Order] | None:
    """Every topological order of `nodes` (ONNX order first), None if more than `limit`."""
    indeg, succ = _indegrees_and_successors(nodes, preds)
    out: list[Order] = []
    prefix: list[int] = []
    n = len(nodes)

    def rec(ready: list[int]) -> bool:
        if len(prefix) == n:
            out.append(tuple(prefix))
            return len(out) <= limit
        for k, v in enumerate(ready):
            rest = ready[:k] + ready[k + 1:]
            newly = []
            for s in succ[v]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    newly.append(s)
            prefix.append(v)
            ok = rec(sorted(rest + newly))
            prefix.pop()
            for s in succ[v]:
                indeg[s] += 1
            if not ok:
                return False
        return True

    ok = rec(sorted(v for v in nodes if indeg[v] == 0))
    return out if ok else None


def random_order(nodes: Sequence[int], preds: Sequence[Sequence[int]], rng: random.Random) -> Order:
    """One order: a uniformly random ready node at every step."""
    indeg, succ = _indegrees_and_successors(nodes, preds)
    ready = sorted(v for v in nodes if indeg[v] == 0)
    out: list[int] = []
    while ready:
        v = ready.pop(rng.randrange(len(ready)))
        out.append(v)
        for s in succ[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    return tuple(out)


def random_orders(nodes: Sequence[int], preds: Sequence[Sequence[int]], count: int,
                  rng: random.Random) -> list[Order]:
    """Up to `count` distinct random orders (2 * count draws at most)."""
    seen: dict[Order, None] = {}
    for _ in range(2 * count):
        if len(seen) >= count:
            break
        seen.setdefault(random_order(nodes, preds, rng), None)
    return list(seen)


def beam_order(nodes: Sequence[int], preds: Sequence[Sequence[int]], width: int,
               score: Callable[[Order], float]) -> Order:
    """The best complete order a beam search of `width` finds under `score`."""
    lp = _local_preds(nodes, preds)
    beam: list[Order] = [()]
    for _ in range(len(nodes)):
        cand: dict[Order, float] = {}
        for prefix in beam:
            done = set(prefix)
            for v in nodes:
                if v not in done and all(p in done for p in lp[v]):
                    o = prefix + (v,)
                    if o not in cand:
                        cand[o] = score(o)
        beam = sorted(cand, key=lambda o: (cand[o], o))[:width]
    return beam[0]


def upward_ranks(n: int, succs: Sequence[Sequence[int]], cost: Sequence[float]) -> list[float]:
    """Longest path (sum of node costs) from each node to the end of the graph."""
    rank = [0.0] * n
    for v in range(n - 1, -1, -1):
        rank[v] = cost[v] + max((rank[s] for s in succs[v]), default=0.0)
    return rank


def heft_order(nodes: Sequence[int], preds: Sequence[Sequence[int]], rank: Sequence[float]) -> Order:
    """List order: among the ready nodes, the highest upward rank first (ties: ONNX order)."""
    import heapq

    indeg, succ = _indegrees_and_successors(nodes, preds)
    heap = [(-rank[v], v) for v in nodes if indeg[v] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        _, v = heapq.heappop(heap)
        out.append(v)
        for s in succ[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(heap, (-rank[s], s))
    return tuple(out)


def perturbed_order(order: Sequence[int], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]],
                    rng: random.Random, moves: int = 1) -> Order:
    """`order` (a topological order of the nodes it holds) with `moves` random ops
    moved: each to a position drawn uniformly among those after its last predecessor
    and before its first successor, other than its own; an op with no other place is
    skipped (the result may then equal `order`). Always a topological order."""
    out = list(order)
    n = len(out)
    for _ in range(moves):
        if n < 2:
            break
        k = rng.randrange(n)
        v = out.pop(k)
        pos = {u: i for i, u in enumerate(out)}
        lo = max((pos[p] + 1 for p in preds[v] if p in pos), default=0)
        hi = min((pos[s] for s in succs[v] if s in pos), default=n - 1)
        places = [i for i in range(lo, hi + 1) if i != k]
        out.insert(rng.choice(places) if places else k, v)
    return tuple(out)
