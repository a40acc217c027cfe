"""Time line of a package run (`nnx-run prog.s --plot timeline.png|.svg` on a program
package; docs/subgraph-split-fuse.md, "Program packages"; docs/pictures.md).

The programs run one after another on one clock (nnx/sim/package.py). The figure has
four lanes under one cycle axis:

* `programs`: each program's whole interval, alternately dark and light grey;
* `host link`: each program's weight load, its inputs read back from host memory,
  later its outputs parked in host memory;
* `mesh`: each program's run on the mesh;
* `host steps`: each host step (a join or slice run on the host between programs,
  `nnx.sim.package.HostStepRun`).

Each kind of interval is one bar collection labelled with its part (`PARTS` keys,
"program", "host step") and listed in the legend; every bar keeps a thin edge in
its colour, so a transfer of a few cycles stays visible on a long time line.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from nnx.figures import new_figure

#: colour of each part of a program's run (`nnx.sim.package.PARTS`)
PART_COLOURS: dict[str, str] = {
    "weight_load": "tab:blue",
    "host_in": "tab:orange",
    "mesh": "tab:green",
    "host_out": "tab:purple",
}
#: colour of a host step, in the `host steps` lane
HOST_STEP_COLOUR = "tab:brown"
#: the program lane alternates these per program (even, odd)
PROGRAM_SHADES = ("0.35", "0.7")
LANES = ("programs", "host link", "mesh", "host steps")
#: the lane each part is drawn in
PART_LANE = {"weight_load": "host link", "host_in": "host link", "mesh": "mesh", "host_out": "host link"}
#: lane height (of 1.0 between lane centres)
BAR = 0.7


def _bars(ax, spans, lane: str, colour, label: str) -> None:
    y = LANES.index(lane)
    ax.broken_barh([(s, e - s) for s, e in spans], (y - BAR / 2, BAR), facecolors=colour,
                   edgecolors=colour, linewidth=0.6, label=label)


def package_figure(runs: Sequence, title: str, host_steps: Sequence = ()) -> Figure:
    """The time line of the runs (`ProgramRun`s, in order) and host steps
    (`HostStepRun`s): one bar collection per part, labelled with the part's name."""
    fig = new_figure(12.0, 3.8)
    ax = fig.subplots()
    for k, shade in enumerate(PROGRAM_SHADES):
        _bars(ax, [(r.start_cycle, r.end_cycle) for r in runs[k::2]], "programs", shade,
              "program" if k == 0 else "_program (odd)")
    for part, colour in PART_COLOURS.items():
        spans = [(s, e) for r in runs for p, s, e in r.intervals() if p == part]
        _bars(ax, spans, PART_LANE[part], colour, part.replace("_", " "))
    _bars(ax, [(h.start_cycle, h.end_cycle) for h in host_steps], "host steps", HOST_STEP_COLOUR, "host step")
    end = max((r.end_cycle for r in (*runs, *host_steps)), default=0)
    ax.set_xlim(0, max(end, 1))
    ax.set_ylim(len(LANES) - 0.5, -0.5)
    ax.set_yticks(range(len(LANES)), list(LANES))
    ax.set_xlabel("time (cycles)")
    ax.set_ylabel("lane")
    ax.grid(axis="x", alpha=0.3)
    steps = f", {len(host_steps)} host steps" if host_steps else ""
    ax.set_title(f"{len(runs)} programs{steps}, {end:,} cycles")
    fig.suptitle(title)
    fig.legend(loc="outside lower center", ncol=6, frameon=False)
    return fig
