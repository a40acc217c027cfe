"""Picture of a mesh run (`nnx-run prog.s --plot mesh.png|mesh.svg`; docs/mesh.md,
"Simulator"; docs/pictures.md).

Two panels under one title naming the program and the target:

* the mesh: every core a cell coloured by its utilisation (its busiest unit's busy
  cycles / the run's cycles; colour bar "core utilisation"), and between
  neighbouring cores the two directed links as short parallel lines coloured by
  their load (busy cycles / cycles; colour bar "link load"). East- and south-bound
  links sit on one side of the line joining the core centres, west- and north-bound
  ones on the other;
* utilisation over time: one row per core, one column per time bin, coloured by the
  core's busiest unit's busy fraction in that bin (`busy_over_time`, from the
  per-unit busy intervals the simulator records), on the same colour scale.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from nnx.figures import new_figure

#: colour maps of core utilisation and link load
CORE_CMAP, LINK_CMAP = "Reds", "Blues"
#: time bins of the utilisation-over-time panel
TIME_BINS = 100
#: offset of a directed link's line from the line joining the two core centres (cells)
LINK_OFFSET = 0.12


def busy_over_time(events: Mapping[int, Iterable], cores: int, cycles: int, bins: int = TIME_BINS) -> np.ndarray:
    """(cores, bins) busy fractions: for each core and each of `bins` equal time bins
    of [0, cycles), the largest fraction of the bin any one of its units is busy.
    `events[c]` are core c's busy intervals (objects with `unit`, `start`, `end`)."""
    edges = np.linspace(0.0, float(max(cycles, 1)), bins + 1)
    out = np.zeros((cores, bins))
    width = edges[1] - edges[0]
    for c, evs in events.items():
        by_unit: dict[str, list[tuple[int, int]]] = {}
        for e in evs:
            by_unit.setdefault(e.unit, []).append((e.start, e.end))
        for spans in by_unit.values():
            s, e = (np.asarray(v, dtype=np.float64)[:, None] for v in zip(*spans))
            # busy cycles up to each bin edge, summed over the unit's intervals
            covered = np.clip(edges[None, :] - s, 0.0, e - s).sum(axis=0)
            out[c] = np.maximum(out[c], np.diff(covered) / width)
    return np.clip(out, 0.0, 1.0)


def _link_segments(width: int, height: int, link_util: Mapping[tuple[int, int], float]):
    """Line segments (cell coordinates) and loads of every directed link between
    neighbouring cores."""
    segs, loads = [], []
    n = width * height
    for a in range(n):
        ax_, ay = a % width, a // width
        for b in (a + 1, a - 1, a + width, a - width):
            if not 0 <= b < n or (abs(b - a) == 1 and b // width != ay):
                continue
            bx, by = b % width, b // width
            side = LINK_OFFSET if b > a else -LINK_OFFSET
            if ay == by:  # horizontal: east-bound above the centre line, west-bound below
                segs.append([(ax_ + 0.5 * (bx - ax_) * 0.3, ay - side), (bx - 0.5 * (bx - ax_) * 0.3, by - side)])
            else:
                segs.append([(ax_ + side, ay + 0.5 * (by - ay) * 0.3), (bx + side, by - 0.5 * (by - ay) * 0.3)])
            loads.append(float(link_util.get((a, b), 0.0)))
    return segs, np.asarray(loads)


def mesh_figure(width: int, height: int, core_util: Mapping[int, float],
                link_util: Mapping[tuple[int, int], float], title: str,
                busy: np.ndarray | None = None, cycles: int = 0) -> Figure:
    """The figure of a mesh run: core utilisation and link load on the mesh, and
    (with `busy`, `busy_over_time`'s array over `cycles`) utilisation over time."""
    fig = new_figure(13.0 if busy is not None else 7.5, 5.5)
    axes = fig.subplots(1, 2 if busy is not None else 1, squeeze=False)[0]
    norm = Normalize(0.0, 1.0)
    grid = np.zeros((height, width))
    for c, u in core_util.items():
        grid[c // width, c % width] = u
    ax = axes[0]
    im = ax.imshow(grid, cmap=CORE_CMAP, norm=norm, interpolation="nearest")
    segs, loads = _link_segments(width, height, link_util)
    if segs:
        lines = LineCollection(segs, cmap=LINK_CMAP, norm=norm, linewidths=max(0.8, 4.0 - 0.15 * max(width, height)))
        lines.set_array(loads)
        ax.add_collection(lines)
        fig.colorbar(lines, ax=ax, label="link load (busy / run cycles)", shrink=0.8)
    ax.set_xlabel("core column (x)")
    ax.set_ylabel("core row (y)")
    ax.set_title(f"{width} x {height} mesh: mean core utilisation {grid.mean():.1%}")
    if busy is not None:
        bx = axes[1]
        bx.imshow(busy, cmap=CORE_CMAP, norm=norm, aspect="auto", interpolation="nearest",
                  extent=(0, max(cycles, 1), busy.shape[0] - 0.5, -0.5))
        bx.set_xlabel("time (cycles)")
        bx.set_ylabel("core (row-major index)")
        bx.set_title(f"core utilisation over time ({busy.shape[1]} bins of {max(cycles, 1) / busy.shape[1]:,.0f} cycles)")
    fig.colorbar(im, ax=list(axes), label="core utilisation (busiest unit busy / cycles)", shrink=0.8)
    fig.suptitle(title)
    return fig


def mesh_run_figure(result, target, program: str) -> Figure:
    """`mesh_figure` of a `MeshRunResult` on `target` (events recorded: the
    over-time panel too), titled with the program and the target."""
    mesh, cyc = target.mesh, max(result.cycles, 1)
    core_util = {c: max(st.unit_busy.values(), default=0) / cyc for c, st in result.cores.items()}
    link_util = {k: v / cyc for k, v in result.link_cycles.items()}
    events = {c: st.events for c, st in result.cores.items() if st.events}
    busy = busy_over_time(events, mesh.cores, cyc) if events else None
    title = f"{program} on {target.name} ({mesh.width} x {mesh.height} cores), {result.cycles:,} cycles"
    return mesh_figure(mesh.width, mesh.height, core_util, link_util, title, busy, cyc)
