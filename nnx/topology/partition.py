"""Multilevel partition of a neuron topology into core-sized groups
(steps S2-S6: coarsen, bisect, uncoarsen with refinement, groups; docs/neuron-mapping.md,
sections 2 and 3)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .bisect import recursive_bisection
from .coarsen import coarsen
from .graph import Graph
from .refine import refine, repair_fragments


class MappingError(ValueError):
    """An impossible mapping request (reported as one line by the tools)."""


@dataclass
class PartitionOptions:
    """Parameters of the original algorithm (its values in brackets) and nnx's
    improvements (docs/neuron-mapping.md, section 7).

    ``PartitionOptions.seed()`` reproduces the original exactly.
    """

    trials: int = 4                 # random trials in coarsening and bisection [4-8]
    size_fraction: float = 1 / 15   # merged vertex size <= capacity * this [1/15]
    min_reduction: float = 0.2      # stop coarsening below this reduction [20 %]
    matching: str = "eligible"      # "heaviest" (original) | "eligible" (nnx)
    split: str = "proportional"     # "halving" (original) | "proportional" (nnx, k groups)
    bisect_refine: str = "fm"       # "none" (original) | "fm" (nnx)
    frontier_only: bool = True      # False = original's queue of all unselected vertices
    refine_passes: int = 8          # sweeps of the move-cost refinement per level
    balance: bool = True            # let overloaded parts shed vertices (nnx)
    imbalance: float = 0.01         # bisection size tolerance (nnx proportional)
    fill: float = 0.97              # auto group count: ceil(total / (fill * capacity))
    groups: int | None = None       # explicit number of groups (proportional split)
    joint: bool = False             # partition and place at once (place.bisect_on_mesh)
    repair: bool = True             # fragment repair at every uncoarsening level (nnx)
    local_balance: bool = True      # overflow cascades to adjacent parts, no teleport (nnx)
    cascade_rounds: int = 30        # extra refinement rounds while a part is over capacity
    two_hop: bool = True            # coarsening pairs unmatched twins (shared heaviest
                                    # neighbour) when heavy-edge pairing stalls (nnx)
    bisect_filter: float = 0.05     # >0: bisect the coarsest graph without its edges below
                                    # this x the heavier end's heaviest edge (nnx)
    match_strong: float = 0.3       # >0: pair only over edges >= this x the vertex's
                                    # heaviest edge (nnx; 0 = any eligible edge)

    @classmethod
    def seed(cls, **kw) -> "PartitionOptions":
        """The original partitioning exactly (``--algorithm seed``); docs/neuron-mapping.md,
        section 7 lists what the defaults add. Keyword arguments override fields."""
        base = dict(matching="heaviest", split="halving", bisect_refine="none",
                    frontier_only=False, balance=False, joint=False, repair=False,
                    local_balance=False, two_hop=False, match_strong=0.0, bisect_filter=0.0)
        base.update(kw)
        return cls(**base)


@dataclass
class PartitionResult:
    part: np.ndarray           # int64 group per vertex
    ngroups: int
    loads: np.ndarray
    levels: int
    coarsest: int
    times: dict = field(default_factory=dict)
    core_of_part: np.ndarray | None = None   # set by the joint partition-placement


def plan_groups(total_size: int, max_size: int, capacity: int, cores: int,
                opts: PartitionOptions) -> int | None:
    """Check a request before any work; return the group count (None = the original's halving)."""
    if capacity <= 0:
        raise MappingError(f"capacity must be positive (got {capacity})")
    if max_size > capacity:
        raise MappingError(f"a neuron of size {max_size} is larger than the core capacity "
                           f"{capacity}")
    need = max(1, math.ceil(total_size / capacity))
    if need > cores:
        raise MappingError(f"total neuron size {total_size} needs at least {need} groups of "
                           f"capacity {capacity} but the mesh has only {cores} cores")
    if opts.split == "halving":
        return None
    if opts.groups is not None:
        if opts.groups < need:
            raise MappingError(f"{opts.groups} groups cannot hold total size {total_size} "
                               f"at capacity {capacity} (need {need})")
        if opts.groups > cores:
            raise MappingError(f"{opts.groups} groups but the mesh has only {cores} cores")
        return opts.groups
    k = max(need, math.ceil(total_size / (opts.fill * capacity)))
    return min(k, cores)


def partition(g: Graph, capacity: int, cores: int, opts: PartitionOptions,
              rng: np.random.Generator, progress=None, on_level=None,
              mesh: tuple[int, int] | None = None) -> PartitionResult:
    """Steps S2-S6 on graph ``g``: returns a group per vertex such that every
    group's total size fits ``capacity``."""
    times = {}
    total = int(g.vsize.sum())
    k = plan_groups(total, int(g.vsize.max(initial=0)), capacity, cores, opts)
    t = time.perf_counter()
    levels = coarsen(g, capacity, trials=opts.trials, size_fraction=opts.size_fraction,
                     min_reduction=opts.min_reduction, matching=opts.matching,
                     two_hop=opts.two_hop, match_strong=opts.match_strong, rng=rng,
                     on_level=on_level)
    times["coarsen"] = time.perf_counter() - t
    if progress:
        progress("coarsen", 1, 1)
    cg = levels[-1].graph if levels else g
    t = time.perf_counter()
    cb = (lambda d, tot: progress("bisect", d, tot)) if progress else None
    core_of_part = None
    if opts.joint and mesh is not None and k is not None:
        from .place import bisect_on_mesh

        part, nparts, core_of_part = bisect_on_mesh(
            cg, capacity, k, mesh[0], mesh[1], trials=opts.trials, refine=opts.bisect_refine,
            imbalance=opts.imbalance, frontier_only=opts.frontier_only, rng=rng, progress=cb)
    else:
        bg = cg
        if opts.bisect_filter > 0:
            from .place import strong_edges

            bg = strong_edges(cg, opts.bisect_filter)
        part, nparts = recursive_bisection(bg, capacity, nparts=k, trials=opts.trials,
                                           refine=opts.bisect_refine, imbalance=opts.imbalance,
                                           frontier_only=opts.frontier_only, rng=rng,
                                           progress=cb)
    times["bisect"] = time.perf_counter() - t
    if nparts > cores:
        raise MappingError(f"bisection produced {nparts} groups but the mesh has only "
                           f"{cores} cores (use a larger mesh or capacity)")
    t = time.perf_counter()
    graphs = [g] + [lv.graph for lv in levels]
    for li in range(len(levels), -1, -1):
        gg = graphs[li]
        if opts.repair:
            repair_fragments(gg, part, nparts, capacity)
        refine(gg, part, nparts, capacity, passes=opts.refine_passes, balance=opts.balance,
               rng=rng, teleport=not opts.local_balance)
        if opts.balance and opts.local_balance:
            # overflow cascades over adjacent parts: more sweeps while any part is
            # over (cheap: only the over parts' vertices and the movers' neighbours
            # are visited)
            for _ in range(opts.cascade_rounds):
                fl = np.bincount(part, weights=gg.vsize, minlength=nparts)
                if fl.max(initial=0) <= capacity:
                    break
                if not refine(gg, part, nparts, capacity, passes=opts.refine_passes,
                              balance=True, rng=rng, teleport=False):
                    break
        if li == 0 and opts.balance and opts.local_balance:
            # last resort at the finest level only: whatever overflow could not
            # cascade to a neighbouring part goes to the lightest part anywhere
            fl = np.bincount(part, weights=gg.vsize, minlength=nparts)
            if fl.max(initial=0) > capacity:
                refine(gg, part, nparts, capacity, passes=opts.refine_passes, balance=True,
                       rng=rng, teleport=True)
        if li > 0:
            part = part[levels[li - 1].cmap]
        if progress:
            progress("uncoarsen", len(levels) - li + 1, len(levels) + 1)
    times["uncoarsen"] = time.perf_counter() - t
    loads = np.bincount(part, weights=g.vsize, minlength=nparts).astype(np.int64)
    # groups = non-empty parts, renumbered (step S6)
    used = np.flatnonzero(loads > 0)
    if used.shape[0] != nparts:
        remap = np.full(nparts, -1, dtype=np.int64)
        remap[used] = np.arange(used.shape[0])
        part = remap[part]
        loads = loads[used]
        if core_of_part is not None:
            core_of_part = core_of_part[used]
    if loads.max(initial=0) > capacity:
        raise MappingError(f"could not fit every group within capacity {capacity} "
                           f"(largest {int(loads.max())}); try a larger capacity or mesh")
    return PartitionResult(part, int(used.shape[0]), loads, len(levels), cg.n, times,
                           core_of_part)
