"""Stages onto cores (docs/mesh.md, "Compilation").

The stage graph (vertices: stages; edge weights: the bytes they exchange) is placed
on the mesh with the neuron mapper's placement (nnx/topology/place.py): recursive
bisection of the core region with terminal propagation, then swap refinement, so
producers sit near their consumers. `rowmajor` puts stage s on core s (the
baseline); `annotations` takes the `nnx.cores` of each stage's first op (written by
`neuron-group-map`), moving a stage whose core is taken to the nearest free one.
"""

from __future__ import annotations

import numpy as np

PLACEMENTS = ("bisect", "rowmajor", "annotations")


def place_rowmajor(n: int) -> list[int]:
    return list(range(n))


def place_bisect(n: int, edges: dict[tuple[int, int], int], width: int, height: int, seed: int = 0) -> list[int]:
    """Recursive bisection + swap refinement of the stage graph on a width x height mesh."""
    from nnx.topology.graph import from_edges
    from nnx.topology.place import initial_placement, swap_refine

    if n <= 1:
        return list(range(n))
    if edges:
        pre = np.array([a for a, _ in edges], dtype=np.int64)
        post = np.array([b for _, b in edges], dtype=np.int64)
        w = np.array(list(edges.values()), dtype=np.float64)
    else:
        pre = post = np.zeros(0, dtype=np.int64)
        w = np.zeros(0)
    q = from_edges(pre, post, w, n=n)
    rng = np.random.default_rng(seed)
    core = initial_placement(q, width, height, rng=rng)
    core, _ = swap_refine(q, np.asarray(core), width, height, rng=rng)
    return [int(c) for c in core]


def place_annotated(wanted: list[int | None], width: int, height: int) -> list[int]:
    """Each stage on its wanted core (None: any); a core already taken sends the stage
    to the nearest free core (Manhattan distance, then row-major)."""
    taken: set[int] = set()
    out: list[int] = []
    ncores = width * height
    for i, c in enumerate(wanted):
        if c is None or c in taken or not 0 <= c < ncores:
            cx, cy = (0, 0) if c is None or not 0 <= c < ncores else (c % width, c // width)
            free = [k for k in range(ncores) if k not in taken]
            c = min(free, key=lambda k: (abs(k % width - cx) + abs(k // width - cy), k))
        taken.add(c)
        out.append(c)
    return out


def byte_hops(cores: list[int], edges: dict[tuple[int, int], int], width: int) -> int:
    """Sum over stage edges of bytes x XY hops between their cores."""
    return sum(b * (abs(cores[a] % width - cores[c] % width) + abs(cores[a] // width - cores[c] // width))
               for (a, c), b in edges.items())


def band_snake(width: int, height: int, band: int) -> list[int]:
    """The cores along a boustrophedon over bands of `band` rows (the last band
    takes the rows left): band b runs left to right when b is even, right to left
    when odd, and within it each column is walked down and up in turn, so
    consecutive positions are neighbours (but where a band of an even number of
    columns ends on its top row: the next band begins `band` rows below, a grid
    of even area having no such path between those corners). A run of n positions is then a block
    about `band` rows high, whose boundary with the next run is `band` links wide
    (with band 1, a run along one row meets the next through one link, which the
    XY routes of all the messages between two such runs cross)."""
    out: list[int] = []
    for b, y0 in enumerate(range(0, height, band)):
        rows = list(range(y0, min(height, y0 + band)))
        xs = range(width) if b % 2 == 0 else range(width - 1, -1, -1)
        for i, x in enumerate(xs):
            out += [y * width + x for y in (rows if i % 2 == 0 else rows[::-1])]
    return out


def busiest_link(cores: list[int], sends: list[tuple[int, list[int], int]], width: int) -> int:
    """The most bytes any directed NoC link carries when each send (source stage,
    destination stages, bytes) goes once along the XY tree from its stage's core to
    theirs (a multicast: docs/mesh.md, "Timing model"), `cores[s]` being stage s's."""
    from nnx.sim.noc import xy_tree

    load: dict[tuple[int, int], int] = {}
    for src, dsts, nb in sends:
        far = [cores[d] for d in dsts if cores[d] != cores[src]]
        for link, _ in xy_tree(cores[src], far, width):
            load[link] = load.get(link, 0) + nb
    return max(load.values(), default=0)
