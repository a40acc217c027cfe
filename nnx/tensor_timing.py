"""Tensor timing analysis: TAT, TRT and TTS of every op input (pure functions).

The graph is a dataflow hypergraph: each op is a node, each SSA value a hyperedge
from one producing op output to every op input that reads it
(docs/tensor-timing-and-swapping.md, "The timing analysis"):

* TAT(v), the tensor arrival time: when the value is computed and available;
* TRT(n), the tensor required time: when node n needs its inputs (it starts);
* TTS(i) = TRT(n) - TAT(i), the tensor timing slack of input i of n: how long the
  tensor waits, unused, in device memory before n reads it.

`asap_timing` is the linear-time algorithm: a queue starts with the source nodes
(nodes without inputs: TAT = TRT = 0; graph arguments also arrive at 0). Taking q
from the queue, every successor input s of q gets TAT(s) = TAT(q); once every input
of s's node n has a TAT, TRT(n) = max of those TATs, TTS(i) = TRT(n) - TAT(i) for
each input i, TAT(n) = TRT(n) + delay(n), and n joins the queue. Every node and
every input is visited once: O(nodes + inputs). This is the as-soon-as-possible
timing with unlimited parallel units.

`scheduled_timing` is the same quantities for one concrete schedule (start and
finish cycle of every op, e.g. `nnx.memory_timeline.simulate` of the block order on
the target's units): TAT = the producer's finish, TRT = the consumer's start; its TTS
is the slack a tensor really has in that schedule.

Both take plain data: `preds[n]` lists, per input of node n in operand order, the
index of the node producing it, or `EXTERNAL` (-1) for a graph argument.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

EXTERNAL = -1
"""Predecessor index of an input read from a graph argument (arrives at time 0)."""


@dataclass(frozen=True)
class Timing:
    """TAT/TRT per node and TTS per node input (same order as `preds[n]`)."""

    tat: list[int]
    trt: list[int]
    tts: list[list[int]]


class TimingCycleError(ValueError):
    """The graph has a cycle: some node never gets all its input arrival times."""


def asap_timing(delays: Sequence[int], preds: Sequence[Sequence[int]]) -> Timing:
    """The queue-driven linear-time analysis (see the module docstring)."""
    n = len(delays)
    succ: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    missing = [0] * n
    in_tat: list[list[int]] = []
    for node, ps in enumerate(preds):
        row = [0] * len(ps)
        for k, p in enumerate(ps):
            if p != EXTERNAL:
                succ[p].append((node, k))
                missing[node] += 1
        in_tat.append(row)
    tat = [-1] * n
    trt = [-1] * n
    tts: list[list[int]] = [[] for _ in range(n)]
    queue: deque[int] = deque()

    def arrive(node: int) -> None:
        row = in_tat[node]
        if not preds[node]:  # a source node
            trt[node] = tat[node] = 0
            return
        r = max(row)
        trt[node] = r
        tts[node] = [r - t for t in row]
        tat[node] = r + delays[node]

    for node in range(n):
        if missing[node] == 0:
            arrive(node)
            queue.append(node)
    done = 0
    while queue:
        q = queue.popleft()
        done += 1
        t = tat[q]
        for node, k in succ[q]:
            in_tat[node][k] = t
            missing[node] -= 1
            if missing[node] == 0:
                arrive(node)
                queue.append(node)
    if done != n:
        raise TimingCycleError(f"{n - done} nodes are on or after a cycle")
    return Timing(tat, trt, tts)


def scheduled_timing(preds: Sequence[Sequence[int]], start: Sequence[int],
                     finish: Sequence[int]) -> Timing:
    """TAT = finish of the producer (0 for arguments), TRT = start of the consumer,
    TTS = TRT - TAT of each input, for one concrete schedule."""
    tts = [[start[node] - (0 if p == EXTERNAL else finish[p]) for p in ps]
           for node, ps in enumerate(preds)]
    return Timing(list(finish), list(start), tts)
