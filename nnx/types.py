"""Element types: MLIR builtin types <-> numpy dtypes <-> ONNX TensorProto types.

One table, used by the importer, the interpreter, the resource store and the verifier.
Booleans are `i1`; ONNX's signed integers are signless `iN` (as in MLIR's tosa/linalg
conventions), unsigned ones `ui8`... are kept signed-ness via `IntegerType(N, Signedness.UNSIGNED)`.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute

_NP_TO_MLIR: list[tuple[np.dtype, Attribute]] = [
    (np.dtype(np.float32), Float32Type()),
    (np.dtype(np.float64), Float64Type()),
    (np.dtype(np.float16), Float16Type()),
    (np.dtype(np.int64), IntegerType(64)),
    (np.dtype(np.int32), IntegerType(32)),
    (np.dtype(np.int16), IntegerType(16)),
    (np.dtype(np.int8), IntegerType(8)),
    (np.dtype(np.uint8), IntegerType(8, Signedness.UNSIGNED)),
    (np.dtype(np.uint16), IntegerType(16, Signedness.UNSIGNED)),
    (np.dtype(np.uint32), IntegerType(32, Signedness.UNSIGNED)),
    (np.dtype(np.uint64), IntegerType(64, Signedness.UNSIGNED)),
    (np.dtype(np.bool_), IntegerType(1)),
]

# ONNX TensorProto.DataType codes (onnx/onnx.proto)
ONNX_TO_NP: dict[int, np.dtype] = {
    1: np.dtype(np.float32),
    2: np.dtype(np.uint8),
    3: np.dtype(np.int8),
    4: np.dtype(np.uint16),
    5: np.dtype(np.int16),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    9: np.dtype(np.bool_),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
    12: np.dtype(np.uint32),
    13: np.dtype(np.uint64),
}


class UnsupportedTypeError(ValueError):
    pass


def mlir_type_of_dtype(dtype: np.dtype) -> Attribute:
    dtype = np.dtype(dtype)
    for np_t, mlir_t in _NP_TO_MLIR:
        if np_t == dtype:
            return mlir_t
    raise UnsupportedTypeError(f"unsupported element type {dtype}")


def numpy_dtype_of(element_type: Attribute) -> np.dtype:
    if isinstance(element_type, BFloat16Type):
        raise UnsupportedTypeError("bf16 tensors have no numpy dtype")
    for np_t, mlir_t in _NP_TO_MLIR:
        if mlir_t == element_type:
            return np_t
    raise UnsupportedTypeError(f"unsupported element type {element_type}")


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
