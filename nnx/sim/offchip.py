"""The off-chip memory shared by the cores of a mesh (docs/mesh.md, "Timing model").

Each core reaches the off-chip memory through its own DMA, at most `per_core`
bytes/cycle; all cores together share `total` bytes/cycle. Concurrent transfers share
the bandwidth fairly (max-min fairness, as a round-robin memory controller does): with
n transfers streaming, each gets min(per_core, total / n) bytes per cycle, re-divided
whenever a transfer starts or ends. A transfer of B > 0 bytes ready at t ends when its
last byte has streamed, plus `latency` cycles (the first byte's round trip). Pure
functions over plain data.
"""

from __future__ import annotations

import math


def shared_transfers(
    requests: list[tuple[int, int]], total: int, per_core: int, latency: int
) -> list[int]:
    """End cycle of every (ready_cycle, nbytes) transfer sharing the off-chip bandwidth."""
    if total < 1 or per_core < 1:
        raise ValueError("off-chip bandwidths must be >= 1 byte/cycle")
    ends = [0] * len(requests)
    pending = sorted((int(t), i) for i, (t, b) in enumerate(requests) if b > 0)
    for i, (t, b) in enumerate(requests):
        if b <= 0:
            ends[i] = int(t)
    left: dict[int, float] = {}
    now = 0.0
    k = 0
    while k < len(pending) or left:
        if not left:
            now = max(now, float(pending[k][0]))
        while k < len(pending) and pending[k][0] <= now:
            i = pending[k][1]
            left[i] = float(requests[i][1])
            k += 1
        rate = min(float(per_core), total / len(left))
        first_done = min(left.values()) / rate
        nxt = pending[k][0] - now if k < len(pending) else math.inf
        step = min(first_done, nxt)
        now += step
        done = []
        for i in left:
            left[i] -= step * rate
            if left[i] <= 1e-9:
                done.append(i)
        for i in done:
            del left[i]
            ends[i] = math.ceil(now - 1e-9) + latency
    return ends
