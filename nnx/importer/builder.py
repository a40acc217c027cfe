"""ONNX graph (after folding) -> `builtin.module { func.func @main(...) }` of graph ops.

* Graph inputs become the function's arguments, graph outputs its results, each with
  an `nnx.name = "<ONNX name>"` argument/result attribute.
* Each node becomes the graph op registered for its ONNX type (`ONNX_OPS`), after
  opset normalisation (normalize.py), with the node name as its location
  (`loc("node_name")`; unnamed nodes get their first output's name).
* Constants (initializers, Constant nodes, folded values) become `graph.constant`
  ops placed just before their first user: `dense_resource` blobs, or inline `dense`
  for tensors of at most `INLINE_MAX_ELEMENTS` elements. Unused constants are dropped.
* Every result type must be static; a value whose shape is still unknown after
  folding is reported with the node that produces it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerType,
    DictionaryAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from nnx.importer.normalize import normalize_node
from nnx.importer.onnx_graph import ImportGraph, Node, node_error
from nnx.importer.onnx_loader import DEFAULT_DOMAINS
from nnx.importer.shapes import TypeInfo, elem_name
from nnx.ir_io import UserError
from nnx.types import ONNX_TO_NP, is_narrow_float, mlir_type_of_dtype

INLINE_MAX_ELEMENTS = 16

_ALIAS_OPS = {"Identity", "Dropout"}
"""Ops dropped (output := input) when the dialect has no op for them."""


def mlir_tensor_type(t: TypeInfo, what: str) -> TensorType:
    dt = ONNX_TO_NP.get(t.elem)
    if dt is None:
        raise UserError(f"unsupported element type {elem_name(t.elem)} of {what}")
    assert t.shape is not None
    return TensorType(mlir_type_of_dtype(dt), [int(d) for d in t.shape])


def name_loc(name: str) -> NameLoc:
    return NameLoc(StringAttr(name), NoneAttr())


def _graph_ops() -> dict[str, Any]:
    from nnx.dialects.graph import ONNX_OPS

    return ONNX_OPS


def check_domains(ig: ImportGraph) -> None:
    """Fail on the first node of a non-ONNX domain (never foldable, never supported)."""
    for n in ig.nodes:
        if n.domain not in DEFAULT_DOMAINS:
            raise node_error(n, "unsupported op (custom operator domain)")


def check_supported(ig: ImportGraph) -> None:
    """Fail on the first node (in order) that no graph op can represent."""
    ops = _graph_ops()
    check_domains(ig)
    for n in ig.nodes:
        if n.op_type in ops:
            continue
        graphs = [k for k, v in n.attrs.items() if isinstance(v, onnx.GraphProto)]
        if graphs:
            raise node_error(
                n, f"unsupported op (control flow: subgraph attribute '{graphs[0]}'; "
                "only an If whose condition is a constant is supported)"
            )
        if n.op_type in _ALIAS_OPS and _aliasable(n):
            continue
        raise node_error(n, f"unsupported op {n.op_type}")


def _aliasable(n: Node) -> bool:
    if n.op_type == "Identity":
        return True
    # Dropout in inference: no mask output wanted, training_mode absent
    return len([o for o in n.outputs if o]) == 1 and (len(n.inputs) < 3 or not n.inputs[2])


def build_module(
    ig: ImportGraph,
    input_types: dict[str, TypeInfo],
    types: dict[str, TypeInfo],
    strict_error: str | None = None,
    func_name: str = "main",
) -> ModuleOp:
    check_supported(ig)
    ops = _graph_ops()

    # every value a remaining node produces must be static
    for n in ig.nodes:
        for o in n.outputs:
            if not o:
                continue
            t = types.get(o)
            if t is None or not t.static:
                shape = "unknown" if t is None else t.describe()
                extra = f"; ONNX shape inference: {strict_error}" if strict_error else ""
                decider = ig.shape_deciding_input(n)
                if decider is not None:
                    extra += (
                        f"; it depends on the value of graph input '{decider}': bind it "
                        f"with --const-input {decider}=FILE.npy"
                    )
                raise node_error(
                    n,
                    f"result '{o}' has a dynamic or unknown shape ({shape}) after "
                    f"constant folding{extra}",
                )

    arg_types = [
        mlir_tensor_type(input_types[vi.name], f"graph input '{vi.name}'") for vi in ig.inputs
    ]
    block = Block(arg_types=arg_types)
    values: dict[str, SSAValue] = {}
    for vi, arg in zip(ig.inputs, block.args):
        values[vi.name] = arg
    aliases: dict[str, str] = {}
    consts = ig.consts

    def value_of(name: str) -> SSAValue:
        name = aliases.get(name, name)
        v = values.get(name)
        if v is not None:
            return v
        arr = consts[name]
        op = _constant_op(arr, name)
        block.add_op(op)
        values[name] = op.results[0]
        return op.results[0]

    for n in ig.nodes:
        if n.op_type not in ops:  # aliased away (check_supported allowed it)
            src = aliases.get(n.inputs[0], n.inputs[0])
            aliases[n.outputs[0]] = src
            continue
        cls = ops[n.op_type]
        normalize_node(n, cls, ig, types)
        inputs: list[SSAValue | None] = [value_of(i) if i else None for i in n.inputs]
        out_types = [
            mlir_tensor_type(types[o], f"result '{o}'") if o else None for o in n.outputs
        ]
        try:
            op = cls.build_onnx(inputs, n.attrs, out_types)
        except (ValueError, TypeError, VerifyException) as e:
            raise node_error(n, f"cannot express the node as {cls.name}: {_first_line(e)}") from None
        op.location = name_loc(n.label)
        block.add_op(op)
        results = list(op.results)
        k = 0
        for o in n.outputs:
            if not o:
                continue
            if k >= len(results):
                raise node_error(n, f"{cls.name} has fewer results than the node's outputs")
            values[o] = results[k]
            k += 1

    ret_vals = [value_of(vi.name) for vi in ig.outputs]
    block.add_op(func.ReturnOp(*ret_vals))
    arg_attrs = ArrayAttr([DictionaryAttr({"nnx.name": StringAttr(vi.name)}) for vi in ig.inputs])
    res_attrs = ArrayAttr(
        [DictionaryAttr({"nnx.name": StringAttr(vi.name)}) for vi in ig.outputs]
    )
    for vi, arg in zip(ig.inputs, block.args):
        arg.location = name_loc(vi.name)
    fop = func.FuncOp(
        func_name,
        (arg_types, [v.type for v in ret_vals]),
        Region(block),
        arg_attrs=arg_attrs,
        res_attrs=res_attrs,
    )
    module = ModuleOp([fop])
    _verify(block, ig)
    return module


def _constant_op(arr: np.ndarray, name: str) -> Operation:
    from nnx.dialects.graph import ConstantOp
    from nnx.resources import register_array

    if arr.size <= INLINE_MAX_ELEMENTS and _inline_ok(arr):
        attr: Attribute = _dense(arr)
    else:
        attr = register_array(arr, name)
    op = ConstantOp(attr)
    op.location = name_loc(name)
    return op


def _inline_ok(arr: np.ndarray) -> bool:
    """Whether xDSL prints `arr` as `dense<...>` text that parses back to the same bits.

    Floats are printed in decimal, which is exact for finite values but not for
    NaN/Inf: xDSL prints those as a hex bit pattern (`dense<0xff800000>`) that its own
    parser reads back as the *integer* 4286578688 (and its hex form is wrong for
    f8E8M0FNU). Such constants (e.g. the -inf of attention masks) go to a blob instead.
    """
    if is_narrow_float(arr.dtype):
        return bool(np.all(np.isfinite(arr.astype(np.float32))))
    if arr.dtype.kind in "fc":
        return bool(np.all(np.isfinite(arr)))
    return True


def _dense(arr: np.ndarray) -> DenseIntOrFPElementsAttr:
    """Inline `dense<...>` (keeps 0-d shapes: np.ascontiguousarray would make them 1-d)."""
    shape = [int(d) for d in arr.shape]
    if arr.dtype == np.bool_:
        data = arr.astype(np.int8)
        el: Attribute = IntegerType(1)
    else:
        data = arr
        el = mlir_type_of_dtype(arr.dtype)
    raw = np.ascontiguousarray(data).tobytes()
    return DenseIntOrFPElementsAttr(TensorType(el, shape), BytesAttr(raw))


def _verify(block: Block, ig: ImportGraph) -> None:
    for op in block.ops:
        try:
            op.verify()
        except VerifyException as e:
            loc = op.location
            name = loc.desc.data if isinstance(loc, NameLoc) else "?"
            what = op.name.removeprefix("graph.")
            raise UserError(
                f"the imported {op.name} does not verify: {_first_line(e)} "
                f"(node '{name}', op {_onnx_type(op) or what})"
            ) from None


def _onnx_type(op: Operation) -> str:
    return getattr(op, "ONNX_TYPE", "") or ""


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__
