"""Float32 rounding on the autodiff test models: torch's own float32 gradients against
float64, and nnx's against float64, under this process's OpenBLAS kernels.

This is the measurement behind the gradient tolerance of test/python/autodiff_check.py
(docs/architecture.md, "Numerical tolerances in the tests"). Run it once per kernel
family to see what the summation order changes:

    for k in Haswell Sandybridge SkylakeX; do
      OPENBLAS_CORETYPE=$k .venv/bin/python bench/float_noise.py
    done

Per model it prints the largest relative error (error / the tensor's largest
magnitude, over tensors above the suite's floor) of torch float32 and of nnx, the
worst ratio nnx error / torch float32 error (the suite allows NOISE_FACTOR), the
number of tensors whose nnx error exceeds a fixed 1e-4 bar, and the worst use of the
suite's tolerance (must stay below 1).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "python"))
import model_zoo as Z  # noqa: E402
from autodiff_check import NOISE_FACTOR, torch_reference, training_step  # noqa: E402


def measure(name: str) -> dict:
    """The float32 noise figures of one TRAINING_MODELS / TRAINING_MODELS_2 model."""
    from nnx.interp.interpreter import run_module

    if name in Z.TRAINING_MODELS:
        model, feeds = Z.training_model(name)
        export = Z.get_training_export(name)
    else:
        model, feeds = Z.training_model_2(name)
        export = Z.get_training_export_2(name)
    ref = torch_reference(model, feeds)
    got = run_module(training_step(export), {**feeds, "labels": ref.labels})
    floor = 1e-6 * max(float(np.abs(g).max()) for g in ref.grads.values())
    row = {"torch_rel": 0.0, "nnx_rel": 0.0, "ratio": 0.0, "over_1e-4": 0, "tol_use": 0.0}
    for k, want in ref.grads.items():
        big = float(np.abs(want).max())
        err = float(np.abs(got["grad_" + k].astype(np.float64) - want).max())
        tol = max(1e-4 * big, NOISE_FACTOR * ref.noise[k], floor)
        row["tol_use"] = max(row["tol_use"], err / tol)
        if big > floor:
            row["torch_rel"] = max(row["torch_rel"], ref.noise[k] / big)
            row["nnx_rel"] = max(row["nnx_rel"], err / big)
            row["over_1e-4"] += err > 1e-4 * big
            row["ratio"] = max(row["ratio"], err / max(ref.noise[k], floor))
    return row


def main() -> None:
    kernel = os.environ.get("OPENBLAS_CORETYPE", "(machine default)")
    names = sys.argv[1:] or [*Z.TRAINING_MODELS, *Z.TRAINING_MODELS_2]
    print(f"OPENBLAS_CORETYPE={kernel}")
    print(f"{'model':22s} {'torch f32 rel':>13s} {'nnx rel':>9s} {'nnx/torch':>9s} "
          f"{'>1e-4':>5s} {'tol use':>7s}")
    for name in names:
        r = measure(name)
        print(f"{name:22s} {r['torch_rel']:13.2e} {r['nnx_rel']:9.2e} {r['ratio']:9.2f} "
              f"{r['over_1e-4']:5d} {r['tol_use']:7.2f}", flush=True)


if __name__ == "__main__":
    main()
