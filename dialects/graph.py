"""The `graph` dialect: ONNX operators as MLIR ops over static tensors.

Conventions (../shared/DESIGN.md, "IR conventions"):

* One op per ONNX operator, named after it in snake_case (`Conv` -> `graph.conv`).
  Operands are the ONNX inputs in ONNX order (optional inputs are `opt_operand_def`,
  variadic ones `var_operand_def`); properties are the ONNX attributes under their
  ONNX names, with ONNX defaults when absent. The numpy interpreter (nnx/interp/)
  defines what every op computes.
* Every schedulable op also takes an `after(...)` operand group: control edges
  (seed 001's serialization and prefetch edges). `b after(%a)` means b may not
  start before the producer of %a has completed; no data flows.
* The order of ops in a block is the schedule (seed 000's topological sequence); the
  verifier checks that it is a valid topological order, `after` edges included.

ONNX attribute kinds map to builtin attributes: INT -> `i64` IntegerAttr, FLOAT ->
`f32` FloatAttr, STRING -> StringAttr, INTS -> `array<i64: ...>`, FLOATS ->
`array<f32: ...>`, STRINGS -> ArrayAttr of StringAttr, TENSOR -> dense elements.
`attr_to_python` / `python_to_attr` convert both ways.

Custom assembly (the generic form is MLIR's and round-trips too):

    %y = graph.conv(%x, %w, %b) {group = 1 : i64, strides = array<i64: 2, 2>}
             after(%z : tensor<1xf32>) : (tensor<...>, ...) -> tensor<...>

Absent optional inputs in the middle are written `none`
(`graph.resize(%x, none, %scales)`); properties and discardable attributes share
the dictionary (names declared by the op are properties).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    OpDef,
    OptOperandDef,
    VarOperandDef,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

from nnx.types import dtype_of, shape_of

# --------------------------------------------------------------------------------------
# Attribute conversion (ONNX attribute values <-> builtin attributes)
# --------------------------------------------------------------------------------------


def attr_to_python(attr: Attribute) -> Any:
    """The Python/numpy value of a graph-op property (as ONNX would give it)."""
    from nnx.resources import elements_value

    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        return list(attr.get_values())
    if isinstance(attr, ArrayAttr):
        return [attr_to_python(a) for a in attr.data]
    if isinstance(attr, (DenseIntOrFPElementsAttr, DenseResourceAttr)):
        return elements_value(attr)
    raise TypeError(f"no Python value for attribute {attr}")


def python_to_attr(value: Any) -> Attribute:
    """A builtin attribute for an ONNX attribute value (int, float, str, lists, arrays)."""
    from nnx.resources import register_array

    if isinstance(value, Attribute):
        return value
    if isinstance(value, (bool, np.bool_)):
        return IntegerAttr(int(value), i64)
    if isinstance(value, (int, np.integer)):
        return IntegerAttr(int(value), i64)
    if isinstance(value, (float, np.floating)):
        return FloatAttr(float(value), f32)
    if isinstance(value, (str, bytes)):
        return StringAttr(value.decode() if isinstance(value, bytes) else value)
    if isinstance(value, np.ndarray):
        if value.size <= 16:
            return dense_attr(value)
        return register_array(value)
    if isinstance(value, (list, tuple)):
        vals = list(value)
        if all(isinstance(v, (int, np.integer)) for v in vals):
            return DenseArrayBase.from_list(i64, [int(v) for v in vals])
        if all(isinstance(v, (int, float, np.integer, np.floating)) for v in vals):
            return DenseArrayBase.from_list(f32, [float(v) for v in vals])
        if all(isinstance(v, (str, bytes)) for v in vals):
            return ArrayAttr([python_to_attr(v) for v in vals])
    raise TypeError(f"cannot express {value!r} as an attribute")


def dense_attr(value: np.ndarray) -> DenseIntOrFPElementsAttr:
    """An inline `dense<...>` attribute holding `value` (for small tensors)."""
    from xdsl.dialects.builtin import BytesAttr

    from nnx.types import tensor_type_of

    value = np.ascontiguousarray(value)
    if value.dtype == np.bool_:
        value = value.astype(np.int8)  # i1 is stored one byte per element
        ttype = TensorType(IntegerType(1), value.shape)
    else:
        ttype = tensor_type_of(value)
    return DenseIntOrFPElementsAttr(ttype, BytesAttr(value.tobytes()))


# --------------------------------------------------------------------------------------
# Base class of graph ops
# --------------------------------------------------------------------------------------


class GraphOp(IRDLOperation):
    """Base of every schedulable graph op: ONNX inputs, then the `after` group.

    Subclasses declare the ONNX inputs (in ONNX order), results and properties, and
    set `ONNX_TYPE`. They may override `infer_result_types` to have the verifier
    check result shapes and element types.
    """

    ONNX_TYPE: ClassVar[str] = ""

    after = var_operand_def()

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    # ---- ONNX view ----------------------------------------------------------------

    @classmethod
    def onnx_input_defs(cls) -> list[tuple[str, Any]]:
        op_def: OpDef = cls.get_irdl_definition()
        return [(n, d) for n, d in op_def.operands if n != "after"]

    def onnx_inputs(self) -> list[SSAValue | None]:
        """The ONNX inputs in ONNX order; None for an absent optional input."""
        out: list[SSAValue | None] = []
        for name, d in self.onnx_input_defs():
            v = getattr(self, name)
            if isinstance(d, OptOperandDef):
                out.append(v)
            elif isinstance(d, VarOperandDef):
                out.extend(v)
            else:
                out.append(v)
        while out and out[-1] is None:
            out.pop()
        return out

    def onnx_attributes(self) -> dict[str, Any]:
        """The ONNX attributes present on the op, as Python/numpy values."""
        return {
            k: attr_to_python(v)
            for k, v in self.properties.items()
            if k != "operandSegmentSizes" and k != "resultSegmentSizes"
        }

    @classmethod
    def build_onnx(
        cls,
        inputs: Sequence[SSAValue | None],
        attributes: dict[str, Any],
        result_types: Sequence[Attribute],
        after: Sequence[SSAValue] = (),
    ) -> GraphOp:
        """Build from ONNX-ordered inputs (None = absent) and attribute values."""
        defs = cls.onnx_input_defs()
        operands: list[Any] = []
        pos = 0
        for i, (name, d) in enumerate(defs):
            if isinstance(d, OptOperandDef):
                v = inputs[pos] if pos < len(inputs) else None
                operands.append([] if v is None else [v])
                pos += 1
            elif isinstance(d, VarOperandDef):
                rest = len(defs) - i - 1
                take = max(len(inputs) - pos - rest, 0)
                vals = list(inputs[pos : pos + take])
                if any(v is None for v in vals):
                    raise ValueError(f"{cls.name}: variadic input '{name}' has a hole")
                operands.append(vals)
                pos += take
            else:
                if pos >= len(inputs) or inputs[pos] is None:
                    raise ValueError(f"{cls.name}: required input '{name}' missing")
                operands.append(inputs[pos])
                pos += 1
        if pos < len(inputs) and any(v is not None for v in inputs[pos:]):
            raise ValueError(f"{cls.name}: {len(inputs)} inputs, at most {pos} allowed")
        operands.append(list(after))
        op_def = cls.get_irdl_definition()
        props: dict[str, Attribute] = {}
        attrs: dict[str, Attribute] = {}
        for k, v in attributes.items():
            if k in op_def.properties:
                props[k] = python_to_attr(v)
            elif k.startswith("nnx."):
                attrs[k] = python_to_attr(v)
            else:
                raise ValueError(f"{cls.name}: unknown attribute '{k}'")
        res_defs = op_def.results
        if len(res_defs) == 1 and not isinstance(res_defs[0][1], type(None)):
            from xdsl.irdl import VarResultDef

            if isinstance(res_defs[0][1], VarResultDef):
                results: list[Any] = [list(result_types)]
            else:
                results = list(result_types)
        else:
            results = list(result_types)
        return cls.build(
            operands=operands, result_types=results, properties=props, attributes=attrs
        )

    # ---- verification ---------------------------------------------------------------

    def infer_result_types(self) -> list[Attribute] | None:
        """Result types implied by the operand types and properties (None: not checked)."""
        return None

    def verify_(self) -> None:
        for v in self.after:
            if v.owner is self:
                raise VerifyException(f"{self.name}: 'after' refers to its own result")
        expected = self.infer_result_types()
        if expected is not None:
            actual = list(self.result_types)
            if len(expected) != len(actual):
                raise VerifyException(
                    f"{self.name}: expected {len(expected)} results, got {len(actual)}"
                )
            for i, (e, a) in enumerate(zip(expected, actual)):
                if e != a:
                    raise VerifyException(
                        f"{self.name}: result #{i} has type {a}, operands imply {e}"
                    )
        if self.prev_op is None and self.parent_block() is not None:
            verify_block_order(self.parent_block())

    # ---- custom assembly ------------------------------------------------------------

    def print(self, printer: Printer) -> None:
        inputs = self.onnx_inputs()
        printer.print_string("(")
        for i, v in enumerate(inputs):
            if i:
                printer.print_string(", ")
            if v is None:
                printer.print_string("none")
            else:
                printer.print_operand(v)
        printer.print_string(")")
        shown = {
            k: v
            for k, v in self.properties.items()
            if k not in ("operandSegmentSizes", "resultSegmentSizes")
        }
        shown.update(self.attributes)
        if shown:
            printer.print_string(" ")
            printer.print_attr_dict(shown)
        if self.after:
            printer.print_string(" after(")
            printer.print_list(self.after, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([v.type for v in self.after], printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" : ")
        printer.print_function_type(
            [v.type for v in inputs if v is not None], self.result_types
        )

    @classmethod
    def parse(cls, parser: Parser) -> GraphOp:
        unresolved: list[Any] = []

        def one():
            if parser.parse_optional_keyword("none") is not None:
                unresolved.append(None)
            else:
                unresolved.append(parser.parse_unresolved_operand())

        parser.parse_punctuation("(")
        if parser.parse_optional_punctuation(")") is None:
            parser.parse_comma_separated_list(parser.Delimiter.NONE, one)
            parser.parse_punctuation(")")
        attr_dict = parser.parse_optional_attr_dict()
        after: list[SSAValue] = []
        if parser.parse_optional_keyword("after") is not None:
            parser.parse_punctuation("(")
            names = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_type
            )
            parser.parse_punctuation(")")
            if len(names) != len(types):
                parser.raise_error("'after' needs one type per operand")
            after = [parser.resolve_operand(n, t) for n, t in zip(names, types)]
        parser.parse_punctuation(":")
        pos = parser.pos
        ftype = parser.parse_function_type()
        present = [u for u in unresolved if u is not None]
        if len(ftype.inputs.data) != len(present):
            parser.raise_error(
                f"{cls.name}: {len(present)} operands but "
                f"{len(ftype.inputs.data)} operand types",
                pos,
            )
        it = iter(ftype.inputs.data)
        inputs = [None if u is None else parser.resolve_operand(u, next(it)) for u in unresolved]
        op_def = cls.get_irdl_definition()
        props = {k: v for k, v in attr_dict.items() if k in op_def.properties}
        attrs = {k: v for k, v in attr_dict.items() if k not in op_def.properties}
        try:
            op = cls.build_onnx(inputs, {}, list(ftype.outputs.data), after)
        except ValueError as e:
            parser.raise_error(str(e), pos)
        op.properties.update(props)
        op.attributes.update(attrs)
        return op


def verify_block_order(block: Any) -> None:
    """Every operand (data or `after`) defined in `block` is defined before its use."""
    position: dict[Operation, int] = {}
    for i, op in enumerate(block.ops):
        position[op] = i
    for i, op in enumerate(block.ops):
        for v in op.operands:
            owner = v.owner
            if isinstance(owner, Operation):
                j = position.get(owner)
                if j is not None and j >= i:
                    raise VerifyException(
                        f"{op.name} uses a value of {owner.name} that comes later in "
                        "the block: the op order is not a topological order"
                    )


# --------------------------------------------------------------------------------------
# Shape helpers shared by the op verifiers
# --------------------------------------------------------------------------------------


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """ONNX (numpy) multidirectional broadcasting; VerifyException when incompatible."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise VerifyException(
            "shapes " + ", ".join(str(list(s)) for s in shapes) + " do not broadcast"
        ) from None


def same_element_type(op: Operation, values: Sequence[SSAValue]) -> Attribute:
    types = [v.type for v in values]
    el = [t.element_type for t in types if isinstance(t, TensorType)]
    if len(el) != len(types):
        raise VerifyException(f"{op.name}: operands must be tensors")
    if any(e != el[0] for e in el):
        raise VerifyException(
            f"{op.name}: operand element types differ: " + ", ".join(str(e) for e in el)
        )
    return el[0]


# --------------------------------------------------------------------------------------
# Structural ops
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A weight or other constant tensor (`dense<...>` inline or `dense_resource<...>`).

    Large weights are `dense_resource` blobs (nnx/resources.py) so a 100 MB model
    round-trips through text quickly (DESIGN.md, IR conventions).
    """

    name = "graph.constant"
    value = prop_def(Attribute)
    output = result_def(TensorType)

    def __init__(self, value: Attribute):
        super().__init__(properties={"value": value}, result_types=[value.get_type()])

    def numpy_value(self) -> np.ndarray:
        from nnx.resources import elements_value

        return elements_value(self.value)

    def verify_(self) -> None:
        if not isinstance(self.value, (DenseIntOrFPElementsAttr, DenseResourceAttr)):
            raise VerifyException("graph.constant value must be dense or dense_resource")
        if self.value.get_type() != self.output.type:
            raise VerifyException(
                f"graph.constant: value type {self.value.get_type()} "
                f"differs from result type {self.output.type}"
            )
        if self.prev_op is None and self.parent_block() is not None:
            verify_block_order(self.parent_block())

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        value = parser.parse_attribute()
        attrs = parser.parse_optional_attr_dict()
        if not isinstance(value, (DenseIntOrFPElementsAttr, DenseResourceAttr)):
            parser.raise_error("graph.constant expects a dense or dense_resource value")
        op = cls(value)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of `graph.subgraph`: the values the subgraph outputs."""

    name = "graph.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(SubgraphOp)))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class SubgraphOp(IRDLOperation):
    """A region of graph ops with explicit inputs (block arguments) and yielded outputs.

    Seeds 000 and 002 cut a model into subgraphs that are scheduled and compiled on
    their own; each is one `graph.subgraph` whose body uses only its block arguments.
    """

    name = "graph.subgraph"
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")
    traits = traits_def()

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"graph.subgraph: {len(self.inputs)} inputs but "
                f"{len(block.args)} block arguments"
            )
        for a, v in zip(block.args, self.inputs):
            if a.type != v.type:
                raise VerifyException(
                    f"graph.subgraph: block argument type {a.type} != input type {v.type}"
                )
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException("graph.subgraph must end with graph.yield")
        if [v.type for v in term.values] != list(self.result_types):
            raise VerifyException("graph.subgraph: yielded types differ from result types")
        for op in block.ops:
            for v in op.operands:
                owner_block = v.owner.parent_block() if isinstance(v.owner, Operation) else v.owner
                if not _is_within(owner_block, self):
                    raise VerifyException(
                        f"graph.subgraph: {op.name} uses a value from outside the "
                        "subgraph; pass it as an input"
                    )
        verify_block_order(block)
        if self.prev_op is None and self.parent_block() is not None:
            verify_block_order(self.parent_block())

    def print(self, printer: Printer) -> None:
        block = self.body.block
        printer.print_string("(")
        for i, (a, v) in enumerate(zip(block.args, self.inputs)):
            if i:
                printer.print_string(", ")
            printer.print_block_argument(a, print_type=False)
            printer.print_string(" = ")
            printer.print_operand(v)
        printer.print_string(") : (")
        printer.print_list([v.type for v in self.inputs], printer.print_attribute)
        printer.print_string(") -> (")
        printer.print_list(self.result_types, printer.print_attribute)
        printer.print_string(")")
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> SubgraphOp:
        pairs: list[tuple[Any, Any]] = []

        def one():
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            pairs.append((arg, parser.parse_unresolved_operand()))

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
        parser.parse_punctuation(":")
        in_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        out_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        if len(in_types) != len(pairs):
            parser.raise_error("graph.subgraph: one type per input expected")
        attrs = parser.parse_optional_attr_dict_with_keyword()
        args = [a.resolve(t) for (a, _), t in zip(pairs, in_types)]
        inputs = [parser.resolve_operand(u, t) for (_, u), t in zip(pairs, in_types)]
        region = parser.parse_region(args)
        op = cls.build(operands=[inputs], result_types=[out_types], regions=[region])
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


def _is_within(block: Any, op: Operation) -> bool:
    while block is not None:
        parent = block.parent_op()
        if parent is op:
            return True
        if parent is None:
            return False
        block = parent.parent_block()
    return False


# --------------------------------------------------------------------------------------
# ONNX operators (ONNX operator -> op class). Keep alphabetical by ONNX name.
# --------------------------------------------------------------------------------------

def _tensor(el: Attribute, shape: Sequence[int]) -> TensorType:
    return TensorType(el, list(shape))


class ElementwiseBinaryOp(GraphOp):
    """Shared shape rule of ONNX binary ops with multidirectional broadcasting."""

    A = operand_def(TensorType)
    B = operand_def(TensorType)
    C = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute] | None:
        el = same_element_type(self, [self.A, self.B])
        return [_tensor(el, broadcast_shapes(shape_of(self.A.type), shape_of(self.B.type)))]


class ElementwiseUnaryOp(GraphOp):
    """Shared shape rule of ONNX unary ops: the result has the input's type."""

    X = operand_def(TensorType)
    Y = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute] | None:
        return [self.X.type]


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    """ONNX Add: elementwise sum with broadcasting."""

    name = "graph.add"
    ONNX_TYPE: ClassVar[str] = "Add"


@irdl_op_definition
class ReluOp(ElementwiseUnaryOp):
    """ONNX Relu: max(x, 0)."""

    name = "graph.relu"
    ONNX_TYPE: ClassVar[str] = "Relu"


@irdl_op_definition
class ConvOp(GraphOp):
    """ONNX Conv (NCHW...): X, W, optional bias B; auto_pad, dilations, group,
    kernel_shape, pads, strides as in ONNX."""

    name = "graph.conv"
    ONNX_TYPE: ClassVar[str] = "Conv"
    X = operand_def(TensorType)
    W = operand_def(TensorType)
    B = opt_operand_def(TensorType)
    Y = result_def(TensorType)
    auto_pad = opt_prop_def(StringAttr)
    dilations = opt_prop_def(DenseArrayBase)
    group = opt_prop_def(IntegerAttr)
    kernel_shape = opt_prop_def(DenseArrayBase)
    pads = opt_prop_def(DenseArrayBase)
    strides = opt_prop_def(DenseArrayBase)


@irdl_op_definition
class ReshapeOp(GraphOp):
    """ONNX Reshape: `shape` is a constant operand; the result type is static."""

    name = "graph.reshape"
    ONNX_TYPE: ClassVar[str] = "Reshape"
    data = operand_def(TensorType)
    shape = operand_def(TensorType)
    reshaped = result_def(TensorType)
    allowzero = opt_prop_def(IntegerAttr)

    def verify_(self) -> None:
        super().verify_()
        n_in = int(np.prod(shape_of(self.data.type), dtype=np.int64))
        n_out = int(np.prod(shape_of(self.reshaped.type), dtype=np.int64))
        if n_in != n_out:
            raise VerifyException(
                f"graph.reshape: {n_in} elements cannot become {n_out}"
            )


@irdl_op_definition
class SplitOp(GraphOp):
    """ONNX Split: one input, optional `split` sizes operand, several outputs."""

    name = "graph.split"
    ONNX_TYPE: ClassVar[str] = "Split"
    input = operand_def(TensorType)
    split = opt_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    num_outputs = opt_prop_def(IntegerAttr)


@irdl_op_definition
class ResizeOp(GraphOp):
    """ONNX Resize: X, optional roi, scales, sizes."""

    name = "graph.resize"
    ONNX_TYPE: ClassVar[str] = "Resize"
    X = operand_def(TensorType)
    roi = opt_operand_def(TensorType)
    scales = opt_operand_def(TensorType)
    sizes = opt_operand_def(TensorType)
    Y = result_def(TensorType)
    antialias = opt_prop_def(IntegerAttr)
    axes = opt_prop_def(DenseArrayBase)
    coordinate_transformation_mode = opt_prop_def(StringAttr)
    cubic_coeff_a = opt_prop_def(FloatAttr)
    exclude_outside = opt_prop_def(IntegerAttr)
    extrapolation_value = opt_prop_def(FloatAttr)
    keep_aspect_ratio_policy = opt_prop_def(StringAttr)
    mode = opt_prop_def(StringAttr)
    nearest_mode = opt_prop_def(StringAttr)


# --------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------

GRAPH_OPS: list[type[GraphOp]] = [
    AddOp,
    ConvOp,
    ReluOp,
    ReshapeOp,
    ResizeOp,
    SplitOp,
]

ONNX_OPS: dict[str, type[GraphOp]] = {c.ONNX_TYPE: c for c in GRAPH_OPS}
"""ONNX operator type -> graph op class."""

Graph = Dialect("graph", [ConstantOp, YieldOp, SubgraphOp, *GRAPH_OPS], [])
