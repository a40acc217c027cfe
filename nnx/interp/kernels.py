"""Numpy kernels of the graph dialect, keyed by ONNX operator type.

A kernel takes the ONNX inputs (numpy arrays, None for an absent optional input) and
the ONNX attributes as Python values (`GraphOp.onnx_attributes()`), applies ONNX
defaults for absent attributes, and returns the list of outputs. These kernels
*define* what each graph op means; the importer's constant folding, the
`graph-fold-constants` pass and the interpreter all call them.

Semantics are those of the latest ONNX opset; older attribute forms are accepted
too (Clip `min`/`max` attributes, Split `split` attribute, Reduce*/Squeeze/Unsqueeze
`axes` attribute, Slice `starts`/`ends`/`axes` attributes, Pad `pads`/`value`
attributes).

Ops with a variable number of outputs (Split without `split`/`num_outputs`) read
the number of outputs the caller wants from the attribute `NUM_OUTPUTS_ATTR`; the
interpreter sets it, other callers may.

The kernels live in family modules that register into `KERNELS`:
kernels_elementwise (unary/binary/variadic/logic/activation), kernels_nn
(conv, pooling, normalisation, matmul, softmax), kernels_tensor (shape and index
ops), kernels_reduce (reductions, arg-reductions, TopK, CumSum).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Kernel = Callable[[Sequence[np.ndarray | None], dict[str, Any]], list[np.ndarray]]

KERNELS: dict[str, Kernel] = {}

NUM_OUTPUTS_ATTR = "_num_outputs"
"""Pseudo attribute: the number of results the caller expects (for Split)."""


class KernelError(ValueError):
    """An op the kernels cannot evaluate (unsupported attribute value, bad input)."""


def kernel(*onnx_types: str) -> Callable[[Kernel], Kernel]:
    def register(fn: Kernel) -> Kernel:
        for t in onnx_types:
            KERNELS[t] = fn
        return fn

    return register


def run_kernel(
    onnx_type: str, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]
) -> list[np.ndarray]:
    fn = KERNELS.get(onnx_type)
    if fn is None:
        raise KernelError(f"no kernel for ONNX operator {onnx_type}")
    return fn(inputs, attrs)


# ---- helpers shared by the family modules --------------------------------------------


def opt(inputs: Sequence[np.ndarray | None], i: int) -> np.ndarray | None:
    """Input i, or None when absent (or an empty-name placeholder)."""
    if i < len(inputs):
        return inputs[i]
    return None


def ints(v: Any) -> list[int]:
    """A list of Python ints from an attribute value or a 0/1-d integer tensor."""
    if v is None:
        return []
    if isinstance(v, np.ndarray):
        return [int(x) for x in v.reshape(-1)]
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v]
    return [int(v)]


def norm_axis(axis: int, rank: int) -> int:
    a = int(axis)
    if a < 0:
        a += rank
    if not 0 <= a < max(rank, 1):
        raise KernelError(f"axis {axis} out of range for rank {rank}")
    return a


def scalar(v: np.ndarray | None, default: Any = None) -> Any:
    if v is None:
        return default
    a = np.asarray(v)
    if a.size == 0:
        return default
    return a.reshape(-1)[0].item()


# Register the families (they import the helpers above).
from nnx.interp import (  # noqa: E402,F401
    kernels_elementwise,
    kernels_nn,
    kernels_reduce,
    kernels_tensor,
)
