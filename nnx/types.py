"""Element types: name <-> MLIR builtin type <-> numpy dtype (<-> itemsize) <-> ONNX
TensorProto code.

One table (`ELEMENT_TYPES`), used by the importer, the interpreter, the resource
store, the verifier, the chip dialect and the simulator. The *name* of an element
type is its MLIR spelling (`f32`, `ui8`, `i1`, `bf16`, `f8E4M3FN`...), which is also
how the chip assembly writes it. Booleans are `i1`; ONNX's signed integers are signless `iN`
(as in MLIR's tosa/linalg conventions); unsigned ones keep their signedness
(`ui8`, `ui4`...: `IntegerType(N, Signedness.UNSIGNED)`).

The narrow types ONNX added for quantisation (bfloat16, the float8 variants, float4,
float6, int4/uint4, int2/uint2) are numpy dtypes from `ml_dtypes` (a dependency of
onnx). Every one of them, including the sub-byte ones, holds one element per byte
in numpy; the value sits in the low bits (e.g. int4 -1 is the byte 0x0F). That is
also the byte layout nnx writes into `dense_resource` blobs (MLIR's dense storage
rounds every element width above 1 up to whole bytes: `getDenseElementStorageWidth`
is `alignTo<8>`); packed 4-/2-bit ONNX raw data is unpacked on import by
`onnx.numpy_helper.to_array`. ONNX strings (code 8) and complex numbers have no
entry: importing them fails with "unsupported element type ...".
"""

from __future__ import annotations

from typing import NamedTuple

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float4E2M1FNType,
    Float6E2M3FNType,
    Float6E3M2FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute

_U = Signedness.UNSIGNED


class ElementType(NamedTuple):
    """One row of the element-type table."""

    onnx: int  # TensorProto.DataType code
    dtype: np.dtype
    mlir: Attribute

    @property
    def name(self) -> str:
        """The MLIR spelling (`f32`, `ui8`, `i1`...)."""
        return _NAME_OF_MLIR[self.mlir]

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (one byte for i1 and the sub-byte types)."""
        return self.dtype.itemsize


ELEMENT_TYPES: tuple[ElementType, ...] = (
    ElementType(1, np.dtype(np.float32), Float32Type()),
    ElementType(2, np.dtype(np.uint8), IntegerType(8, _U)),
    ElementType(3, np.dtype(np.int8), IntegerType(8)),
    ElementType(4, np.dtype(np.uint16), IntegerType(16, _U)),
    ElementType(5, np.dtype(np.int16), IntegerType(16)),
    ElementType(6, np.dtype(np.int32), IntegerType(32)),
    ElementType(7, np.dtype(np.int64), IntegerType(64)),
    ElementType(9, np.dtype(np.bool_), IntegerType(1)),
    ElementType(10, np.dtype(np.float16), Float16Type()),
    ElementType(11, np.dtype(np.float64), Float64Type()),
    ElementType(12, np.dtype(np.uint32), IntegerType(32, _U)),
    ElementType(13, np.dtype(np.uint64), IntegerType(64, _U)),
    ElementType(16, np.dtype(ml_dtypes.bfloat16), BFloat16Type()),
    ElementType(17, np.dtype(ml_dtypes.float8_e4m3fn), Float8E4M3FNType()),
    ElementType(18, np.dtype(ml_dtypes.float8_e4m3fnuz), Float8E4M3FNUZType()),
    ElementType(19, np.dtype(ml_dtypes.float8_e5m2), Float8E5M2Type()),
    ElementType(20, np.dtype(ml_dtypes.float8_e5m2fnuz), Float8E5M2FNUZType()),
    ElementType(21, np.dtype(ml_dtypes.uint4), IntegerType(4, _U)),
    ElementType(22, np.dtype(ml_dtypes.int4), IntegerType(4)),
    ElementType(23, np.dtype(ml_dtypes.float4_e2m1fn), Float4E2M1FNType()),
    ElementType(24, np.dtype(ml_dtypes.float8_e8m0fnu), Float8E8M0FNUType()),
    ElementType(25, np.dtype(ml_dtypes.uint2), IntegerType(2, _U)),
    ElementType(26, np.dtype(ml_dtypes.int2), IntegerType(2)),
    ElementType(27, np.dtype(ml_dtypes.float6_e2m3fn), Float6E2M3FNType()),
    ElementType(28, np.dtype(ml_dtypes.float6_e3m2fn), Float6E3M2FNType()),
)
"""ONNX code, numpy dtype, MLIR type: the one table of element types nnx supports."""

ONNX_TO_NP: dict[int, np.dtype] = {e.onnx: e.dtype for e in ELEMENT_TYPES}
"""ONNX TensorProto.DataType code -> numpy dtype (onnx/onnx.proto)."""

NP_TO_ONNX: dict[np.dtype, int] = {e.dtype: e.onnx for e in ELEMENT_TYPES}

_NP_TO_MLIR: dict[np.dtype, Attribute] = {e.dtype: e.mlir for e in ELEMENT_TYPES}
_MLIR_TO_NP: dict[Attribute, np.dtype] = {e.mlir: e.dtype for e in ELEMENT_TYPES}
_NAME_OF_MLIR: dict[Attribute, str] = {e.mlir: str(e.mlir) for e in ELEMENT_TYPES}
_BY_NAME: dict[str, ElementType] = {str(e.mlir): e for e in ELEMENT_TYPES}
_BY_DTYPE: dict[np.dtype, ElementType] = {e.dtype: e for e in ELEMENT_TYPES}

NARROW_DTYPES: frozenset[np.dtype] = frozenset(e.dtype for e in ELEMENT_TYPES if e.onnx >= 16)
"""The ml_dtypes types (bfloat16, float8/6/4, int4/2): numpy arithmetic on them is
partial, so kernels compute in a wider type and cast back."""


class UnsupportedTypeError(ValueError):
    pass


def is_narrow(dtype: np.dtype) -> bool:
    """An ml_dtypes type (numpy's dtype.kind is 'V' for all of them)."""
    return np.dtype(dtype) in NARROW_DTYPES


def is_narrow_float(dtype: np.dtype) -> bool:
    """bfloat16, float8/6/4 (not int4/int2)."""
    dtype = np.dtype(dtype)
    return dtype in NARROW_DTYPES and not dtype.name.startswith(("int", "uint"))


def is_narrow_int(dtype: np.dtype) -> bool:
    """int4/uint4/int2/uint2."""
    dtype = np.dtype(dtype)
    return dtype in NARROW_DTYPES and dtype.name.startswith(("int", "uint"))


def element_type_named(name: str) -> ElementType:
    """The table row of the element type spelled `name` (`f32`, `ui8`, `i1`...)."""
    e = _BY_NAME.get(name)
    if e is None:
        raise UnsupportedTypeError(f"unsupported element type {name}")
    return e


def dtype_of_name(name: str) -> np.dtype:
    """numpy dtype of the element type spelled `name`."""
    return element_type_named(name).dtype


def mlir_type_of_name(name: str) -> Attribute:
    """MLIR builtin type of the element type spelled `name`."""
    return element_type_named(name).mlir


def name_of_type(element_type: Attribute) -> str | None:
    """The spelling of an MLIR element type, None when nnx does not support it."""
    return _NAME_OF_MLIR.get(element_type)


def name_of_dtype(dtype: np.dtype) -> str:
    """The spelling of the element type of numpy `dtype`."""
    e = _BY_DTYPE.get(np.dtype(dtype))
    if e is None:
        raise UnsupportedTypeError(f"unsupported element type {np.dtype(dtype)}")
    return str(e.mlir)


def mlir_type_of_dtype(dtype: np.dtype) -> Attribute:
    dtype = np.dtype(dtype)
    t = _NP_TO_MLIR.get(dtype)
    if t is None:
        raise UnsupportedTypeError(f"unsupported element type {dtype}")
    return t


def numpy_dtype_of(element_type: Attribute) -> np.dtype:
    dt = _MLIR_TO_NP.get(element_type)
    if dt is None:
        raise UnsupportedTypeError(f"unsupported element type {element_type}")
    return dt


def tensor_type_of(array: np.ndarray) -> TensorType:
    return TensorType(mlir_type_of_dtype(array.dtype), array.shape)


def tensor_type(dtype: np.dtype, shape: tuple[int, ...] | list[int]) -> TensorType:
    return TensorType(mlir_type_of_dtype(np.dtype(dtype)), list(shape))


def shape_of(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType), t
    return tuple(t.get_shape())


def dtype_of(t: Attribute) -> np.dtype:
    assert isinstance(t, TensorType), t
    return numpy_dtype_of(t.element_type)
