"""`nnx-import --training` / `import_onnx(training=...)`: nodes over parameters stay ops.

A LayerNorm + Linear network (no BatchNormalization, no Dropout: nothing marks it as a
training-mode export) applies its Linear to a rank-3 input, which torch exports as
MatMul(x, Transpose(weight)). Imported as inference, the Transpose folds into a
constant and the Linear weight gets no gradient; imported with training=True every
torch parameter gets its gradient, matching torch.autograd.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _model():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.LayerNorm(8), torch.nn.Linear(8, 6), torch.nn.GELU(),
                              torch.nn.Linear(6, 5))
    with torch.no_grad():
        for p in net.parameters():
            p.add_(torch.empty_like(p).uniform_(-0.1, 0.1))
    return net.train()


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> tuple[Path, np.ndarray]:
    path = tmp_path_factory.mktemp("train") / "ln_linear.onnx"
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_model(), (torch.from_numpy(x),), str(path), input_names=["x"],
                          output_names=["y"], opset_version=17, dynamo=False,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    return path, x


def _grads(path: Path, x: np.ndarray, labels: np.ndarray, training: bool | None) -> dict:
    from xdsl.context import Context

    from nnx.importer import import_onnx
    from nnx.interp.interpreter import run_module
    from nnx.passes.graph_autodiff import GraphAutodiffPass

    module = import_onnx(str(path), training=training)
    GraphAutodiffPass().apply(Context(), module)
    got = run_module(module, {"x": x, "labels": labels})
    return {k.removeprefix("grad_"): v for k, v in got.items() if k.startswith("grad_")}


def test_training_import_keeps_every_parameter(export) -> None:
    path, x = export
    labels = np.random.default_rng(1).integers(0, 5, (2, 3)).astype(np.int64)
    net = _model()
    out = net(torch.from_numpy(x))
    torch.nn.functional.cross_entropy(out.reshape(-1, 5), torch.from_numpy(labels).reshape(-1)).backward()
    want = {k: p.grad.numpy() for k, p in net.named_parameters()}

    got = _grads(path, x, labels, training=True)
    assert set(got) == set(want)
    for k, w in want.items():
        assert np.abs(got[k] - w).max() <= 1e-4 * np.abs(w).max(), k

    # undetected and imported as inference: the transposed Linear weights are folded
    detected = _grads(path, x, labels, training=None)
    assert {"1.weight", "3.weight"} - set(detected) == {"1.weight", "3.weight"}


def test_cli_flags(export, tmp_path) -> None:
    path, _ = export
    exe = Path(sys.executable).parent
    runs = {}
    for flag in ("--training", "--inference"):
        out = tmp_path / f"m{flag}.mlir"
        subprocess.run([str(exe / "nnx-import"), str(path), flag, "-o", str(out)], check=True)
        runs[flag] = out.read_text()
    assert "graph.transpose" in runs["--training"]
    assert "graph.transpose" not in runs["--inference"]
    both = subprocess.run([str(exe / "nnx-import"), str(path), "--training", "--inference"],
                          capture_output=True, text=True)
    assert both.returncode != 0 and "not allowed with" in both.stderr
