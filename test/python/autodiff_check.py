"""Shared checks of graph-autodiff training steps against torch.autograd (used by
test_autodiff_models.py and test_autodiff_models_2.py): build the step from an ONNX
training export, run torch's cross-entropy backward on the same module, and compare
the loss and every gradient with the suites' tolerances."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def training_step(export: Path, **opts):
    """The graph module of `export` turned into a training step by graph-autodiff."""
    from xdsl.context import Context

    from nnx.importer import import_onnx
    from nnx.passes.graph_autodiff import GraphAutodiffPass

    module = import_onnx(str(export))
    GraphAutodiffPass(**opts).apply(Context(), module)
    module.verify()
    return module


def torch_cross_entropy_step(model, feeds: dict, labels: np.ndarray | None = None):
    """Run `model` on `feeds` and backpropagate torch's cross-entropy against `labels`
    (random classes, seed 1, when None): (labels, loss)."""
    import torch

    out = model(*[torch.from_numpy(v) for v in feeds.values()])
    out = out[0] if isinstance(out, tuple) else out
    c = out.shape[-1]
    if labels is None:
        labels = np.random.default_rng(1).integers(0, c, tuple(out.shape[:-1])).astype(np.int64)
    loss = torch.nn.functional.cross_entropy(out.reshape(-1, c), torch.from_numpy(labels).reshape(-1))
    loss.backward()
    return labels, float(loss.detach())


def assert_step_matches(got: dict, torch_loss: float, params: dict[str, np.ndarray]) -> None:
    """Loss within 1e-5 relative; the `grad_<name>` set equals `params`' names; each
    gradient within 1e-4 of its tensor's largest magnitude, with a floor of 1e-6 of
    the model's largest gradient (exact zeros whose torch value is float32 noise)."""
    assert abs(float(got["loss"]) - torch_loss) <= 1e-5 * abs(torch_loss)
    grads = {k.removeprefix("grad_"): v for k, v in got.items() if k.startswith("grad_")}
    assert sorted(grads) == sorted(params)
    floor = 1e-6 * max(float(np.abs(g).max()) for g in params.values())
    bad = []
    for k, want in params.items():
        err = float(np.abs(grads[k] - want).max())
        if err > max(1e-4 * float(np.abs(want).max()), floor):
            bad.append(f"{k}: max error {err:.3g}, largest |grad| {np.abs(want).max():.3g}")
    assert not bad, "\n".join(bad)
