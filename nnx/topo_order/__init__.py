"""Topological-order search for the target's parallel units (docs/topological-order.md).

One concept per module:

* dag          the op graph of a block: compute ops, their data/`after` predecessors;
* key_nodes    nodes on every input-to-output path (dominators on a virtual source/sink);
* subgraphs    the graph cut between adjacent key nodes, small pieces merged;
* orders       topological orders of a subgraph: all, random, beam search, HEFT;
* cost         what an order costs: `estimate` (graph level), `model` (compiled
               instructions, fetch + per-unit compute), `simulate` (compiled, replayed);
* compile_cache compiled subgraphs by content hash, compiled in a process pool;
* report       the JSON report, the DOT view and the Gantt chart;
* link         per-subgraph compilation with symbolic references, and the linker
               (`chip-link`, passes/chip_link.py).

`passes/topo_reorder.py` strings them together.
"""
