"""The neuron-group-map pass on a graph-dialect model (docs/neuron-mapping.md, section
3.2): the map it writes covers every neuron of the model, fits the capacity, agrees
with the `nnx.cores` annotations and is deterministic for a seed."""

import os
import re
import subprocess
import sys

import numpy as np

NNX_OPT = os.path.join(os.path.dirname(sys.executable), "nnx-opt")

MODEL = """
func.func @net(%x: tensor<1x2x12x12xf32>) -> tensor<1x10xf32> {
  %w1 = graph.constant dense_resource<w1> : tensor<6x2x3x3xf32>
  %c1 = graph.conv(%x, %w1) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x12x12xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x12x12xf32>
  %r1 = graph.relu(%c1) : (tensor<1x6x12x12xf32>) -> tensor<1x6x12x12xf32>
  %w2 = graph.constant dense_resource<w2> : tensor<6x6x3x3xf32>
  %c2 = graph.conv(%r1, %w2) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x6x12x12xf32>, tensor<6x6x3x3xf32>) -> tensor<1x6x6x6xf32>
  %p = graph.average_pool(%c2) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x6x6xf32>) -> tensor<1x6x3x3xf32>
  %f = graph.flatten(%p) {axis = 1 : i64} : (tensor<1x6x3x3xf32>) -> tensor<1x54xf32>
  %w3 = graph.constant dense_resource<w3> : tensor<54x10xf32>
  %y = graph.matmul(%f, %w3) : (tensor<1x54xf32>, tensor<54x10xf32>) -> tensor<1x10xf32>
  func.return %y : tensor<1x10xf32>
}
"""
# 288 inputs + 864 conv1 + 216 conv2 + 10 matmul outputs
NEURONS = 2 * 144 + 6 * 144 + 6 * 36 + 10


def _model(tmp_path):
    rng = np.random.default_rng(0)
    blobs = []
    for name, shape in (("w1", (6, 2, 3, 3)), ("w2", (6, 6, 3, 3)), ("w3", (54, 10))):
        data = rng.normal(size=shape).astype(np.float32)
        blobs.append(f'{name}: "0x04000000{data.tobytes().hex().upper()}"')
    text = MODEL + "{-#\n  dialect_resources: {\n    builtin: {\n      " + \
        ",\n      ".join(blobs) + "\n    }\n  }\n#-}\n"
    p = tmp_path / "net.mlir"
    p.write_text(text)
    return p


def _run(model, out, seed, capacity=100):
    pipe = (f'builtin.module(neuron-group-map{{mesh=4x4 capacity={capacity} seed={seed} '
            f'map-file="{out}"}})')
    p = subprocess.run([NNX_OPT, str(model), f"--pass-pipeline={pipe}"], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_map_covers_every_neuron_within_capacity(tmp_path):
    model = _model(tmp_path)
    out = tmp_path / "a.npy"
    ir = _run(model, out, seed=3)
    m = np.load(out)
    assert m.dtype == np.int32 and m.shape == (NEURONS,)
    assert m.min() >= 0 and m.max() < 16
    assert np.bincount(m, minlength=16).max() <= 100
    # the annotations are the cores of each layer's neuron range in the map
    found = re.findall(r"nnx.cores = array<i64: ([0-9, ]+)>, nnx.neurons = array<i64: (\d+), "
                       r"(\d+)>", ir)
    assert [(int(a), int(b)) for _, a, b in found] == [(288, 864), (1152, 216), (1368, 10)]
    for cores, first, count in found:
        want = sorted(set(m[int(first):int(first) + int(count)].tolist()))
        assert [int(c) for c in cores.split(",")] == want


def test_map_is_deterministic_for_a_seed(tmp_path):
    model = _model(tmp_path)
    a, b, c = tmp_path / "a.npy", tmp_path / "b.npy", tmp_path / "c.npy"
    ir_a = _run(model, a, seed=7)
    ir_b = _run(model, b, seed=7)
    assert ir_a == ir_b
    assert np.array_equal(np.load(a), np.load(b))
    _run(model, c, seed=8)
    assert np.bincount(np.load(c), minlength=16).max() <= 100


def test_impossible_request_leaves_no_map(tmp_path):
    model = _model(tmp_path)
    out = tmp_path / "x.npy"
    pipe = f'builtin.module(neuron-group-map{{mesh=2x2 capacity=100 map-file="{out}"}})'
    p = subprocess.run([NNX_OPT, str(model), f"--pass-pipeline={pipe}"], capture_output=True,
                       text=True)
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1
    assert "needs at least 14 groups" in p.stderr
    assert not out.exists()
