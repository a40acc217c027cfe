"""Real exports (issue 2): distinct architectures and exporters through nnx-import +
nnx-run --interpret, within 1e-4 relative of onnxruntime.

A subset of the sweep in bench/real_exports.py (all models: bench/RESULTS.md), chosen
for the op patterns each brings:

* llama (dynamo, opset 18)   RMSNorm (Pow/ReduceMean/Sqrt), rotary embeddings (Slice/
                              Neg/Concat, Cos/Sin), SiLU-gated MLP, GQA Expand, padded mask
* llama (dynamo, opset 23)   the same as opset-23 RMSNormalization/RotaryEmbedding/
                              Attention nodes, expanded from their ONNX function bodies
* roberta (TorchScript 17)   CumSum position ids, -inf attention mask constants (a padded
                              tail), scaled_dot_product_attention decomposition
* swin (TorchScript 17)      window partition/roll (Slice+Concat), relative position
                              bias Gather, 6-d Reshape/Transpose, patch merging
* wav2vec2 (TorchScript 17)  Conv1d feature extractor, GroupNorm, grouped positional
                              Conv1d, dynamic sample axis fixed at import
* unet (TorchScript 13)      ConvTranspose, Concat skips, bilinear and nearest Resize
* yolo_head (dynamo 18)      Split, Sigmoid, Pow, grid arithmetic, 5-d Reshape/Transpose

Exports are cached in cache/models/ (test/python/model_zoo.py); the test skips with the
reason when torch, transformers or onnxscript (dynamo exporter) are missing.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_zoo  # noqa: E402

BIN = Path(sys.executable).parent
TOL = 1e-4

CASES = [
    ("llama", "dynamo", 18),
    ("llama", "dynamo", 23),
    ("roberta", "ts", 17),
    ("swin", "ts", 17),
    ("wav2vec2", "ts", 17),
    ("unet", "ts", 13),
    ("yolo_head", "dynamo", 18),
]


def _rel_err(a: np.ndarray, b: np.ndarray) -> float:
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.array_equal(np.isfinite(a), np.isfinite(b))
    m = np.isfinite(b)
    denom = float(np.max(np.abs(b[m]))) if m.any() else 0.0
    diff = float(np.max(np.abs(a[m].astype(np.float64) - b[m]))) if m.any() else 0.0
    return diff / denom if denom > 0 else diff


@pytest.mark.parametrize("name,exporter,opset", CASES, ids=[f"{n}-{e}{o}" for n, e, o in CASES])
def test_real_export_matches_onnxruntime(name, exporter, opset, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    path = model_zoo.get_export(name, exporter, opset)
    feeds = model_zoo.sweep_inputs(name)
    shape_args, input_args = [], []
    for k, v in feeds.items():
        shape_args += ["--input-shape", f"{k}={'x'.join(map(str, v.shape))}"]
        np.save(tmp_path / f"{k}.npy", v)
        input_args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    mlir = tmp_path / "model.mlir"
    r = subprocess.run([str(BIN / "nnx-import"), str(path), "-o", str(mlir), *shape_args],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    r = subprocess.run([str(BIN / "nnx-run"), "--interpret", str(mlir), *input_args,
                        "--output-dir", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    assert tuple(names) == model_zoo.SWEEP[name].outputs
    for n, ref in zip(names, sess.run(None, feeds)):
        got = np.load(out / (re.sub(r"[^A-Za-z0-9_.-]", "_", n) + ".npy"))
        err = _rel_err(got, ref)
        assert err <= TOL, f"{name} ({exporter} opset {opset}) output {n}: max rel err {err:.2e}"
