"""nnx-map / nnx-topo command lines: outputs, one-line errors, no partial files."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from nnx.tools import nnx_map, nnx_topo
from nnx.topology.synthetic import sheet_graph


@pytest.fixture(scope="module")
def npz(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    pre, post, w = sheet_graph(4000, 30000, seed=2)
    w[::7] *= -1  # |weight| is used
    p = d / "g.npz"
    np.savez(p, pre=pre, post=post, weight=w)
    return p


def test_map_outputs(npz, tmp_path):
    out, rep, png = tmp_path / "m.npy", tmp_path / "r.json", tmp_path / "p.png"
    rc = nnx_map.main([str(npz), "-o", str(out), "--mesh", "4x4", "--capacity", "300",
                       "--report", str(rep), "--plot", str(png), "--quiet"])
    assert rc == 0
    m = np.load(out)
    assert m.dtype == np.int32 and m.shape == (4000,) and m.max() < 16
    assert np.bincount(m).max() <= 300
    r = json.loads(rep.read_text())
    for key in ("neurons", "synapses", "groups", "cores_used", "edge_cut", "edge_cut_fraction",
                "hop_traffic", "max_core_load", "capacity", "wall_seconds", "peak_rss_bytes"):
        assert key in r
    assert r["neurons"] == 4000 and r["synapses"] == 30000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_topo_convert_roundtrip_and_map_zip(npz, tmp_path):
    z = tmp_path / "g.zip"
    assert nnx_topo.main(["convert", str(npz), str(z)]) == 0
    back = tmp_path / "back.npz"
    assert nnx_topo.main(["convert", str(z), str(back)]) == 0
    a, b = np.load(npz), np.load(back)
    s1 = sorted(zip(a["pre"].tolist(), a["post"].tolist(), np.abs(a["weight"]).tolist()))
    s2 = sorted(zip(b["pre"].tolist(), b["post"].tolist(), b["weight"].tolist()))
    assert s1 == s2
    m1, m2 = tmp_path / "1.npy", tmp_path / "2.npy"
    args = ["--mesh", "4x4", "--capacity", "300", "--seed", "4", "--quiet"]
    assert nnx_map.main([str(z), "-o", str(m1), *args]) == 0
    assert nnx_map.main([str(npz), "-o", str(m2), *args]) == 0
    assert (np.load(m1) == np.load(m2)).all()  # same graph, same seed, same map


@pytest.mark.parametrize("extra,msg", [
    (["--mesh", "4y4", "--capacity", "300"], "bad mesh"),
    (["--mesh", "2x2", "--capacity", "300"], "only 4 cores"),
    (["--mesh", "4x4", "--capacity", "0"], "capacity must be positive"),
])
def test_map_one_line_errors(npz, tmp_path, extra, msg):
    out = tmp_path / "m.npy"
    p = subprocess.run([sys.executable, "-m", "nnx.tools.nnx_map", str(npz), "-o", str(out),
                        *extra], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0] and "Traceback" not in p.stderr
    assert not out.exists()
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_map_oversized_neuron(tmp_path, capsys):
    p = tmp_path / "s.npz"
    np.savez(p, pre=np.array([0, 1]), post=np.array([1, 2]), size=np.array([1, 500, 1]))
    out = tmp_path / "m.npy"
    assert nnx_map.main([str(p), "-o", str(out), "--mesh", "4x4", "--capacity", "100"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "larger than the core capacity" in err[0]
    assert not out.exists()


def test_topo_bad_inputs(tmp_path, capsys):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04garbage")
    assert nnx_topo.main(["info", str(bad)]) == 1
    assert nnx_map.main([str(bad), "-o", str(tmp_path / "m.npy"), "--mesh", "2x2",
                         "--capacity", "5"]) == 1
    p = tmp_path / "x.npz"
    np.savez(p, pre=np.array([0.5]), post=np.array([1]))
    assert nnx_topo.main(["convert", str(p), str(tmp_path / "o.zip")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(e.startswith(("nnx-topo: error", "nnx-map: error")) for e in err)
    assert not (tmp_path / "o.zip").exists() and not (tmp_path / "m.npy").exists()


def test_topo_info(npz, tmp_path, capsys):
    z = tmp_path / "g.zip"
    assert nnx_topo.main(["convert", str(npz), str(z), "--vertices-per-member", "1"]) == 0
    capsys.readouterr()
    assert nnx_topo.main(["info", str(z)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["vertices"] == 4000 and d["synapses"] == 30000 and d["members"] == 4000
