"""graph-autodiff on real training-mode exports against torch.autograd.

Each TRAINING_MODELS export (model_zoo.py: ResNet-18 layout at width 16 and 64x64
input, MobileNetV2, 2-layer BERT and GPT-2 with hidden 64; batch 2; torch's
`TrainingMode.TRAINING`, no constant folding) is imported, turned into a training step
by `graph-autodiff{loss=cross-entropy}`, interpreted with random labels, and compared
with torch's cross-entropy and `loss.backward()` on the same module: loss within 1e-5
relative; every `grad_<name>` (named after the ONNX initializer = torch parameter name;
the sets must be equal) within 1e-4 of its tensor's largest magnitude, with a floor of
1e-6 of the model's largest gradient for tensors whose exact gradient is zero
(a key bias before softmax, a BatchNorm shift followed by another BatchNorm) and
whose torch value is float32 noise. One sgd step is checked against torch.optim.SGD.
Skipped without torch/transformers (NNX_MODELS=0).
"""

from __future__ import annotations

import numpy as np
import pytest

import model_zoo as Z
from autodiff_check import assert_step_matches, torch_cross_entropy_step, torch_reference, training_step

pytest.importorskip("torch")


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _training_step(name: str, **opts):
    return training_step(Z.get_training_export(name), **opts)


def _torch_step(name: str, labels: np.ndarray | None = None):
    model, feeds = Z.training_model(name)
    labels, loss = torch_cross_entropy_step(model, feeds, labels)
    return model, feeds, labels, loss


@pytest.mark.parametrize("name", Z.TRAINING_MODELS)
def test_gradients_match_torch(name: str) -> None:
    from nnx.interp.interpreter import run_module

    model, feeds = Z.training_model(name)
    ref = torch_reference(model, feeds)
    got = run_module(_training_step(name), {**feeds, "labels": ref.labels})
    assert_step_matches(got, ref)


def test_sgd_step_matches_torch_optimizer() -> None:
    """optimizer=sgd returns new_<name> = p - lr * grad, as torch.optim.SGD."""
    import torch

    from nnx.interp.interpreter import run_module

    name = "mobilenet_v2_train"
    model, feeds, labels, _ = _torch_step(name)
    torch.optim.SGD(model.parameters(), lr=0.5).step()
    got = run_module(_training_step(name, optimizer="sgd", lr=0.5), {**feeds, "labels": labels})
    news = {k.removeprefix("new_"): v for k, v in got.items() if k.startswith("new_")}
    assert set(news) == {k for k, _ in model.named_parameters()}
    for k, p in model.named_parameters():
        want = p.detach().numpy()
        assert np.abs(news[k] - want).max() <= 1e-5 * max(1.0, float(np.abs(want).max())), k
