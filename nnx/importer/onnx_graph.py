"""The importer's working form of an ONNX graph.

`ImportGraph.from_model` turns a ModelProto into:

* `consts`: name -> numpy array, from initializers and `Constant` nodes;
* `nodes`: the remaining nodes as `Node` records (ONNX inputs with '' for an absent
  optional input, outputs, attributes as Python values), topologically sorted;
* `inputs`: the graph inputs that are not initializers, in ONNX order (IR version 3
  lists every initializer as a graph input too: such an input is a constant unless
  `keep_initializer_inputs`, then it stays a runtime input and its initializer is
  dropped);
* `outputs`: the graph outputs.

Constant folding and opset normalisation rewrite this form; the builder turns it
into graph-dialect IR.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, NodeProto, ValueInfoProto, numpy_helper

from nnx.importer.onnx_loader import DEFAULT_DOMAINS, default_opset
from nnx.ir_io import UserError


@dataclass
class Node:
    proto: NodeProto
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    @property
    def domain(self) -> str:
        return self.proto.domain

    @property
    def label(self) -> str:
        """The node name, or (unnamed nodes) its first output."""
        if self.proto.name:
            return self.proto.name
        first = next((o for o in self.outputs if o), "")
        return first

    def where(self) -> str:
        op = self.op_type if self.domain in DEFAULT_DOMAINS else f"{self.domain}.{self.op_type}"
        return f"(node '{self.label}', op {op})"


def node_error(node: Node, what: str) -> UserError:
    return UserError(f"{what} {node.where()}")


def attribute_value(attr: AttributeProto, node: NodeProto) -> Any:
    """An ONNX attribute as a Python value (str for STRING, ndarray for TENSOR)."""
    t = attr.type
    if t == AttributeProto.FLOAT:
        return float(attr.f)
    if t == AttributeProto.INT:
        return int(attr.i)
    if t == AttributeProto.STRING:
        return attr.s.decode("utf-8", errors="replace")
    if t == AttributeProto.TENSOR:
        return numpy_helper.to_array(attr.t)
    if t == AttributeProto.FLOATS:
        return [float(x) for x in attr.floats]
    if t == AttributeProto.INTS:
        return [int(x) for x in attr.ints]
    if t == AttributeProto.STRINGS:
        return [s.decode("utf-8", errors="replace") for s in attr.strings]
    if t == AttributeProto.TENSORS:
        return [numpy_helper.to_array(x) for x in attr.tensors]
    kind = AttributeProto.AttributeType.Name(t)
    if t == AttributeProto.GRAPH and node.op_type == "If" and node.domain in DEFAULT_DOMAINS:
        # kept as the GraphProto: an If whose condition folds to a constant is replaced
        # by its taken branch (folding.py); any other If is reported unsupported
        return attr.g
    if t in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
        raise UserError(
            f"unsupported op (control flow: subgraph attribute '{attr.name}') "
            f"(node '{node.name or (node.output[0] if node.output else '')}', op {node.op_type})"
        )
    raise UserError(
        f"attribute '{attr.name}' of kind {kind} is not supported "
        f"(node '{node.name or (node.output[0] if node.output else '')}', op {node.op_type})"
    )


def constant_node_value(node: NodeProto) -> np.ndarray:
    """The value of an ONNX `Constant` node."""
    if len(node.attribute) != 1:
        raise UserError(
            f"Constant node needs exactly one value attribute "
            f"(node '{node.name or node.output[0]}', op Constant)"
        )
    a = node.attribute[0]
    where = f"(node '{node.name or node.output[0]}', op Constant)"
    if a.name == "value":
        return numpy_helper.to_array(a.t)
    if a.name == "value_float":
        return np.array(a.f, dtype=np.float32)
    if a.name == "value_floats":
        return np.array(list(a.floats), dtype=np.float32)
    if a.name == "value_int":
        return np.array(a.i, dtype=np.int64)
    if a.name == "value_ints":
        return np.array(list(a.ints), dtype=np.int64)
    raise UserError(f"Constant with '{a.name}' is not supported {where}")


def tensor_value(t: onnx.TensorProto, what: str) -> np.ndarray:
    try:
        return numpy_helper.to_array(t)
    except Exception as e:  # noqa: BLE001 - wrong raw_data size etc.
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UserError(f"cannot read {what} (truncated or corrupt file?): {msg}") from None


@dataclass
class ImportGraph:
    model: onnx.ModelProto
    opset: int
    consts: dict[str, np.ndarray]
    nodes: list[Node]
    inputs: list[ValueInfoProto]
    outputs: list[ValueInfoProto]
    const_origin: dict[str, str] = field(default_factory=dict)
    """const name -> name of the node it came from (Constant nodes, folded nodes)."""
    training: bool | None = None
    """Whether nodes reading float initializers (the parameters) stay ops so that
    graph-autodiff can differentiate them: True/False as the user said (`nnx-import
    --training` / `--inference`), None = detect a training-mode export."""

    @classmethod
    def from_model(
        cls,
        model: onnx.ModelProto,
        path: str = "<model>",
        keep_initializer_inputs: bool = False,
    ) -> ImportGraph:
        g = model.graph
        opset = default_opset(model) or 0
        consts: dict[str, np.ndarray] = {}
        for t in g.initializer:
            if not t.name:
                raise UserError(f"{path}: an initializer has no name")
            consts[t.name] = tensor_value(t, f"initializer '{t.name}'")
        for t in g.sparse_initializer:
            raise UserError(f"{path}: sparse initializer '{t.values.name}' is not supported")
        if keep_initializer_inputs:
            for vi in g.input:
                consts.pop(vi.name, None)
        inputs = [vi for vi in g.input if vi.name not in consts]
        origin: dict[str, str] = {}
        nodes: list[Node] = []
        for p in g.node:
            if p.op_type == "Constant" and p.domain in DEFAULT_DOMAINS:
                if len(p.output) != 1:
                    raise UserError(f"{path}: Constant node '{p.name}' needs one output")
                consts[p.output[0]] = constant_node_value(p)
                origin[p.output[0]] = p.name
                continue
            nodes.append(
                Node(
                    proto=p,
                    inputs=list(p.input),
                    outputs=list(p.output),
                    attrs={a.name: attribute_value(a, p) for a in p.attribute},
                )
            )
        ig = cls(model, opset, consts, nodes, inputs, list(g.output), origin)
        ig.nodes = ig._topo_sorted(path)
        ig._drop_unused_dropout_masks()
        return ig

    def _drop_unused_dropout_masks(self) -> None:
        """Forget the mask output of a Dropout that nothing reads.

        Before opset 10 the mask has the data's element type and ONNX shape inference
        gives it no type; unused, it is only noise (and an inference-mode Dropout
        without a mask is an identity)."""
        used = {i for n in self.nodes for i in n.inputs} | {vi.name for vi in self.outputs}
        for n in self.nodes:
            if n.op_type == "Dropout" and n.domain in DEFAULT_DOMAINS and len(n.outputs) > 1:
                if n.outputs[1] and n.outputs[1] not in used:
                    n.outputs[1] = ""

    def shape_deciding_input(self, node: Node) -> str | None:
        """The graph input whose *value* most likely decides `node`'s result shape.

        Walks `node`'s ancestors back to the graph inputs and prefers an integer input
        (a shape, a size, axes), then one that reaches the node only through a
        ConstantOfShape/Reshape/Expand/Tile/Range shape operand; None if no input
        is an ancestor."""
        producer = {o: n for n in self.nodes for o in n.outputs if o}
        input_names = {vi.name: vi for vi in self.inputs}
        shape_ops = {"ConstantOfShape", "Reshape", "Expand", "Tile", "Range", "Resize",
                     "Upsample", "Slice", "Pad", "Squeeze", "Unsqueeze", "TopK", "OneHot"}
        found: list[tuple[int, str]] = []
        seen: set[str] = set()
        stack: list[tuple[str, bool]] = [(i, False) for i in node.inputs if i]
        if node.op_type in shape_ops:
            stack = [(i, k > 0 or node.op_type == "ConstantOfShape")
                     for k, i in enumerate(node.inputs) if i]
        while stack:
            name, as_shape = stack.pop()
            if (name, as_shape) in seen:
                continue
            seen.add(name)
            if name in input_names:
                vi = input_names[name]
                elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
                is_int = elem in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)
                found.append((0 if is_int else (1 if as_shape else 2), name))
                continue
            p = producer.get(name)
            if p is None:
                continue
            for k, i in enumerate(p.inputs):
                if i:
                    shape_operand = p.op_type in shape_ops and (
                        k > 0 or p.op_type == "ConstantOfShape"
                    )
                    stack.append((i, as_shape or shape_operand))
        if not found:
            return None
        return min(found)[1]

    def bind_inputs(self, values: dict[str, np.ndarray]) -> None:
        """Turn the graph inputs named in `values` into constants with those values."""
        from nnx.importer.shapes import declared_type, np_dtype

        names = [vi.name for vi in self.inputs]
        for name, arr in values.items():
            if name not in names:
                valid = ", ".join(f"'{n}'" for n in names) or "none"
                raise UserError(
                    f"--const-input names unknown input '{name}' (the model's inputs: {valid})"
                )
            vi = self.inputs[names.index(name)]
            t = declared_type(vi)
            arr = np.asarray(arr)
            if t is not None and t.elem:
                want = np_dtype(t.elem, f"graph input '{name}'")
                if arr.dtype != want:
                    raise UserError(
                        f"--const-input {name}: value has element type {arr.dtype}, "
                        f"the input is {want}"
                    )
            if t is not None and t.shape is not None:
                ok = len(t.shape) == arr.ndim and all(
                    d is None or d == a for d, a in zip(t.shape, arr.shape)
                )
                if not ok:
                    raise UserError(
                        f"--const-input {name}: value has shape {list(arr.shape)}, "
                        f"the input is {t.describe()}"
                    )
            self.consts[name] = arr
        self.inputs = [vi for vi in self.inputs if vi.name not in values]

    def _topo_sorted(self, path: str) -> list[Node]:
        """Nodes in a valid order (ONNX requires one; repair mild violations)."""
        defined = set(self.consts) | {vi.name for vi in self.inputs}
        order: list[Node] = []
        pending = list(self.nodes)
        while pending:
            progress = False
            rest: list[Node] = []
            for n in pending:
                if all((not i) or i in defined for i in n.inputs):
                    order.append(n)
                    defined.update(o for o in n.outputs if o)
                    progress = True
                else:
                    rest.append(n)
            if not progress:
                n = rest[0]
                missing = next(i for i in n.inputs if i and i not in defined)
                produced = {o for m in rest for o in m.outputs}
                why = (
                    "is part of a cycle"
                    if missing in produced
                    else "is not produced by any node, input or initializer"
                )
                raise node_error(n, f"{path}: input '{missing}' {why}")
            pending = rest
        for vi in self.outputs:
            if vi.name not in defined:
                raise UserError(
                    f"{path}: graph output '{vi.name}' is not produced by any node "
                    "(truncated or corrupt file?)"
                )
        return order
