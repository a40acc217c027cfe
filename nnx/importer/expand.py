"""Expand ONNX ops that have no graph op but an ONNX function definition.

Newer opsets add composite ops with a (context-dependent) function body in their
schema: opset 23's RMSNormalization, Attention and RotaryEmbedding (the dynamo exporter
emits them at opset >= 23), and others. Such a node becomes a model-local function
(the schema's body for the node's attributes and input types) which `onnx.inliner`
then inlines, so the importer sees only primitive ops. Input types come from ONNX
shape inference (ranks/element types are enough: dynamic dims are fine).
"""

from __future__ import annotations

from collections.abc import Set

import onnx
from onnx import helper

DOMAIN = "nnx.expand"
MAX_DEPTH = 4


def _opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return onnx.defs.onnx_opset_version()


def _schema(op: str, version: int):
    try:
        s = onnx.defs.get_schema(op, version, "")
    except Exception:  # noqa: BLE001 - unknown op: the builder reports it
        return None
    if s.has_function or s.has_context_dependent_function:
        return s
    return None


def expand_functions(model: onnx.ModelProto, supported: Set[str]) -> onnx.ModelProto:
    """`model` with every default-domain node whose op is not in `supported` but has
    an ONNX function definition replaced by that function's nodes (repeated for
    nested composites). Returns `model` itself when there is nothing to expand."""
    version = _opset(model)
    for _ in range(MAX_DEPTH):
        todo = [
            k for k, n in enumerate(model.graph.node)
            if n.domain in ("", "ai.onnx") and n.op_type not in supported
            and _schema(n.op_type, version) is not None
        ]
        if not todo:
            return model
        model = _expand_once(model, todo, version)
    return model


def _expand_once(model: onnx.ModelProto, todo: list[int], version: int) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    types = _value_types(m)
    funcs = []
    for k in todo:
        node = m.graph.node[k]
        s = _schema(node.op_type, version)
        _add_default_attributes(node, s)
        fn = _function_of(s, node, version, types)
        if fn is None:
            continue
        name = f"{node.op_type}_{k}"
        fn.name, fn.domain = name, DOMAIN
        # a body defined at an older opset (GroupNormalization-21 in an opset-23 model)
        # is declared at the model's: onnx.inliner leaves functions whose opset differs
        # from the model's uninlined (the ops such bodies use changed since only by
        # accepting more element types)
        for o in fn.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = version
        node.domain, node.op_type = DOMAIN, name
        funcs.append(fn)
    if not funcs:
        return model
    m.functions.extend(funcs)
    m.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    from onnx import inliner

    out = inliner.inline_local_functions(m)
    keep = [o for o in out.opset_import if o.domain != DOMAIN]
    del out.opset_import[:]
    out.opset_import.extend(keep)
    del out.functions[:]
    out.functions.extend(f for f in model.functions)
    return out


def _add_default_attributes(node: onnx.NodeProto, schema) -> None:
    """Spell out the attributes the node leaves at their schema default: function
    bodies refer to them (`Constant value_float: @alpha`, `ReduceMean axes: @axes`) and
    the inliner drops a reference to an absent attribute."""
    have = {a.name for a in node.attribute}
    for name, a in schema.attributes.items():
        d = a.default_value
        if name in have or d is None or not d.type:
            continue
        attr = onnx.AttributeProto()
        attr.CopyFrom(d)
        attr.name = name
        node.attribute.append(attr)


def _function_of(schema, node: onnx.NodeProto, version: int, types) -> onnx.FunctionProto | None:
    if schema.has_function:
        fn = onnx.FunctionProto()
        body = schema.function_body
        fversions = [v for v in schema.function_opset_versions if v <= version]
        if fversions:
            body = schema.get_function_with_opset_version(max(fversions)) or body
        if isinstance(body, bytes):
            fn.ParseFromString(body)
        else:
            fn.CopyFrom(body)
        return fn
    in_types = []
    for i in node.input:
        t = types.get(i)
        if t is None:
            if i:
                return None  # type unknown: cannot choose the body
            t = onnx.TypeProto()
        in_types.append(t.SerializeToString())
    try:
        # the body defined for the newest opset <= the model's (GroupNormalization-21's
        # body serves opset 23 models)
        cversions = [v for v in schema.context_dependent_function_opset_versions if v <= version]
        if cversions:
            raw = schema.get_context_dependent_function_with_opset_version(
                max(cversions), node.SerializeToString(), in_types
            )
        else:
            raw = schema.get_context_dependent_function(node.SerializeToString(), in_types)
    except Exception:  # noqa: BLE001
        return None
    if not raw:
        return None
    fn = onnx.FunctionProto()
    fn.ParseFromString(raw)
    return fn


def _value_types(m: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Types of the graph's values (inference on a copy without initializer data)."""
    stripped = onnx.ModelProto()
    stripped.CopyFrom(m)
    inits = list(stripped.graph.initializer)
    del stripped.graph.initializer[:]
    have = {vi.name for vi in stripped.graph.input}
    for t in inits:
        if t.name not in have:
            stripped.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    try:
        inferred = onnx.shape_inference.infer_shapes(stripped)
    except Exception:  # noqa: BLE001
        inferred = stripped
    g = inferred.graph
    return {vi.name: vi.type for vi in (*g.input, *g.value_info, *g.output)}
