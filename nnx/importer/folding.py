"""Constant folding of the ONNX graph until every type is static.

Rounds of (1) ONNX shape inference with data propagation on the remaining nodes
(shapes.infer_types) and (2) one pass in schedule order that

* folds `Shape` / `Size` of a statically shaped tensor into a constant, and
* evaluates every deterministic node whose inputs are all constants with the numpy
  kernels of the graph dialect (`nnx.interp.kernels.run_kernel`; for an op without
  a kernel yet, ONNX's reference evaluator), its outputs becoming constants,

repeated to a fixpoint. A pass folds whole chains at once (outputs become constants
before their users are visited), so a static-shape export (Shape -> Gather ->
Unsqueeze -> Concat -> Reshape) needs two inference runs: one to find the shapes,
one to type what folding produced.

Folding a node whose result would be large and larger than its inputs (e.g. an
Expand or ConstantOfShape of a big activation-sized tensor) is skipped: that stays
an op -- unless every use of the result is as a parameter (a Conv/Gemm weight or
bias, BatchNormalization statistics, ...): old Caffe2 exports make their weights
with ConstantOfShape, and weights are constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from nnx.importer.onnx_graph import ImportGraph, Node
from nnx.importer.onnx_loader import DEFAULT_DOMAINS
from nnx.importer.shapes import TypeInfo, infer_types, onnx_elem_of
from nnx.types import ONNX_TO_NP

FOLD_MAX_ELEMENTS = 1 << 20
"""Fold a node with a result above this size only if it is no larger than its inputs."""

MAX_ROUNDS = 16

NON_DETERMINISTIC = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
}


def const_type(arr: np.ndarray) -> TypeInfo:
    return TypeInfo(onnx_elem_of(arr.dtype), tuple(int(d) for d in arr.shape))


def resolve_static(
    ig: ImportGraph, input_types: dict[str, TypeInfo]
) -> tuple[dict[str, TypeInfo], str | None]:
    """Fold to a fixpoint; return the types of every value and a strict-inference error."""
    types: dict[str, TypeInfo] = dict(input_types)
    strict_error: str | None = None
    for _ in range(MAX_ROUNDS):
        needed = _referenced_consts(ig)
        inferred, err = infer_types(
            ig.model, [n.proto for n in ig.nodes], input_types, ig.consts, needed, ig.outputs
        )
        strict_error = err
        for name, t in inferred.items():
            if name not in ig.consts:
                types[name] = t
        fixed = _canonicalize_negative_axes(ig, types)
        if not fold_pass(ig, types) and not fixed:
            break
    for name, arr in ig.consts.items():
        types[name] = const_type(arr)
    return types, strict_error


def _canonicalize_negative_axes(ig: ImportGraph, types: dict[str, TypeInfo]) -> bool:
    """Rewrite a negative `axis`/`axes` attribute to its non-negative value on nodes
    whose result type inference could not find, once the input rank is known.

    Exporters write e.g. `Concat(axis=-1)` at opset 10, where ONNX allowed only
    non-negative axes: ONNX shape inference then gives up on the node (onnxruntime
    accepts it). Returns True if a node changed (inference must run again)."""
    changed = False
    for n in ig.nodes:
        if not n.outputs or not n.inputs or not n.inputs[0]:
            continue
        if all(o and o in types and types[o].shape is not None for o in n.outputs if o):
            continue
        t = types.get(n.inputs[0])
        if t is None or t.shape is None:
            continue
        rank = len(t.shape)
        for a in n.proto.attribute:
            if a.name == "axis" and a.type == onnx.AttributeProto.INT and a.i < 0:
                out_rank = rank + (1 if n.op_type in ("Unsqueeze",) else 0)
                a.i = a.i + out_rank
                n.attrs["axis"] = int(a.i)
                changed = True
            elif a.name == "axes" and a.type == onnx.AttributeProto.INTS and any(v < 0 for v in a.ints):
                out_rank = rank + (len(a.ints) if n.op_type == "Unsqueeze" else 0)
                vals = [v + out_rank if v < 0 else v for v in a.ints]
                del a.ints[:]
                a.ints.extend(vals)
                n.attrs["axes"] = list(vals)
                changed = True
    return changed


def _referenced_consts(ig: ImportGraph) -> list[str]:
    seen: dict[str, None] = {}
    for n in ig.nodes:
        for i in n.proto.input:
            if i in ig.consts:
                seen.setdefault(i, None)
    return list(seen)


PARAMETER_INPUTS = {
    "Conv": 1, "ConvTranspose": 1, "Gemm": 1, "BatchNormalization": 1, "PRelu": 1,
    "InstanceNormalization": 1, "LayerNormalization": 1, "GroupNormalization": 1,
}
"""ONNX op -> the first input position holding parameters (weights, biases, stats)."""


def parameter_values(ig: ImportGraph) -> set[str]:
    """Values used only as parameters (see PARAMETER_INPUTS) and not graph outputs."""
    param: set[str] = set()
    other: set[str] = {vi.name for vi in ig.outputs}
    for n in ig.nodes:
        first = PARAMETER_INPUTS.get(n.op_type) if n.domain in DEFAULT_DOMAINS else None
        for k, i in enumerate(n.inputs):
            if i:
                (param if first is not None and k >= first else other).add(i)
    return param - other


def fold_pass(ig: ImportGraph, types: dict[str, TypeInfo]) -> bool:
    """One pass over the nodes in order; True if anything was folded."""
    kept: list[Node] = []
    changed = False
    params = parameter_values(ig)
    for node in ig.nodes:
        branch = _taken_branch(ig, node)
        if branch is not None:
            kept.extend(branch)
            changed = True
            continue
        outs = _try_fold(ig, node, types, params)
        if outs is None:
            kept.append(node)
            continue
        for name, arr in zip(node.outputs, outs):
            if not name:
                continue
            ig.consts[name] = arr
            ig.const_origin[name] = node.proto.name
            types[name] = const_type(arr)
        changed = True
    ig.nodes = kept
    return changed


def _taken_branch(ig: ImportGraph, node: Node) -> list[Node] | None:
    """The nodes replacing an `If` whose condition is a constant: the taken branch's
    nodes (its constants become constants) and an Identity per output. ONNX names are
    unique across nested graphs, so the branch's names need no renaming; the branch
    may use outer values, which precede the If in the schedule."""
    if node.op_type != "If" or node.domain not in DEFAULT_DOMAINS or not node.inputs:
        return None
    cond = ig.consts.get(node.inputs[0])
    if cond is None or cond.size != 1:
        return None
    g = node.attrs.get("then_branch" if bool(cond.reshape(())) else "else_branch")
    if not isinstance(g, onnx.GraphProto) or len(g.output) != len(node.outputs):
        return None
    from nnx.importer.onnx_graph import attribute_value, constant_node_value, tensor_value

    out: list[Node] = []
    for t in g.initializer:
        ig.consts[t.name] = tensor_value(t, f"initializer '{t.name}'")
        ig.const_origin[t.name] = node.proto.name
    for p in g.node:
        if p.op_type == "Constant" and p.domain in DEFAULT_DOMAINS and len(p.output) == 1:
            ig.consts[p.output[0]] = constant_node_value(p)
            ig.const_origin[p.output[0]] = p.name
            continue
        out.append(Node(proto=p, inputs=list(p.input), outputs=list(p.output),
                        attrs={a.name: attribute_value(a, p) for a in p.attribute}))
    for vi, name in zip(g.output, node.outputs):
        if not name:
            continue
        if vi.name in ig.consts and not any(vi.name in n.outputs for n in out):
            ig.consts[name] = ig.consts[vi.name]
            ig.const_origin[name] = node.proto.name
            continue
        ident = helper.make_node("Identity", [vi.name], [name], name=f"{node.proto.name}/{name}")
        out.append(Node(proto=ident, inputs=[vi.name], outputs=[name]))
    return out


def _try_fold(ig: ImportGraph, node: Node, types: dict[str, TypeInfo],
              params: set[str] = frozenset()) -> list[np.ndarray] | None:
    if node.domain not in DEFAULT_DOMAINS or node.op_type in NON_DETERMINISTIC:
        return None
    op = node.op_type
    if op in ("Shape", "Size") and node.inputs and node.inputs[0]:
        t = types.get(node.inputs[0])
        if t is None or not t.static:
            arr = ig.consts.get(node.inputs[0])
            if arr is None:
                return None
            t = const_type(arr)
        assert t.shape is not None
        if op == "Size":
            return [np.array(int(np.prod(t.shape, dtype=np.int64)), dtype=np.int64)]
        start = int(node.attrs.get("start", 0))
        end = node.attrs.get("end")
        dims = list(t.shape)[start:] if end is None else list(t.shape)[start : int(end)]
        return [np.array(dims, dtype=np.int64)]
    present = [i for i in node.inputs if i]
    if not present or not all(i in ig.consts for i in present):
        return None
    if _reads_parameter(ig, present):
        return None
    is_param = all(o in params for o in node.outputs if o)
    if not is_param and not _small_enough(ig, node, types):
        return None
    inputs = [ig.consts[i] if i else None for i in node.inputs]
    outs = _evaluate(ig, node, inputs)
    last = max((k for k, o in enumerate(node.outputs) if o), default=-1)
    if outs is None or len(outs) <= last:
        return None
    result: list[np.ndarray] = []
    for name, val in zip(node.outputs, outs):
        if not name or val is None:
            result.append(np.empty((0,), np.float32))  # absent optional output
            continue
        arr = np.asarray(val)
        t = types.get(name) if name else None
        if t is not None and t.elem in ONNX_TO_NP and arr.dtype != ONNX_TO_NP[t.elem]:
            arr = arr.astype(ONNX_TO_NP[t.elem])
        if arr.dtype not in ONNX_TO_NP.values():
            return None  # e.g. strings: leave it to the op (and its error)
        result.append(arr if arr.flags.c_contiguous else np.ascontiguousarray(arr))
    return result


def _reads_parameter(ig: ImportGraph, names: list[str]) -> bool:
    """In a training-mode export, float initializers are the parameters that
    graph-autodiff differentiates: nodes reading them stay ops so the parameters keep
    their names (docs/training.md). `ig.training` says whether the model is one (the
    user's `--training`/`--inference`); unset, a BatchNormalization with
    training_mode=1 or a Dropout with a true training_mode marks it."""
    if ig.training is False or not any(
        n in ig.consts and n not in ig.const_origin and ig.consts[n].dtype.kind == "f"
        for n in names
    ):
        return False
    if ig.training:
        return True
    for node in ig.nodes:
        if node.op_type == "BatchNormalization" and int(node.attrs.get("training_mode", 0)):
            return True
        if node.op_type == "Dropout" and len(node.inputs) > 2 and node.inputs[2]:
            flag = ig.consts.get(node.inputs[2])
            if flag is not None and flag.size == 1 and bool(flag.reshape(())):
                return True
    return False


def _small_enough(ig: ImportGraph, node: Node, types: dict[str, TypeInfo]) -> bool:
    out_elems = 0
    for o in node.outputs:
        t = types.get(o) if o else None
        if t is None or not t.static:
            continue
        assert t.shape is not None
        out_elems += int(np.prod(t.shape, dtype=np.int64))
    if out_elems <= FOLD_MAX_ELEMENTS:
        return True
    in_elems = sum(ig.consts[i].size for i in node.inputs if i)
    return out_elems <= in_elems


def _evaluate(ig: ImportGraph, node: Node, inputs: list[np.ndarray | None]) -> list[Any] | None:
    from nnx.interp import kernels

    if node.op_type in kernels.KERNELS:
        attrs = dict(node.attrs)
        # the node's output count (Split without `split`/`num_outputs`, optional outputs)
        attrs[kernels.NUM_OUTPUTS_ATTR] = len(node.outputs)
        try:
            with np.errstate(all="ignore"):
                return list(kernels.run_kernel(node.op_type, inputs, attrs))
        except Exception:  # noqa: BLE001 - fall back to the reference evaluator
            pass
    return _reference_eval(ig, node, inputs)


def _reference_eval(
    ig: ImportGraph, node: Node, inputs: list[np.ndarray | None]
) -> list[Any] | None:
    """Evaluate one node with onnx.reference (ops the kernels do not cover yet)."""
    try:
        from onnx.reference import ReferenceEvaluator

        feeds = {}
        vis = []
        for name, arr in zip(node.inputs, inputs):
            if name and arr is not None and name not in feeds:
                feeds[name] = arr
                vis.append(helper.make_tensor_value_info(name, onnx_elem_of(arr.dtype), arr.shape))
        outs = [helper.make_tensor_value_info(o, 0, None) for o in node.outputs if o]
        graph = helper.make_graph([node.proto], "fold", vis, outs)
        model = helper.make_model(graph, opset_imports=list(ig.model.opset_import))
        model.ir_version = ig.model.ir_version or onnx.IR_VERSION
        with np.errstate(all="ignore"):
            res = list(ReferenceEvaluator(model).run(None, feeds))
        return [res.pop(0) if o else None for o in node.outputs]
    except Exception:  # noqa: BLE001 - cannot fold: keep the node
        return None
