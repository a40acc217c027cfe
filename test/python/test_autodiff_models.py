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

pytest.importorskip("torch")


def _training_step(name: str, **opts):
    from xdsl.context import Context

    from nnx.importer import import_onnx
    from nnx.passes.graph_autodiff import GraphAutodiffPass

    module = import_onnx(str(Z.get_training_export(name)))
    GraphAutodiffPass(**opts).apply(Context(), module)
    module.verify()
    return module


def _torch_step(name: str, labels: np.ndarray | None = None):
    import torch

    model, feeds = Z.training_model(name)
    out = model(*[torch.from_numpy(v) for v in feeds.values()])
    out = out[0] if isinstance(out, tuple) else out
    c = out.shape[-1]
    if labels is None:
        labels = np.random.default_rng(1).integers(0, c, tuple(out.shape[:-1])).astype(np.int64)
    loss = torch.nn.functional.cross_entropy(out.reshape(-1, c), torch.from_numpy(labels).reshape(-1))
    loss.backward()
    return model, feeds, labels, float(loss.detach())


@pytest.mark.parametrize("name", Z.TRAINING_MODELS)
def test_gradients_match_torch(name: str) -> None:
    from nnx.interp.interpreter import run_module

    model, feeds, labels, torch_loss = _torch_step(name)
    got = run_module(_training_step(name), {**feeds, "labels": labels})
    assert abs(float(got["loss"]) - torch_loss) <= 1e-5 * abs(torch_loss)
    params = {k: p.grad.numpy() for k, p in model.named_parameters()}
    grads = {k.removeprefix("grad_"): v for k, v in got.items() if k.startswith("grad_")}
    assert set(grads) == set(params)
    floor = 1e-6 * max(float(np.abs(g).max()) for g in params.values())
    bad = []
    for k, want in params.items():
        err = float(np.abs(grads[k] - want).max())
        if err > max(1e-4 * float(np.abs(want).max()), floor):
            bad.append(f"{k}: max error {err:.3g}, largest |grad| {np.abs(want).max():.3g}")
    assert not bad, "\n".join(bad)


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
