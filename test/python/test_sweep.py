"""nnx-sweep (docs/sweeps.md): the same rows from one worker, two workers and Ray;
an interrupted sweep resumed computes only the missing points; a point that does not
fit is a row with its error; bad sweep files are one line, exit 1, no results file;
the trade-off plot's content. Three tiny MLPs built with onnx.helper."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from nnx.tools.nnx_sweep import main as sweep_main

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "sweep"))
from make_mlps import mlp  # noqa: E402 - the example sweep's model builder
MESH4 = os.path.join(HERE, "..", "passes", "lower-to-mesh", "Inputs", "mesh4x4.toml")
PLAIN = "builtin.module(graph-fold-constants,canonicalize,dce)"


SWEEP = f"""
models = [{{ path = "a.onnx" }}, {{ path = "b.onnx", input_shapes = {{ x = [2, 128] }} }}, {{ path = "c.onnx", name = "c96" }}]
pipelines = ["default", "{PLAIN}"]
metrics = ["cycles", "noc_byte_hops", "offchip.weight_bytes"]
[target]
base = "mesh4x4.toml"
[target.grid]
"mesh.width" = [2, 4]
"mesh.core_memory_bytes" = [131072, 1048576]
"""


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    mlp(d / "a.onnx", 64, 2, 0, batch=1)
    mlp(d / "b.onnx", 128, 3, 1, batch="n")
    mlp(d / "c.onnx", 96, 4, 2, batch=1)
    shutil.copy(MESH4, d / "mesh4x4.toml")
    (d / "s.toml").write_text(SWEEP)
    return d


def read_rows(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def without_seconds(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


@pytest.fixture(scope="module")
def one_worker(sweep_dir):
    out = sweep_dir / "w1.csv"
    assert sweep_main([str(sweep_dir / "s.toml"), "-o", str(out), "--workers", "1", "--quiet"]) == 0
    return read_rows(out)


def test_rows_cover_every_point_in_file_order(one_worker):
    rows = one_worker
    assert len(rows) == 3 * 2 * 4
    assert list(rows[0]) == ["model", "pipeline", "mesh.width", "mesh.core_memory_bytes", "cycles",
                             "noc_byte_hops", "offchip.weight_bytes", "status", "seconds", "key"]
    assert [r["model"] for r in rows[::8]] == ["a", "b", "c96"]
    assert [(r["pipeline"], r["mesh.width"], r["mesh.core_memory_bytes"]) for r in rows[:5]] == [
        ("default", "2", "131072"), ("default", "2", "1048576"), ("default", "4", "131072"),
        ("default", "4", "1048576"), (PLAIN, "2", "131072")]
    assert all(r["status"] == "ok" for r in rows), [r["status"] for r in rows if r["status"] != "ok"]
    assert len({r["key"] for r in rows}) == len(rows)
    # the metrics are the run's: every model loads all its weights once (float32)
    weights = {"a": 2 * 64 * 64 * 4, "b": 3 * 128 * 128 * 4, "c96": 4 * 96 * 96 * 4}
    for r in rows:
        assert int(r["offchip.weight_bytes"]) == weights[r["model"]]
        assert int(r["cycles"]) > 0
    # the point's target reaches the compilation: b's NoC traffic differs between meshes
    b = {(r["mesh.width"], r["mesh.core_memory_bytes"]): int(r["noc_byte_hops"])
         for r in rows if r["model"] == "b" and r["pipeline"] == "default"}
    assert len(set(b.values())) > 1, b


def test_same_rows_with_two_workers(sweep_dir, one_worker):
    out = sweep_dir / "w2.csv"
    assert sweep_main([str(sweep_dir / "s.toml"), "-o", str(out), "--workers", "2", "--quiet"]) == 0
    assert without_seconds(read_rows(out)) == without_seconds(one_worker)


def test_same_rows_on_a_local_ray_cluster(sweep_dir, one_worker):
    # in a process of its own, as a user runs it: Ray's threads (gRPC) must not be
    # left in the test process, whose later local pools fork their workers from it
    pytest.importorskip("ray", reason="Ray is the nnx[ray] extra (scripts/test.sh installs it)")
    out = sweep_dir / "ray.csv"
    cmd = [sys.executable, "-m", "nnx.tools.nnx_sweep", str(sweep_dir / "s.toml"), "-o", str(out),
           "--ray", "local", "--workers", "2", "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert without_seconds(read_rows(out)) == without_seconds(one_worker)


def test_killed_sweep_resumes_with_the_missing_points_only(sweep_dir, one_worker, tmp_path):
    out = tmp_path / "k.csv"
    cmd = [sys.executable, "-m", "nnx.tools.nnx_sweep", str(sweep_dir / "s.toml"), "-o", str(out),
           "--workers", "1", "--quiet"]
    proc = subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and out.read_text().count("\n") >= 4:  # header + 3 rows
                break
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    kept = read_rows(out)
    assert 3 <= len(kept) < 24, "the sweep was not killed half-way"
    rerun = subprocess.run(cmd, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"({24 - len(kept)} computed, {len(kept)} already in" in rerun.stderr
    rows = read_rows(out)
    assert without_seconds(rows) == without_seconds(one_worker)
    # the kept rows were not computed again: their seconds are unchanged
    seconds = {r["key"]: r["seconds"] for r in rows}
    assert all(seconds[r["key"]] == r["seconds"] for r in kept)
    # a third run computes nothing
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert "(0 computed, 24 already in" in again.stderr


def test_a_point_that_does_not_fit_is_a_row(tmp_path, capsys):
    mlp(tmp_path / "big.onnx", 512, 2, 3, batch=1)
    shutil.copy(MESH4, tmp_path / "mesh4x4.toml")
    (tmp_path / "s.toml").write_text(f"""
models = [{{ path = "big.onnx" }}]
pipelines = ["{PLAIN}", "default"]
metrics = ["cycles"]
[target]
base = "mesh4x4.toml"
[target.grid]
"mesh.width" = [2, 4]
"mesh.core_memory_bytes" = [131072, 2097152]
""")
    out = tmp_path / "r.csv"
    rc = sweep_main([str(tmp_path / "s.toml"), "-o", str(out), "--workers", "1", "--quiet"])
    assert rc == 0, capsys.readouterr().err
    rows = read_rows(out)
    assert len(rows) == 8
    at = {(r["pipeline"], r["mesh.width"], r["mesh.core_memory_bytes"]): r for r in rows}
    small = at[(PLAIN, "2", "131072")]
    assert "does not fit the mesh" in small["status"] and small["cycles"] == ""
    assert "\n" not in small["status"]
    big = at[(PLAIN, "4", "2097152")]
    assert big["status"] == "ok" and int(big["cycles"]) > 0
    # the default pipeline makes a program package where one program does not fit;
    # its weight loads between programs cost cycles
    package = at[("default", "2", "131072")]
    assert package["status"] == "ok" and int(package["cycles"]) > int(at[("default", "4", "2097152")]["cycles"])


@pytest.mark.parametrize("text,key", [
    ('models = [{ path = "a.onnx" }]\nmetrics = ["cycles"]\ncolour = 1\n', "'colour': unknown key"),
    ('models = [{ path = "missing.onnx" }]\nmetrics = ["cycles"]\n', "'models[0].path': no such file: missing.onnx"),
    ('models = [{ path = "a.onnx" }]\nmetrics = ["cycles"]\n[target.grid]\n"mesh.width" = []\n',
     "'target.grid.\"mesh.width\"': empty grid"),
    ('models = [{ path = "a.onnx" }]\nmetrics = ["cycles"]\n[target]\nbase = "mesh"\n[target.grid]\n'
     '"mesh.widht" = [2]\n', "'target.grid.\"mesh.widht\"': unknown target key"),
    ('models = [{ path = "a.onnx" }]\nmetrics = ["cycles"]\n[target.grid]\n"caches.weight.bytes" = [0]\n',
     "'target.grid.\"caches.weight.bytes\"': value 0"),
    ('models = [{ path = "a.onnx" }]\nmetrics = ["cycles"]\npipelines = ["no-such-pass"]\n', "'pipelines[0]'"),
    ('models = [{ path = "a.onnx" }]\nmetrics = []\n', "'metrics'"),
    ('models = [{ path = "a.onnx" }]\nmetrics = ["cycles"]\n[target.grid]\n', "'target.grid': empty"),
])
def test_bad_sweep_file_is_one_line_and_no_results(sweep_dir, tmp_path, text, key):
    shutil.copy(sweep_dir / "a.onnx", tmp_path / "a.onnx")
    (tmp_path / "bad.toml").write_text(text)
    out = tmp_path / "r.csv"
    r = subprocess.run([sys.executable, "-m", "nnx.tools.nnx_sweep", str(tmp_path / "bad.toml"), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"nnx-sweep: error: {tmp_path / 'bad.toml'}: key ") \
        and key in lines[0], r.stderr
    assert not out.exists()


def test_results_of_another_sweep_are_not_mixed_in(sweep_dir, tmp_path, capsys):
    out = tmp_path / "r.csv"
    out.write_text("model,pipeline,cycles,status,seconds,key\n")
    assert sweep_main([str(sweep_dir / "s.toml"), "-o", str(out), "--quiet"]) == 1
    assert "are not the sweep's" in capsys.readouterr().err
    assert out.read_text() == "model,pipeline,cycles,status,seconds,key\n"


def test_sweep_plot(sweep_dir, one_worker, tmp_path):
    from test_figures import assert_readable, plotting_axes

    from nnx.sweep.plot import pareto_front, sweep_figure
    from nnx.sweep.spec import load_sweep

    assert pareto_front([(1, 5), (2, 3), (3, 4), (4, 1), (2, 3)]) == [(1, 5), (2, 3), (4, 1)]
    spec = load_sweep(str(sweep_dir / "s.toml"))
    fig = sweep_figure(one_worker, spec, "s.toml: 3 models on nnx-mesh-4x4 variants")
    assert_readable(fig, ("s.toml", "nnx-mesh-4x4"))
    *metric_axes, pareto_ax = plotting_axes(fig)
    assert [a.get_ylabel() for a in metric_axes] == ["cycles", "noc_byte_hops", "offchip.weight_bytes"]
    assert all(a.get_xlabel() == "mesh.width" for a in metric_axes)
    # one line per model x pipeline x core memory, two widths each
    lines = metric_axes[0].get_lines()
    assert len(lines) == 3 * 2 * 2 and all(len(ln.get_xdata()) == 2 for ln in lines)
    assert len(fig.legends[0].get_texts()) == 12
    # the Pareto panel: every point, one scatter per model, and the front
    assert sum(len(c.get_offsets()) for c in pareto_ax.collections) == 24
    front = [ln for ln in pareto_ax.get_lines() if ln.get_label() == "Pareto front"]
    pts = [(float(r["cycles"]), float(r["noc_byte_hops"])) for r in one_worker]
    assert list(zip(*front[0].get_data())) == pareto_front(pts)
    out = tmp_path / "p.svg"
    assert sweep_main([str(sweep_dir / "s.toml"), "-o", str(sweep_dir / "w1.csv"), "--plot", str(out),
                       "--quiet"]) == 0
    assert b"<svg" in out.read_bytes()[:400]


def test_profile_mode_takes_nnx_profile_metrics(sweep_dir, tmp_path):
    """mode = "profile": nnx-profile's report per point; `fits` follows the grid's
    device memory; the peak holds every weight (resident) plus a few activations."""
    shutil.copy(sweep_dir / "a.onnx", tmp_path / "a.onnx")
    (tmp_path / "p.toml").write_text('models = [{ path = "a.onnx" }]\nmetrics = ["peak_device_bytes", "fits"]\n'
                                     'mode = "profile"\n[target.grid]\n"device.memory_bytes" = [16384, 1048576]\n')
    out = tmp_path / "r.csv"
    assert sweep_main([str(tmp_path / "p.toml"), "-o", str(out), "--workers", "1", "--quiet"]) == 0
    small, large = read_rows(out)
    weights, activation = 2 * 64 * 64 * 4, 64 * 4
    for r in (small, large):
        assert r["status"] == "ok"
        assert weights < int(r["peak_device_bytes"]) <= weights + 4 * activation
    assert (small["fits"], large["fits"]) == ("False", "True")


def test_unreachable_ray_cluster_is_one_line(sweep_dir, tmp_path):
    pytest.importorskip("ray", reason="Ray is the nnx[ray] extra (scripts/test.sh installs it)")
    out = tmp_path / "r.csv"
    r = subprocess.run([sys.executable, "-m", "nnx.tools.nnx_sweep", str(sweep_dir / "s.toml"), "-o", str(out),
                        "--ray", "127.0.0.1:1", "--quiet"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [
        "nnx-sweep: error: --ray 127.0.0.1:1: cannot connect: Connection refused"], r.stderr
    assert not out.exists()
