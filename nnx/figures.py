"""Pictures the tools write, drawn with matplotlib (docs/pictures.md).

Each picture is a `matplotlib.figure.Figure` built by a pure function of plain data
beside the tool that draws it (`nnx.sim.mesh_plot.mesh_figure`,
`nnx.sim.package_plot.package_figure`, `nnx.topo_order.report.gantt_figure`,
`nnx.memory_plot.memory_figure`, `nnx.topology.plot.mapping_figure`,
`nnx.sweep.plot.sweep_figure`), so tests inspect the figure itself (title, axis
labels, bars, cells). This module holds what they share: `new_figure` (a figure on
the Agg canvas, without pyplot's global state, so drawing works in worker processes
and on machines without a display) and the file formats: `.png` or `.svg`, chosen
by the file's extension (`figure_format`, checked before a tool starts its work;
`figure_bytes`, `save_figure`).
"""

from __future__ import annotations

import io
import os

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from nnx.atomic_file import write_files_atomically
from nnx.ir_io import UserError

#: the file formats a picture can be written in, by extension
FORMATS = {".png": "png", ".svg": "svg"}
#: resolution of PNG files (dots per inch): a 10 x 5 inch figure is 1200 x 600 pixels
PNG_DPI = 120


def new_figure(width_in: float, height_in: float) -> Figure:
    """An empty figure `width_in` x `height_in` inches on the Agg canvas, with
    constrained layout (labels and colour bars do not overlap)."""
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_format(path: str, option: str = "--plot") -> str:
    """The format ("png" or "svg") of the picture file `path`; any other extension
    is a UserError naming the option and the file."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise UserError(f"{option} {path}: the file name must end in .png or .svg")
    return FORMATS[ext]


def figure_bytes(fig: Figure, path: str, option: str = "--plot") -> bytes:
    """The file `path` would hold: `fig` as PNG or SVG by the extension of `path`
    (for tools that write several outputs together, nnx/atomic_file.py)."""
    buf = io.BytesIO()
    fig.savefig(buf, format=figure_format(path, option), dpi=PNG_DPI)
    return buf.getvalue()


def save_figure(fig: Figure, path: str, option: str = "--plot") -> None:
    """Write `fig` to `path` (PNG or SVG by its extension), whole or not at all."""
    write_files_atomically({path: figure_bytes(fig, path, option)})
