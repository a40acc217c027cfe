"""graph-autodiff on two more real training-mode exports against torch.autograd
(model_zoo.py, "more training-mode exports"), with the tolerances of
test_autodiff_models.py (loss within 1e-5 relative; every gradient within 1e-4 of its
tensor's largest magnitude, floor 1e-6 of the model's largest gradient):

* `inception_train`: GoogLeNet's inception blocks with ceil-mode max pools whose last
  window reaches past the edge (7 -> 3, 3 -> 2) and 3x3/1 pad-1 ceil-mode pools,
  Concat of four branches, BatchNorm over 2x2 maps.
* `vit_train`: torchvision's ViT layout, whose export has float constants the exporter
  generated (`/layers/.../Sqrt_1_output_0`, the attention scale): they are not
  parameters, so the gradient set is exactly torch's `named_parameters()`.
"""

from __future__ import annotations

import numpy as np
import pytest

import model_zoo as Z
from autodiff_check import assert_step_matches, torch_cross_entropy_step, torch_reference, training_step

pytest.importorskip("torch")


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _step(name: str, **opts):
    return training_step(Z.get_training_export_2(name), **opts)


def _torch_grads(name: str):
    model, feeds = Z.training_model_2(name)
    labels, loss = torch_cross_entropy_step(model, feeds)
    grads = {k: p.grad.numpy() for k, p in model.named_parameters()}
    return feeds, labels, loss, grads


@pytest.mark.parametrize("name", Z.TRAINING_MODELS_2)
def test_gradients_match_torch(name: str) -> None:
    from nnx.interp.interpreter import run_module

    model, feeds = Z.training_model_2(name)
    ref = torch_reference(model, feeds)
    got = run_module(_step(name), {**feeds, "labels": ref.labels})
    assert_step_matches(got, ref)


def test_vit_export_has_exporter_constants_that_are_not_parameters() -> None:
    """The ViT export does hold float constants of rank >= 1 named by the exporter that
    the loss depends on (else the test above could not fail); `params=` overrides the
    default rule: with a regex matching every name they get gradients too, with one
    matching only the classifier only its two tensors do."""
    from nnx.interp.interpreter import run_module

    feeds, labels, _, params = _torch_grads("vit_train")
    every = run_module(_step("vit_train", params=".*"), {**feeds, "labels": labels})
    extra = sorted(k for k in every if k.startswith("grad_/"))
    assert extra and all("Sqrt" in k for k in extra), extra
    assert {k for k in every if k.startswith("grad_") and not k.startswith("grad_/")} == {
        f"grad_{k}" for k in params
    }
    head = run_module(_step("vit_train", params=r"head\..*"), {**feeds, "labels": labels})
    assert sorted(k for k in head if k.startswith("grad_")) == ["grad_head.bias", "grad_head.weight"]
    tol = 1e-4 * float(np.abs(params["head.weight"]).max())
    np.testing.assert_allclose(head["grad_head.weight"], params["head.weight"], rtol=0, atol=tol)
