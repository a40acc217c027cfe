"""The `graph` dialect: ONNX operators as MLIR ops over static tensors.

Conventions (docs/architecture.md, section 4 "The `graph` dialect"):

* One op per ONNX operator, named after it in snake_case (`Conv` -> `graph.conv`).
  Operands are the ONNX inputs in ONNX order (optional inputs are `opt_operand_def`,
  variadic ones `var_operand_def`); properties are the ONNX attributes under their
  ONNX names, with ONNX defaults when absent. The numpy interpreter (nnx/interp/)
  defines what every op computes.
* Every schedulable op also takes an `after(...)` operand group: control edges (the
  swap-insertion pass's serialisation and prefetch edges,
  docs/tensor-timing-and-swapping.md). `b after(%a)` means b may not start before the
  producer of %a has completed; no data flows.
* The order of ops in a block is the schedule (the topological sequence of
  docs/topological-order.md); the verifier checks that it is a valid topological
  order, `after` edges included.

ONNX attribute kinds map to builtin attributes: INT -> `i64` IntegerAttr, FLOAT ->
`f32` FloatAttr, STRING -> StringAttr, INTS -> `array<i64: ...>`, FLOATS ->
`array<f32: ...>`, STRINGS -> ArrayAttr of StringAttr, TENSOR -> dense elements.
`attr_to_python` / `python_to_attr` convert both ways.

Custom assembly (the generic form is MLIR's and round-trips too):

    %y = graph.conv(%x, %w, %b) {group = 1 : i64, strides = array<i64: 2, 2>}
             after(%z : tensor<1xf32>) : (tensor<...>, ...) -> tensor<...>

Absent optional inputs in the middle are written `none`
(`graph.resize(%x, none, %scales)`), and so are absent optional outputs before a
present one, in the result types (`-> (tensor<...>, none, tensor<...>)` for a
LayerNormalization with InvStdDev but no Mean); properties and discardable
attributes share the dictionary (names declared by the op are properties; other
discardable attributes need a dialect prefix such as `nnx.`).

Attributes of older opsets still seen in exports are kept beside the latest form
(Clip `min`/`max`, Split `split`, Squeeze/Unsqueeze/Reduce* `axes`, Slice
`starts`/`ends`/`axes`, Pad `pads`/`value`, Dropout `ratio`, TopK `k`, Upsample
`scales`); where an input of the latest opset has the same name, the property's
Python field is `<name>_attr` (the property itself keeps the ONNX name) and the
input is optional. The verifier (`GraphOp.infer_result_types`, shape rules in
nnx/shape_rules.py) checks result types against operand types, attributes and, for
shape-like inputs produced by `graph.constant`, their values.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    Float32Type,
    IntegerAttr,
    IntegerType,
    NoneType,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    IRDLOperation,
    OpDef,
    OptOperandDef,
    OptResultDef,
    VarOperandDef,
    VarResultDef,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure
from xdsl.irdl.constraints import VerificationContext
from xdsl.utils.exceptions import VerifyException

from nnx import shape_rules as sr
from nnx.dialects.traits import DataMovement, Elementwise, MatrixCompute, Reduction, ShapeQuery, ViewLike
from nnx.types import shape_of

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

    value = np.asarray(value)
    if not value.flags.c_contiguous:
        value = value.copy(order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
    if value.dtype == np.bool_:
        value = value.astype(np.int8)  # i1 is stored one byte per element
        ttype = TensorType(IntegerType(1), value.shape)
    else:
        ttype = tensor_type_of(value)
    return DenseIntOrFPElementsAttr(ttype, BytesAttr(value.tobytes()))


# --------------------------------------------------------------------------------------
# Property declarations by ONNX attribute kind
# --------------------------------------------------------------------------------------


def int_prop(prop_name: str | None = None) -> Any:
    """An ONNX INT attribute: `IntegerAttr` of type i64."""
    return opt_prop_def(IntegerAttr[I64], prop_name=prop_name)


def float_prop(prop_name: str | None = None) -> Any:
    """An ONNX FLOAT attribute: `FloatAttr` of type f32."""
    return opt_prop_def(FloatAttr[Float32Type], prop_name=prop_name)


def string_prop(prop_name: str | None = None) -> Any:
    """An ONNX STRING attribute: `StringAttr`."""
    return opt_prop_def(StringAttr, prop_name=prop_name)


def ints_prop(prop_name: str | None = None) -> Any:
    """An ONNX INTS attribute: `array<i64: ...>`."""
    return opt_prop_def(DenseArrayBase[I64], prop_name=prop_name)


def floats_prop(prop_name: str | None = None) -> Any:
    """An ONNX FLOATS attribute: `array<f32: ...>`."""
    return opt_prop_def(DenseArrayBase[Float32Type], prop_name=prop_name)


def tensor_prop(prop_name: str | None = None) -> Any:
    """An ONNX TENSOR attribute: `dense<...>` or `dense_resource<...>`."""
    return opt_prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr, prop_name=prop_name)


def _attr_candidates(value: Any) -> Iterator[Attribute]:
    """Builtin attributes that could express an ONNX attribute value, best first."""
    if isinstance(value, Attribute):
        yield value
        return
    if hasattr(value, "dims") and hasattr(value, "data_type"):  # onnx.TensorProto
        from onnx import numpy_helper

        value = numpy_helper.to_array(value)
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        yield IntegerAttr(int(value), i64)
        yield FloatAttr(float(value), f32)
    elif isinstance(value, (float, np.floating)):
        yield FloatAttr(float(value), f32)
    elif isinstance(value, (str, bytes)):
        yield python_to_attr(value)
    elif isinstance(value, np.ndarray):
        yield python_to_attr(value)
        if value.ndim == 1:
            yield from _attr_candidates(value.tolist())
    elif isinstance(value, (list, tuple)):
        vals = list(value)
        if all(isinstance(v, (bool, np.bool_, int, np.integer)) for v in vals):
            yield DenseArrayBase.from_list(i64, [int(v) for v in vals])
        if all(isinstance(v, (int, float, np.integer, np.floating)) for v in vals):
            yield DenseArrayBase.from_list(f32, [float(v) for v in vals])
        if all(isinstance(v, (str, bytes)) for v in vals):
            yield ArrayAttr([python_to_attr(v) for v in vals])


def _coerce_property(op_name: str, name: str, pdef: Any, value: Any) -> Attribute:
    ctx = VerificationContext()
    for cand in _attr_candidates(value):
        try:
            pdef.constr.verify(cand, ctx)
        except VerifyException:
            continue
        return cand
    shown = _attr_text(value) if isinstance(value, Attribute) else repr(value)
    raise ValueError(f"{op_name}: attribute '{name}' cannot hold {shown}")


def _attr_text(attr: Attribute) -> str:
    import io

    out = io.StringIO()
    Printer(stream=out).print_attribute(attr)
    return out.getvalue()


# --------------------------------------------------------------------------------------
# Base class of graph ops
# --------------------------------------------------------------------------------------


class GraphOp(IRDLOperation):
    """Base of every schedulable graph op: ONNX inputs, then the `after` group.

    Subclasses declare the ONNX inputs (in ONNX order), results (ONNX outputs in
    ONNX order; optional ones `opt_result_def`) and properties, and set `ONNX_TYPE`.
    They override `infer_result_types` to have the verifier check result types.
    """

    ONNX_TYPE: ClassVar[str] = ""
    DYNAMIC_RESULT_SHAPE: ClassVar[bool] = False
    """True when a result's shape depends on operand values (NonZero): such a result
    may have a dynamic dimension."""

    after = var_operand_def()

    traits = traits_def(Pure())  # no side effects: dce/canonicalize may drop unused ops

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    # ---- ONNX view ----------------------------------------------------------------

    @classmethod
    def onnx_input_defs(cls) -> list[tuple[str, Any]]:
        op_def: OpDef = cls.get_irdl_definition()
        return [(n, d) for n, d in op_def.operands if n != "after"]

    @classmethod
    def onnx_output_defs(cls) -> list[tuple[str, Any]]:
        return list(cls.get_irdl_definition().results)

    @classmethod
    def onnx_attribute_names(cls) -> list[str]:
        """The ONNX attribute names this op accepts (its property names)."""
        return [k for k in cls.get_irdl_definition().properties if not k.endswith("SegmentSizes")]

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

    def onnx_outputs(self) -> list[SSAValue | None]:
        """The ONNX outputs in ONNX order; None for an absent optional output."""
        out: list[SSAValue | None] = []
        for name, d in self.onnx_output_defs():
            v = getattr(self, name)
            if isinstance(d, OptResultDef):
                out.append(v)
            elif isinstance(d, VarResultDef):
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

    def attr(self, name: str, default: Any = None) -> Any:
        """The Python value of ONNX attribute `name`, or `default` when absent."""
        a = self.properties.get(name)
        return default if a is None else attr_to_python(a)

    @classmethod
    def build_onnx(
        cls,
        inputs: Sequence[SSAValue | None],
        attributes: dict[str, Any],
        result_types: Sequence[Attribute | None],
        after: Sequence[SSAValue] = (),
    ) -> GraphOp:
        """Build from ONNX-ordered inputs and outputs (None = absent) and attribute values.

        Attribute values may be Python/numpy values (coerced to the declared kind:
        an int for a FLOAT attribute becomes f32) or builtin attributes. Names in the
        `nnx.` namespace become discardable attributes.
        """
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
            if k in op_def.properties and not k.endswith("SegmentSizes"):
                props[k] = _coerce_property(cls.name, k, op_def.properties[k], v)
            elif k.startswith("nnx."):
                attrs[k] = python_to_attr(v)
            else:
                raise ValueError(
                    f"{cls.name}: unknown attribute '{k}' (known: "
                    + (", ".join(cls.onnx_attribute_names()) or "none")
                    + ")"
                )
        types = [None if isinstance(t, NoneType) else t for t in result_types]
        res_defs = op_def.results
        results: list[Any] = []
        pos = 0
        for i, (name, d) in enumerate(res_defs):
            if isinstance(d, OptResultDef):
                t = types[pos] if pos < len(types) else None
                results.append([] if t is None else [t])
                pos += 1
            elif isinstance(d, VarResultDef):
                rest = len(res_defs) - i - 1
                take = max(len(types) - pos - rest, 0)
                vals = types[pos : pos + take]
                if any(t is None for t in vals):
                    raise ValueError(f"{cls.name}: variadic output '{name}' has a hole")
                results.append(vals)
                pos += take
            else:
                if pos >= len(types) or types[pos] is None:
                    raise ValueError(f"{cls.name}: required output '{name}' missing")
                results.append(types[pos])
                pos += 1
        if pos < len(types) and any(t is not None for t in types[pos:]):
            raise ValueError(f"{cls.name}: {len(types)} outputs, at most {pos} allowed")
        return cls.build(
            operands=operands, result_types=results, properties=props, attributes=attrs
        )

    # ---- verification ---------------------------------------------------------------

    def infer_result_types(self) -> list[Attribute | None] | None:
        """Result types implied by the operand types, properties and constant operands.

        One entry per present result (None: that result is not checked); None: not
        checked at all. Raise VerifyException (message without the op name: the
        verifier prefixes it) for operands or attributes the operator does not accept.
        Only called when every operand has a static shape.
        """
        return None

    def const_value(self, value: SSAValue | None) -> np.ndarray | None:
        """The numpy value of `value` when a `graph.constant` produces it and its
        weights can be read, else None (`nnx.graph_queries.const_value`)."""
        from nnx.graph_queries import const_value

        try:
            return const_value(value)
        except Exception:  # noqa: BLE001 - e.g. a blob not loaded: not checkable
            return None

    def verify_(self) -> None:
        for v in self.after:
            if v.owner is self:
                raise VerifyException(f"{self.name}: 'after' refers to its own result")
        for k in self.attributes:
            if "." not in k:
                raise VerifyException(
                    f"{self.name}: unknown attribute '{k}' (ONNX {self.ONNX_TYPE} has: "
                    + (", ".join(self.onnx_attribute_names()) or "none")
                    + "; discardable attributes need a dialect prefix such as 'nnx.')"
                )
        if all(_is_static(v.type) for v in self.onnx_inputs() if v is not None):
            try:
                expected = self.infer_result_types()
            except VerifyException as e:
                msg = str(e)
                if not msg.startswith(self.name + ":"):
                    msg = f"{self.name}: {msg}"
                raise VerifyException(msg) from None
            if expected is not None:
                actual = list(self.result_types)
                if len(expected) != len(actual):
                    raise VerifyException(
                        f"{self.name}: expected {len(expected)} results, got {len(actual)}"
                    )
                for i, (e, a) in enumerate(zip(expected, actual)):
                    if e is not None and e != a:
                        raise VerifyException(
                            f"{self.name}: result #{i} has type {a}, operands imply {e}"
                        )
        if not self.DYNAMIC_RESULT_SHAPE:
            for i, t in enumerate(self.result_types):
                if not _is_static(t):
                    raise VerifyException(
                        f"{self.name}: result #{i} type {t} is not a static tensor type"
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
        outputs = [NoneType() if r is None else r.type for r in self.onnx_outputs()]
        printer.print_function_type([v.type for v in inputs if v is not None], outputs)

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
            op = cls.build_onnx(inputs, props, list(ftype.outputs.data), after)
        except ValueError as e:
            parser.raise_error(str(e), pos)
        op.attributes.update(attrs)
        return op


def _is_static(t: Attribute) -> bool:
    return isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape())


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
                        f"{op.name} (op #{i} of the block) uses a value of {owner.name} "
                        f"(op #{j}) that comes later in the block: the op order is not "
                        "a topological order"
                    )


# --------------------------------------------------------------------------------------
# Shape helpers shared by the op verifiers (the rules themselves: nnx/shape_rules.py)
# --------------------------------------------------------------------------------------

I1 = IntegerType(1)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """ONNX (numpy) multidirectional broadcasting; VerifyException when incompatible."""
    return sr.broadcast_shapes(*shapes)


def same_element_type(op: Operation, values: Sequence[SSAValue]) -> Attribute:
    """The common element type of `values`; VerifyException when they differ."""
    types = [v.type for v in values]
    el = [t.element_type for t in types if isinstance(t, TensorType)]
    if len(el) != len(types):
        raise VerifyException(f"{op.name}: operands must be tensors")
    if any(e != el[0] for e in el):
        raise VerifyException(
            f"{op.name}: operand element types differ: " + ", ".join(str(e) for e in el)
        )
    return el[0]


def _tensor(el: Attribute, shape: Sequence[int]) -> TensorType:
    return TensorType(el, [int(d) for d in shape])


def _sh(v: SSAValue) -> tuple[int, ...]:
    return shape_of(v.type)


def _el(v: SSAValue) -> Attribute:
    t = v.type
    assert isinstance(t, TensorType)
    return t.element_type


def _expect_el(what: str, v: SSAValue, allowed: Sequence[Attribute], desc: str) -> None:
    if _el(v) not in allowed:
        raise VerifyException(f"{what} must be {desc}, got {_el(v)}")


_INDEX_TYPES = (IntegerType(64), IntegerType(32))


def _expect_rank(what: str, v: SSAValue, ranks: Sequence[int] | int) -> None:
    ranks = [ranks] if isinstance(ranks, int) else list(ranks)
    r = len(_sh(v))
    if r not in ranks:
        want = " or ".join(str(x) for x in ranks)
        raise VerifyException(f"{what} must have rank {want}, got rank {r} ({sr.fmt(_sh(v))})")


def _ints_of(arr: np.ndarray | None) -> list[int] | None:
    return None if arr is None else [int(x) for x in np.asarray(arr).reshape(-1)]


def _onnx_element_type(code: int) -> Attribute | None:
    from nnx.types import ONNX_TO_NP, mlir_type_of_dtype

    dt = ONNX_TO_NP.get(int(code))
    if dt is None:
        if int(code) == 16:
            return BFloat16Type()
        return None
    return mlir_type_of_dtype(dt)


# --------------------------------------------------------------------------------------
# Structural ops
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A weight or other constant tensor (`dense<...>` inline or `dense_resource<...>`).

    Large weights are `dense_resource` blobs (nnx/resources.py) so a 100 MB model
    round-trips through text quickly (docs/architecture.md, section 3 "The importer").
    """

    name = "graph.constant"
    value = prop_def(Attribute)
    traits = traits_def(Pure())
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
        hex_form = _nonfinite_hex(self.value)
        if hex_form is not None:
            printer.print_string(hex_form)
        else:
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


def _nonfinite_hex(value: Attribute) -> str | None:
    """`dense<"0x...">` (raw little-endian bytes, MLIR's hex form) for an inline float
    constant holding NaN/Inf, else None.

    xDSL prints such values as a bare hex bit pattern (`dense<0xff800000>`) that its
    own parser reads back as the *integer* 4286578688 (the -inf of attention masks
    became 4.3e9); the quoted hex string round-trips bit-exactly, also in mlir-opt.
    """
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return None
    from nnx.types import numpy_dtype_of

    try:
        dtype = numpy_dtype_of(value.get_element_type())
    except Exception:  # noqa: BLE001 - no numpy dtype: leave it to xDSL
        return None
    if np.dtype(dtype).kind != "f" and "float" not in np.dtype(dtype).name:
        return None
    raw = value.data.data
    arr = np.frombuffer(raw, dtype=dtype)
    if bool(np.all(np.isfinite(arr.astype(np.float32)))):
        return None
    printer_type = value.get_type()
    from xdsl.printer import Printer as _P
    import io

    buf = io.StringIO()
    _P(stream=buf).print_attribute(printer_type)
    return f'dense<"0x{raw.hex().upper()}"> : {buf.getvalue()}'


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

    The topological-order search (docs/topological-order.md) and subgraph splitting
    (docs/subgraph-split-fuse.md) cut a model into subgraphs that are scheduled and
    compiled on their own; each is one `graph.subgraph` whose body uses only its block
    arguments.
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
# ONNX operators. Shared base classes first, then one class per operator, alphabetical
# by ONNX name. Inputs/outputs/attributes are those of the latest ONNX opset (onnx
# 1.23); attributes of older opsets still seen in exports are kept beside them (their
# Python field is `<name>_attr` when an input of the latest opset has the same name).
# --------------------------------------------------------------------------------------


class ElementwiseBinaryOp(GraphOp):
    """Shared shape rule of ONNX binary ops with multidirectional broadcasting."""

    traits = traits_def(Elementwise())

    A = operand_def(TensorType)
    B = operand_def(TensorType)
    C = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        el = same_element_type(self, [self.A, self.B])
        return [_tensor(el, broadcast_shapes(_sh(self.A), _sh(self.B)))]


class ComparisonOp(ElementwiseBinaryOp):
    """Binary comparison: operands share a type, the result is i1 (broadcast shape)."""

    def infer_result_types(self) -> list[Attribute | None] | None:
        same_element_type(self, [self.A, self.B])
        return [_tensor(I1, broadcast_shapes(_sh(self.A), _sh(self.B)))]


class LogicalBinaryOp(ElementwiseBinaryOp):
    """Binary logic op on i1 tensors with broadcasting."""

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_el("A", self.A, [I1], "i1 (bool)")
        _expect_el("B", self.B, [I1], "i1 (bool)")
        return [_tensor(I1, broadcast_shapes(_sh(self.A), _sh(self.B)))]


class UnaryXOp(GraphOp):
    """Elementwise unary op with ONNX names X -> Y: the result has the input's type."""

    X = operand_def(TensorType)
    Y = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [self.X.type]


class UnaryInputOp(GraphOp):
    """Elementwise unary op with ONNX names input -> output: same type out as in."""

    input = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [self.input.type]


class AxisUnaryOp(UnaryInputOp):
    """Softmax-like op over one `axis` (default -1): same type out as in."""

    axis = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        sr.normalize_axis(self.attr("axis", -1), len(_sh(self.input)))
        return [self.input.type]


class VariadicElementwiseOp(GraphOp):
    """Max/Min/Sum/Mean: one or more inputs of one type, broadcast together."""

    traits = traits_def(Elementwise())

    data_0 = var_operand_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        if len(self.data_0) == 0:
            raise VerifyException("needs at least one input")
        el = same_element_type(self, list(self.data_0))
        return [_tensor(el, broadcast_shapes(*[_sh(v) for v in self.data_0]))]


class ReduceOp(GraphOp):
    """Reduce*: `axes` as an optional input (latest opsets) or attribute (older ones)."""

    traits = traits_def(Reduction())

    data = operand_def(TensorType)
    axes = opt_operand_def(TensorType)
    reduced = result_def(TensorType)
    axes_attr = ints_prop("axes")
    keepdims = int_prop()
    noop_with_empty_axes = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        shape = _sh(self.data)
        if self.axes is not None:
            _expect_rank("axes", self.axes, 1)
            _expect_el("axes", self.axes, [IntegerType(64)], "i64")
            axes = _ints_of(self.const_value(self.axes))
            if axes is None:
                return None
        else:
            axes = self.attr("axes")
        out = sr.reduce_shape(
            shape, axes, self.attr("keepdims", 1), self.attr("noop_with_empty_axes", 0)
        )
        return [_tensor(_el(self.data), out)]


class ArgReduceOp(GraphOp):
    """ArgMax/ArgMin: i64 indices along `axis` (default 0), keepdims default 1."""

    traits = traits_def(Reduction())

    data = operand_def(TensorType)
    reduced = result_def(TensorType)
    axis = int_prop()
    keepdims = int_prop()
    select_last_index = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        shape = _sh(self.data)
        out = sr.reduce_shape(shape, [self.attr("axis", 0)], self.attr("keepdims", 1))
        return [_tensor(IntegerType(64), out)]


class GlobalPoolOp(UnaryXOp):
    """Global pooling: (N, C, d1, ...) -> (N, C, 1, ...)."""

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank_at_least("X", self.X, 3)
        shape = _sh(self.X)
        return [_tensor(_el(self.X), (*shape[:2], *([1] * (len(shape) - 2))))]


def _expect_rank_at_least(what: str, v: SSAValue, n: int) -> None:
    if len(_sh(v)) < n:
        raise VerifyException(
            f"{what} must have rank >= {n}, got rank {len(_sh(v))} ({sr.fmt(_sh(v))})"
        )


def _window_out(op: GraphOp, x: SSAValue, kernel: Sequence[int], ceil_mode: int = 0) -> tuple[int, ...]:
    shape = _sh(x)
    return sr.window_output_shape(
        shape[2:],
        kernel,
        op.attr("strides"),
        op.attr("pads"),
        op.attr("dilations"),
        op.attr("auto_pad", "NOTSET"),
        ceil_mode,
    )


class PoolOp(GraphOp):
    """MaxPool/AveragePool: sliding window over the spatial dims of X (N, C, ...)."""

    X = operand_def(TensorType)
    auto_pad = string_prop()
    ceil_mode = int_prop()
    dilations = ints_prop()
    kernel_shape = ints_prop()
    pads = ints_prop()
    strides = ints_prop()

    def _pool_shape(self) -> tuple[int, ...]:
        _expect_rank_at_least("X", self.X, 3)
        kernel = self.attr("kernel_shape")
        if kernel is None:
            raise VerifyException("kernel_shape attribute is required")
        shape = _sh(self.X)
        if len(kernel) != len(shape) - 2:
            raise VerifyException(
                f"kernel_shape {kernel} has {len(kernel)} values, input has "
                f"{len(shape) - 2} spatial dims"
            )
        return (*shape[:2], *_window_out(self, self.X, kernel, self.attr("ceil_mode", 0)))

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [_tensor(_el(self.X), self._pool_shape())]  # subclasses declare Y


@irdl_op_definition
class AbsOp(UnaryXOp):
    """ONNX Abs: |x| elementwise."""

    name = "graph.abs"
    ONNX_TYPE: ClassVar[str] = "Abs"
    traits = traits_def(Elementwise())


@irdl_op_definition
class AcosOp(UnaryInputOp):
    """ONNX Acos: arccos(x) elementwise."""

    name = "graph.acos"
    ONNX_TYPE: ClassVar[str] = "Acos"
    traits = traits_def(Elementwise())


@irdl_op_definition
class AcoshOp(UnaryInputOp):
    """ONNX Acosh: arccosh(x) elementwise."""

    name = "graph.acosh"
    ONNX_TYPE: ClassVar[str] = "Acosh"
    traits = traits_def(Elementwise())


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    """ONNX Add: elementwise sum with broadcasting."""

    name = "graph.add"
    ONNX_TYPE: ClassVar[str] = "Add"


@irdl_op_definition
class AndOp(LogicalBinaryOp):
    """ONNX And: elementwise logical and of i1 tensors with broadcasting."""

    name = "graph.and"
    ONNX_TYPE: ClassVar[str] = "And"


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    """ONNX ArgMax: i64 index of the largest element along `axis`."""

    name = "graph.arg_max"
    ONNX_TYPE: ClassVar[str] = "ArgMax"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    """ONNX ArgMin: i64 index of the smallest element along `axis`."""

    name = "graph.arg_min"
    ONNX_TYPE: ClassVar[str] = "ArgMin"


@irdl_op_definition
class AsinOp(UnaryInputOp):
    """ONNX Asin: arcsin(x) elementwise."""

    name = "graph.asin"
    ONNX_TYPE: ClassVar[str] = "Asin"
    traits = traits_def(Elementwise())


@irdl_op_definition
class AsinhOp(UnaryInputOp):
    """ONNX Asinh: arcsinh(x) elementwise."""

    name = "graph.asinh"
    ONNX_TYPE: ClassVar[str] = "Asinh"
    traits = traits_def(Elementwise())


@irdl_op_definition
class AtanOp(UnaryInputOp):
    """ONNX Atan: arctan(x) elementwise."""

    name = "graph.atan"
    ONNX_TYPE: ClassVar[str] = "Atan"
    traits = traits_def(Elementwise())


@irdl_op_definition
class AtanhOp(UnaryInputOp):
    """ONNX Atanh: arctanh(x) elementwise."""

    name = "graph.atanh"
    ONNX_TYPE: ClassVar[str] = "Atanh"
    traits = traits_def(Elementwise())


@irdl_op_definition
class AveragePoolOp(PoolOp):
    """ONNX AveragePool: mean over each window (padding counted iff count_include_pad)."""

    name = "graph.average_pool"
    ONNX_TYPE: ClassVar[str] = "AveragePool"
    Y = result_def(TensorType)
    count_include_pad = int_prop()


@irdl_op_definition
class BatchNormalizationOp(GraphOp):
    """ONNX BatchNormalization: Y = scale * (X - mean) / sqrt(var + epsilon) + B per
    channel (dim 1).

    Inference (`training_mode` 0, the default): mean/var are the inputs `input_mean`
    and `input_var`. Training (`training_mode=1`, as in training-mode exports): mean and
    (biased) var are the batch statistics over every dim but 1, and the optional outputs
    `running_mean` / `running_var` are `input_mean * momentum + batch_mean * (1 -
    momentum)` (likewise for var), momentum default 0.9. The running outputs exist only
    in training mode (docs/training.md)."""

    name = "graph.batch_normalization"
    ONNX_TYPE: ClassVar[str] = "BatchNormalization"
    X = operand_def(TensorType)
    scale = operand_def(TensorType)
    B = operand_def(TensorType)
    input_mean = operand_def(TensorType)
    input_var = operand_def(TensorType)
    Y = result_def(TensorType)
    running_mean = opt_result_def(TensorType)
    running_var = opt_result_def(TensorType)
    epsilon = float_prop()
    momentum = float_prop()
    training_mode = int_prop()
    spatial = int_prop()  # opset < 9

    irdl_options = (AttrSizedResultSegments(as_property=True),)  # + GraphOp's

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank_at_least("X", self.X, 2)
        c = _sh(self.X)[1]
        same_element_type(self, [self.scale, self.B])
        same_element_type(self, [self.input_mean, self.input_var])
        for name in ("scale", "B", "input_mean", "input_var"):
            s = _sh(getattr(self, name))
            if s != (c,):
                raise VerifyException(
                    f"{name} has shape {sr.fmt(s)}, input has {c} channels (expected [{c}])"
                )
        training = bool(self.attr("training_mode", 0))
        out: list[Attribute | None] = [self.X.type]
        for r in (self.running_mean, self.running_var):
            if r is not None:
                if not training:
                    raise VerifyException(
                        "running_mean/running_var outputs need training_mode=1"
                    )
                out.append(self.input_mean.type)
        return out


@irdl_op_definition
class CastOp(GraphOp):
    """ONNX Cast: convert elements to the type `to` (a TensorProto data type code)."""

    name = "graph.cast"
    ONNX_TYPE: ClassVar[str] = "Cast"
    traits = traits_def(Elementwise())
    input = operand_def(TensorType)
    output = result_def(TensorType)
    round_mode = string_prop()
    saturate = int_prop()
    to = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        to = self.attr("to")
        if to is None:
            raise VerifyException("attribute 'to' is required")
        el = _onnx_element_type(to)
        if el is None:
            return None
        return [_tensor(el, _sh(self.input))]


@irdl_op_definition
class CastLikeOp(GraphOp):
    """ONNX CastLike: convert `input` to the element type of `target_type`."""

    name = "graph.cast_like"
    ONNX_TYPE: ClassVar[str] = "CastLike"
    traits = traits_def(Elementwise())
    input = operand_def(TensorType)
    target_type = operand_def(TensorType)
    output = result_def(TensorType)
    round_mode = string_prop()
    saturate = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [_tensor(_el(self.target_type), _sh(self.input))]


@irdl_op_definition
class CeilOp(UnaryXOp):
    """ONNX Ceil: smallest integer >= x, elementwise."""

    name = "graph.ceil"
    ONNX_TYPE: ClassVar[str] = "Ceil"
    traits = traits_def(Elementwise())


@irdl_op_definition
class CeluOp(UnaryXOp):
    """ONNX Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    name = "graph.celu"
    ONNX_TYPE: ClassVar[str] = "Celu"
    traits = traits_def(Elementwise())
    alpha = float_prop()


@irdl_op_definition
class ClipOp(GraphOp):
    """ONNX Clip: min(max(input, min), max); bounds as scalar inputs (opset >= 11) or
    `min`/`max` attributes (older opsets)."""

    name = "graph.clip"
    ONNX_TYPE: ClassVar[str] = "Clip"
    traits = traits_def(Elementwise())
    input = operand_def(TensorType)
    min = opt_operand_def(TensorType)
    max = opt_operand_def(TensorType)
    output = result_def(TensorType)
    min_attr = float_prop("min")  # opset < 11
    max_attr = float_prop("max")  # opset < 11

    def infer_result_types(self) -> list[Attribute | None] | None:
        for name in ("min", "max"):
            v = getattr(self, name)
            if v is not None:
                _expect_rank(name, v, 0)
                if _el(v) != _el(self.input):
                    raise VerifyException(
                        f"{name} has element type {_el(v)}, input has {_el(self.input)}"
                    )
        return [self.input.type]


@irdl_op_definition
class ConcatOp(GraphOp):
    """ONNX Concat: join the inputs along `axis`."""

    name = "graph.concat"
    ONNX_TYPE: ClassVar[str] = "Concat"
    traits = traits_def(DataMovement(data_operands=None))
    inputs = var_operand_def(TensorType)
    concat_result = result_def(TensorType)
    axis = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        axis = self.attr("axis")
        if axis is None:
            raise VerifyException("attribute 'axis' is required")
        el = same_element_type(self, list(self.inputs))
        return [_tensor(el, sr.concat_shape([_sh(v) for v in self.inputs], axis))]


@irdl_op_definition
class ConstantOfShapeOp(GraphOp):
    """ONNX ConstantOfShape: a tensor of shape `input` (1-D i64) filled with `value`
    (a one-element tensor; default 0.0 f32)."""

    name = "graph.constant_of_shape"
    ONNX_TYPE: ClassVar[str] = "ConstantOfShape"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    value = tensor_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank("input", self.input, 1)
        _expect_el("input", self.input, [IntegerType(64)], "i64")
        value = self.properties.get("value")
        if value is not None:
            vt = value.get_type()  # type: ignore[union-attr]
            n = int(np.prod(shape_of(vt), dtype=np.int64))
            if n != 1:
                raise VerifyException(f"value must have one element, has {n}")
            el = vt.element_type  # type: ignore[union-attr]
        else:
            el = f32
        shape = _ints_of(self.const_value(self.input))
        out = self.output.type
        if shape is None:
            n = _sh(self.input)[0]
            if not isinstance(out, TensorType) or len(out.get_shape()) != n:
                raise VerifyException(f"result must have rank {n} (the length of input)")
            return [_tensor(el, out.get_shape())]
        return [_tensor(el, shape)]


@irdl_op_definition
class ConvOp(GraphOp):
    """ONNX Conv: N-d convolution of X (N, C, ...) with W (M, C/group, k...), plus
    optional bias B (M); auto_pad, dilations, group, kernel_shape, pads, strides."""

    name = "graph.conv"
    ONNX_TYPE: ClassVar[str] = "Conv"
    traits = traits_def(MatrixCompute())
    X = operand_def(TensorType)
    W = operand_def(TensorType)
    B = opt_operand_def(TensorType)
    Y = result_def(TensorType)
    auto_pad = string_prop()
    dilations = ints_prop()
    group = int_prop()
    kernel_shape = ints_prop()
    pads = ints_prop()
    strides = ints_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        el = same_element_type(self, [v for v in (self.X, self.W, self.B) if v is not None])
        _expect_rank_at_least("input", self.X, 3)
        x, w = _sh(self.X), _sh(self.W)
        if len(w) != len(x):
            raise VerifyException(f"weight has rank {len(w)}, input has rank {len(x)}")
        group = self.attr("group", 1)
        if group <= 0 or w[0] % group:
            raise VerifyException(
                f"weight has {w[0]} output channels, not a multiple of group={group}"
            )
        if x[1] != w[1] * group:
            raise VerifyException(
                f"input has {x[1]} channels, weight expects {w[1] * group} (group={group})"
            )
        kernel = self.attr("kernel_shape")
        if kernel is not None and tuple(kernel) != w[2:]:
            raise VerifyException(
                f"kernel_shape {kernel} differs from the weight's spatial dims {list(w[2:])}"
            )
        if self.B is not None and _sh(self.B) != (w[0],):
            raise VerifyException(
                f"bias has shape {sr.fmt(_sh(self.B))}, expected [{w[0]}]"
            )
        return [_tensor(el, (x[0], w[0], *_window_out(self, self.X, w[2:])))]


@irdl_op_definition
class ConvTransposeOp(GraphOp):
    """ONNX ConvTranspose: transposed convolution of X (N, C, ...) with W
    (C, M/group, k...), optional bias B (M)."""

    name = "graph.conv_transpose"
    ONNX_TYPE: ClassVar[str] = "ConvTranspose"
    traits = traits_def(MatrixCompute())
    X = operand_def(TensorType)
    W = operand_def(TensorType)
    B = opt_operand_def(TensorType)
    Y = result_def(TensorType)
    auto_pad = string_prop()
    dilations = ints_prop()
    group = int_prop()
    kernel_shape = ints_prop()
    output_padding = ints_prop()
    output_shape = ints_prop()
    pads = ints_prop()
    strides = ints_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        el = same_element_type(self, [v for v in (self.X, self.W, self.B) if v is not None])
        _expect_rank_at_least("input", self.X, 3)
        x, w = _sh(self.X), _sh(self.W)
        if len(w) != len(x):
            raise VerifyException(f"weight has rank {len(w)}, input has rank {len(x)}")
        group = self.attr("group", 1)
        if group <= 0 or x[1] % group:
            raise VerifyException(f"input has {x[1]} channels, not a multiple of group={group}")
        if x[1] != w[0]:
            raise VerifyException(
                f"input has {x[1]} channels, weight expects {w[0]} (group={group})"
            )
        m = w[1] * group
        kernel = self.attr("kernel_shape")
        if kernel is not None and tuple(kernel) != w[2:]:
            raise VerifyException(
                f"kernel_shape {kernel} differs from the weight's spatial dims {list(w[2:])}"
            )
        if self.B is not None and _sh(self.B) != (m,):
            raise VerifyException(f"bias has shape {sr.fmt(_sh(self.B))}, expected [{m}]")
        spatial = sr.conv_transpose_output_shape(
            x[2:],
            w[2:],
            self.attr("strides"),
            self.attr("pads"),
            self.attr("dilations"),
            self.attr("output_padding"),
            self.attr("output_shape"),
            self.attr("auto_pad", "NOTSET"),
        )
        return [_tensor(el, (x[0], m, *spatial))]


@irdl_op_definition
class CosOp(UnaryInputOp):
    """ONNX Cos: cos(x) elementwise."""

    name = "graph.cos"
    ONNX_TYPE: ClassVar[str] = "Cos"
    traits = traits_def(Elementwise())


@irdl_op_definition
class CoshOp(UnaryInputOp):
    """ONNX Cosh: cosh(x) elementwise."""

    name = "graph.cosh"
    ONNX_TYPE: ClassVar[str] = "Cosh"
    traits = traits_def(Elementwise())


@irdl_op_definition
class CumSumOp(GraphOp):
    """ONNX CumSum: cumulative sum of x along the scalar `axis` input
    (exclusive / reverse variants)."""

    name = "graph.cum_sum"
    ONNX_TYPE: ClassVar[str] = "CumSum"
    x = operand_def(TensorType)
    axis = operand_def(TensorType)
    y = result_def(TensorType)
    exclusive = int_prop()
    reverse = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank("axis", self.axis, [0, 1])
        _expect_el("axis", self.axis, _INDEX_TYPES, "i32 or i64")
        ax = _ints_of(self.const_value(self.axis))
        if ax:
            sr.normalize_axis(ax[0], len(_sh(self.x)))
        return [self.x.type]


@irdl_op_definition
class DepthToSpaceOp(UnaryInputOp):
    """ONNX DepthToSpace: move blocks of channel data into (blocksize x blocksize)
    spatial blocks (mode DCR or CRD)."""

    name = "graph.depth_to_space"
    ONNX_TYPE: ClassVar[str] = "DepthToSpace"
    traits = traits_def(DataMovement())
    blocksize = int_prop()
    mode = string_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank("input", self.input, 4)
        n, c, h, w = _sh(self.input)
        b = self.attr("blocksize")
        if b is None or b <= 0:
            raise VerifyException("attribute 'blocksize' (> 0) is required")
        if c % (b * b):
            raise VerifyException(f"input has {c} channels, not a multiple of blocksize^2={b * b}")
        return [_tensor(_el(self.input), (n, c // (b * b), h * b, w * b))]


@irdl_op_definition
class DivOp(ElementwiseBinaryOp):
    """ONNX Div: elementwise quotient with broadcasting (integer division truncates)."""

    name = "graph.div"
    ONNX_TYPE: ClassVar[str] = "Div"


@irdl_op_definition
class DropoutOp(GraphOp):
    """ONNX Dropout: identity at inference (training_mode false); the optional mask
    output is all true."""

    name = "graph.dropout"
    ONNX_TYPE: ClassVar[str] = "Dropout"
    traits = traits_def(ViewLike())
    data = operand_def(TensorType)
    ratio = opt_operand_def(TensorType)
    training_mode = opt_operand_def(TensorType)
    output = result_def(TensorType)
    mask = opt_result_def(TensorType)
    seed = int_prop()
    ratio_attr = float_prop("ratio")  # opset < 12

    def infer_result_types(self) -> list[Attribute | None] | None:
        if self.ratio is not None:
            _expect_rank("ratio", self.ratio, 0)
        if self.training_mode is not None:
            _expect_rank("training_mode", self.training_mode, 0)
            _expect_el("training_mode", self.training_mode, [I1], "i1 (bool)")
        out: list[Attribute | None] = [self.data.type]
        if self.mask is not None:
            out.append(_tensor(I1, _sh(self.data)))
        return out


@irdl_op_definition
class EinsumOp(GraphOp):
    """ONNX Einsum: Einstein summation over the inputs as given by `equation`."""

    name = "graph.einsum"
    ONNX_TYPE: ClassVar[str] = "Einsum"
    Inputs = var_operand_def(TensorType)
    Output = result_def(TensorType)
    equation = string_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        eq = self.attr("equation")
        if eq is None:
            raise VerifyException("attribute 'equation' is required")
        el = same_element_type(self, list(self.Inputs))
        return [_tensor(el, sr.einsum_shape(eq, [_sh(v) for v in self.Inputs]))]


@irdl_op_definition
class EluOp(UnaryXOp):
    """ONNX Elu: x if x >= 0 else alpha * (exp(x) - 1)."""

    name = "graph.elu"
    ONNX_TYPE: ClassVar[str] = "Elu"
    traits = traits_def(Elementwise())
    alpha = float_prop()


@irdl_op_definition
class EqualOp(ComparisonOp):
    """ONNX Equal: elementwise A == B with broadcasting, i1 result."""

    name = "graph.equal"
    ONNX_TYPE: ClassVar[str] = "Equal"


@irdl_op_definition
class ErfOp(UnaryInputOp):
    """ONNX Erf: the Gauss error function, elementwise."""

    name = "graph.erf"
    ONNX_TYPE: ClassVar[str] = "Erf"
    traits = traits_def(Elementwise())


@irdl_op_definition
class ExpOp(UnaryInputOp):
    """ONNX Exp: e^x elementwise."""

    name = "graph.exp"
    ONNX_TYPE: ClassVar[str] = "Exp"
    traits = traits_def(Elementwise())


@irdl_op_definition
class ExpandOp(GraphOp):
    """ONNX Expand: broadcast `input` to the shape given by the `shape` input
    (numpy broadcasting of both shapes)."""

    name = "graph.expand"
    ONNX_TYPE: ClassVar[str] = "Expand"
    traits = traits_def(DataMovement())
    input = operand_def(TensorType)
    shape = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank("shape", self.shape, 1)
        _expect_el("shape", self.shape, [IntegerType(64)], "i64")
        target = _ints_of(self.const_value(self.shape))
        if target is None:
            out = self.output.type
            if not _is_static(out):
                return None
            target = list(out.get_shape())  # type: ignore[union-attr]
            if len(target) != _sh(self.shape)[0]:
                raise VerifyException(
                    f"result has rank {len(target)}, shape input has {_sh(self.shape)[0]} values"
                )
        return [_tensor(_el(self.input), broadcast_shapes(_sh(self.input), target))]


@irdl_op_definition
class FlattenOp(UnaryInputOp):
    """ONNX Flatten: reshape to 2-D (prod(dims[:axis]), prod(dims[axis:])); axis default 1."""

    name = "graph.flatten"
    ONNX_TYPE: ClassVar[str] = "Flatten"
    traits = traits_def(ViewLike())
    axis = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [_tensor(_el(self.input), sr.flatten_shape(_sh(self.input), self.attr("axis", 1)))]


@irdl_op_definition
class FloorOp(UnaryXOp):
    """ONNX Floor: largest integer <= x, elementwise."""

    name = "graph.floor"
    ONNX_TYPE: ClassVar[str] = "Floor"
    traits = traits_def(Elementwise())


@irdl_op_definition
class GatherOp(GraphOp):
    """ONNX Gather: take entries of `data` along `axis` at `indices` (negative indices
    count from the end); result shape data[:axis] + indices + data[axis+1:]."""

    name = "graph.gather"
    ONNX_TYPE: ClassVar[str] = "Gather"
    traits = traits_def(DataMovement())
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_el("indices", self.indices, _INDEX_TYPES, "i32 or i64")
        out = sr.gather_shape(_sh(self.data), _sh(self.indices), self.attr("axis", 0))
        return [_tensor(_el(self.data), out)]


@irdl_op_definition
class GatherElementsOp(GraphOp):
    """ONNX GatherElements: out[i][j]... = data[..index along axis = indices[i][j]...];
    the result has the shape of `indices`."""

    name = "graph.gather_elements"
    ONNX_TYPE: ClassVar[str] = "GatherElements"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_el("indices", self.indices, _INDEX_TYPES, "i32 or i64")
        d, i = _sh(self.data), _sh(self.indices)
        if len(d) != len(i):
            raise VerifyException(f"indices rank {len(i)} differs from data rank {len(d)}")
        sr.normalize_axis(self.attr("axis", 0), len(d))
        return [_tensor(_el(self.data), i)]


@irdl_op_definition
class GatherNDOp(GraphOp):
    """ONNX GatherND: gather slices of `data` addressed by the last dimension of
    `indices`, after `batch_dims` shared leading dimensions."""

    name = "graph.gather_nd"
    ONNX_TYPE: ClassVar[str] = "GatherND"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    batch_dims = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_el("indices", self.indices, [IntegerType(64)], "i64")
        out = sr.gather_nd_shape(_sh(self.data), _sh(self.indices), self.attr("batch_dims", 0))
        return [_tensor(_el(self.data), out)]


@irdl_op_definition
class GeluOp(UnaryXOp):
    """ONNX Gelu: x * Phi(x) (approximate = "none") or its tanh approximation."""

    name = "graph.gelu"
    ONNX_TYPE: ClassVar[str] = "Gelu"
    traits = traits_def(Elementwise())
    approximate = string_prop()


@irdl_op_definition
class GemmOp(GraphOp):
    """ONNX Gemm: Y = alpha * A' B' + beta * C, A' = A^T if transA, B' = B^T if transB;
    C broadcasts to (M, N)."""

    name = "graph.gemm"
    ONNX_TYPE: ClassVar[str] = "Gemm"
    traits = traits_def(MatrixCompute())
    A = operand_def(TensorType)
    B = operand_def(TensorType)
    C = opt_operand_def(TensorType)
    Y = result_def(TensorType)
    alpha = float_prop()
    beta = float_prop()
    transA = int_prop()
    transB = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        el = same_element_type(self, [v for v in (self.A, self.B, self.C) if v is not None])
        out = sr.gemm_shape(_sh(self.A), _sh(self.B), self.attr("transA", 0), self.attr("transB", 0))
        if self.C is not None:
            sr.unidirectional_broadcast(_sh(self.C), out, "C")
        return [_tensor(el, out)]


@irdl_op_definition
class GlobalAveragePoolOp(GlobalPoolOp):
    """ONNX GlobalAveragePool: mean over all spatial dims, kept as size 1."""

    name = "graph.global_average_pool"
    ONNX_TYPE: ClassVar[str] = "GlobalAveragePool"


@irdl_op_definition
class GlobalMaxPoolOp(GlobalPoolOp):
    """ONNX GlobalMaxPool: max over all spatial dims, kept as size 1."""

    name = "graph.global_max_pool"
    ONNX_TYPE: ClassVar[str] = "GlobalMaxPool"


@irdl_op_definition
class GreaterOp(ComparisonOp):
    """ONNX Greater: elementwise A > B with broadcasting, i1 result."""

    name = "graph.greater"
    ONNX_TYPE: ClassVar[str] = "Greater"


@irdl_op_definition
class GreaterOrEqualOp(ComparisonOp):
    """ONNX GreaterOrEqual: elementwise A >= B with broadcasting, i1 result."""

    name = "graph.greater_or_equal"
    ONNX_TYPE: ClassVar[str] = "GreaterOrEqual"


@irdl_op_definition
class HardSigmoidOp(UnaryXOp):
    """ONNX HardSigmoid: max(0, min(1, alpha * x + beta)) (defaults 0.2, 0.5)."""

    name = "graph.hard_sigmoid"
    ONNX_TYPE: ClassVar[str] = "HardSigmoid"
    traits = traits_def(Elementwise())
    alpha = float_prop()
    beta = float_prop()


@irdl_op_definition
class HardSwishOp(UnaryXOp):
    """ONNX HardSwish: x * max(0, min(1, x / 6 + 0.5))."""

    name = "graph.hard_swish"
    ONNX_TYPE: ClassVar[str] = "HardSwish"
    traits = traits_def(Elementwise())


@irdl_op_definition
class HardmaxOp(AxisUnaryOp):
    """ONNX Hardmax: 1 at the first maximum along `axis` (default -1), 0 elsewhere."""

    name = "graph.hardmax"
    ONNX_TYPE: ClassVar[str] = "Hardmax"


@irdl_op_definition
class IdentityOp(UnaryInputOp):
    """ONNX Identity: the input, unchanged."""

    name = "graph.identity"
    ONNX_TYPE: ClassVar[str] = "Identity"
    traits = traits_def(Elementwise(), ViewLike())


@irdl_op_definition
class InstanceNormalizationOp(GraphOp):
    """ONNX InstanceNormalization: normalise each (n, c) slice over the spatial dims,
    then output = scale[c] * x_hat + B[c]."""

    name = "graph.instance_normalization"
    ONNX_TYPE: ClassVar[str] = "InstanceNormalization"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    B = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = float_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        same_element_type(self, [self.input, self.scale, self.B])
        _expect_rank_at_least("input", self.input, 3)
        c = _sh(self.input)[1]
        for name in ("scale", "B"):
            s = _sh(getattr(self, name))
            if s != (c,):
                raise VerifyException(
                    f"{name} has shape {sr.fmt(s)}, input has {c} channels (expected [{c}])"
                )
        return [self.input.type]


@irdl_op_definition
class IsInfOp(UnaryXOp):
    """ONNX IsInf: i1 mask of +inf (detect_positive) / -inf (detect_negative) elements."""

    name = "graph.is_inf"
    ONNX_TYPE: ClassVar[str] = "IsInf"
    traits = traits_def(Elementwise())
    detect_negative = int_prop()
    detect_positive = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [_tensor(I1, _sh(self.X))]


@irdl_op_definition
class IsNaNOp(UnaryXOp):
    """ONNX IsNaN: i1 mask of NaN elements."""

    name = "graph.is_nan"
    ONNX_TYPE: ClassVar[str] = "IsNaN"
    traits = traits_def(Elementwise())

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [_tensor(I1, _sh(self.X))]


@irdl_op_definition
class LRNOp(UnaryXOp):
    """ONNX LRN: local response normalisation across `size` neighbouring channels:
    x / (bias + alpha / size * sum(x^2))^beta."""

    name = "graph.lrn"
    ONNX_TYPE: ClassVar[str] = "LRN"
    alpha = float_prop()
    beta = float_prop()
    bias = float_prop()
    size = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        if self.attr("size") is None:
            raise VerifyException("attribute 'size' is required")
        _expect_rank_at_least("X", self.X, 3)
        return [self.X.type]


@irdl_op_definition
class LayerNormalizationOp(GraphOp):
    """ONNX LayerNormalization: normalise over dims [axis, rank) (axis default -1), then
    Y = x_hat * Scale + B; optional Mean and InvStdDev outputs (stash_type precision)."""

    name = "graph.layer_normalization"
    ONNX_TYPE: ClassVar[str] = "LayerNormalization"
    X = operand_def(TensorType)
    Scale = operand_def(TensorType)
    B = opt_operand_def(TensorType)
    Y = result_def(TensorType)
    Mean = opt_result_def(TensorType)
    InvStdDev = opt_result_def(TensorType)
    axis = int_prop()
    epsilon = float_prop()
    stash_type = int_prop()

    irdl_options = (AttrSizedResultSegments(as_property=True),)  # + GraphOp's

    def infer_result_types(self) -> list[Attribute | None] | None:
        x = _sh(self.X)
        axis = sr.normalize_axis(self.attr("axis", -1), len(x))
        norm = x[axis:]
        same_element_type(self, [v for v in (self.X, self.Scale, self.B) if v is not None])
        sr.unidirectional_broadcast(_sh(self.Scale), norm, "Scale")
        if self.B is not None:
            sr.unidirectional_broadcast(_sh(self.B), norm, "B")
        out: list[Attribute | None] = [self.X.type]
        stat_el = _onnx_element_type(self.attr("stash_type", 1))
        stat_shape = (*x[:axis], *([1] * len(norm)))
        for r in (self.Mean, self.InvStdDev):
            if r is not None:
                out.append(None if stat_el is None else _tensor(stat_el, stat_shape))
        return out


@irdl_op_definition
class LeakyReluOp(UnaryXOp):
    """ONNX LeakyRelu: x if x >= 0 else alpha * x (alpha default 0.01)."""

    name = "graph.leaky_relu"
    ONNX_TYPE: ClassVar[str] = "LeakyRelu"
    traits = traits_def(Elementwise())
    alpha = float_prop()


@irdl_op_definition
class LessOp(ComparisonOp):
    """ONNX Less: elementwise A < B with broadcasting, i1 result."""

    name = "graph.less"
    ONNX_TYPE: ClassVar[str] = "Less"


@irdl_op_definition
class LessOrEqualOp(ComparisonOp):
    """ONNX LessOrEqual: elementwise A <= B with broadcasting, i1 result."""

    name = "graph.less_or_equal"
    ONNX_TYPE: ClassVar[str] = "LessOrEqual"


@irdl_op_definition
class LogOp(UnaryInputOp):
    """ONNX Log: natural logarithm, elementwise."""

    name = "graph.log"
    ONNX_TYPE: ClassVar[str] = "Log"
    traits = traits_def(Elementwise())


@irdl_op_definition
class LogSoftmaxOp(AxisUnaryOp):
    """ONNX LogSoftmax: log(softmax(x)) along `axis` (default -1)."""

    name = "graph.log_softmax"
    ONNX_TYPE: ClassVar[str] = "LogSoftmax"


@irdl_op_definition
class MatMulOp(GraphOp):
    """ONNX MatMul: numpy.matmul (batch dims broadcast, 1-D operands promoted)."""

    name = "graph.matmul"
    ONNX_TYPE: ClassVar[str] = "MatMul"
    traits = traits_def(MatrixCompute())
    A = operand_def(TensorType)
    B = operand_def(TensorType)
    Y = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        el = same_element_type(self, [self.A, self.B])
        return [_tensor(el, sr.matmul_shape(_sh(self.A), _sh(self.B)))]


@irdl_op_definition
class MaxOp(VariadicElementwiseOp):
    """ONNX Max: elementwise maximum of all inputs, with broadcasting."""

    name = "graph.max"
    ONNX_TYPE: ClassVar[str] = "Max"
    max = result_def(TensorType)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    """ONNX MaxPool: max over each window; optional Indices output (i64, flattened
    index into X; storage_order 0 row-major, 1 column-major)."""

    name = "graph.max_pool"
    ONNX_TYPE: ClassVar[str] = "MaxPool"
    Y = result_def(TensorType)
    Indices = opt_result_def(TensorType)
    storage_order = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        shape = self._pool_shape()
        out: list[Attribute | None] = [_tensor(_el(self.X), shape)]
        if self.Indices is not None:
            out.append(_tensor(IntegerType(64), shape))
        return out


@irdl_op_definition
class MeanOp(VariadicElementwiseOp):
    """ONNX Mean: elementwise mean of all inputs, with broadcasting."""

    name = "graph.mean"
    ONNX_TYPE: ClassVar[str] = "Mean"
    mean = result_def(TensorType)


@irdl_op_definition
class MinOp(VariadicElementwiseOp):
    """ONNX Min: elementwise minimum of all inputs, with broadcasting."""

    name = "graph.min"
    ONNX_TYPE: ClassVar[str] = "Min"
    min = result_def(TensorType)


@irdl_op_definition
class MishOp(UnaryXOp):
    """ONNX Mish: x * tanh(softplus(x))."""

    name = "graph.mish"
    ONNX_TYPE: ClassVar[str] = "Mish"
    traits = traits_def(Elementwise())


@irdl_op_definition
class ModOp(ElementwiseBinaryOp):
    """ONNX Mod: remainder with the divisor's sign (fmod=0, integers) or C fmod (fmod=1)."""

    name = "graph.mod"
    ONNX_TYPE: ClassVar[str] = "Mod"
    fmod = int_prop()


@irdl_op_definition
class MulOp(ElementwiseBinaryOp):
    """ONNX Mul: elementwise product with broadcasting."""

    name = "graph.mul"
    ONNX_TYPE: ClassVar[str] = "Mul"


@irdl_op_definition
class NegOp(UnaryXOp):
    """ONNX Neg: -x elementwise."""

    name = "graph.neg"
    ONNX_TYPE: ClassVar[str] = "Neg"
    traits = traits_def(Elementwise())


@irdl_op_definition
class NonZeroOp(UnaryXOp):
    """ONNX NonZero: indices (rank x count, i64) of the non-zero elements, as
    numpy.nonzero. The count depends on values: the result may be `tensor<Rx?xi64>`
    (DYNAMIC_RESULT_SHAPE); with a constant input the verifier checks the exact count."""

    name = "graph.non_zero"
    ONNX_TYPE: ClassVar[str] = "NonZero"
    DYNAMIC_RESULT_SHAPE: ClassVar[bool] = True

    def infer_result_types(self) -> list[Attribute | None] | None:
        rank = len(_sh(self.X))
        value = self.const_value(self.X)
        if value is not None:
            return [_tensor(IntegerType(64), (rank, int(np.count_nonzero(value))))]
        out = self.Y.type
        assert isinstance(out, TensorType)
        shape = out.get_shape()
        if out.element_type != IntegerType(64) or len(shape) != 2 or shape[0] != rank:
            raise VerifyException(
                f"result must be tensor<{rank}x?xi64> (input rank {rank}), got {out}"
            )
        return [None]


@irdl_op_definition
class NotOp(UnaryXOp):
    """ONNX Not: elementwise logical negation of an i1 tensor."""

    name = "graph.not"
    ONNX_TYPE: ClassVar[str] = "Not"
    traits = traits_def(Elementwise())

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_el("X", self.X, [I1], "i1 (bool)")
        return [self.X.type]


@irdl_op_definition
class OrOp(LogicalBinaryOp):
    """ONNX Or: elementwise logical or of i1 tensors with broadcasting."""

    name = "graph.or"
    ONNX_TYPE: ClassVar[str] = "Or"


@irdl_op_definition
class PReluOp(GraphOp):
    """ONNX PRelu: x if x >= 0 else slope * x; slope broadcasts to X."""

    name = "graph.prelu"
    ONNX_TYPE: ClassVar[str] = "PRelu"
    traits = traits_def(Elementwise())
    X = operand_def(TensorType)
    slope = operand_def(TensorType)
    Y = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        same_element_type(self, [self.X, self.slope])
        sr.unidirectional_broadcast(_sh(self.slope), _sh(self.X), "slope")
        return [self.X.type]


@irdl_op_definition
class PadOp(GraphOp):
    """ONNX Pad: pad `data` by `pads` ([begin..., end...] per axis of `axes`) with
    mode constant (constant_value, default 0) / reflect / edge / wrap. Opsets < 11
    give pads (and value) as attributes."""

    name = "graph.pad"
    ONNX_TYPE: ClassVar[str] = "Pad"
    traits = traits_def(DataMovement())
    data = operand_def(TensorType)
    pads = opt_operand_def(TensorType)
    constant_value = opt_operand_def(TensorType)
    axes = opt_operand_def(TensorType)
    output = result_def(TensorType)
    mode = string_prop()
    pads_attr = ints_prop("pads")  # opset < 11
    value = float_prop()  # opset < 11

    def infer_result_types(self) -> list[Attribute | None] | None:
        if self.pads is not None:
            _expect_rank("pads", self.pads, 1)
            _expect_el("pads", self.pads, [IntegerType(64)], "i64")
            pads = _ints_of(self.const_value(self.pads))
        else:
            pads = self.attr("pads")
            if pads is None:
                raise VerifyException("needs a 'pads' input or attribute")
        if self.constant_value is not None:
            _expect_rank("constant_value", self.constant_value, [0, 1])
            if _el(self.constant_value) != _el(self.data):
                raise VerifyException(
                    f"constant_value has element type {_el(self.constant_value)}, "
                    f"data has {_el(self.data)}"
                )
        axes = None
        if self.axes is not None:
            _expect_rank("axes", self.axes, 1)
            axes = _ints_of(self.const_value(self.axes))
            if axes is None:
                return _same_rank_result(self, self.data, self.output)
        if pads is None:
            return _same_rank_result(self, self.data, self.output)
        return [_tensor(_el(self.data), sr.pad_shape(_sh(self.data), pads, axes))]


def _same_rank_result(op: GraphOp, x: SSAValue, result: SSAValue) -> list[Attribute | None]:
    """For shapes that depend on non-constant operand values: check rank and type."""
    out = result.type
    assert isinstance(out, TensorType)
    if len(out.get_shape()) != len(_sh(x)):
        raise VerifyException(f"result has rank {len(out.get_shape())}, input has rank {len(_sh(x))}")
    if out.element_type != _el(x):
        raise VerifyException(f"result has element type {out.element_type}, input has {_el(x)}")
    return [None]


@irdl_op_definition
class PowOp(GraphOp):
    """ONNX Pow: X ** Y elementwise with broadcasting (the result has X's type)."""

    name = "graph.pow"
    ONNX_TYPE: ClassVar[str] = "Pow"
    traits = traits_def(Elementwise())
    X = operand_def(TensorType)
    Y = operand_def(TensorType)
    Z = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [_tensor(_el(self.X), broadcast_shapes(_sh(self.X), _sh(self.Y)))]


@irdl_op_definition
class RangeOp(GraphOp):
    """ONNX Range: 1-D [start, start + delta, ...) up to `limit` (scalar inputs)."""

    name = "graph.range"
    ONNX_TYPE: ClassVar[str] = "Range"
    start = operand_def(TensorType)
    limit = operand_def(TensorType)
    delta = operand_def(TensorType)
    output = result_def(TensorType)
    stash_type = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        el = same_element_type(self, [self.start, self.limit, self.delta])
        for name in ("start", "limit", "delta"):
            _expect_rank(name, getattr(self, name), [0, 1])
        vals = [self.const_value(v) for v in (self.start, self.limit, self.delta)]
        if any(v is None for v in vals):
            out = self.output.type
            assert isinstance(out, TensorType)
            if len(out.get_shape()) != 1:
                raise VerifyException(f"result must be 1-D, got {out}")
            return [_tensor(el, out.get_shape())]
        start, limit, delta = (np.asarray(v).reshape(-1)[0].item() for v in vals)
        return [_tensor(el, (sr.range_count(start, limit, delta),))]


@irdl_op_definition
class ReciprocalOp(UnaryXOp):
    """ONNX Reciprocal: 1 / x elementwise."""

    name = "graph.reciprocal"
    ONNX_TYPE: ClassVar[str] = "Reciprocal"
    traits = traits_def(Elementwise())


@irdl_op_definition
class ReduceL1Op(ReduceOp):
    """ONNX ReduceL1: sum of absolute values over `axes`."""

    name = "graph.reduce_l1"
    ONNX_TYPE: ClassVar[str] = "ReduceL1"


@irdl_op_definition
class ReduceL2Op(ReduceOp):
    """ONNX ReduceL2: sqrt of the sum of squares over `axes`."""

    name = "graph.reduce_l2"
    ONNX_TYPE: ClassVar[str] = "ReduceL2"


@irdl_op_definition
class ReduceLogSumOp(ReduceOp):
    """ONNX ReduceLogSum: log of the sum over `axes`."""

    name = "graph.reduce_log_sum"
    ONNX_TYPE: ClassVar[str] = "ReduceLogSum"


@irdl_op_definition
class ReduceLogSumExpOp(ReduceOp):
    """ONNX ReduceLogSumExp: log(sum(exp(x))) over `axes`."""

    name = "graph.reduce_log_sum_exp"
    ONNX_TYPE: ClassVar[str] = "ReduceLogSumExp"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """ONNX ReduceMax: maximum over `axes` (all axes when absent)."""

    name = "graph.reduce_max"
    ONNX_TYPE: ClassVar[str] = "ReduceMax"


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """ONNX ReduceMean: mean over `axes` (all axes when absent)."""

    name = "graph.reduce_mean"
    ONNX_TYPE: ClassVar[str] = "ReduceMean"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """ONNX ReduceMin: minimum over `axes` (all axes when absent)."""

    name = "graph.reduce_min"
    ONNX_TYPE: ClassVar[str] = "ReduceMin"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """ONNX ReduceProd: product over `axes` (all axes when absent)."""

    name = "graph.reduce_prod"
    ONNX_TYPE: ClassVar[str] = "ReduceProd"


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """ONNX ReduceSum: sum over `axes` (all axes when absent)."""

    name = "graph.reduce_sum"
    ONNX_TYPE: ClassVar[str] = "ReduceSum"


@irdl_op_definition
class ReduceSumSquareOp(ReduceOp):
    """ONNX ReduceSumSquare: sum of squares over `axes` (all axes when absent)."""

    name = "graph.reduce_sum_square"
    ONNX_TYPE: ClassVar[str] = "ReduceSumSquare"


@irdl_op_definition
class ReluOp(UnaryXOp):
    """ONNX Relu: max(x, 0)."""

    name = "graph.relu"
    ONNX_TYPE: ClassVar[str] = "Relu"
    traits = traits_def(Elementwise())


@irdl_op_definition
class ReshapeOp(GraphOp):
    """ONNX Reshape: `data` with the shape given by the `shape` input (0 copies the
    input dim unless allowzero, -1 is inferred); element count is preserved."""

    name = "graph.reshape"
    ONNX_TYPE: ClassVar[str] = "Reshape"
    traits = traits_def(ViewLike())
    data = operand_def(TensorType)
    shape = operand_def(TensorType)
    reshaped = result_def(TensorType)
    allowzero = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank("shape", self.shape, 1)
        _expect_el("shape", self.shape, [IntegerType(64)], "i64")
        target = _ints_of(self.const_value(self.shape))
        if target is not None:
            out = sr.reshape_shape(_sh(self.data), target, self.attr("allowzero", 0))
            return [_tensor(_el(self.data), out)]
        out_t = self.reshaped.type
        assert isinstance(out_t, TensorType)
        out_shape = out_t.get_shape()
        if len(out_shape) != _sh(self.shape)[0]:
            raise VerifyException(
                f"result has rank {len(out_shape)}, shape input has {_sh(self.shape)[0]} values"
            )
        n_in = int(np.prod(_sh(self.data), dtype=np.int64))
        n_out = int(np.prod(out_shape, dtype=np.int64))
        if n_in != n_out and all(d >= 0 for d in out_shape):
            raise VerifyException(f"{n_in} elements cannot become {n_out}")
        return [_tensor(_el(self.data), out_shape)]


@irdl_op_definition
class ResizeOp(GraphOp):
    """ONNX Resize: interpolate X (mode nearest/linear/cubic) to `sizes`, or to
    floor(dim * scales); roi is used with coordinate_transformation_mode tf_crop_and_resize."""

    name = "graph.resize"
    ONNX_TYPE: ClassVar[str] = "Resize"
    X = operand_def(TensorType)
    roi = opt_operand_def(TensorType)
    scales = opt_operand_def(TensorType)
    sizes = opt_operand_def(TensorType)
    Y = result_def(TensorType)
    antialias = int_prop()
    axes = ints_prop()
    coordinate_transformation_mode = string_prop()
    cubic_coeff_a = float_prop()
    exclude_outside = int_prop()
    extrapolation_value = float_prop()
    keep_aspect_ratio_policy = string_prop()
    mode = string_prop()
    nearest_mode = string_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        scales = sizes = None
        if self.scales is not None:
            _expect_rank("scales", self.scales, 1)
            sv = self.const_value(self.scales)
            scales = None if sv is None else [float(s) for s in sv.reshape(-1)]
        if self.sizes is not None:
            _expect_rank("sizes", self.sizes, 1)
            _expect_el("sizes", self.sizes, [IntegerType(64)], "i64")
            sizes = _ints_of(self.const_value(self.sizes))
        known_scales = scales is not None and len(scales) > 0
        known_sizes = sizes is not None and len(sizes) > 0
        if not known_scales and not known_sizes:
            if self.scales is None and self.sizes is None:
                raise VerifyException("needs a 'scales' or a 'sizes' input")
            return _same_rank_result(self, self.X, self.Y)
        out = sr.resize_shape(
            _sh(self.X),
            scales if known_scales else None,
            sizes if known_sizes else None,
            self.attr("axes"),
            self.attr("keep_aspect_ratio_policy", "stretch"),
        )
        return [_tensor(_el(self.X), out)]


@irdl_op_definition
class RoundOp(UnaryXOp):
    """ONNX Round: round half to even, elementwise."""

    name = "graph.round"
    ONNX_TYPE: ClassVar[str] = "Round"
    traits = traits_def(Elementwise())


@irdl_op_definition
class ScatterElementsOp(GraphOp):
    """ONNX ScatterElements: copy of `data` with `updates` written at `indices` along
    `axis` (reduction none/add/mul/max/min)."""

    name = "graph.scatter_elements"
    ONNX_TYPE: ClassVar[str] = "ScatterElements"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    output = result_def(TensorType)
    axis = int_prop()
    reduction = string_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        same_element_type(self, [self.data, self.updates])
        _expect_el("indices", self.indices, _INDEX_TYPES, "i32 or i64")
        d, i, u = _sh(self.data), _sh(self.indices), _sh(self.updates)
        if len(i) != len(d):
            raise VerifyException(f"indices rank {len(i)} differs from data rank {len(d)}")
        if u != i:
            raise VerifyException(f"updates shape {sr.fmt(u)} differs from indices shape {sr.fmt(i)}")
        sr.normalize_axis(self.attr("axis", 0), len(d))
        return [self.data.type]


@irdl_op_definition
class ScatterNDOp(GraphOp):
    """ONNX ScatterND: copy of `data` with slices `updates` written at the index
    tuples in `indices` (reduction none/add/mul/max/min)."""

    name = "graph.scatter_nd"
    ONNX_TYPE: ClassVar[str] = "ScatterND"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    output = result_def(TensorType)
    reduction = string_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        same_element_type(self, [self.data, self.updates])
        _expect_el("indices", self.indices, [IntegerType(64)], "i64")
        d, i, u = _sh(self.data), _sh(self.indices), _sh(self.updates)
        if len(i) < 1 or i[-1] > len(d):
            raise VerifyException(f"indices shape {sr.fmt(i)} does not index data {sr.fmt(d)}")
        expect = (*i[:-1], *d[i[-1] :])
        if u != expect:
            raise VerifyException(f"updates shape {sr.fmt(u)}, expected {sr.fmt(expect)}")
        return [self.data.type]


@irdl_op_definition
class SeluOp(UnaryXOp):
    """ONNX Selu: gamma * (x if x > 0 else alpha * (exp(x) - 1))."""

    name = "graph.selu"
    ONNX_TYPE: ClassVar[str] = "Selu"
    traits = traits_def(Elementwise())
    alpha = float_prop()
    gamma = float_prop()


@irdl_op_definition
class ShapeOp(GraphOp):
    """ONNX Shape: the input's shape as a 1-D i64 tensor (dims [start, end))."""

    name = "graph.shape"
    ONNX_TYPE: ClassVar[str] = "Shape"
    traits = traits_def(ShapeQuery())
    data = operand_def(TensorType)
    shape = result_def(TensorType)
    end = int_prop()
    start = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        rank = len(_sh(self.data))
        n = len(range(rank)[slice(self.attr("start", 0), self.attr("end"))])
        return [_tensor(IntegerType(64), (n,))]


@irdl_op_definition
class ShrinkOp(GraphOp):
    """ONNX Shrink: x + bias if x < -lambd, x - bias if x > lambd, else 0."""

    name = "graph.shrink"
    ONNX_TYPE: ClassVar[str] = "Shrink"
    traits = traits_def(Elementwise())
    input = operand_def(TensorType)
    output = result_def(TensorType)
    bias = float_prop()
    lambd = float_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [self.input.type]


@irdl_op_definition
class SigmoidOp(UnaryXOp):
    """ONNX Sigmoid: 1 / (1 + exp(-x))."""

    name = "graph.sigmoid"
    ONNX_TYPE: ClassVar[str] = "Sigmoid"
    traits = traits_def(Elementwise())


@irdl_op_definition
class SignOp(UnaryInputOp):
    """ONNX Sign: -1, 0 or 1 by the sign of x."""

    name = "graph.sign"
    ONNX_TYPE: ClassVar[str] = "Sign"
    traits = traits_def(Elementwise())


@irdl_op_definition
class SinOp(UnaryInputOp):
    """ONNX Sin: sin(x) elementwise."""

    name = "graph.sin"
    ONNX_TYPE: ClassVar[str] = "Sin"
    traits = traits_def(Elementwise())


@irdl_op_definition
class SinhOp(UnaryInputOp):
    """ONNX Sinh: sinh(x) elementwise."""

    name = "graph.sinh"
    ONNX_TYPE: ClassVar[str] = "Sinh"
    traits = traits_def(Elementwise())


@irdl_op_definition
class SizeOp(GraphOp):
    """ONNX Size: the number of elements of the input, as a scalar i64."""

    name = "graph.size"
    ONNX_TYPE: ClassVar[str] = "Size"
    traits = traits_def(ShapeQuery())
    data = operand_def(TensorType)
    size = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [_tensor(IntegerType(64), ())]


@irdl_op_definition
class SliceOp(GraphOp):
    """ONNX Slice: data[starts:ends:steps] on `axes` (numpy slicing with clamping).
    Opsets < 10 give starts/ends/axes as attributes."""

    name = "graph.slice"
    ONNX_TYPE: ClassVar[str] = "Slice"
    traits = traits_def(DataMovement())
    data = operand_def(TensorType)
    starts = opt_operand_def(TensorType)
    ends = opt_operand_def(TensorType)
    axes = opt_operand_def(TensorType)
    steps = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axes_attr = ints_prop("axes")  # opset < 10
    ends_attr = ints_prop("ends")  # opset < 10
    starts_attr = ints_prop("starts")  # opset < 10

    def infer_result_types(self) -> list[Attribute | None] | None:
        vals: dict[str, list[int] | None] = {}
        unknown = False
        for name in ("starts", "ends", "axes", "steps"):
            v = getattr(self, name)
            if v is not None:
                _expect_rank(name, v, 1)
                _expect_el(name, v, _INDEX_TYPES, "i32 or i64")
                vals[name] = _ints_of(self.const_value(v))
                unknown = unknown or vals[name] is None
            else:
                vals[name] = self.attr(name) if name != "steps" else None
        if vals["starts"] is None and self.starts is None:
            raise VerifyException("needs 'starts' and 'ends' inputs or attributes")
        if unknown:
            return _same_rank_result(self, self.data, self.output)
        out = sr.slice_shape(
            _sh(self.data), vals["starts"] or [], vals["ends"] or [], vals["axes"], vals["steps"]
        )
        return [_tensor(_el(self.data), out)]


@irdl_op_definition
class SoftmaxOp(AxisUnaryOp):
    """ONNX Softmax: exp(x) / sum(exp(x)) along `axis` (default -1)."""

    name = "graph.softmax"
    ONNX_TYPE: ClassVar[str] = "Softmax"


@irdl_op_definition
class SoftplusOp(UnaryXOp):
    """ONNX Softplus: log(exp(x) + 1)."""

    name = "graph.softplus"
    ONNX_TYPE: ClassVar[str] = "Softplus"
    traits = traits_def(Elementwise())


@irdl_op_definition
class SoftsignOp(UnaryInputOp):
    """ONNX Softsign: x / (1 + |x|)."""

    name = "graph.softsign"
    ONNX_TYPE: ClassVar[str] = "Softsign"
    traits = traits_def(Elementwise())


@irdl_op_definition
class SpaceToDepthOp(UnaryInputOp):
    """ONNX SpaceToDepth: move (blocksize x blocksize) spatial blocks into channels."""

    name = "graph.space_to_depth"
    ONNX_TYPE: ClassVar[str] = "SpaceToDepth"
    traits = traits_def(DataMovement())
    blocksize = int_prop()
    mode = string_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank("input", self.input, 4)
        n, c, h, w = _sh(self.input)
        b = self.attr("blocksize")
        if b is None or b <= 0:
            raise VerifyException("attribute 'blocksize' (> 0) is required")
        if h % b or w % b:
            raise VerifyException(f"spatial dims {h}x{w} are not multiples of blocksize={b}")
        return [_tensor(_el(self.input), (n, c * b * b, h // b, w // b))]


@irdl_op_definition
class SplitOp(GraphOp):
    """ONNX Split: cut `input` along `axis` into parts of sizes `split` (input, or
    attribute in opsets < 13) or into equal parts (the last one smaller)."""

    name = "graph.split"
    ONNX_TYPE: ClassVar[str] = "Split"
    traits = traits_def(DataMovement())
    input = operand_def(TensorType)
    split = opt_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = int_prop()
    num_outputs = int_prop()
    split_attr = ints_prop("split")  # opset < 13

    def infer_result_types(self) -> list[Attribute | None] | None:
        shape = _sh(self.input)
        axis = sr.normalize_axis(self.attr("axis", 0), len(shape))
        n = len(self.outputs)
        num = self.attr("num_outputs")
        if num is not None and num != n:
            raise VerifyException(f"num_outputs={num} but the op has {n} results")
        if self.split is not None:
            _expect_rank("split", self.split, 1)
            _expect_el("split", self.split, [IntegerType(64)], "i64")
            sizes = _ints_of(self.const_value(self.split))
            if sizes is None:
                return None
        else:
            sizes = self.attr("split")
        parts = sr.split_sizes(shape[axis], n, sizes)
        el = _el(self.input)
        return [_tensor(el, (*shape[:axis], p, *shape[axis + 1 :])) for p in parts]


@irdl_op_definition
class SqrtOp(UnaryXOp):
    """ONNX Sqrt: square root, elementwise."""

    name = "graph.sqrt"
    ONNX_TYPE: ClassVar[str] = "Sqrt"
    traits = traits_def(Elementwise())


@irdl_op_definition
class SqueezeOp(GraphOp):
    """ONNX Squeeze: drop the size-1 dims listed in `axes` (input, or attribute in
    opsets < 13), or all size-1 dims when absent."""

    name = "graph.squeeze"
    ONNX_TYPE: ClassVar[str] = "Squeeze"
    traits = traits_def(ViewLike())
    data = operand_def(TensorType)
    axes = opt_operand_def(TensorType)
    squeezed = result_def(TensorType)
    axes_attr = ints_prop("axes")  # opset < 13

    def infer_result_types(self) -> list[Attribute | None] | None:
        if self.axes is not None:
            _expect_rank("axes", self.axes, 1)
            _expect_el("axes", self.axes, [IntegerType(64)], "i64")
            axes = _ints_of(self.const_value(self.axes))
            if axes is None:
                return None
        else:
            axes = self.attr("axes")
        return [_tensor(_el(self.data), sr.squeeze_shape(_sh(self.data), axes))]


@irdl_op_definition
class SubOp(ElementwiseBinaryOp):
    """ONNX Sub: elementwise difference with broadcasting."""

    name = "graph.sub"
    ONNX_TYPE: ClassVar[str] = "Sub"


@irdl_op_definition
class SumOp(VariadicElementwiseOp):
    """ONNX Sum: elementwise sum of all inputs, with broadcasting."""

    name = "graph.sum"
    ONNX_TYPE: ClassVar[str] = "Sum"
    sum = result_def(TensorType)


@irdl_op_definition
class TanOp(UnaryInputOp):
    """ONNX Tan: tan(x) elementwise."""

    name = "graph.tan"
    ONNX_TYPE: ClassVar[str] = "Tan"
    traits = traits_def(Elementwise())


@irdl_op_definition
class TanhOp(UnaryInputOp):
    """ONNX Tanh: tanh(x) elementwise."""

    name = "graph.tanh"
    ONNX_TYPE: ClassVar[str] = "Tanh"
    traits = traits_def(Elementwise())


@irdl_op_definition
class ThresholdedReluOp(UnaryXOp):
    """ONNX ThresholdedRelu: x if x > alpha else 0 (alpha default 1.0)."""

    name = "graph.thresholded_relu"
    ONNX_TYPE: ClassVar[str] = "ThresholdedRelu"
    traits = traits_def(Elementwise())
    alpha = float_prop()


@irdl_op_definition
class TileOp(GraphOp):
    """ONNX Tile: repeat `input` `repeats[i]` times along each axis i."""

    name = "graph.tile"
    ONNX_TYPE: ClassVar[str] = "Tile"
    traits = traits_def(DataMovement())
    input = operand_def(TensorType)
    repeats = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank("repeats", self.repeats, 1)
        _expect_el("repeats", self.repeats, [IntegerType(64)], "i64")
        rank = len(_sh(self.input))
        if _sh(self.repeats)[0] != rank:
            raise VerifyException(
                f"repeats has {_sh(self.repeats)[0]} values, input rank is {rank}"
            )
        reps = _ints_of(self.const_value(self.repeats))
        if reps is None:
            return _same_rank_result(self, self.input, self.output)
        return [_tensor(_el(self.input), sr.tile_shape(_sh(self.input), reps))]


@irdl_op_definition
class TopKOp(GraphOp):
    """ONNX TopK: the K largest (or smallest) elements along `axis` and their i64
    indices; K is a 1-element input (attribute `k` in opsets < 10)."""

    name = "graph.top_k"
    ONNX_TYPE: ClassVar[str] = "TopK"
    X = operand_def(TensorType)
    K = opt_operand_def(TensorType)
    Values = result_def(TensorType)
    Indices = result_def(TensorType)
    axis = int_prop()
    largest = int_prop()
    sorted = int_prop()
    k = int_prop()  # opset < 10

    def infer_result_types(self) -> list[Attribute | None] | None:
        shape = _sh(self.X)
        axis = sr.normalize_axis(self.attr("axis", -1), len(shape))
        if self.K is not None:
            _expect_el("K", self.K, [IntegerType(64)], "i64")
            kv = _ints_of(self.const_value(self.K))
            k = kv[0] if kv else None
        else:
            k = self.attr("k")
            if k is None:
                raise VerifyException("needs a 'K' input or a 'k' attribute")
        if k is None:
            vt = self.Values.type
            assert isinstance(vt, TensorType)
            k = vt.get_shape()[axis] if len(vt.get_shape()) == len(shape) else shape[axis]
        if not 0 <= k <= shape[axis]:
            raise VerifyException(f"k={k} is out of range for axis {axis} of size {shape[axis]}")
        out = (*shape[:axis], k, *shape[axis + 1 :])
        return [_tensor(_el(self.X), out), _tensor(IntegerType(64), out)]


@irdl_op_definition
class TransposeOp(GraphOp):
    """ONNX Transpose: permute the axes by `perm` (default: reverse them)."""

    name = "graph.transpose"
    ONNX_TYPE: ClassVar[str] = "Transpose"
    traits = traits_def(DataMovement())
    data = operand_def(TensorType)
    transposed = result_def(TensorType)
    perm = ints_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        return [_tensor(_el(self.data), sr.transpose_shape(_sh(self.data), self.attr("perm")))]


@irdl_op_definition
class TriluOp(GraphOp):
    """ONNX Trilu: keep the upper (upper=1, default) or lower triangle of the last two
    dims, offset by diagonal `k`; zero the rest."""

    name = "graph.trilu"
    ONNX_TYPE: ClassVar[str] = "Trilu"
    input = operand_def(TensorType)
    k = opt_operand_def(TensorType)
    output = result_def(TensorType)
    upper = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_rank_at_least("input", self.input, 2)
        if self.k is not None:
            _expect_rank("k", self.k, [0, 1])
            _expect_el("k", self.k, [IntegerType(64)], "i64")
        return [self.input.type]


@irdl_op_definition
class UnsqueezeOp(GraphOp):
    """ONNX Unsqueeze: insert size-1 dims at `axes` (of the output); axes is an input
    (an attribute in opsets < 13)."""

    name = "graph.unsqueeze"
    ONNX_TYPE: ClassVar[str] = "Unsqueeze"
    traits = traits_def(ViewLike())
    data = operand_def(TensorType)
    axes = opt_operand_def(TensorType)
    expanded = result_def(TensorType)
    axes_attr = ints_prop("axes")  # opset < 13

    def infer_result_types(self) -> list[Attribute | None] | None:
        if self.axes is not None:
            _expect_rank("axes", self.axes, 1)
            _expect_el("axes", self.axes, [IntegerType(64)], "i64")
            axes = _ints_of(self.const_value(self.axes))
            if axes is None:
                n = len(_sh(self.data)) + _sh(self.axes)[0]
                out = self.expanded.type
                assert isinstance(out, TensorType)
                if len(out.get_shape()) != n:
                    raise VerifyException(f"result has rank {len(out.get_shape())}, expected {n}")
                return None
        else:
            axes = self.attr("axes")
            if axes is None:
                raise VerifyException("needs an 'axes' input or attribute")
        return [_tensor(_el(self.data), sr.unsqueeze_shape(_sh(self.data), axes))]


@irdl_op_definition
class UpsampleOp(GraphOp):
    """ONNX Upsample (deprecated, opset 7-9): resize X by `scales` (input, or attribute
    in opset 7) with mode nearest/linear; output dims floor(dim * scale)."""

    name = "graph.upsample"
    ONNX_TYPE: ClassVar[str] = "Upsample"
    X = operand_def(TensorType)
    scales = opt_operand_def(TensorType)
    Y = result_def(TensorType)
    mode = string_prop()
    scales_attr = floats_prop("scales")  # opset 7

    def infer_result_types(self) -> list[Attribute | None] | None:
        if self.scales is not None:
            _expect_rank("scales", self.scales, 1)
            sv = self.const_value(self.scales)
            scales = None if sv is None else [float(s) for s in sv.reshape(-1)]
        else:
            scales = self.attr("scales")
            if scales is None:
                raise VerifyException("needs a 'scales' input or attribute")
        if scales is None:
            return _same_rank_result(self, self.X, self.Y)
        return [_tensor(_el(self.X), sr.resize_shape(_sh(self.X), scales, None))]


@irdl_op_definition
class WhereOp(GraphOp):
    """ONNX Where: X where condition else Y, elementwise with broadcasting."""

    name = "graph.where"
    ONNX_TYPE: ClassVar[str] = "Where"
    traits = traits_def(Elementwise())
    condition = operand_def(TensorType)
    X = operand_def(TensorType)
    Y = operand_def(TensorType)
    output = result_def(TensorType)

    def infer_result_types(self) -> list[Attribute | None] | None:
        _expect_el("condition", self.condition, [I1], "i1 (bool)")
        el = same_element_type(self, [self.X, self.Y])
        return [_tensor(el, broadcast_shapes(_sh(self.condition), _sh(self.X), _sh(self.Y)))]


@irdl_op_definition
class XorOp(LogicalBinaryOp):
    """ONNX Xor: elementwise logical exclusive or of i1 tensors with broadcasting."""

    name = "graph.xor"
    ONNX_TYPE: ClassVar[str] = "Xor"


# --------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------

GRAPH_OPS: list[type[GraphOp]] = [
    AbsOp,
    AcosOp,
    AcoshOp,
    AddOp,
    AndOp,
    ArgMaxOp,
    ArgMinOp,
    AsinOp,
    AsinhOp,
    AtanOp,
    AtanhOp,
    AveragePoolOp,
    BatchNormalizationOp,
    CastOp,
    CastLikeOp,
    CeilOp,
    CeluOp,
    ClipOp,
    ConcatOp,
    ConstantOfShapeOp,
    ConvOp,
    ConvTransposeOp,
    CosOp,
    CoshOp,
    CumSumOp,
    DepthToSpaceOp,
    DivOp,
    DropoutOp,
    EinsumOp,
    EluOp,
    EqualOp,
    ErfOp,
    ExpOp,
    ExpandOp,
    FlattenOp,
    FloorOp,
    GatherOp,
    GatherElementsOp,
    GatherNDOp,
    GeluOp,
    GemmOp,
    GlobalAveragePoolOp,
    GlobalMaxPoolOp,
    GreaterOp,
    GreaterOrEqualOp,
    HardmaxOp,
    HardSigmoidOp,
    HardSwishOp,
    IdentityOp,
    InstanceNormalizationOp,
    IsInfOp,
    IsNaNOp,
    LayerNormalizationOp,
    LeakyReluOp,
    LessOp,
    LessOrEqualOp,
    LogOp,
    LogSoftmaxOp,
    LRNOp,
    MatMulOp,
    MaxOp,
    MaxPoolOp,
    MeanOp,
    MinOp,
    MishOp,
    ModOp,
    MulOp,
    NegOp,
    NonZeroOp,
    NotOp,
    OrOp,
    PadOp,
    PowOp,
    PReluOp,
    RangeOp,
    ReciprocalOp,
    ReduceL1Op,
    ReduceL2Op,
    ReduceLogSumOp,
    ReduceLogSumExpOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceProdOp,
    ReduceSumOp,
    ReduceSumSquareOp,
    ReluOp,
    ReshapeOp,
    ResizeOp,
    RoundOp,
    ScatterElementsOp,
    ScatterNDOp,
    SeluOp,
    ShapeOp,
    ShrinkOp,
    SigmoidOp,
    SignOp,
    SinOp,
    SinhOp,
    SizeOp,
    SliceOp,
    SoftmaxOp,
    SoftplusOp,
    SoftsignOp,
    SpaceToDepthOp,
    SplitOp,
    SqrtOp,
    SqueezeOp,
    SubOp,
    SumOp,
    TanOp,
    TanhOp,
    ThresholdedReluOp,
    TileOp,
    TopKOp,
    TransposeOp,
    TriluOp,
    UnsqueezeOp,
    UpsampleOp,
    WhereOp,
    XorOp,
]
"""Every ONNX-operator op class, alphabetical by ONNX operator name."""

ONNX_OPS: dict[str, type[GraphOp]] = {c.ONNX_TYPE: c for c in GRAPH_OPS}
"""ONNX operator type -> graph op class."""



def _extension_ops() -> list[type[IRDLOperation]]:
    """Graph ops defined in sibling modules (they import this one): gradient ops
    (docs/training.md) and memory-reduction ops (docs/tensor-timing-and-swapping.md)."""
    from nnx.dialects.graph_memory import MEMORY_OPS
    from nnx.dialects.graph_training import TRAINING_OP_CLASSES

    return [*TRAINING_OP_CLASSES, *MEMORY_OPS]


Graph = Dialect("graph", [ConstantOp, YieldOp, SubgraphOp, *GRAPH_OPS, *_extension_ops()], [])
