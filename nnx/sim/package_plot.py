"""Time line of a package run (`nnx-run prog.s --plot timeline.png` on a program
package; docs/subgraph-split-fuse.md, "Program packages").

The programs run one after another on one clock (nnx/sim/package.py). The picture has
three lanes under one cycle axis, left to right:

* `programs`: each program's whole interval, alternately dark and light grey, with a
  black tick where a program starts;
* `host link`: each program's weight load (blue), then its inputs read back from
  host memory (orange), later its outputs parked in host memory (purple);
* `mesh`: each program's run on the mesh (green);
* `host steps`: each host step (brown): a join or slice run on the host between
  programs (`nnx.sim.package.HostStepRun`).

Every interval is at least one pixel wide and host transfers are drawn last, so a
short transfer stays visible.
matplotlib adds the cycle axis, lane names and a legend when it is installed;
otherwise the built-in PNG writer (nnx/png.py) writes the same picture, and the
colours above are its key (`PART_COLOURS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nnx.png import write_png

#: colour of each part of a program's run (`nnx.sim.package.PARTS`)
PART_COLOURS: dict[str, tuple[int, int, int]] = {
    "weight_load": (31, 119, 180),
    "host_in": (255, 127, 14),
    "mesh": (44, 160, 44),
    "host_out": (148, 103, 189),
}
#: colour of a host step (`nnx.sim.package.HostStepRun`), in the `host steps` lane
HOST_STEP_COLOUR = (140, 86, 75)
#: the program lane alternates these per program (even, odd)
PROGRAM_SHADES = ((96, 96, 96), (176, 176, 176))
BACKGROUND = (255, 255, 255)
LANES = ("programs", "host link", "mesh", "host steps")
#: the lane each part is drawn in
PART_LANE = {"weight_load": "host link", "host_in": "host link", "mesh": "mesh", "host_out": "host link"}


@dataclass(frozen=True)
class TimelineLayout:
    """Pixel geometry of the picture: `total` cycles across `width` pixels less the
    margins; lanes `lane` pixels high with `gap` pixels between them."""

    total: int
    width: int = 1200
    margin: int = 8
    lane: int = 28
    gap: int = 6

    @property
    def height(self) -> int:
        return 2 * self.margin + len(LANES) * self.lane + (len(LANES) - 1) * self.gap

    def x(self, cycle: int) -> int:
        """The pixel column where `cycle` starts."""
        span = self.width - 2 * self.margin
        return self.margin + (cycle * span) // max(self.total, 1)

    def columns(self, start: int, end: int) -> tuple[int, int]:
        """The half-open pixel columns of the interval [start, end) (at least one)."""
        x0 = self.x(start)
        return x0, max(x0 + 1, self.x(end))

    def rows(self, lane: str) -> tuple[int, int]:
        """The half-open pixel rows of a lane."""
        y0 = self.margin + LANES.index(lane) * (self.lane + self.gap)
        return y0, y0 + self.lane


def _end(runs: Sequence, host_steps: Sequence) -> int:
    return max((r.end_cycle for r in (*runs, *host_steps)), default=0)


def timeline_image(runs: Sequence, layout: TimelineLayout | None = None, host_steps: Sequence = ()) -> np.ndarray:
    """The RGB picture (uint8, H x W x 3) of the runs (`ProgramRun`s, in order) and
    the host steps (`HostStepRun`s)."""
    layout = layout or TimelineLayout(_end(runs, host_steps))
    img = np.full((layout.height, layout.width, 3), BACKGROUND, np.uint8)
    py0, py1 = layout.rows("programs")
    for k, r in enumerate(runs):
        x0, x1 = layout.columns(r.start_cycle, r.end_cycle)
        img[py0:py1, x0:x1] = PROGRAM_SHADES[k % 2]
    for r in runs:
        img[py0:py1, layout.x(r.start_cycle)] = 0
    # host transfers last: often a pixel wide, they must not vanish under the next
    # program's weight load
    for parts in (("weight_load", "mesh"), ("host_in", "host_out")):
        for r in runs:
            for part, s, e in r.intervals():
                if part in parts:
                    y0, y1 = layout.rows(PART_LANE[part])
                    c0, c1 = layout.columns(s, e)
                    img[y0:y1, c0:c1] = PART_COLOURS[part]
    y0, y1 = layout.rows("host steps")
    for h in host_steps:
        c0, c1 = layout.columns(h.start_cycle, h.end_cycle)
        img[y0:y1, c0:c1] = HOST_STEP_COLOUR
    return img


def plot_package(path: str, runs: Sequence, title: str = "", host_steps: Sequence = ()) -> str:
    """Write the time line of the runs and host steps to `path` (PNG); returns the
    backend ("matplotlib" or "builtin")."""
    img = timeline_image(runs, host_steps=host_steps)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        write_png(path, img)
        return "builtin"
    layout = TimelineLayout(_end(runs, host_steps))
    fig, ax = plt.subplots(figsize=(12, 3))
    # pixel columns -> cycles: the margins map outside [0, total]
    per_px = max(layout.total, 1) / (layout.width - 2 * layout.margin)
    ax.imshow(img, interpolation="nearest", aspect="auto",
              extent=(-layout.margin * per_px, (layout.width - layout.margin) * per_px, layout.height, 0))
    ax.set_yticks([sum(layout.rows(lane)) / 2 for lane in LANES], list(LANES))
    ax.set_xlabel("cycles")
    steps = f", {len(host_steps)} host steps" if host_steps else ""
    ax.set_title(title or f"{len(runs)} programs{steps}, {layout.total} cycles")
    ax.legend(handles=[Patch(color=tuple(v / 255 for v in c), label=p.replace("_", " "))
                       for p, c in (*PART_COLOURS.items(), ("host step", HOST_STEP_COLOUR))], loc="upper center", ncol=5,
              bbox_to_anchor=(0.5, -0.3), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
    return "matplotlib"
