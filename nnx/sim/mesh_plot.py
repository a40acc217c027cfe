"""Heatmap of a mesh run (`nnx-run prog.s --plot mesh.png`; docs/mesh.md, "Simulator").

Every core is a square coloured by its utilisation (its busiest unit's busy cycles /
the run's cycles: white idle, dark red always busy); between neighbouring cores the
four directed links are bars coloured by their load (busy cycles / cycles: white idle,
dark blue saturated). East- and south-bound links sit in the first half of the gap,
west- and north-bound ones in the second. matplotlib adds a title and colour bars when
it is installed; otherwise the built-in PNG writer of nnx/topology/plot.py writes the
same picture.
"""

from __future__ import annotations

import numpy as np

from nnx.png import write_png


def _ramp(frac: np.ndarray, rgb: tuple[int, int, int]) -> np.ndarray:
    """White (0) -> `rgb` (1)."""
    f = np.clip(frac, 0.0, 1.0)[..., None]
    return (255 - f * (255 - np.array(rgb, dtype=np.float64))).astype(np.uint8)


def mesh_image(width: int, height: int, core_util: dict[int, float],
               link_util: dict[tuple[int, int], float], cell: int = 0) -> np.ndarray:
    """The RGB picture (uint8, H x W x 3) of core utilisation and link load."""
    cell = cell or max(6, min(40, 960 // max(width, height)))
    gap = max(2, cell // 3)
    pitch = cell + gap
    img = np.full((height * pitch + gap, width * pitch + gap, 3), 235, np.uint8)
    for c in range(width * height):
        x, y = c % width, c // width
        y0, x0 = gap + y * pitch, gap + x * pitch
        img[y0 : y0 + cell, x0 : x0 + cell] = _ramp(np.array(core_util.get(c, 0.0)), (150, 0, 0))
    half = max(1, cell // 2)
    links = [(c, c + d) for c in range(width * height) for d in (1, -1, width, -width)
             if 0 <= c + d < width * height and (abs(d) == width or (c + d) // width == c // width)]
    for a, b in links:
        u = link_util.get((a, b), 0.0)
        ax, ay, bx, by = a % width, a // width, b % width, b // width
        col = _ramp(np.array(u), (0, 0, 160))
        if ay == by:  # horizontal link in the gap right of min(ax, bx)
            gx = gap + max(ax, bx) * pitch - gap
            y0 = gap + ay * pitch + (0 if bx > ax else half)
            img[y0 : y0 + half, gx : gx + gap] = col
        else:  # vertical link in the gap below min(ay, by)
            gy = gap + max(ay, by) * pitch - gap
            x0 = gap + ax * pitch + (0 if by > ay else half)
            img[gy : gy + gap, x0 : x0 + half] = col
    return img


def plot_mesh(path: str, width: int, height: int, core_util: dict[int, float],
              link_util: dict[tuple[int, int], float], title: str = "") -> str:
    """Write the heatmap to `path` (PNG); returns the backend ("matplotlib" or "builtin")."""
    img = mesh_image(width, height, core_util, link_util)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import LinearSegmentedColormap, Normalize
    except ImportError:
        write_png(path, img)
        return "builtin"
    fig, ax = plt.subplots(figsize=(max(5, width / 2.5), max(4, height / 3)))
    ax.imshow(img, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title or f"{width}x{height} mesh: core utilisation (red), link load (blue)")
    for rgb, label in (((150, 0, 0), "core utilisation"), ((0, 0, 160), "link load")):
        cmap = LinearSegmentedColormap.from_list(label, [(1, 1, 1), tuple(v / 255 for v in rgb)])
        fig.colorbar(ScalarMappable(Normalize(0, 1), cmap), ax=ax, label=label, fraction=0.04)
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
    return "matplotlib"
