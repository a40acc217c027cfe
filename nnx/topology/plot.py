"""Picture of a mapping (issue 4, item 4): the mesh as a heatmap of core load,
with the heaviest inter-core traffic drawn as lines between core centres.

matplotlib is used when it is installed (imported lazily); otherwise a small
built-in rasteriser writes the same picture as a PNG with numpy + zlib.
"""

from __future__ import annotations


import numpy as np

from nnx.png import write_png

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


def _builtin(path, loads, capacity, mesh_w, mesh_h, a, b, w):
    cell = max(4, min(32, 1024 // max(mesh_w, mesh_h)))
    frac = np.clip(loads.reshape(mesh_h, mesh_w) / max(capacity, 1), 0, 1)
    # white (empty) -> orange -> dark red (full)
    r = 255 - 80 * frac
    gch = 255 - 220 * frac
    bch = 255 - 255 * frac
    img = np.stack([r, gch, bch], axis=-1).astype(np.uint8)
    img = np.repeat(np.repeat(img, cell, axis=0), cell, axis=1)
    img[::cell, :, :] = 200
    img[:, ::cell, :] = 200
    if len(w):
        wmax = w.max()
        for ca, cb, ww in zip(a, b, w):
            x0, y0 = (ca % mesh_w + 0.5) * cell, (ca // mesh_w + 0.5) * cell
            x1, y1 = (cb % mesh_w + 0.5) * cell, (cb // mesh_w + 0.5) * cell
            steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
            xs = np.linspace(x0, x1, steps).astype(int).clip(0, img.shape[1] - 1)
            ys = np.linspace(y0, y1, steps).astype(int).clip(0, img.shape[0] - 1)
            t = 0.3 + 0.7 * ww / wmax
            col = np.array([40, 40, 255 * t], dtype=np.uint8)
            img[ys, xs] = col
            if t > 0.6:
                img[np.clip(ys + 1, 0, img.shape[0] - 1), xs] = col
    write_png(path, img)


def plot_mapping(path: str, g: Graph, core: np.ndarray, mesh_w: int, mesh_h: int,
                 capacity: int, top: int = 64, title: str = "") -> str:
    """Draw the load heatmap and the ``top`` heaviest inter-core links; returns
    the backend used ("matplotlib" or "builtin")."""
    ncores = mesh_w * mesh_h
    core = np.asarray(core, dtype=np.int64)
    loads = np.bincount(core, weights=g.vsize, minlength=ncores)[:ncores]
    a, b, w = core_traffic(g, core, ncores, top)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _builtin(path, loads, capacity, mesh_w, mesh_h, a, b, w)
        return "builtin"
    fig, ax = plt.subplots(figsize=(max(4, mesh_w / 4), max(4, mesh_h / 4)))
    im = ax.imshow(loads.reshape(mesh_h, mesh_w), cmap="OrRd", vmin=0, vmax=capacity,
                   origin="upper")
    fig.colorbar(im, ax=ax, label="core load")
    if len(w):
        wmax = w.max()
        for ca, cb, ww in zip(a, b, w):
            ax.plot([ca % mesh_w, cb % mesh_w], [ca // mesh_w, cb // mesh_w], color="blue",
                    alpha=0.3 + 0.7 * ww / wmax, linewidth=0.5 + 2.5 * ww / wmax)
    ax.set_title(title or f"{mesh_w}x{mesh_h} mesh: load and top {len(w)} links")
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
    return "matplotlib"
