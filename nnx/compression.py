"""The arithmetic of tensor compression (`graph.compress_tensor` /
`graph.decompress_tensor`; docs/tensor-timing-and-swapping.md, "The memory ops").

One definition used by the interpreter's kernels (nnx/interp/kernels_memory.py),
the verifier's result types (dialects/graph_memory.py) and the planner's costs and
accuracy estimate (passes/swap_plan.py):

* `f16` / `bf16`: the float32 value rounded to nearest even in the narrow type.
* `i8`: symmetric quantisation with one f32 scale per *scale group*:
  `scale = max|x| / 127` over the group (1 for an all-zero or non-finite group),
  `q = round_half_even(x / scale)` clipped to [-127, 127], except that a nonzero
  element never becomes 0 (it becomes +-1: the sign of every element is kept, so
  a comparison with 0 in the backward pass -- Relu's mask `x > 0` -- gives what it
  gives on the exact value); restored as `q * scale`. The error of an element is at
  most `scale / 2` (`scale` for the elements below `scale / 2` in magnitude), i.e.
  1/254 (1/127) of its group's largest magnitude. The groups (`scales`):
  - `tensor`: one scale (a rank-0 scale tensor), the original behaviour;
  - `channel`: one scale per index of axis 1 (NCHW channels; the hidden axis of a
    (tokens, hidden) matrix), scale shape (C,); a rank-0/1 tensor has one scale;
  - `group<N>` (e.g. `group256`): one scale per run of N consecutive elements in
    row-major order (the last run may be shorter), scale shape (ceil(size / N),),
    the per-group scaling of activation-compressed training (ActNN).
"""

from __future__ import annotations

import math
import re

import numpy as np

COMPRESSED_BYTES = {"f16": 2, "bf16": 2, "i8": 1}
"""Bytes per element of each compressed dtype (of an f32 tensor)."""

UNIT_ROUNDOFF = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8, "i8": 1.0 / 254.0}
"""Largest rounding error of one element relative to the magnitude it is measured
against: the element itself for f16/bf16 (half an ulp), its scale group's largest
magnitude for i8 (half a quantisation step)."""

SCALES = ("tensor", "channel", "group<N>")
_GROUP = re.compile(r"^group([1-9][0-9]*)$")


def check_scales(scales: str) -> str | None:
    """None when `scales` names a granularity (`tensor`, `channel`, `group<N>`),
    else the message saying what is allowed."""
    if scales in ("tensor", "channel") or _GROUP.match(scales):
        return None
    return f"scales must be one of tensor, channel, group<N> (N > 0), got {scales!r}"


def scale_shape(shape: tuple[int, ...], scales: str) -> tuple[int, ...]:
    """The shape of the i8 scale tensor of a tensor of `shape`."""
    if scales == "channel" and len(shape) >= 2:
        return (shape[1],)
    m = _GROUP.match(scales)
    if m:
        return (max(1, math.ceil(math.prod(shape) / int(m.group(1)))),)
    return ()


def scale_count(shape: tuple[int, ...], scales: str) -> int:
    """Number of f32 scales (the bytes the scale tensor adds are 4 per scale)."""
    return math.prod(scale_shape(shape, scales))


def _groups(x: np.ndarray, scales: str) -> tuple[np.ndarray, int]:
    """x as a 2-D (groups, elements per group) array (padded with zeros for a short
    last group), and the padding added."""
    m = _GROUP.match(scales)
    if m:
        n = int(m.group(1))
        flat = x.reshape(-1)
        pad = (-flat.size) % n if flat.size else 0
        return np.concatenate([flat, np.zeros(pad, flat.dtype)]).reshape(-1, n), pad
    if scales == "channel" and x.ndim >= 2:
        return np.moveaxis(x, 1, 0).reshape(x.shape[1], -1), 0
    return x.reshape(1, -1), 0


def i8_compress(x: np.ndarray, scales: str = "tensor") -> tuple[np.ndarray, np.ndarray]:
    """(q as int8 of x's shape, the f32 scales of `scale_shape`)."""
    x = np.asarray(x, dtype=np.float32)
    g, pad = _groups(x, scales)
    with np.errstate(invalid="ignore"):
        m = np.max(np.abs(g), axis=1) if g.shape[1] else np.zeros(g.shape[0], np.float32)
    s = (m / np.float32(127.0)).astype(np.float32)
    s = np.where((m > 0) & np.isfinite(m), s, np.float32(1.0)).astype(np.float32)
    q = np.clip(np.rint(g / s[:, None]), -127, 127)
    q = np.where((q == 0) & (g != 0), np.sign(g), q).astype(np.int8)  # keep every sign
    return _ungroup(q, x.shape, scales, pad), s.reshape(scale_shape(x.shape, scales))


def i8_decompress(q: np.ndarray, scale: np.ndarray, scales: str = "tensor") -> np.ndarray:
    """`q * scale` per scale group, as f32 of q's shape."""
    q = np.asarray(q)
    s = np.asarray(scale, dtype=np.float32).reshape(-1)
    g, pad = _groups(q, scales)
    return _ungroup((g.astype(np.float32) * s[:, None]).astype(np.float32), q.shape, scales, pad)


def _ungroup(g: np.ndarray, shape: tuple[int, ...], scales: str, pad: int) -> np.ndarray:
    if _GROUP.match(scales):
        flat = g.reshape(-1)
        return flat[: flat.size - pad].reshape(shape)
    if scales == "channel" and len(shape) >= 2:
        moved = (shape[1], shape[0], *shape[2:])
        return np.moveaxis(g.reshape(moved), 0, 1)
    return g.reshape(shape)


def compressed_bytes(shape: tuple[int, ...], dtype: str, scales: str = "tensor") -> int:
    """Device bytes of the compressed form of an f32 tensor of `shape` (data plus
    the i8 scales)."""
    n = math.prod(shape) * COMPRESSED_BYTES[dtype]
    return n + (4 * scale_count(shape, scales) if dtype == "i8" else 0)
