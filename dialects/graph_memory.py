"""Memory-saving ops of the `graph` dialect: swap to host memory and compression.

`swap-insert` (docs/tensor-timing-and-swapping.md) puts a *reduction* after the
producer of a tensor that waits long in device memory and a *restoration* before its
distant consumer:

* `graph.swap_out(%x)`: copy `%x` from device memory to host memory over the host
  link. Its result is the host copy (same type; it takes no device memory). Device
  memory of `%x` is freed when the copy completes (if nothing else reads `%x`).
* `graph.swap_in(%h)`: copy the host copy `%h` (a `graph.swap_out` result) back to
  device memory; the device buffer is allocated when the copy starts.
* `graph.compress_tensor(%x) {dtype = "f16" | "bf16" | "i8"[, scales = "..."]}`: an f32
  tensor in a narrower element type (a device op). "f16"/"bf16" round to nearest; "i8"
  is a symmetric quantisation with a second result, the f32 scales, one per scale
  group: `scales = "tensor"` (the default: one scale, rank 0), `"channel"` (one per
  index of axis 1) or `"group<N>"` (one per N consecutive elements);
  `scale = max|x| / 127` over the group, `q = round(x / scale)`, a nonzero element
  never 0 (nnx/compression.py).
* `graph.decompress_tensor(%c[, %scale]) {scales}`: back to f32 (`q * scale` for "i8";
  `scales` as its compression's).

A restoration must name its reduction: the operand of `graph.swap_in` is a
`graph.swap_out` result, and the data operand of `graph.decompress_tensor` is a
`graph.compress_tensor` result, directly or through swap_out/swap_in; the verifier rejects
anything else. Control edges (`after`) order them like any graph op. The
interpreter's kernels are in nnx/interp/kernels_memory.py: swaps are exact copies,
compression is the element-type round trip.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import Float32Type, TensorType, f32
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, opt_result_def, result_def
from xdsl.utils.exceptions import VerifyException

from nnx.compression import check_scales, scale_shape
from nnx.dialects.graph import GraphOp, string_prop
from nnx.types import mlir_type_of_name

COMPRESSED_TYPES: dict[str, Attribute] = {name: mlir_type_of_name(name) for name in ("f16", "bf16", "i8")}
"""Compression `dtype` option -> the element type of the compressed tensor (nnx/types.py)."""


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())  # type: ignore[attr-defined]


@irdl_op_definition
class SwapOutOp(GraphOp):
    """Copy a tensor from device memory to host memory (a reduction). The result is
    the host copy: same type, no device memory."""

    name = "graph.swap_out"
    ONNX_TYPE: ClassVar[str] = "SwapOut"
    input = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [self.input.type]


@irdl_op_definition
class SwapInOp(GraphOp):
    """Copy a host copy (a `graph.swap_out` result) back to device memory (a
    restoration)."""

    name = "graph.swap_in"
    ONNX_TYPE: ClassVar[str] = "SwapIn"
    input = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        if not isinstance(self.input.owner, SwapOutOp):
            raise VerifyException("restoration without its reduction: the operand must be a graph.swap_out result")
        return [self.input.type]


@irdl_op_definition
class CompressOp(GraphOp):
    """An f32 tensor in a narrower element type `dtype` ("f16", "bf16", or "i8" with
    a second result, the f32 scale); see the module docstring for "i8"."""

    name = "graph.compress_tensor"
    ONNX_TYPE: ClassVar[str] = "CompressTensor"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    scale = opt_result_def(TensorType)
    dtype = string_prop()
    scales = string_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        if self.input.type.element_type != f32:  # type: ignore[attr-defined]
            raise VerifyException("compresses f32 tensors only")
        d = self.attr("dtype")
        if d not in COMPRESSED_TYPES:
            raise VerifyException(f"dtype must be one of {sorted(COMPRESSED_TYPES)}, got {d!r}")
        out: list[Attribute | None] = [TensorType(COMPRESSED_TYPES[d], _shape(self.input))]
        if d == "i8":
            out.append(TensorType(f32, list(scale_shape(_shape(self.input), _scales(self)))))
        elif self.attr("scales") is not None:
            raise VerifyException("'scales' is an i8 option")
        return out


def _scales(op) -> str:
    """The op's i8 scale granularity (`tensor` when absent), checked."""
    s = op.attr("scales", "tensor")
    msg = check_scales(s)
    if msg:
        raise VerifyException(msg)
    return s


def reduction_of(v: SSAValue) -> CompressOp | None:
    """The `graph.compress_tensor` whose data `v` is, directly or through a swap_out/swap_in
    pair; None otherwise."""
    owner = v.owner
    if isinstance(owner, SwapInOp) and isinstance(owner.input.owner, SwapOutOp):
        owner = owner.input.owner.input.owner
    return owner if isinstance(owner, CompressOp) else None


@irdl_op_definition
class DecompressOp(GraphOp):
    """A compressed tensor back to f32 (a restoration); `scale` is the compress op's
    second result for "i8"."""

    name = "graph.decompress_tensor"
    ONNX_TYPE: ClassVar[str] = "DecompressTensor"
    input = operand_def(TensorType)
    scale = opt_operand_def(TensorType)
    output = result_def(TensorType)
    scales = string_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        c = reduction_of(self.input)
        if c is None:
            raise VerifyException("restoration without its reduction: the operand must be a graph.compress_tensor "
                                  "result (directly or through graph.swap_out/graph.swap_in)")
        if (c.attr("dtype") == "i8") != (self.scale is not None):
            raise VerifyException("'scale' is needed exactly when decompressing an i8 compression")
        if self.scale is not None and self.scale is not c.scale:
            raise VerifyException("'scale' must be the scale result of the same graph.compress_tensor")
        if self.scale is not None and _scales(self) != _scales(c):
            raise VerifyException(f"'scales' is {_scales(self)!r}, its compression's {_scales(c)!r}")
        return [TensorType(Float32Type(), _shape(self.input))]


MEMORY_OPS = [SwapOutOp, SwapInOp, CompressOp, DecompressOp]
"""The memory-saving ops, registered in the `graph` dialect."""

REDUCTION_OPS = (SwapOutOp, CompressOp)
RESTORATION_OPS = (SwapInOp, DecompressOp)
