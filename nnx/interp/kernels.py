"""Numpy kernels of the graph dialect, keyed by ONNX operator type.

A kernel takes the ONNX inputs (numpy arrays, None for an absent optional input) and
the ONNX attributes as Python values (`GraphOp.onnx_attributes()`), applies ONNX
defaults for absent attributes, and returns the list of outputs. These kernels
*define* what each graph op means; the importer's constant folding, the
`graph-fold-constants` pass and the interpreter all call them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Kernel = Callable[[Sequence[np.ndarray | None], dict[str, Any]], list[np.ndarray]]

KERNELS: dict[str, Kernel] = {}


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


@kernel("Add")
def _add(inputs, attrs):
    return [np.add(inputs[0], inputs[1])]


@kernel("Relu")
def _relu(inputs, attrs):
    x = inputs[0]
    return [np.maximum(x, np.zeros((), x.dtype))]
