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
  colour scale. The busy intervals are the simulator's recorded events, except that
  a RECV counts only while its data arrive, not while it waits for the SEND
  (`busy_intervals`), so a row's time average matches the report's busy cycles.
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


def busy_intervals(result, program, link_bytes_per_cycle: int) -> dict[int, list[tuple[str, int, int]]]:
    """Per core, (unit, start, end) of the cycles each unit is busy in a mesh run
    recorded with events: every event, but a RECV only for its last
    `serialisation_cycles(bytes)` cycles, while its data arrive (as the simulator
    counts busy cycles, nnx/sim/mesh_simulator.py)."""
    from nnx.sim.isa_mesh import RECV, noc_tile
    from nnx.sim.noc import serialisation_cycles

    out: dict[int, list[tuple[str, int, int]]] = {}
    for c, st in result.cores.items():
        sec = program.cores.get(c)
        by_line = {ins.line: ins for ins in sec.program.instrs} if sec is not None else {}
        spans = []
        for e in st.events:
            start = e.start
            if e.name == RECV and e.line in by_line:
                nbytes = noc_tile(by_line[e.line]).nbytes
                start = max(e.start, e.end - serialisation_cycles(nbytes, link_bytes_per_cycle))
            spans.append((e.unit, start, e.end))
        out[c] = spans
    return out


def busy_over_time(intervals: Mapping[int, Iterable[tuple[str, int, int]]], cores: int, cycles: int,
                   bins: int = TIME_BINS) -> np.ndarray:
    """(cores, bins) busy fractions: for each core and each of `bins` equal time bins
    of [0, cycles), the largest fraction of the bin any one of its units is busy.
    `intervals[c]` are core c's (unit, start, end) busy intervals."""
    edges = np.linspace(0.0, float(max(cycles, 1)), bins + 1)
    out = np.zeros((cores, bins))
    width = edges[1] - edges[0]
    for c, spans in intervals.items():
        by_unit: dict[str, list[tuple[int, int]]] = {}
        for unit, s, e in spans:
            by_unit.setdefault(unit, []).append((s, e))
        for ivs in by_unit.values():
            s, e = (np.asarray(v, dtype=np.float64)[:, None] for v in zip(*ivs))
            # busy cycles up to each bin edge, summed over the unit's intervals
            covered = np.clip(edges[None, :] - s, 0.0, e - s).sum(axis=0)
            out[c] = np.maximum(out[c], np.diff(covered) / width)
    return np.clip(out, 0.0, 1.0)


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


def mesh_run_figure(result, target, program) -> Figure:
    """`mesh_figure` of a `MeshRunResult` of the `MeshProgram` `program` on `target`
    (run with events recorded: the over-time panel too), titled with the program
    file and the target."""
    import os

    mesh, cyc = target.mesh, max(result.cycles, 1)
    core_util = {c: max(st.unit_busy.values(), default=0) / cyc for c, st in result.cores.items()}
    link_util = {k: v / cyc for k, v in result.link_cycles.items()}
    recorded = any(st.events for st in result.cores.values())
    busy = (busy_over_time(busy_intervals(result, program, mesh.noc.link_bytes_per_cycle), mesh.cores, cyc)
            if recorded else None)
    title = (f"{os.path.basename(program.path)} on {target.name} ({mesh.width} x {mesh.height} cores), "
             f"{result.cycles:,} cycles")
    return mesh_figure(mesh.width, mesh.height, core_util, link_util, title, busy, cyc)
