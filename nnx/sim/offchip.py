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

import bisect
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


class BandwidthCalendar:
    """The off-chip bandwidth over time, reserved one transfer at a time (the graph
    inputs and outputs of every inference; docs/mesh.md, "Streams").

    A transfer of B > 0 bytes ready at t streams at min(per_core, total - reserved)
    bytes per cycle in every moment from t on, `reserved` being what the transfers
    reserved before it took there, until its B bytes have streamed; it ends then plus
    `latency` cycles. A transfer alone gets the same end as `shared_transfers`; when
    transfers overlap, the earlier-reserved ones keep their share (first come, first
    served, like the NoC's link reservations), so a transfer's end never changes once
    given, and the simulator can ask as it runs."""

    def __init__(self, total: int, per_core: int, latency: int):
        if total < 1 or per_core < 1:
            raise ValueError("off-chip bandwidths must be >= 1 byte/cycle")
        self.total, self.per_core, self.latency = float(total), float(per_core), int(latency)
        #: reserved bytes/cycle: `used[i]` over [times[i], times[i + 1]) (the last one on)
        self.times: list[float] = [0.0]
        self.used: list[float] = [0.0]

    def _split(self, t: float) -> int:
        """The index of the segment that starts at `t` (splitting one if needed)."""
        i = bisect.bisect_right(self.times, t) - 1
        if self.times[i] != t:
            self.times.insert(i + 1, t)
            self.used.insert(i + 1, self.used[i])
            i += 1
        return i

    def transfer(self, ready: int, nbytes: int) -> int:
        """Reserve one transfer; returns its end cycle."""
        if nbytes <= 0:
            return int(ready)
        t, left = float(ready), float(nbytes)
        pieces: list[tuple[float, float, float]] = []
        i = bisect.bisect_right(self.times, t) - 1
        while left > 1e-9:
            seg_end = self.times[i + 1] if i + 1 < len(self.times) else math.inf
            rate = min(self.per_core, self.total - self.used[i])
            if rate > 1e-9:
                dt = min(seg_end - t, left / rate)
                pieces.append((t, t + dt, rate))
                left -= dt * rate
                t += dt
            else:
                t = seg_end
            if t >= seg_end:
                i += 1
        for a, b, rate in pieces:
            lo, hi = self._split(a), self._split(b)
            for k in range(lo, hi):
                self.used[k] += rate
        return math.ceil(t - 1e-9) + self.latency
