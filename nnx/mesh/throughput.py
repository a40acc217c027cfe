"""The first throughput schedule, `proportional` (docs/mesh.md, "Schedules"; the
`throughput` schedule is now the searched layer pipeline of nnx/mesh/pipeline.py):
a stream of inputs through a pipeline of stages.

Each core runs one stage for the whole program (the stage-per-core machinery of
nnx/mesh/compile.py: partition, packing of whole ops, stage merging, placement), and
with a stream every core re-runs its instructions once per input (`nnx-run
--stream N`): a stage works on input k + 1 while the next works on input k, a
message's receive buffer holding two inputs (double-buffered receives, the
simulator's stream depth 2). The pipeline's rate is that of its slowest stage, so
the schedule sizes the stages to balance their times.

Cost model: a stage's time is its compute, work / MACs per cycle of one core; with
n cores and a graph of W work, a balanced pipeline gives every stage W / n.
`throughput_share` thus gives an op of work C its full share, C / W x n parts (at
least THROUGHPUT_PART_COST each), where today's schedule (`stages`,
partition.compute_share) gives half of it: an op's parts then take about W / n each,
the same as a stage of packed whole ops (packing budget W / n); the packing and
stage merging of compile.plan_for_mesh bring the stages to at most n.
"""

from __future__ import annotations

#: the least work (MACs, or output elements) a part gets: below it, receiving a
#: part's inputs costs more than its compute
THROUGHPUT_PART_COST = float(1 << 18)


def throughput_share(cost: float, total: float, ncores: int, pack: float) -> int:
    """Parts an op of work `cost` asks for in a pipeline over `ncores` cores of a
    graph of work `total`: its share of the cores (scaled down by the packing
    `pack` when the stages outnumber the cores)."""
    return min(int(cost / total * ncores / pack), int(cost // THROUGHPUT_PART_COST))
