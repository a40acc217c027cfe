"""Key nodes: the nodes that lie on every path from the graph's inputs to its outputs.

A virtual source precedes every node without predecessors and a virtual sink follows
every node whose results leave the graph. A node is on every source-to-sink path
exactly when it dominates the sink, so the key nodes are the sink's dominator chain
(minus the virtual nodes). Dominators come from the iterative algorithm of Cooper,
Harvey and Kennedy over a topological order: O(N * depth), paths are never
enumerated. See docs/topological-order.md, "Key nodes".
"""

from __future__ import annotations

from collections.abc import Sequence


def immediate_dominators(preds: Sequence[Sequence[int]]) -> list[int]:
    """idom of every node of a DAG whose node indices are a topological order, node 0
    being the only entry; idom[0] = 0."""
    n = len(preds)
    idom = [-1] * n
    if n == 0:
        return idom
    idom[0] = 0

    def intersect(a: int, b: int) -> int:
        while a != b:
            while a > b:
                a = idom[a]
            while b > a:
                b = idom[b]
        return a

    for v in range(1, n):  # one sweep suffices on a DAG in topological order
        new = -1
        for p in preds[v]:
            if idom[p] == -1:
                continue
            new = p if new == -1 else intersect(p, new)
        idom[v] = new
    return idom


def key_nodes(preds: Sequence[Sequence[int]], sinks: Sequence[int] | frozenset[int]) -> list[int]:
    """Indices (ascending) of the nodes on every input-to-output path of the DAG
    `preds` (node indices in topological order; `sinks` feed the outputs)."""
    n = len(preds)
    if n == 0:
        return []
    # virtual source = 0, node i = i + 1, virtual sink = n + 1
    vpreds: list[list[int]] = [[]]
    for i in range(n):
        vpreds.append([p + 1 for p in preds[i]] or [0])
    vpreds.append([s + 1 for s in sorted(sinks)] or [n])
    idom = immediate_dominators(vpreds)
    chain: list[int] = []
    v = idom[n + 1]
    while v != 0:
        chain.append(v - 1)
        v = idom[v]
    return sorted(chain)
