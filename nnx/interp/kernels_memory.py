"""Kernels of the memory-saving ops (dialects/graph_memory.py).

Swaps are exact copies (host memory holds the same bytes). Compression is the element
type round trip: "f16"/"bf16" round to nearest even; "i8" is a symmetric
quantisation with one scale per scale group (the op's `scales`: tensor, channel or
group<N>; nnx/compression.py defines the arithmetic; a nonzero element keeps its
sign), restored as `q * scale`.

Registered straight into `KERNELS` (no narrow-float widening: these ops convert
between element types on purpose).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnx.compression import i8_compress, i8_decompress
from nnx.interp.kernels import KERNELS, KernelError
from nnx.types import dtype_of_name


def swap(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    """SwapOut / SwapIn: an exact copy."""
    return [np.array(inputs[0], copy=True)]


def compress(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = np.asarray(inputs[0], dtype=np.float32)
    d = attrs.get("dtype")
    if d in ("f16", "bf16"):
        return [x.astype(dtype_of_name(d))]
    if d == "i8":
        return list(i8_compress(x, attrs.get("scales") or "tensor"))
    raise KernelError(f"CompressTensor: unknown dtype {d!r}")


def decompress(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    c = np.asarray(inputs[0])
    scale = inputs[1] if len(inputs) > 1 else None
    if scale is not None:
        return [i8_decompress(c, scale, attrs.get("scales") or "tensor")]
    return [c.astype(np.float32)]


KERNELS["SwapOut"] = swap
KERNELS["SwapIn"] = swap
KERNELS["CompressTensor"] = compress
KERNELS["DecompressTensor"] = decompress
