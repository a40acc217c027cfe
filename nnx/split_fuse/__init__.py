"""Split a model into a chain of programs at its output nodes, split further where
compilation fails, fuse neighbours while they still compile (docs/subgraph-split-fuse.md).

* `chain`: ranges of scheduled ops <-> `graph.subgraph` ops, target nodes;
* `fit`: memoised mesh compilation of a range, further-split rules;
* `fuse`: the fusion strategies over a chain (pairwise, greedy, bidirectional, optimal).
"""
