"""Subgraphs: the graph cut at its key nodes.

Every node lies on some input-to-output path, hence before or after each key node:
the nodes between two adjacent key nodes (plus the later key node) form a subgraph,
and any topological order of the whole graph is the concatenation, in key-node order,
of one topological order per subgraph. Subgraphs with fewer than `merge_below` nodes
join the preceding one (the first joins the next), which trades fewer compilations
for more orders per subgraph. See docs/topological-order.md, "Subgraphs".
"""

from __future__ import annotations

from collections.abc import Sequence


def split_at_key_nodes(n: int, keys: Sequence[int], preds: Sequence[Sequence[int]]) -> list[list[int]]:
    """Node index lists, one per subgraph, in execution order (each list ascending).

    A node belongs to the subgraph of the first key node that it precedes or is: it
    is a descendant of every earlier key node and an ancestor of every later one."""
    keyset = sorted(keys)
    # level[v] = number of key nodes that are ancestors-or-self of v
    level = [0] * n
    is_key = set(keyset)
    for v in range(n):
        lv = max((level[p] for p in preds[v]), default=0)
        level[v] = lv
        if v in is_key:
            level[v] = lv + 1
    groups: dict[int, list[int]] = {}
    for v in range(n):
        # a key node closes its own subgraph
        g = level[v] - (1 if v in is_key else 0)
        groups.setdefault(g, []).append(v)
    return [groups[g] for g in sorted(groups)]


def merge_small(parts: list[list[int]], merge_below: int) -> list[list[int]]:
    """Merge every subgraph with fewer than `merge_below` nodes into the preceding
    one (a small first subgraph into the next)."""
    out: list[list[int]] = []
    for p in parts:
        if out and len(p) < merge_below:
            out[-1] = sorted(out[-1] + p)
        else:
            out.append(list(p))
    if len(out) > 1 and len(out[0]) < merge_below:
        out[1] = sorted(out[0] + out[1])
        out.pop(0)
    return out
