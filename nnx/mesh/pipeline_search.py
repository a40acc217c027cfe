"""The layer-pipeline search of the `pipeline` schedule (docs/mesh.md, "Schedules"):
contiguous layer groups and a core count per group that balance the stage times
of a stream, as SET and Tangram search them.

Pure functions over plain data. A graph is a list of `Layer`s in topological order
(the non-constant ops of @main, nnx/mesh/pipeline.py builds them with the target's
cost definitions, `graph_costs.op_unit_cycles`); a *group* is a run [a, b) of
consecutive layers that owns n cores of its own (a layer that `joins` the one
before, an elementwise op on its parts, never starts one). Every layer of a group is split
over (up to) the group's n cores, part j of each on the group's j-th core, so the
group's cores run the group's layers one after another on one input while the
next group works on the input before: a pipeline stage. With a stream the
pipeline delivers one inference per `bottleneck` cycles, the slowest stage's time.

Cost model of a stage (`stage_time`): its layers one after another, each taking
  its one-core cycles / k  (k = min(n, the parts the layer allows)) + PART_OVERHEAD
  + what its parts receive inside the group: a layer split by output channels
    (weights outweigh activations) gathers its whole input on every part,
    in_bytes x (k - 1) / k over one link; a layer split by rows only its halo
    (taken as nothing);
where the group's first layer receives its input from the group before while the
stage works on the input before (double-buffered receives): that costs no time in
the stage, but bounds it from below at the bytes a core receives (its band of
rows, or the whole input) over one link. A core holds its share of every layer's weights and
the largest of its layers' activations (memory reuse over time): a group whose
cores that does not fit (`stage_bytes` > the budget) cannot take n cores.

The search (`best_pipeline`) minimises the bottleneck over every partition into
groups and every core count with at most `ncores` cores in all: for a bottleneck T,
`cores_for` finds by dynamic programming over the layer order the fewest cores
whose groups all take at most T (a group's least n with time <= T, which is
monotone in n); the least feasible T is found by bisection over the finitely
many stage times (the feasibility of a bound is monotone in it). Exact for this cost model
(test/python/test_pipeline_search.py checks it against brute force).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: cycles a layer's part costs beyond its compute (DMA and unit latencies, message
#: heads): below a few hundred cycles of work a part does not pay for itself
PART_OVERHEAD = 200.0

#: the longest group (layers) the search considers: longer runs of layers on the
#: same cores are never faster than cutting them, and the search stays O(L x GROUP_MAX)
GROUP_MAX = 48


@dataclass(frozen=True)
class Layer:
    """One op of the graph, as the search sees it.

    cycles: its time on one core by the target's cost definitions; weight_bytes,
    in_bytes, out_bytes: its constant operands, activation operands and results;
    max_parts: the most parts it can be split into (1: whole); by_rows: split by
    output rows (activations outweigh weights), else by output channels; joins:
    see below."""

    cycles: float
    weight_bytes: int = 0
    in_bytes: int = 0
    out_bytes: int = 0
    max_parts: int = 1
    by_rows: bool = False
    #: runs piecewise on the parts of the layer before (an elementwise op, pool or
    #: batch norm after a split op): it cannot start a group
    joins: bool = False


@dataclass(frozen=True)
class Machine:
    """What the search knows of the mesh: cores, the bytes a core's plan may use, and
    a NoC link's bytes per cycle."""

    ncores: int
    budget: float
    link_bytes_per_cycle: float


@dataclass(frozen=True)
class Pipeline:
    """The search's answer: groups [start, end) with their core counts, the parts of
    every layer, each stage's time and the slowest (cycles per inference)."""

    groups: tuple[tuple[int, int, int], ...]
    parts: tuple[int, ...]
    stage_times: tuple[float, ...]

    @property
    def bottleneck(self) -> float:
        return max(self.stage_times)

    @property
    def cores(self) -> int:
        return sum(n for _, _, n in self.groups)


def layer_parts(layer: Layer, n: int) -> int:
    """The parts a layer of a group of n cores is split into."""
    return max(1, min(n, layer.max_parts))


def layer_time(layer: Layer, n: int, machine: Machine, first: bool = False) -> float:
    """A layer's time in a group of n cores: its compute over its parts, the part
    overhead, and (a channel split, not the group's first layer, whose input comes
    double-buffered from the group before) the gathering of its whole input on every
    part."""
    k = layer_parts(layer, n)
    t = layer.cycles / k + PART_OVERHEAD
    if k > 1 and not layer.by_rows and not first:
        t += layer.in_bytes * (k - 1) / k / machine.link_bytes_per_cycle
    return t


def received_bytes(layer: Layer, n: int) -> float:
    """The input bytes a core of a group of n receives for the layer: its rows' band,
    or (a channel split or a whole layer) all of it."""
    k = layer_parts(layer, n)
    return layer.in_bytes / k if layer.by_rows else float(layer.in_bytes)


def layer_bytes(layer: Layer, n: int) -> tuple[float, float]:
    """(weights, activations) a core of a group of n holds for the layer."""
    k = layer_parts(layer, n)
    if k == 1:
        return float(layer.weight_bytes), float(layer.in_bytes + layer.out_bytes)
    if layer.by_rows:
        return float(layer.weight_bytes), (layer.in_bytes + layer.out_bytes) / k
    return layer.weight_bytes / k, layer.in_bytes + layer.out_bytes / k


def stage_time(layers: list[Layer], n: int, machine: Machine) -> float:
    """A group's time per inference on n cores (the module docstring's cost model)."""
    if not layers:
        return 0.0
    inside = sum(layer_time(x, n, machine, first=j == 0) for j, x in enumerate(layers))
    return max(inside, received_bytes(layers[0], n) / machine.link_bytes_per_cycle)


def stage_bytes(layers: list[Layer], n: int) -> float:
    """The bytes a core of a group of n holds: its share of every layer's weights and
    the largest of its layers' activations (reused over time)."""
    held = [layer_bytes(x, n) for x in layers]
    return sum(w for w, _ in held) + max((a for _, a in held), default=0.0)


def _times(layers: list[Layer], machine: Machine) -> tuple[np.ndarray, np.ndarray]:
    """time[a, b - a - 1, n - 1] and fits[...] of every group [a, b) of at most
    GROUP_MAX layers on n cores (inf where the group does not exist)."""
    L, N = len(layers), machine.ncores
    G = min(GROUP_MAX, L)
    ns = np.arange(1, N + 1)
    per = np.zeros((L, N))  # layer i's time on a group of n cores, as its first layer
    gather = np.zeros((L, N))  # and what it adds when it is not the first
    floor = np.zeros((L, N))  # a group starting at layer i: its input over one link
    w = np.zeros((L, N))
    act = np.zeros((L, N))
    link = machine.link_bytes_per_cycle
    for i, x in enumerate(layers):
        ks = np.maximum(1, np.minimum(ns, x.max_parts))
        per[i] = x.cycles / ks + PART_OVERHEAD
        if not x.by_rows:
            gather[i] = np.where(ks > 1, x.in_bytes * (ks - 1) / ks / link, 0.0)
            w[i] = np.where(ks > 1, x.weight_bytes / ks, x.weight_bytes)
            act[i] = np.where(ks > 1, x.in_bytes + x.out_bytes / ks, x.in_bytes + x.out_bytes)
            floor[i] = x.in_bytes / link
        else:
            w[i] = x.weight_bytes
            act[i] = (x.in_bytes + x.out_bytes) / ks
            floor[i] = x.in_bytes / ks / link
    time = np.full((L, G, N), np.inf)
    fits = np.zeros((L, G, N), dtype=bool)
    for a in range(L):
        if a > 0 and layers[a].joins:
            continue  # no group starts here
        t = -gather[a]  # the first layer gathers nothing
        wsum = np.zeros(N)
        amax = np.zeros(N)
        for g in range(min(G, L - a)):
            t = t + per[a + g] + gather[a + g]
            wsum = wsum + w[a + g]
            amax = np.maximum(amax, act[a + g])
            time[a, g] = np.maximum(t, floor[a])
            fits[a, g] = wsum + amax <= machine.budget
    return time, fits


def cores_for(time: np.ndarray, fits: np.ndarray, bound: float) -> tuple[int, list[tuple[int, int, int]]] | None:
    """The fewest cores whose groups all take at most `bound` cycles and fit their
    cores, and those groups [(start, end, n)], by dynamic programming over the layer
    order (a group's least n: a channel split's gathering may make more cores
    slower, so that is not where its time first falls below the bound's
    neighbour); None when some layer cannot take `bound` on any core count."""
    L, G, N = time.shape
    ok = (time <= bound) & fits
    any_ok = ok.any(axis=2)
    least = np.where(any_ok, ok.argmax(axis=2) + 1, 0)
    best = np.full(L + 1, np.iinfo(np.int64).max // 2, dtype=np.int64)
    back = np.zeros(L + 1, dtype=np.int64)
    best[0] = 0
    for b in range(1, L + 1):
        for g in range(min(G, b)):
            a = b - g - 1
            if any_ok[a, g] and best[a] + least[a, g] < best[b]:
                best[b] = best[a] + least[a, g]
                back[b] = a
    if best[L] >= np.iinfo(np.int64).max // 2:
        return None
    groups, b = [], L
    while b > 0:
        a = int(back[b])
        groups.append((a, b, int(least[a, b - a - 1])))
        b = a
    return int(best[L]), groups[::-1]


def best_pipeline(layers: list[Layer], machine: Machine) -> Pipeline:
    """The groups and core counts of least bottleneck within `machine.ncores` cores
    (the module docstring); the spare cores then go, one at a time, to the slowest
    stage while that makes it faster. Raises ValueError when no layer
    partition fits the cores' memory."""
    time, fits = _times(layers, machine)
    cands = np.unique(time[np.isfinite(time) & fits])
    lo, hi = 0, len(cands) - 1
    found = cores_for(time, fits, cands[hi]) if len(cands) else None
    if found is None or found[0] > machine.ncores:
        raise ValueError("no pipeline of the layers fits the cores")
    while lo < hi:  # the least candidate bound whose pipeline fits the cores
        mid = (lo + hi) // 2
        got = cores_for(time, fits, cands[mid])
        if got is not None and got[0] <= machine.ncores:
            hi, found = mid, got
        else:
            lo = mid + 1
    groups = [list(g) for g in found[1]]
    spare = machine.ncores - found[0]
    while spare > 0:  # spare cores to the slowest stage while it gains
        s = max(range(len(groups)), key=lambda s: time[groups[s][0], groups[s][1] - groups[s][0] - 1,
                                                       groups[s][2] - 1])
        a, b, n = groups[s]
        if n >= machine.ncores or time[a, b - a - 1, n] >= time[a, b - a - 1, n - 1]:
            break
        groups[s][2] += 1
        spare -= 1
    parts = tuple(layer_parts(layers[i], n) for a, b, n in groups for i in range(a, b))
    times = tuple(float(time[a, b - a - 1, n - 1]) for a, b, n in groups)
    return Pipeline(tuple(tuple(g) for g in groups), parts, times)
