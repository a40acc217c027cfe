"""The whole neuron -> core mapping (steps S1-S10; docs/neuron-mapping.md, sections 2 and 3)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .graph import Graph, cut_and_hop, quotient_graph
from .partition import MappingError, PartitionOptions, partition
from .place import anneal, force_directed, initial_placement, strong_edges, swap_refine
from .refine import refine


@dataclass
class PlaceOptions:
    trials: int = 4
    bisect_refine: str = "fm"     # "none" = original
    frontier_only: bool = True    # False = original
    terminal: bool = True         # terminal propagation in placement bisection; False = original
    force_cost: str = "hop"       # "force" = the original's swap cost
    fraction: float = 0.05        # top 5 % most stressed groups (original)
    radius: int = 2
    max_iter: int = 200
    hop_refine: float = 1.0       # >0: hop-aware final refinement weight (nnx); 0 = original
    hop_refine_passes: int = 16
    hop_all: bool = True          # hop term for every candidate move (nnx)
    place_filter: float = 0.1     # placement bisects the group graph without edges below
                                  # this x the heaviest edge of an end (nnx); 0 = original
    swap_radius: int = 3          # hop-cost swap refinement after force-directed (nnx)
    swap_sweeps: int = 30         # 0 = original (off)
    central: bool = True          # spare cores are the region's corners (nnx); False = original
    anneal_moves: int = 20000     # simulated annealing on the strong-edge group graph,
                                  # moves per group (nnx); 0 = original (off)
    anneal_t: float = 3.0         # its start temperature x a group's mean weighted degree

    @classmethod
    def seed(cls, **kw) -> "PlaceOptions":
        """The original placement exactly (``--algorithm seed``); docs/neuron-mapping.md,
        section 7 lists what the defaults add. Keyword arguments override fields."""
        base = dict(bisect_refine="none", frontier_only=False, terminal=False,
                    force_cost="force", hop_refine=0.0, place_filter=0.0, swap_sweeps=0,
                    central=False, anneal_moves=0)
        base.update(kw)
        return cls(**base)


@dataclass
class MapResult:
    core: np.ndarray          # int32 core index (y*W+x) per neuron
    group: np.ndarray         # int64 group per neuron
    core_of_group: np.ndarray
    loads: np.ndarray         # per group
    times: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)


def parse_mesh(s: str) -> tuple[int, int]:
    """'WxH' -> (W, H); raises MappingError on anything else."""
    parts = s.lower().split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise MappingError(f"bad mesh {s!r}: expected WxH, e.g. 32x32")
    w, h = int(parts[0]), int(parts[1])
    if w <= 0 or h <= 0:
        raise MappingError(f"bad mesh {s!r}: both sides must be positive")
    return w, h


def map_graph(g: Graph, mesh_w: int, mesh_h: int, capacity: int, *, seed: int = 0,
              popts: PartitionOptions | None = None, plopts: PlaceOptions | None = None,
              progress=None, on_level=None) -> MapResult:
    """Partition ``g`` into groups that fit ``capacity``, place them on a
    ``mesh_w`` x ``mesh_h`` mesh, and return the neuron -> core map (step S10)."""
    popts = popts or PartitionOptions()
    plopts = plopts or PlaceOptions()
    rng = np.random.default_rng(seed)
    times = {}
    pr = partition(g, capacity, mesh_w * mesh_h, popts, rng, progress=progress,
                   on_level=on_level, mesh=(mesh_w, mesh_h))
    times.update(pr.times)
    t = time.perf_counter()
    q = quotient_graph(g, pr.part, pr.ngroups)
    if pr.core_of_part is not None:
        core0 = pr.core_of_part  # joint partition-placement: groups already have cores
    else:
        core0 = initial_placement(strong_edges(q, plopts.place_filter), mesh_w, mesh_h,
                                  trials=plopts.trials, refine=plopts.bisect_refine,
                                  frontier_only=plopts.frontier_only, terminal=plopts.terminal,
                                  central=plopts.central, rng=rng)
    times["place"] = time.perf_counter() - t
    t = time.perf_counter()
    core, swaps = force_directed(q, core0, mesh_w, mesh_h, fraction=plopts.fraction,
                                 radius=plopts.radius, max_iter=plopts.max_iter,
                                 cost=plopts.force_cost)
    times["force"] = time.perf_counter() - t
    if plopts.anneal_moves > 0:
        t = time.perf_counter()
        sq = strong_edges(q, plopts.place_filter)
        core, acc = anneal(sq, core, mesh_w, mesh_h, moves_per_group=plopts.anneal_moves,
                           radius=plopts.swap_radius, t_start=plopts.anneal_t, rng=rng)
        times["anneal"] = time.perf_counter() - t
    moves = 0
    if plopts.swap_sweeps > 0:
        t = time.perf_counter()
        core, moves = swap_refine(q, core, mesh_w, mesh_h, radius=plopts.swap_radius,
                                  sweeps=plopts.swap_sweeps, rng=rng)
        times["swap"] = time.perf_counter() - t
    part = pr.part
    loads = pr.loads
    if plopts.hop_refine > 0:
        t = time.perf_counter()
        refine(g, part, pr.ngroups, capacity, passes=plopts.hop_refine_passes, balance=False,
               rng=rng, core_of_part=core, mesh_w=mesh_w, hop_weight=plopts.hop_refine,
               hop_all=plopts.hop_all)
        loads = np.bincount(part, weights=g.vsize, minlength=pr.ngroups).astype(np.int64)
        times["hop_refine"] = time.perf_counter() - t
    if progress:
        progress("place", 1, 1)
    stats = {"levels": pr.levels, "coarsest_vertices": pr.coarsest, "swaps": swaps, "swap_moves": moves}
    return MapResult(core[part].astype(np.int32), part, core, loads, times, stats)


def evaluate(g: Graph, core_per_neuron: np.ndarray, mesh_w: int, capacity: int) -> dict:
    """Edge cut, hop traffic and loads of a neuron -> core map (for reports and
    for comparing against baselines on equal terms)."""
    core = np.asarray(core_per_neuron, dtype=np.int64)
    cut, hop, total = cut_and_hop(g, core, None, mesh_w)
    loads = np.bincount(core, weights=g.vsize)
    used = int((loads > 0).sum())
    return {
        "edge_cut": cut,
        "edge_cut_fraction": cut / total if total else 0.0,
        "hop_traffic": hop,
        "total_weight": total,
        "cores_used": used,
        "max_core_load": int(loads.max(initial=0)),
        "capacity": int(capacity),
        "within_capacity": bool(loads.max(initial=0) <= capacity),
    }
