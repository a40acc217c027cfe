"""The network-on-chip of a core mesh: XY routes and link occupancy (docs/mesh.md, "NoC timing").

Pure functions and one small state object over plain data, used by the mesh
simulator and by estimates that need the same timing. Cores are numbered row-major,
`core = y * width + x`. Links are directed and join neighbouring routers; a link is
named by the pair of cores it joins, `(a, b)`.

Timing of one transfer of `nbytes` from core `src` to core `dst`, ready at `t`:

* the route is dimension-ordered (XY): first along x to the destination column, then
  along y; `h` = number of links = the Manhattan distance;
* the message is serialised into `ser = ceil(nbytes / link_bytes_per_cycle)` cycles
  of link time; its head needs `hop_latency` cycles per hop;
* it occupies link `i` (0-based along the route) during
  `[s + i * hop_latency, s + i * hop_latency + ser)`, where the start `s >= t` is the
  earliest at which every one of those intervals is free (wormhole-like: a message
  holds all its links while its body streams; contention = waiting for a link);
* it arrives at `s + h * hop_latency + ser`. A transfer to the same core (h = 0)
  arrives at `t` and occupies nothing.

A multicast from `src` to a set of cores travels along the XY tree: the union of the
XY routes from `src` to every destination (a tree, since all of them leave `src` along
its row and then turn into their columns). Each tree link carries the bytes once; a
link at depth `i` (its distance from `src`, counted in links) is held during
`[s + i * hop_latency, s + i * hop_latency + ser)`, `s` the earliest start at which
every tree link is free, and destination `d` receives the last byte at
`s + hops(src, d) * hop_latency + ser` (routers copy the flits into every branch as
they pass, so the branches do not wait for each other).

Link reservations fill the earliest free gap, so a transfer that is *processed* after
another but is *ready* earlier can still go first when a gap allows; the result is
deterministic for a given processing order.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

Link = tuple[int, int]


def core_xy(core: int, width: int) -> tuple[int, int]:
    """(x, y) of a row-major core index."""
    return core % width, core // width


def hops(src: int, dst: int, width: int) -> int:
    """Links on the XY route from `src` to `dst` (the Manhattan distance)."""
    (x0, y0), (x1, y1) = core_xy(src, width), core_xy(dst, width)
    return abs(x1 - x0) + abs(y1 - y0)


def xy_route(src: int, dst: int, width: int) -> list[Link]:
    """The directed links of the dimension-ordered route: x first, then y."""
    x, y = core_xy(src, width)
    x1, y1 = core_xy(dst, width)
    links: list[Link] = []
    while x != x1:
        nx = x + (1 if x1 > x else -1)
        links.append((y * width + x, y * width + nx))
        x = nx
    while y != y1:
        ny = y + (1 if y1 > y else -1)
        links.append((y * width + x, ny * width + x))
        y = ny
    return links


def xy_tree(src: int, dsts: list[int] | tuple[int, ...], width: int) -> list[tuple[Link, int]]:
    """The links of the XY multicast tree from `src` to `dsts`, each once, with its
    depth (0 for the links leaving `src`), in order of first use."""
    seen: dict[Link, int] = {}
    for d in dsts:
        for i, link in enumerate(xy_route(src, d, width)):
            seen.setdefault(link, i)
    return list(seen.items())


def serialisation_cycles(nbytes: int, link_bytes_per_cycle: int) -> int:
    """Cycles a message of `nbytes` holds each link it crosses."""
    return -(-int(nbytes) // int(link_bytes_per_cycle))


def transfer_cycles(nbytes: int, nhops: int, hop_latency: int, link_bytes_per_cycle: int) -> int:
    """Cycles of an uncontended transfer over `nhops` links (0 for a local one)."""
    if nhops == 0:
        return 0
    return nhops * hop_latency + serialisation_cycles(nbytes, link_bytes_per_cycle)


class _Busy:
    """Sorted, disjoint busy intervals of one link."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def conflict(self, a: int, b: int) -> int | None:
        """End of a busy interval overlapping [a, b), or None when [a, b) is free."""
        i = bisect.bisect_right(self.starts, a) - 1
        if i >= 0 and self.ends[i] > a:
            return self.ends[i]
        j = i + 1
        if j < len(self.starts) and self.starts[j] < b:
            return self.ends[j]
        return None

    def add(self, a: int, b: int) -> None:
        """Reserve the free interval [a, b), merging it with busy neighbours that touch
        it (back-to-back messages then cost one interval to skip, not one each)."""
        i = bisect.bisect_left(self.starts, a)
        starts, ends = self.starts, self.ends
        if i > 0 and ends[i - 1] == a:
            if i < len(starts) and starts[i] == b:
                ends[i - 1] = ends[i]
                del starts[i], ends[i]
            else:
                ends[i - 1] = b
        elif i < len(starts) and starts[i] == b:
            starts[i] = a
        else:
            starts.insert(i, a)
            ends.insert(i, b)


@dataclass
class Noc:
    """Link occupancy of one mesh and the traffic it has carried."""

    width: int
    height: int
    hop_latency: int
    link_bytes_per_cycle: int
    busy: dict[Link, _Busy] = field(default_factory=dict)
    link_bytes: dict[Link, int] = field(default_factory=dict)
    link_cycles: dict[Link, int] = field(default_factory=dict)
    bytes: int = 0
    byte_hops: int = 0

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"mesh {self.width}x{self.height}: both sides must be >= 1")
        if self.hop_latency < 0 or self.link_bytes_per_cycle < 1:
            raise ValueError("hop latency must be >= 0 and link bandwidth >= 1 byte/cycle")

    @property
    def cores(self) -> int:
        return self.width * self.height

    def transfer(self, src: int, dst: int, nbytes: int, ready: int) -> tuple[int, int]:
        """Reserve the route of one message; returns (start, arrival) cycles."""
        s, (arrival,) = self.multicast(src, (dst,), nbytes, ready)
        return s, arrival

    def multicast(self, src: int, dsts: list[int] | tuple[int, ...], nbytes: int, ready: int) -> tuple[int, list[int]]:
        """Reserve the XY tree of one message to every core of `dsts` (one core: a
        unicast); returns (start, arrival at each destination) in cycles."""
        for c in (src, *dsts):
            if not 0 <= c < self.cores:
                raise ValueError(f"core {c} is outside the {self.width}x{self.height} mesh")
        tree = xy_tree(src, dsts, self.width)
        if not tree:
            return ready, [ready for _ in dsts]
        ser = serialisation_cycles(nbytes, self.link_bytes_per_cycle)
        lat = self.hop_latency
        busy = [(self.busy.setdefault(link, _Busy()), depth * lat) for link, depth in tree]
        s = int(ready)
        moved = True
        while moved:
            moved = False
            for b, off in busy:
                a = s + off
                end = b.conflict(a, a + ser)
                if end is not None:
                    s = end - off
                    moved = True
                    break
        for (link, _), (b, off) in zip(tree, busy):
            b.add(s + off, s + off + ser)
            self.link_bytes[link] = self.link_bytes.get(link, 0) + int(nbytes)
            self.link_cycles[link] = self.link_cycles.get(link, 0) + ser
        self.bytes += int(nbytes)
        self.byte_hops += int(nbytes) * len(tree)
        arrivals = [s + hops(src, d, self.width) * lat + ser if d != src else s for d in dsts]
        return s, arrivals
