"""Cache space of the lowering: an op's operand slots (double-buffered), their layout
from the bottom of each cache, and the top-down heap of resident (chained) results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nnx.lowering.storage import ALIGN, _align

ROTATE = 4  # most working-set regions consecutive ops rotate over (prefetch depth)
MAX_DEPTH = 8  # most buffers of a per-tile weight slot (prefetch depth, scheduled programs)


@dataclass
class Slot:
    """One operand of an op in a cache: `nbuf` buffers of `size` bytes."""

    space: str
    size: int
    nbuf: int
    base: int = 0
    cur: Any = None  # what the current buffer holds
    which: int = -1
    cur_tile: Any = None

    def next(self) -> int:
        self.which = (self.which + 1) % self.nbuf
        return self.base + self.which * _align(self.size)

    def current(self) -> int:
        return self.base + max(self.which, 0) * _align(self.size)


class Layout:
    def __init__(self, base: dict[str, int] | None = None) -> None:
        self.top = {"N": 0, "W": 0, "O": 0}
        if base:
            self.top.update(base)

    def add(self, slot: Slot) -> Slot:
        slot.base = self.top[slot.space]
        self.top[slot.space] += slot.nbuf * _align(max(slot.size, 1))
        return slot


class CacheHeap:
    """Resident (chained) tensors in one cache: allocated top-down, so that an op's
    working set (its slots, laid out from address 0) gets everything below `floor()`."""

    def __init__(self, cap: int, next_fit: bool = False) -> None:
        self.cap = cap
        self.live: dict[Any, tuple[int, int]] = {}  # root value -> [lo, hi)
        # next fit: search downwards from the last allocation first, so a buffer
        # freed a moment ago (whose last readers may still be running) is reused
        # last: fewer write-after-read waits between consecutive ops
        self.next_fit = next_fit
        self.cursor = cap

    def floor(self) -> int:
        return min((lo for lo, _ in self.live.values()), default=self.cap)

    def alloc(self, root, nbytes: int, limit: int = 0) -> int | None:
        """The highest free gap of `nbytes` (aligned) at or above `limit` (below the
        cursor first, with next fit)."""
        n = _align(max(nbytes, 1))
        spans = sorted(self.live.values(), key=lambda r: -r[0])
        tops = [min(self.cursor, self.cap), self.cap] if self.next_fit else [self.cap]
        for top in tops:
            hi = top
            for lo2, hi2 in spans + [(0, 0)]:
                if lo2 >= top:
                    continue
                hi = min(hi, top)
                lo = (hi - n) // ALIGN * ALIGN
                if hi2 <= lo and lo >= limit:
                    self.live[root] = (lo, lo + n)
                    self.cursor = lo
                    return lo
                hi = min(hi, lo2)
        return None

    def free(self, root) -> None:
        self.live.pop(root, None)
