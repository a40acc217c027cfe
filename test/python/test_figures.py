"""The pictures the tools draw (docs/pictures.md): each figure function's content
(title, axis labels, colour bars or legends, the number of cells and bars and their
values) checked against the data it was given, and the file formats by extension."""

from __future__ import annotations

import os

import numpy as np
import pytest

from nnx.figures import figure_bytes, figure_format, save_figure
from nnx.ir_io import UserError


def bar_spans(collection) -> list[tuple[float, float]]:
    """(start, end) of every bar of a broken_barh collection, sorted."""
    return sorted((float(p.vertices[:, 0].min()), float(p.vertices[:, 0].max())) for p in collection.get_paths())


def colour_bar_labels(fig) -> list[str]:
    """Labels of the figure's colour bars (axes that are not the plotting axes)."""
    return [a.get_ylabel() for a in fig.axes if a.get_label() == "<colorbar>"]


def plotting_axes(fig):
    return [a for a in fig.axes if a.get_label() != "<colorbar>"]


def assert_readable(fig, title_words: tuple[str, ...]):
    """A title naming what is drawn, labelled axes with units or names on every panel."""
    title = fig._suptitle.get_text() if fig._suptitle else plotting_axes(fig)[0].get_title()
    for w in title_words:
        assert w in title, (w, title)
    for ax in plotting_axes(fig):
        assert ax.get_xlabel() and ax.get_ylabel(), ax


# --------------------------------------------------------------------------- formats


def test_format_by_extension(tmp_path):
    from nnx.figures import new_figure

    fig = new_figure(3, 2)
    fig.subplots().plot([0, 1], [0, 1])
    assert figure_bytes(fig, "a.png")[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in figure_bytes(fig, "a.SVG")[:400]
    assert figure_format("x/y.svg") == "svg"
    with pytest.raises(UserError, match=r"--plot m\.jpg: the file name must end in \.png or \.svg"):
        figure_format("m.jpg")
    save_figure(fig, str(tmp_path / "f.png"))
    assert os.listdir(tmp_path) == ["f.png"]  # no temporary file left beside it


# --------------------------------------------------------------------------- mesh


def test_busy_over_time_bins_the_unit_spans():
    from types import SimpleNamespace

    from nnx.sim.mesh_plot import busy_over_time

    cores = {0: SimpleNamespace(busy_spans={"A": [(0, 50)], "B": [(25, 100)]}),
             1: SimpleNamespace(busy_spans={"A": [(10, 20), (30, 35)]})}
    busy = busy_over_time(SimpleNamespace(cores=cores), cores=3, cycles=100, bins=4)
    np.testing.assert_allclose(busy[0], [1.0, 1.0, 1.0, 1.0])  # the busiest unit per bin
    np.testing.assert_allclose(busy[1], [0.4, 0.2, 0.0, 0.0])  # 10 and 5 of 25 cycles
    np.testing.assert_allclose(busy[2], 0.0)  # an idle core


def test_mesh_figure_cells_links_and_scales():
    from matplotlib.collections import LineCollection, PatchCollection

    from nnx.sim.mesh_plot import mesh_figure

    busy = np.linspace(0, 1, 6 * 10).reshape(6, 10)
    fig = mesh_figure(3, 2, {0: 1.0, 4: 0.25}, {(0, 1): 1.0, (4, 1): 0.5}, "net.s on nnx-mesh", busy, 1000)
    assert_readable(fig, ("net.s", "nnx-mesh"))
    mesh_ax, time_ax = plotting_axes(fig)
    (squares,) = [c for c in mesh_ax.collections if isinstance(c, PatchCollection)]
    cells = squares.get_array()
    assert cells.shape == (6,) and cells[0] == 1.0 and cells[4] == 0.25 and cells.sum() == 1.25
    (links,) = [c for c in mesh_ax.collections if isinstance(c, LineCollection)]
    # 3 x 2 mesh: 7 neighbour pairs, two directions each
    assert len(links.get_segments()) == 14
    assert sorted(links.get_array().tolist())[-2:] == [0.5, 1.0]
    assert time_ax.images[0].get_array().shape == (6, 10)
    assert time_ax.get_xlabel() == "time (cycles)"
    labels = colour_bar_labels(fig)
    assert any("core utilisation" in lb for lb in labels) and any("link load" in lb for lb in labels)


def test_nnx_run_mesh_plot_shows_utilisation_over_time(tmp_path):
    """A real mesh run: the heatmap's cells are the report's core utilisations, and
    each core's time average over the over-time panel is its busy share (one busy
    unit per core here: a RECV counts only while its data arrive)."""
    import json

    from matplotlib.collections import PatchCollection

    from nnx.sim.asm_mesh import parse_mesh_program
    from nnx.sim.mesh_cli import main as mesh_run
    from nnx.sim.mesh_plot import mesh_run_figure
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.target import load_target

    target_file = os.path.join(os.path.dirname(__file__), "..", "sim", "Inputs", "mesh2x2.toml")
    text = ".mesh 2x2\n.core 0\n.storage 4096\n.text\nDAU0 SEND @3:t0 <- S:0x0<16x16xf32>\n" \
           ".core 3\n.storage 4096\n.text\nDAU0 RECV S:0x0<16x16xf32> <- @0:t0\n"
    (tmp_path / "p.s").write_text(text)
    assert mesh_run([str(tmp_path / "p.s"), "--target", target_file, "--report", str(tmp_path / "r.json"),
                     "--plot", str(tmp_path / "m.svg")]) == 0
    assert b"<svg" in (tmp_path / "m.svg").read_bytes()[:400]
    rep = json.loads((tmp_path / "r.json").read_text())
    tgt = load_target(target_file)
    program = parse_mesh_program(text, "p.s")
    result = MeshSimulator(program, tgt, record_events=True).run({})
    fig = mesh_run_figure(result, tgt, program)
    assert_readable(fig, ("p.s", tgt.name))
    mesh_ax, time_ax = plotting_axes(fig)
    (squares,) = [c for c in mesh_ax.collections if isinstance(c, PatchCollection)]
    cells = squares.get_array()
    for c, core in rep["cores"].items():
        assert cells[int(c)] == pytest.approx(core["utilisation"], abs=1e-6)
    over_time = time_ax.images[0].get_array()
    assert over_time.shape == (4, 100)
    for c in (0, 3):  # the sender is busy while it streams, the receiver while data arrive
        assert over_time[c].mean() == pytest.approx(cells[c], abs=1e-4) and cells[c] > 0  # 4 decimals
    # the RECV waits for the data: busy after the SEND starts, never before
    assert over_time[3][: int(np.argmax(over_time[0] > 0))].max() == 0.0
    assert over_time[1].max() == 0.0  # core 1 has no program


def test_mesh_plot_bad_extension_runs_nothing(tmp_path, capsys):
    from nnx.sim.mesh_cli import main as mesh_run

    target_file = os.path.join(os.path.dirname(__file__), "..", "sim", "Inputs", "mesh2x2.toml")
    (tmp_path / "p.s").write_text(".mesh 2x2\n.core 0\n.storage 16\n.text\n")
    assert mesh_run([str(tmp_path / "p.s"), "--target", target_file, "--report", str(tmp_path / "r.json"),
                     "--plot", str(tmp_path / "m.jpg")]) == 1
    assert "must end in .png or .svg" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["p.s"]


# --------------------------------------------------------------------------- Gantt


def test_gantt_figure_bars_per_unit_and_subgraph(tmp_path):
    from nnx.topo_order.report import gantt_figure, write_gantt

    tls = [[("MPU0", 0, 10, 0), ("DAU0", 0, 4, 1), ("MPU0", 12, 20, 2)], [("VPU0", 20, 30, 0)]]
    fig = gantt_figure(tls, ["DAU0", "MPU0", "VPU0"], "@main on default: chosen order, 30 cycles")
    assert_readable(fig, ("@main", "default"))
    (ax,) = plotting_axes(fig)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["DAU0", "MPU0", "VPU0"]
    assert ax.get_xlabel() == "time (cycles)"
    by_label = {}
    for c in ax.collections:
        by_label.setdefault(c.get_label().lstrip("_"), []).extend(bar_spans(c))
    assert sorted(by_label["subgraph 0"]) == [(0, 4), (0, 10), (12, 20)]
    assert by_label["subgraph 1"] == [(20, 30)]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["subgraph 0", "subgraph 1"]
    write_gantt(str(tmp_path / "g.svg"), tls, ["DAU0", "MPU0", "VPU0"], "t")
    assert b"<svg" in (tmp_path / "g.svg").read_bytes()[:400]


# --------------------------------------------------------------------------- memory


def test_memory_figure_curves_and_capacity():
    from nnx.memory_plot import MIB, memory_figure

    before = [(0, 1 << 20), (100, 5 << 20), (300, 2 << 20)]
    after = [(0, 1 << 20), (150, 3 << 20), (400, 1 << 20)]
    fig = memory_figure([before, after], ["before.mlir", "after.mlir"], 8 << 20, 10**9, "after.mlir on v100")
    assert_readable(fig, ("after.mlir", "v100"))
    (ax,) = plotting_axes(fig)
    assert ax.get_xlabel() == "time (ms)" and ax.get_ylabel() == "device memory (MiB)"
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata())]
    curves = [ln for ln in lines if ln.get_linestyle() != "--"]
    assert [max(c.get_ydata()) for c in curves] == [5.0, 3.0]
    assert curves[1].get_xdata()[-1] == pytest.approx(400 * 1e-6)  # to the end of the longer run, in ms
    (cap,) = [ln for ln in lines if ln.get_linestyle() == "--"]
    assert cap.get_ydata()[0] == 8 * MIB / MIB
    assert len(ax.get_legend().get_texts()) == 3
    far = memory_figure([before], ["m"], 1 << 34, 10**9, "m on big")
    assert "off the scale" in far.axes[0].get_legend().get_texts()[-1].get_text()


# --------------------------------------------------------------------------- neuron map


def test_mapping_figure_cells_and_links():
    from nnx.topology.graph import from_edges
    from nnx.topology.plot import mapping_figure

    pre = np.array([0, 1, 2, 3, 0], dtype=np.int64)
    post = np.array([1, 2, 3, 0, 2], dtype=np.int64)
    g = from_edges(pre, post, np.ones(5, np.float32), np.array([1, 2, 3, 4]), n=4)
    fig = mapping_figure(g, np.array([0, 1, 2, 3]), 2, 2, 10, "g.npz on a 2 x 2 mesh")
    assert_readable(fig, ("g.npz", "2 x 2"))
    (ax,) = plotting_axes(fig)
    cells = ax.images[0].get_array()
    np.testing.assert_allclose(cells, [[0.1, 0.2], [0.3, 0.4]])
    pairs = [ln for ln in ax.get_lines() if len(ln.get_xdata())]
    assert len(pairs) == 5  # 5 distinct core pairs carry traffic
    assert any("capacity" in lb for lb in colour_bar_labels(fig))
    assert ax.get_legend() is not None
