"""Shared checks of graph-autodiff training steps against torch.autograd (used by
test_autodiff_models.py and test_autodiff_models_2.py): build the step from an ONNX
training export, run torch's cross-entropy backward on the same module, and compare
the loss and every gradient with the suites' tolerances."""

from __future__ import annotations

import copy
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Reference:
    """torch's cross-entropy step on one module, in float64 (the reference) and in
    float32 (whose distance from float64 measures float32 rounding on this model):
    `loss`/`grads` are float64, `loss_noise`/`noise[name]` are |float32 - float64|
    (the largest element difference per gradient)."""

    labels: np.ndarray
    loss: float
    grads: dict[str, np.ndarray]
    loss_noise: float
    noise: dict[str, float]


def torch_reference(model, feeds: dict, labels: np.ndarray | None = None) -> Reference:
    """The float64 and float32 cross-entropy steps of `model` (a torch module) on
    `feeds` (float inputs are promoted to float64 in the reference; integer ones are
    kept). The float32 run is on `model` itself, so its `.grad`s are set afterwards."""
    import torch

    model64 = copy.deepcopy(model).double()
    feeds64 = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in feeds.items()}
    labels, loss32 = torch_cross_entropy_step(model, feeds, labels)
    _, loss64 = torch_cross_entropy_step(model64, feeds64, labels)
    with torch.no_grad():
        g64 = {k: p.grad.numpy() for k, p in model64.named_parameters()}
        g32 = {k: p.grad.numpy() for k, p in model.named_parameters()}
    noise = {k: float(np.abs(g32[k].astype(np.float64) - g64[k]).max()) for k in g64}
    return Reference(labels, loss64, g64, abs(loss32 - loss64), noise)


NOISE_FACTOR = 5.0
"""How many times torch's own float32 error (against float64, per gradient tensor) a
correct float32 implementation with another summation order may be off: measured
nnx/torch error ratios are listed in docs/architecture.md, "Numerical tolerances"."""


def assert_step_matches(got: dict, ref: Reference) -> None:
    """The loss within 1e-5 relative of the float64 loss (or NOISE_FACTOR x torch's
    float32 error, when larger); the `grad_<name>` set equals the reference's names;
    each gradient within the largest of 1e-4 of its tensor's largest magnitude,
    NOISE_FACTOR x torch's float32 error on that tensor (deep BatchNorm networks
    amplify rounding: this is where the measured noise, not a fixed bar, decides),
    and a floor of 1e-6 of the model's largest gradient (exact zeros whose float32
    value is rounding noise)."""
    loss_tol = max(1e-5 * abs(ref.loss), NOISE_FACTOR * ref.loss_noise)
    assert abs(float(got["loss"]) - ref.loss) <= loss_tol, (float(got["loss"]), ref.loss)
    grads = {k.removeprefix("grad_"): v for k, v in got.items() if k.startswith("grad_")}
    assert sorted(grads) == sorted(ref.grads)
    floor = 1e-6 * max(float(np.abs(g).max()) for g in ref.grads.values())
    bad = []
    for k, want in ref.grads.items():
        err = float(np.abs(grads[k].astype(np.float64) - want).max())
        tol = max(1e-4 * float(np.abs(want).max()), NOISE_FACTOR * ref.noise[k], floor)
        if err > tol:
            bad.append(f"{k}: max error {err:.3g} > {tol:.3g} (largest |grad| "
                       f"{np.abs(want).max():.3g}, torch float32 error {ref.noise[k]:.3g})")
    assert not bad, "\n".join(bad)
