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

Inputs of bfloat16/float8/float6/float4 (ml_dtypes) reach most kernels as float32 and
their float32 results are rounded back once (`with_narrow_floats`); conversions
(Cast, CastLike, Quantize/DequantizeLinear) see them as they are.

Ops with a variable number of outputs (Split without `split`/`num_outputs`) read
the number of outputs the caller wants from the attribute `NUM_OUTPUTS_ATTR`; the
interpreter sets it, other callers may.

The kernels live in family modules that register into `KERNELS`:
kernels_elementwise (unary/binary/variadic/logic/activation), kernels_nn
(conv, pooling, normalisation, matmul, softmax), kernels_tensor (shape and index
ops), kernels_reduce (reductions, arg-reductions, TopK, CumSum).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnx.types import is_narrow_float

Kernel = Callable[[Sequence[np.ndarray | None], dict[str, Any]], list[np.ndarray]]

KERNELS: dict[str, Kernel] = {}

NUM_OUTPUTS_ATTR = "_num_outputs"
"""Pseudo attribute: the number of results the caller expects (for Split)."""


class KernelError(ValueError):
    """An op the kernels cannot evaluate (unsupported attribute value, bad input)."""


# ---- narrow floats (bfloat16, float8/6/4 from ml_dtypes) -------------------------------

NARROW_NATIVE_OPS = frozenset(
    {"Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "EyeLike",
     "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Identity"}
)
"""Kernels that take narrow-float inputs as they are (type conversions, ops whose
result type comes from an attribute)."""

_NARROW_T_OUTPUTS = {"LayerNormalization": 1}
"""Ops whose later outputs have a type of their own (LayerNormalization's mean and
inverse std are in `stash_type`)."""


def _narrow_float(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    return dt is not None and dt.kind == "V" and is_narrow_float(dt)


def with_narrow_floats(fn: Kernel, onnx_type: str) -> Kernel:
    """Run `fn` on float32 copies of its bfloat16/float8/float6/float4 inputs (numpy's
    own arithmetic on ml_dtypes arrays is partial: no einsum, matmul in float32...),
    then round its float32 results once to that narrow type: accumulate wide, round
    once, as the float16 kernels do. The narrow type is the one of input 0, or, when
    input 0 is not a float (Where's condition), the one all narrow inputs share."""
    if onnx_type in NARROW_NATIVE_OPS:
        return fn
    n_t = _NARROW_T_OUTPUTS.get(onnx_type)

    @functools.wraps(fn)
    def run(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
        for x in inputs:  # fast path: no ml_dtypes input (all kinds but 'V')
            if getattr(getattr(x, "dtype", None), "kind", "") == "V":
                break
        else:
            return fn(inputs, attrs)
        if not any(_narrow_float(x) for x in inputs):
            return fn(inputs, attrs)
        narrow = {x.dtype for x in inputs if _narrow_float(x)}
        first = inputs[0] if inputs else None
        target = None
        if _narrow_float(first):
            target = first.dtype
        elif len(narrow) == 1 and not (first is not None and first.dtype.kind in "fc"):
            target = next(iter(narrow))
        wide = [x.astype(np.float32) if _narrow_float(x) else x for x in inputs]
        outs = list(fn(wide, attrs))
        if target is not None:
            k = len(outs) if n_t is None else n_t
            for i in range(min(k, len(outs))):
                o = outs[i]
                if o is not None and getattr(o, "dtype", None) == np.float32:
                    outs[i] = np.asarray(o).astype(target)
        return outs

    return run


def kernel(*onnx_types: str) -> Callable[[Kernel], Kernel]:
    def register(fn: Kernel) -> Kernel:
        for t in onnx_types:
            KERNELS[t] = with_narrow_floats(fn, t)
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
    kernels_grad,
    kernels_nn,
    kernels_reduce,
    kernels_memory,
    kernels_tensor,
)
