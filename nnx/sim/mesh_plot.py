"""Picture of a mesh run (`nnx-run prog.s --plot mesh.png|mesh.svg`; docs/mesh.md,
"Simulator"; docs/pictures.md).

Two panels under one title naming the program and the target:

* the mesh: every core a square at its (column, row) coloured by its utilisation
  (its busiest unit's busy cycles / the run's cycles; colour bar "core
  utilisation"), and in the gaps between neighbouring cores the two directed links
  as short parallel bars coloured by their load (busy cycles / cycles; colour bar
  "link load"): east- and south-bound links on one side, west- and north-bound ones
  on the other. Idle cores and links are white on a grey background;
* utilisation over time: one row per core, one column per time bin, coloured by the
  core's busiest unit's busy fraction in that bin (`busy_over_time`), on the same
  colour scale: the report's `utilisation_over_time` (nnx/sim/utilisation.py, from
  the busy spans the simulator counts), so a row's time average matches the
  report's busy cycles.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from matplotlib.collections import LineCollection, PatchCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from nnx.figures import new_figure

#: colour maps of core utilisation and link load
CORE_CMAP, LINK_CMAP = "Reds", "Blues"
#: time bins of the utilisation-over-time panel
TIME_BINS = 100
#: side of a core's square (cells); links sit in the gaps between squares
CORE_SIZE = 0.7
#: offset of a directed link's bar from the line joining the two core centres (cells)
LINK_OFFSET = 0.14


def _link_segments(width: int, height: int, link_util: Mapping[tuple[int, int], float]):
    """Bar segments (cell coordinates, in the gaps between core squares) and loads
    of every directed link between neighbouring cores."""
    segs, loads = [], []
    n = width * height
    gap0, gap1 = CORE_SIZE / 2, 1 - CORE_SIZE / 2
    for a in range(n):
        ax_, ay = a % width, a // width
        for b in (a + 1, a - 1, a + width, a - width):
            if not 0 <= b < n or (abs(b - a) == 1 and b // width != ay):
                continue
            bx, by = b % width, b // width
            side = -LINK_OFFSET if b > a else LINK_OFFSET
            if ay == by:
                x0 = min(ax_, bx)
                segs.append([(x0 + gap0, ay + side), (x0 + gap1, ay + side)])
            else:
                y0 = min(ay, by)
                segs.append([(ax_ - side, y0 + gap0), (ax_ - side, y0 + gap1)])
            loads.append(float(link_util.get((a, b), 0.0)))
    return segs, np.asarray(loads)


def mesh_figure(width: int, height: int, core_util: Mapping[int, float],
                link_util: Mapping[tuple[int, int], float], title: str,
                busy: np.ndarray | None = None, cycles: int = 0) -> Figure:
    """The figure of a mesh run: core utilisation and link load on the mesh (the
    cores a PatchCollection, the links a LineCollection, each with its colour bar),
    and (with `busy`, `busy_over_time`'s array over `cycles`) utilisation over time."""
    fig = new_figure(13.5 if busy is not None else 7.5, 5.8)
    axes = fig.subplots(1, 2 if busy is not None else 1, squeeze=False,
                        width_ratios=[1.0, 1.15] if busy is not None else None)[0]
    norm = Normalize(0.0, 1.0)
    ax = axes[0]
    ax.set_facecolor("0.88")
    h = CORE_SIZE / 2
    squares = [Rectangle((c % width - h, c // width - h), CORE_SIZE, CORE_SIZE) for c in range(width * height)]
    cells = PatchCollection(squares, cmap=CORE_CMAP, norm=norm, edgecolors="0.6", linewidths=0.4)
    cells.set_array(np.array([float(core_util.get(c, 0.0)) for c in range(width * height)]))
    ax.add_collection(cells)
    segs, loads = _link_segments(width, height, link_util)
    cell_pt = 72 * 4.8 / max(width, height)  # points per cell, about
    lines = LineCollection(segs, cmap=LINK_CMAP, norm=norm, linewidths=max(1.0, 0.16 * cell_pt))
    lines.set_array(loads)
    ax.add_collection(lines)
    ax.set_xlim(-0.5, width - 0.5)
    ax.set_ylim(height - 0.5, -0.5)
    ax.set_aspect("equal")
    step = max(1, (max(width, height) + 7) // 8)
    ax.set_xticks(range(0, width, step))
    ax.set_yticks(range(0, height, step))
    ax.set_xlabel("core column (x)")
    ax.set_ylabel("core row (y)")
    mean = sum(core_util.values()) / max(width * height, 1)
    ax.set_title(f"{width} x {height} mesh: mean core utilisation {mean:.1%}")
    fig.colorbar(cells, ax=ax, label="core utilisation (busiest unit busy / cycles)", shrink=0.85, pad=0.02)
    fig.colorbar(lines, ax=ax, label="link load (busy / cycles)", shrink=0.85, pad=0.02)
    if busy is not None:
        bx = axes[1]
        im = bx.imshow(busy, cmap=CORE_CMAP, norm=norm, aspect="auto", interpolation="nearest",
                       extent=(0, max(cycles, 1), busy.shape[0] - 0.5, -0.5))
        bx.set_xlabel("time (cycles)")
        bx.set_ylabel("core (row-major index)")
        bx.set_title(f"core utilisation over time ({busy.shape[1]} bins of {max(cycles, 1) / busy.shape[1]:,.0f} cycles)")
        fig.colorbar(im, ax=bx, label="busiest unit busy fraction", shrink=0.85, pad=0.02)
    fig.suptitle(title)
    return fig


def busy_over_time(result, cores: int, cycles: int, bins: int = TIME_BINS) -> np.ndarray:
    """(cores, bins) busy fractions of a `MeshRunResult`: the report's
    `utilisation_over_time` (nnx/sim/utilisation.py, from the simulator's per-unit
    busy spans) as an array with a row for every core of the mesh."""
    from nnx.sim.utilisation import utilisation_over_time

    u = utilisation_over_time({c: st.busy_spans for c, st in result.cores.items()}, cycles, bins)
    out = np.zeros((cores, len(u["cycles"])))
    for c, row in u["cores"].items():
        out[int(c)] = row
    return out


def mesh_run_figure(result, target, program) -> Figure:
    """`mesh_figure` of a `MeshRunResult` of the `MeshProgram` `program` on `target`
    (the over-time panel from the simulator's busy spans), titled with the program
    file and the target."""
    import os

    mesh, cyc = target.mesh, max(result.cycles, 1)
    core_util = {c: max(st.unit_busy.values(), default=0) / cyc for c, st in result.cores.items()}
    link_util = {k: v / cyc for k, v in result.link_cycles.items()}
    busy = busy_over_time(result, mesh.cores, cyc)
    title = (f"{os.path.basename(program.path)} on {target.name} ({mesh.width} x {mesh.height} cores), "
             f"{result.cycles:,} cycles")
    return mesh_figure(mesh.width, mesh.height, core_util, link_util, title, busy, cyc)
