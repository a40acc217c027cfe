"""Picture of a mapping (`nnx-map ... --plot map.png|map.svg`; docs/neuron-mapping.md,
docs/pictures.md): the mesh as a heatmap of core load (colour bar: load as a
fraction of the core capacity), with the heaviest inter-core traffic drawn as lines
between core centres (width and opacity by weight; legend).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from nnx.figures import new_figure

from .graph import Graph, quotient_graph


def core_traffic(g: Graph, core: np.ndarray, ncores: int, top: int = 64):
    """(a, b, weight) of the ``top`` heaviest core pairs (a < b)."""
    q = quotient_graph(g, np.asarray(core, dtype=np.int64), ncores)
    rows = np.repeat(np.arange(q.n), np.diff(q.indptr))
    cols = q.indices[: q.nnz].astype(np.int64)
    w = q.eweight[: q.nnz].astype(np.float64)
    keep = rows < cols
    rows, cols, w = rows[keep], cols[keep], w[keep]
    order = np.argsort(-w, kind="stable")[:top]
    return rows[order], cols[order], w[order]


def mapping_figure(g: Graph, core: np.ndarray, mesh_w: int, mesh_h: int, capacity: int,
                   title: str, top: int = 64) -> Figure:
    """The load heatmap (one cell per core: its neurons' summed size / `capacity`)
    and one line per each of the ``top`` heaviest inter-core links."""
    ncores = mesh_w * mesh_h
    core = np.asarray(core, dtype=np.int64)
    loads = np.bincount(core, weights=g.vsize, minlength=ncores)[:ncores]
    a, b, w = core_traffic(g, core, ncores, top)
    side = min(9.0, max(5.0, max(mesh_w, mesh_h) / 4))
    fig = new_figure(side + 1.8, side)
    ax = fig.subplots()
    im = ax.imshow(loads.reshape(mesh_h, mesh_w) / max(capacity, 1), cmap="OrRd", vmin=0, vmax=1,
                   interpolation="nearest")
    fig.colorbar(im, ax=ax, label=f"core load (fraction of capacity {capacity:,})", shrink=0.8)
    if len(w):
        wmax = w.max()
        for ca, cb, ww in zip(a, b, w):
            ax.plot([ca % mesh_w, cb % mesh_w], [ca // mesh_w, cb // mesh_w], color="tab:blue",
                    alpha=0.3 + 0.7 * ww / wmax, linewidth=0.5 + 2.5 * ww / wmax)
        ax.legend(handles=[Line2D([], [], color="tab:blue", linewidth=3.0,
                                  label=f"top {len(w)} core pairs by traffic (max {wmax:,.0f})")],
                  loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    ax.set_xlabel("core column (x)")
    ax.set_ylabel("core row (y)")
    ax.set_title(title)
    return fig
