"""Static shapes: fix dynamic input dims, then run ONNX shape inference.

* `parse_input_shape("x=1x3x224x224")` reads one `--input-shape` option.
* `fix_input_types(...)` gives every graph input a static type from its declared
  shape, `--input-shape` overrides and `--batch` (which fills a dynamic dim 0).
* `infer_types(...)` runs `onnx.shape_inference.infer_shapes(data_prop=True)` on a
  *stripped* copy of the graph: large constants become typed graph inputs, so their
  data is never serialized to the C++ side (ResNet-50's 100 MB or BERT-base's
  440 MB would otherwise be copied twice per round). Small constants stay as
  initializers so that data propagation sees shape tensors.

A type is `TypeInfo(elem, shape)`: `elem` is the ONNX TensorProto data type code,
`shape` a tuple whose entries are ints or None (unknown), or None for unknown rank.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, ValueInfoProto, helper, numpy_helper

from nnx.ir_io import UserError
from nnx.types import ONNX_TO_NP

INLINE_FOR_INFERENCE = 4096
"""Constants up to this many elements stay initializers during shape inference."""


@dataclass(frozen=True)
class TypeInfo:
    elem: int
    shape: tuple[int | None, ...] | None

    @property
    def static(self) -> bool:
        return self.shape is not None and all(d is not None for d in self.shape)

    def describe(self) -> str:
        if self.shape is None:
            return "unranked"
        return "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"


def elem_name(elem: int) -> str:
    try:
        return TensorProto.DataType.Name(elem).lower()
    except ValueError:
        return f"type code {elem}"


def np_dtype(elem: int, what: str) -> np.dtype:
    dt = ONNX_TO_NP.get(elem)
    if dt is None:
        raise UserError(f"unsupported element type {elem_name(elem)} of {what}")
    return dt


def onnx_elem_of(dtype: np.dtype) -> int:
    return int(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))


# --------------------------------------------------------------------------------------
# --input-shape / --batch
# --------------------------------------------------------------------------------------

_DIM_RE = re.compile(r"^[0-9]+$")


def parse_input_shape(spec: str) -> tuple[str, tuple[int, ...]]:
    """`NAME=1x3x224x224` (or `NAME=1,3,224,224`; `NAME=` for a scalar)."""
    name, eq, dims = spec.rpartition("=")
    if not eq or not name:
        raise UserError(
            f"malformed --input-shape '{spec}': expected NAME=DxDx..., e.g. input=1x3x224x224"
        )
    dims = dims.strip()
    if dims == "":
        return name, ()
    parts = re.split(r"[x,]", dims)
    if not all(_DIM_RE.match(p.strip()) for p in parts):
        raise UserError(
            f"malformed --input-shape '{spec}': dimensions must be non-negative "
            "integers separated by 'x', e.g. input=1x3x224x224"
        )
    return name, tuple(int(p) for p in parts)


def declared_type(vi: ValueInfoProto) -> TypeInfo | None:
    """The type a ValueInfoProto declares (None if it is not a tensor)."""
    t = vi.type
    if t.WhichOneof("value") != "tensor_type":
        return None
    tt = t.tensor_type
    if not tt.HasField("shape"):
        return TypeInfo(int(tt.elem_type), None)
    dims: list[int | None] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        else:
            dims.append(None)
    return TypeInfo(int(tt.elem_type), tuple(dims))


def fix_input_types(
    inputs: Sequence[ValueInfoProto],
    overrides: Mapping[str, tuple[int, ...]],
    batch: int | None,
) -> dict[str, TypeInfo]:
    """A static TypeInfo for every graph input (initializers already excluded)."""
    names = [vi.name for vi in inputs]
    for name in overrides:
        if name not in names:
            valid = ", ".join(f"'{n}'" for n in names) or "none"
            raise UserError(
                f"--input-shape names unknown input '{name}' (the model's inputs: {valid})"
            )
    out: dict[str, TypeInfo] = {}
    for vi in inputs:
        t = declared_type(vi)
        if t is None:
            raise UserError(f"graph input '{vi.name}' is not a tensor (unsupported)")
        np_dtype(t.elem, f"graph input '{vi.name}'")
        given = overrides.get(vi.name)
        if given is not None:
            if t.shape is not None:
                if len(t.shape) != len(given):
                    raise UserError(
                        f"--input-shape {vi.name}={'x'.join(map(str, given))}: the input has "
                        f"rank {len(t.shape)} {t.describe()}, not {len(given)}"
                    )
                for axis, (d, g) in enumerate(zip(t.shape, given)):
                    if d is not None and d != g:
                        raise UserError(
                            f"--input-shape {vi.name}={'x'.join(map(str, given))}: dim {axis} "
                            f"of input '{vi.name}' is fixed to {d} in the model"
                        )
            out[vi.name] = TypeInfo(t.elem, tuple(given))
            continue
        if t.shape is None:
            raise UserError(
                f"graph input '{vi.name}' has no shape; give it with --input-shape "
                f"{vi.name}=DxDx..."
            )
        dims = list(t.shape)
        if batch is not None and dims and dims[0] is None:
            dims[0] = batch
        for axis, d in enumerate(dims):
            if d is None:
                sym = _dim_name(vi, axis)
                hint = "--batch N or " if axis == 0 else ""
                raise UserError(
                    f"graph input '{vi.name}' has dynamic dim {axis}{sym} "
                    f"(shape {t.describe()}); fix it with {hint}--input-shape {vi.name}=..."
                )
        out[vi.name] = TypeInfo(t.elem, tuple(dims))
    return out


def _dim_name(vi: ValueInfoProto, axis: int) -> str:
    d = vi.type.tensor_type.shape.dim[axis]
    return f" '{d.dim_param}'" if d.dim_param else ""


# --------------------------------------------------------------------------------------
# Shape inference on a stripped model
# --------------------------------------------------------------------------------------


def make_value_info(name: str, t: TypeInfo) -> ValueInfoProto:
    shape = None if t.shape is None else [d if d is not None else None for d in t.shape]
    return helper.make_tensor_value_info(name, t.elem, shape)


def infer_types(
    model: onnx.ModelProto,
    nodes: Iterable[onnx.NodeProto],
    input_types: Mapping[str, TypeInfo],
    consts: Mapping[str, np.ndarray],
    needed_consts: Iterable[str],
    outputs: Sequence[ValueInfoProto],
) -> tuple[dict[str, TypeInfo], str | None]:
    """Types of every value ONNX shape inference can infer for the graph `nodes`.

    Returns the types and, if strict inference failed, its message (inference is
    then re-run leniently; a value that stays unknown is reported with it later).
    """
    g = onnx.GraphProto()
    g.name = model.graph.name or "main"
    g.node.extend(nodes)
    for name, t in input_types.items():
        g.input.append(make_value_info(name, t))
    for name in needed_consts:
        arr = consts[name]
        if arr.size <= INLINE_FOR_INFERENCE:
            g.initializer.append(numpy_helper.from_array(arr, name))
        else:
            g.input.append(
                make_value_info(name, TypeInfo(onnx_elem_of(arr.dtype), arr.shape))
            )
    declared = {vi.name for vi in g.input} | {t.name for t in g.initializer}
    for vi in outputs:
        if vi.name in declared:
            continue  # an output that is an input or a (folded) constant: typed already
        # only the element type: a declared dynamic shape must not mask the inferred one
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        g.output.append(helper.make_tensor_value_info(vi.name, elem, None))
    m = onnx.ModelProto()
    # IR version 3 requires every initializer to be a graph input too, and its shape
    # inference ignores initializers that are not: the stripped copy's constants are
    # constants (nnx-import binds initializer inputs by default), so type it as IR 4+
    m.ir_version = max(int(model.ir_version), 4)
    m.opset_import.extend(model.opset_import)
    m.graph.CopyFrom(g)
    strict_error: str | None = None
    try:
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    except Exception as e:  # noqa: BLE001 - InferenceError, ValidationError...
        strict_error = _first_line(e)
        try:
            inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
        except Exception as e2:  # noqa: BLE001
            raise UserError(f"ONNX shape inference failed: {_first_line(e2)}") from None
    types: dict[str, TypeInfo] = {}
    for vi in (*inferred.graph.value_info, *inferred.graph.output):
        t = declared_type(vi)
        if t is not None and (t.elem != 0 or t.shape is not None):
            types[vi.name] = t
    return types, strict_error


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__
