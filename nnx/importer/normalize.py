"""Opset normalisation: bring a node's inputs/attributes into its graph op's form.

ONNX moved several attributes to inputs over the opsets (Squeeze/Unsqueeze/Split/
ReduceSum `axes` in 13, the other Reduce* ops in 18, Clip `min`/`max` in 11, Pad
`pads` in 11, Slice `starts`/`ends` in 10, ...). A graph op declares one form, with
ONNX names for its operands and properties. This module matches the node's inputs
to the op's operands *by ONNX schema name* for the model's opset, then

* turns an attribute that the op declares as an operand into a constant input, and
* turns a constant input that the op declares as a property into an attribute,

so that either opset form imports into the one op form. Inputs are matched by
position when the schema names do not fit the op's operand names.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from nnx.importer.onnx_graph import ImportGraph, Node, node_error
from nnx.importer.shapes import TypeInfo, np_dtype

# ONNX attribute names that became inputs under another name
_RENAMED = {("Pad", "value"): "constant_value", ("TopK", "k"): "K"}

# attributes dropped by later opsets without changing semantics
_OBSOLETE = {
    ("BatchNormalization", "spatial"),
    ("BatchNormalization", "is_test"),
    ("BatchNormalization", "consumed_inputs"),
    ("Dropout", "is_test"),
    ("Gemm", "broadcast"),
    ("Add", "broadcast"),
    ("Sub", "broadcast"),
    ("Mul", "broadcast"),
    ("Div", "broadcast"),
}

# ops whose opset < 13 semantics coerce to 2-D at `axis` (default 1)
_COERCING_SOFTMAX = {"Softmax", "LogSoftmax", "Hardmax"}


def schema_input_names(node: Node, opset: int) -> list[str] | None:
    """ONNX schema name of each of the node's input positions (None if unknown)."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain or "")
    except Exception:  # noqa: BLE001 - SchemaError for unknown ops
        return None
    formal = list(schema.inputs)
    names: list[str] = []
    for i in range(len(node.inputs)):
        if i < len(formal):
            names.append(formal[i].name)
        elif formal and formal[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
            names.append(formal[-1].name)
        else:
            return None
    return names


def to_attr_value(arr: np.ndarray) -> Any:
    """A constant input as the Python value of the corresponding attribute."""
    if arr.ndim == 0:
        return arr.item()
    if arr.ndim == 1 and arr.dtype.kind in "iub":
        return [int(x) for x in arr]
    if arr.ndim == 1 and arr.dtype.kind == "f":
        return [float(x) for x in arr]
    return arr


def normalize_node(
    node: Node, op_cls: Any, ig: ImportGraph, types: dict[str, TypeInfo]
) -> None:
    """Rewrite `node.inputs` / `node.attrs` in place into `op_cls`'s form."""
    op_def = op_cls.get_irdl_definition()
    props = set(op_def.properties) - {"operandSegmentSizes", "resultSegmentSizes"}
    in_defs = op_cls.onnx_input_defs()
    operand_names = [n for n, _ in in_defs]
    from xdsl.irdl import OptOperandDef, VarOperandDef

    for key in list(node.attrs):
        if (node.op_type, key) in _OBSOLETE and key not in props:
            del node.attrs[key]

    if node.op_type in _COERCING_SOFTMAX and ig.opset < 13 and "axis" in props:
        axis = int(node.attrs.get("axis", 1))
        t = types.get(node.inputs[0]) if node.inputs else None
        new_axis = -1
        if t is not None and t.shape is not None:
            rank = len(t.shape)
            norm = axis + rank if axis < 0 else axis
            # the 2-D coercion flattens axes norm.. into one row: when at most one of
            # them is longer than 1 (Caffe's 1x1000x1x1 logits) the row is that axis
            long_axes = [k for k in range(norm, rank) if t.shape[k] != 1]
            if len(long_axes) > 1:
                raise node_error(
                    node,
                    f"{node.op_type} of opset {ig.opset} over axes {norm}.. of a rank-{rank} "
                    "tensor (2-D coercion) is not supported",
                )
            if long_axes:
                new_axis = long_axes[0]
        node.attrs["axis"] = new_axis

    names = schema_input_names(node, ig.opset)
    by_name = names is not None and all(
        (not v) or n in operand_names or n in props for n, v in zip(names, node.inputs)
    )
    if by_name:
        assert names is not None
        named: dict[str, list[str]] = {}
        for n, v in zip(names, node.inputs):
            named.setdefault(n, []).append(v)
        # inputs that the op takes as properties
        for n, vals in named.items():
            if n in operand_names:
                continue
            v = vals[0]
            if not v:
                continue
            if v not in ig.consts:
                raise node_error(
                    node, f"input '{n}' must be a constant (the graph op takes it as an attribute)"
                )
            node.attrs[n] = to_attr_value(ig.consts[v])
        new_inputs: list[str] = []
        for n, d in in_defs:
            vals = named.get(n, [])
            # (OptOperandDef derives from VarOperandDef: an absent optional input keeps
            # its position, e.g. Resize-10's `scales` is the third operand, not the second)
            if isinstance(d, VarOperandDef) and not isinstance(d, OptOperandDef):
                new_inputs.extend(vals)
            else:
                new_inputs.append(vals[0] if vals else "")
    else:
        new_inputs = list(node.inputs)

    # attributes that the op takes as inputs
    for key in list(node.attrs):
        if key in props:
            continue
        target = _RENAMED.get((node.op_type, key), key)
        if target not in operand_names:
            continue
        pos = operand_names.index(target)
        while len(new_inputs) <= pos:
            new_inputs.append("")
        if new_inputs[pos]:
            del node.attrs[key]  # the input wins
            continue
        value = node.attrs.pop(key)
        arr = _attr_as_array(value, node, types)
        cname = _fresh_const_name(ig, f"{node.label}::{target}")
        ig.consts[cname] = arr
        ig.const_origin[cname] = node.proto.name
        new_inputs[pos] = cname

    while new_inputs and not new_inputs[-1]:
        new_inputs.pop()
    node.inputs = new_inputs
    if node.op_type == "Resize" and ig.opset < 11:
        _resize10_semantics(node, ig)


def _resize10_semantics(node: Node, ig: ImportGraph) -> None:
    """Resize-10 means asymmetric coordinates and, for nearest, onnxruntime's "simple"
    rounding (floor when upsampling, ceil when downsampling); opset 11 made half_pixel
    and round_prefer_floor the defaults, which the graph op follows."""
    node.attrs.setdefault("coordinate_transformation_mode", "asymmetric")
    if node.attrs.get("mode", "nearest") == "nearest" and "nearest_mode" not in node.attrs:
        scales = ig.consts.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
        down = scales is not None and any(0 < float(v) < 1 for v in scales.reshape(-1))
        node.attrs["nearest_mode"] = "ceil" if down else "floor"


def _attr_as_array(value: Any, node: Node, types: dict[str, TypeInfo]) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, list):
        if all(isinstance(v, int) for v in value):
            return np.array(value, dtype=np.int64)
        return np.array(value, dtype=_float_dtype(node, types))
    if isinstance(value, int):
        return np.array(value, dtype=np.int64)
    if isinstance(value, float):
        return np.array(value, dtype=_float_dtype(node, types))
    raise node_error(node, f"attribute value {value!r} cannot become an input")


def _float_dtype(node: Node, types: dict[str, TypeInfo]) -> np.dtype:
    t = types.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
    if t is not None:
        dt = np_dtype(t.elem, f"input of node '{node.label}'")
        if dt.kind == "f":
            return dt
    return np.dtype(np.float32)


def _fresh_const_name(ig: ImportGraph, base: str) -> str:
    name, i = base, 0
    while name in ig.consts:
        i += 1
        name = f"{base}_{i}"
    return name
