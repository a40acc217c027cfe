"""The `sparse` dialect: connection data and sparse neural operations.

The original method (Cambricon, "Neural network operation device and method"; see
docs/sparse-mapping.md, section 2 "Method") puts a *mapping unit* between the storage
unit and the operation unit. It turns input neurons and weights into *connection
data*, combines the neuron and weight connection data, and hands the operation unit
only the input neurons and weights that both survive; before that it may delete whole
groups of neurons or weights (group pruning). The same unit runs dense and sparse
operations. docs/sparse-mapping.md, section 4 "The `sparse` dialect and the `sparsify`
pass" describes this dialect.

Type
----
``!sparse.conn<FORM, SHAPE, ORDER>`` is connection data: FORM is ``direct`` (a 0/1
string per row, `uint8` at run time) or ``stride`` (distances between kept elements,
the first from position 0, left-packed `int32` padded with -1 at run time); SHAPE is
``(..., L)``: one string of length L per index of the leading dimensions; ORDER is

* ``neuron``: connection data of input neurons ``x[..., in]`` (SHAPE = x's shape);
* ``per_output``: weight connection data, one string per output neuron over the input
  neurons, ``[..., out, in]`` (leading dimensions: samples, after combining with
  neuron connection data);
* ``per_input``: one string per input neuron over the output neurons, ``[in, out]``.

Ops (the run-time meaning of each is in nnx/connection_data.py)
-------------------------------------------------------------
* ``sparse.connect``: neurons or weights + threshold -> connection data;
* ``sparse.convert``: direct <-> stride, per_output <-> per_input;
* ``sparse.combine``: two connection data -> the third;
* ``sparse.select``: the mapping unit: connection data + neurons + weights -> the
  processed (compacted) neurons and weights, left-packed per output neuron;
* ``sparse.group_prune``: delete groups;
* ``sparse.fc`` / ``sparse.matmul`` / ``sparse.conv``: the operation unit computing
  only on surviving pairs; the results equal the dense op on pruned operands.

Custom assembly, e.g.::

    %c = sparse.connect %w {threshold = 5.000000e-01 : f64}
           : tensor<64x128xf32> -> !sparse.conn<direct, 64x128, per_output>
    %y = sparse.fc(%x, %w, %b) conn(%c) : (tensor<1x128xf32>, tensor<64x128xf32>,
           tensor<64xf32>), !sparse.conn<direct, 64x128, per_output> -> tensor<1x64xf32>

Every op accepts the graph dialect's ``after(...)`` control group (docs/architecture.md,
section 4 "The `graph` dialect", "Control edges").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from nnx.connection_data import (
    DIRECT,
    FORMS,
    NEURON,
    ORDERS,
    PER_INPUT,
    PER_OUTPUT,
    STRIDE,
)
from nnx.dialects.traits import MatrixCompute

# --------------------------------------------------------------------------------------
# The connection-data type
# --------------------------------------------------------------------------------------


@irdl_attr_definition
class ConnType(ParametrizedAttribute, TypeAttribute):
    """``!sparse.conn<direct|stride, SHAPE, neuron|per_output|per_input>``: connection data
    (docs/sparse-mapping.md, section 4)."""

    name = "sparse.conn"

    form: StringAttr
    shape: ArrayAttr[IntAttr]
    order: StringAttr

    def __init__(self, form: str, shape: Sequence[int], order: str):
        super().__init__(
            StringAttr(form), ArrayAttr([IntAttr(int(d)) for d in shape]), StringAttr(order)
        )

    @property
    def form_name(self) -> str:
        return self.form.data

    @property
    def order_name(self) -> str:
        return self.order.data

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    def storage_dtype(self) -> np.dtype:
        """Run-time dtype: uint8 for direct, int32 (padded with -1) for stride."""
        return np.dtype(np.uint8) if self.form_name == DIRECT else np.dtype(np.int32)

    @staticmethod
    def problem(form: str, shape: Sequence[int], order: str) -> str | None:
        """Why (form, shape, order) is not a valid connection-data type (None if it is)."""
        if form not in FORMS:
            return f"!sparse.conn: form must be direct or stride, not '{form}'"
        if order not in ORDERS:
            return (
                "!sparse.conn: order must be neuron, per_output or per_input, "
                f"not '{order}'"
            )
        if not shape:
            return "!sparse.conn: needs at least one dimension (the string)"
        if any(d < 1 for d in shape):
            return f"!sparse.conn: dimensions must be >= 1, got {list(shape)}"
        if order == PER_INPUT and len(shape) != 2:
            return (
                "!sparse.conn: per_input connection data is [in, out] (rank 2), "
                f"got rank {len(shape)}"
            )
        if order == PER_OUTPUT and len(shape) < 2:
            return "!sparse.conn: per_output connection data is [..., out, in] (rank >= 2)"
        return None

    def verify(self) -> None:
        msg = self.problem(self.form_name, self.get_shape(), self.order_name)
        if msg is not None:
            raise VerifyException(msg)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            start = parser.pos
            form = parser.parse_identifier("connection-data form (direct or stride)")
            parser.parse_punctuation(",")
            dims = parser.parse_dimension_list()
            if not dims:
                parser.raise_error("expected the connection-data shape, e.g. 64x128")
            parser.parse_punctuation(",")
            order = parser.parse_identifier("order (neuron, per_output or per_input)")
        msg = cls.problem(form, dims, order)
        if msg is not None:
            parser.raise_error(msg, start, parser.pos)
        return [StringAttr(form), ArrayAttr([IntAttr(d) for d in dims]), StringAttr(order)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(
            f"<{self.form_name}, {'x'.join(str(d) for d in self.get_shape())}, "
            f"{self.order_name}>"
        )


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

OUT_IN = "out_in"
IN_OUT = "in_out"

_AFTER = "(`after` `(` $after^ `:` type($after) `)`)?"


def _shape(v: SSAValue | Attribute) -> tuple[int, ...]:
    t = v.type if isinstance(v, SSAValue) else v
    if isinstance(t, ConnType):
        return t.get_shape()
    if isinstance(t, TensorType):
        return tuple(t.get_shape())
    raise VerifyException(f"expected a tensor or !sparse.conn, got {t}")


def _conn(v: SSAValue, op: str, what: str) -> ConnType:
    if not isinstance(v.type, ConnType):
        raise VerifyException(f"{op}: {what} must be !sparse.conn, got {v.type}")
    return v.type


def _float(attr: Attribute | None, default: float = 0.0) -> float:
    if attr is None:
        return default
    assert isinstance(attr, (FloatAttr, IntegerAttr))
    return float(attr.value.data)


def _int(attr: Attribute | None, default: int = 0) -> int:
    if attr is None:
        return default
    assert isinstance(attr, IntegerAttr)
    return int(attr.value.data)


def _ints(attr: Attribute | None, default: Sequence[int]) -> list[int]:
    if attr is None:
        return list(default)
    assert isinstance(attr, DenseArrayBase)
    return [int(v) for v in attr.get_values()]


def _check_threshold(op: str, attr: Attribute) -> None:
    if not isinstance(attr, FloatAttr):
        raise VerifyException(f"{op}: threshold must be a float attribute, got {attr}")
    if not math.isfinite(float(attr.value.data)):
        raise VerifyException(f"{op}: threshold must be finite")


def _broadcast(op: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise VerifyException(
            f"{op}: shapes " + ", ".join(str(list(s)) for s in shapes) + " do not broadcast"
        ) from None


def weight_matrix_shape(shape: Sequence[int]) -> tuple[int, int]:
    """Weights [out, ...] as the original method's [out, in] matrix (one row per output
    neuron; docs/sparse-mapping.md, section 2 "Method", weight orders)."""
    return int(shape[0]), int(np.prod(shape[1:], dtype=np.int64))


def _float_tensor(op: str, what: str, v: SSAValue) -> TensorType:
    if not isinstance(v.type, TensorType):
        raise VerifyException(f"{op}: {what} must be a tensor, got {v.type}")
    return v.type


def _same_element(op: str, values: Sequence[SSAValue | None]) -> Attribute:
    els = [v.type.element_type for v in values if v is not None]  # type: ignore[union-attr]
    if any(e != els[0] for e in els):
        raise VerifyException(
            f"{op}: operand element types differ: " + ", ".join(str(e) for e in els)
        )
    return els[0]


# --------------------------------------------------------------------------------------
# Connection-data ops
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConnectOp(IRDLOperation):
    """Build connection data from input neurons or weights (docs/sparse-mapping.md,
    section 2 "Method", connection data).

    Elements with ``|x| > threshold`` are kept (1 in the direct index). The result type
    chooses the form and the order: ``neuron`` (shape of `input`), ``per_output``
    (``[out, in]``) or ``per_input`` (``[in, out]``). Weights are ``[out, ...]`` (the
    original method's order; conv kernels flattened) unless ``layout = "in_out"`` says they are
    ``[in, out]`` (ONNX MatMul's B).
    """

    name = "sparse.connect"
    input = operand_def(TensorType)
    after = var_operand_def()
    result = result_def(ConnType)
    threshold = prop_def(FloatAttr)
    layout = opt_prop_def(StringAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input attr-dict " + _AFTER + " `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        threshold: float,
        form: str = DIRECT,
        order: str = NEURON,
        layout: str = OUT_IN,
        after: Sequence[SSAValue] = (),
    ):
        cshape = self.conn_shape(_shape(input), order, layout)
        props: dict[str, Attribute] = {"threshold": FloatAttr(float(threshold), f64)}
        if layout != OUT_IN:
            props["layout"] = StringAttr(layout)
        super().__init__(
            operands=[input, list(after)],
            result_types=[ConnType(form, cshape, order)],
            properties=props,
        )

    @staticmethod
    def conn_shape(shape: Sequence[int], order: str, layout: str = OUT_IN) -> tuple[int, ...]:
        """The connection-data shape of a tensor of `shape` in `order`."""
        if order == NEURON:
            return tuple(shape)
        if len(shape) < 2:
            raise VerifyException(
                "sparse.connect: weight connection data needs weights of rank >= 2, "
                f"got {list(shape)}"
            )
        if layout == IN_OUT:
            if len(shape) != 2:
                raise VerifyException(
                    f"sparse.connect: in_out weights must be [in, out], got {list(shape)}"
                )
            out_in = (shape[1], shape[0])
        else:
            out_in = weight_matrix_shape(shape)
        return out_in if order == PER_OUTPUT else out_in[::-1]

    @property
    def threshold_value(self) -> float:
        return _float(self.threshold)

    @property
    def layout_name(self) -> str:
        return self.layout.data if isinstance(self.layout, StringAttr) else OUT_IN

    def verify_(self) -> None:
        _check_threshold(self.name, self.threshold)
        if self.layout_name not in (OUT_IN, IN_OUT):
            raise VerifyException(
                f"{self.name}: layout must be out_in or in_out, not '{self.layout_name}'"
            )
        t = _conn(self.result, self.name, "the result")
        if t.order_name == NEURON and self.layout is not None:
            raise VerifyException(f"{self.name}: layout applies to weights, not neurons")
        shape = _shape(self.input)
        expected = self.conn_shape(shape, t.order_name, self.layout_name)
        if tuple(expected) != t.get_shape():
            raise VerifyException(
                f"{self.name}: {t.order_name} connection data of a {list(shape)} tensor "
                f"has shape {list(expected)}, the result type says {list(t.get_shape())}"
            )


@irdl_op_definition
class ConvertOp(IRDLOperation):
    """Convert connection data between the direct and stride forms and/or between the
    per_output and per_input weight orders (docs/sparse-mapping.md, section 3, "Weight
    orders")."""

    name = "sparse.convert"
    input = operand_def(ConnType)
    after = var_operand_def()
    result = result_def(ConnType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict " + _AFTER + " `:` type($input) `->` type($result)"

    def __init__(
        self,
        input: SSAValue,
        form: str | None = None,
        order: str | None = None,
        after: Sequence[SSAValue] = (),
    ):
        t = input.type
        assert isinstance(t, ConnType)
        shape = t.get_shape()
        new_order = order or t.order_name
        if new_order != t.order_name:
            shape = (*shape[:-2], shape[-1], shape[-2])
        super().__init__(
            operands=[input, list(after)],
            result_types=[ConnType(form or t.form_name, shape, new_order)],
        )

    def verify_(self) -> None:
        a = _conn(self.input, self.name, "the input")
        b = _conn(self.result, self.name, "the result")
        if a.form_name == b.form_name and a.order_name == b.order_name:
            raise VerifyException(
                f"{self.name}: converts nothing (same form and order); remove it"
            )
        sa, sb = a.get_shape(), b.get_shape()
        if a.order_name == b.order_name:
            if sa != sb:
                raise VerifyException(
                    f"{self.name}: a form conversion keeps the shape {list(sa)}, "
                    f"the result has {list(sb)}"
                )
            return
        if NEURON in (a.order_name, b.order_name):
            raise VerifyException(
                f"{self.name}: cannot convert between neuron and weight connection data"
            )
        if len(sa) != 2 or sb != (sa[1], sa[0]):
            raise VerifyException(
                f"{self.name}: reordering {a.order_name} {list(sa)} to {b.order_name} "
                f"gives [{sa[-1]}, {sa[-2]}] (weight-only, rank 2), the result has {list(sb)}"
            )


def combined_type(a: ConnType, b: ConnType, form: str | None, op: str = "sparse.combine") -> ConnType:
    """The type of combining `a` and `b` (VerifyException if they cannot combine)."""
    fa, fb = a.form_name, b.form_name
    allowed = {fa} if fa == fb else {DIRECT, STRIDE}
    if form is None:
        form = fa if fa == fb else DIRECT
    if form not in allowed:
        raise VerifyException(
            f"{op}: combining {fa} with {fb} connection data gives {fa}, "
            f"not {form}"
        )
    sa, sb = a.get_shape(), b.get_shape()
    oa, ob = a.order_name, b.order_name
    if PER_INPUT in (oa, ob) and oa != ob:
        raise VerifyException(
            f"{op}: per_input weight connection data can only combine with per_input; "
            "convert it to per_output first (strings over the input neurons)"
        )
    if sa[-1] != sb[-1]:
        raise VerifyException(
            f"{op}: strings of length {sa[-1]} and {sb[-1]} cannot be combined"
        )
    if oa == ob:
        return ConnType(form, _broadcast(op, sa, sb), oa)
    if oa == NEURON:
        sa = (*sa[:-1], 1, sa[-1])
    else:
        sb = (*sb[:-1], 1, sb[-1])
    return ConnType(form, _broadcast(op, sa, sb), PER_OUTPUT)


@irdl_op_definition
class CombineOp(IRDLOperation):
    """Combine two connection data into the third (docs/sparse-mapping.md, section 2
    "Method", combining).

    Both direct: AND. Both stride: prefix sums to positions, common positions sorted
    ascending, differences. Mixed: the result type's form chooses the path: direct
    (convert the stride one, AND) or stride (convert the direct one, stride path). Neuron connection data ``[..., in]`` combine with per_output
    weight connection data ``[out, in]`` into ``[..., out, in]``.
    """

    name = "sparse.combine"
    lhs = operand_def(ConnType)
    rhs = operand_def(ConnType)
    after = var_operand_def()
    result = result_def(ConnType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$lhs `,` $rhs attr-dict " + _AFTER
        + " `:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        form: str | None = None,
        after: Sequence[SSAValue] = (),
    ):
        assert isinstance(lhs.type, ConnType) and isinstance(rhs.type, ConnType)
        super().__init__(
            operands=[lhs, rhs, list(after)],
            result_types=[combined_type(lhs.type, rhs.type, form)],
        )

    def verify_(self) -> None:
        a = _conn(self.lhs, self.name, "lhs")
        b = _conn(self.rhs, self.name, "rhs")
        r = _conn(self.result, self.name, "the result")
        expected = combined_type(a, b, r.form_name, self.name)
        if expected != r:
            raise VerifyException(
                f"{self.name}: result type must be {expected}, got {r}"
            )


def _weight_conn_matrix(op: str, c: ConnType) -> tuple[tuple[int, ...], int, int]:
    """(leading dims, out, in) of weight connection data."""
    s = c.get_shape()
    if c.order_name == PER_OUTPUT:
        return s[:-2], s[-2], s[-1]
    if c.order_name == PER_INPUT:
        return (), s[1], s[0]
    raise VerifyException(
        f"{op}: needs weight connection data (per_output or per_input), got neuron "
        "connection data; combine it with the weights' connection data first"
    )


@irdl_op_definition
class SelectOp(IRDLOperation):
    """The mapping unit's selection (docs/sparse-mapping.md, section 2 "Method",
    selecting): select the input neurons and the weights whose connection survives.

    `conn` is weight connection data (per_output ``[..., out, in]``, possibly combined
    with neuron connection data, or per_input ``[in, out]``), `neurons` ``[..., in]``
    and `weights` ``[out, ...]``. Both results have shape ``[..., out, in]``: row
    ``(..., j)`` holds the processed input neurons (resp. weights) of output neuron j,
    left-packed, then zeros.
    """

    name = "sparse.select"
    conn = operand_def(ConnType)
    neurons = operand_def(TensorType)
    weights = operand_def(TensorType)
    after = var_operand_def()
    processed_neurons = result_def(TensorType)
    processed_weights = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$conn `,` $neurons `,` $weights attr-dict " + _AFTER
        + " `:` type($conn) `,` type($neurons) `,` type($weights) `->` "
        "type($processed_neurons) `,` type($processed_weights)"
    )

    @staticmethod
    def result_shape(conn: ConnType, neurons: Sequence[int], weights: Sequence[int]) -> tuple[int, ...]:
        lead, out_n, in_n = _weight_conn_matrix("sparse.select", conn)
        if weight_matrix_shape(weights) != (out_n, in_n):
            raise VerifyException(
                f"sparse.select: weights {list(weights)} are not [{out_n}, {in_n}] "
                f"as the {conn.order_name} connection data says"
            )
        if not neurons or neurons[-1] != in_n:
            raise VerifyException(
                f"sparse.select: neurons {list(neurons)} must end in {in_n} inputs"
            )
        lead = _broadcast("sparse.select", lead, neurons[:-1])
        return (*lead, out_n, in_n)

    def __init__(
        self, conn: SSAValue, neurons: SSAValue, weights: SSAValue, after: Sequence[SSAValue] = ()
    ):
        assert isinstance(conn.type, ConnType)
        shape = self.result_shape(conn.type, _shape(neurons), _shape(weights))
        nt, wt = neurons.type, weights.type
        assert isinstance(nt, TensorType) and isinstance(wt, TensorType)
        super().__init__(
            operands=[conn, neurons, weights, list(after)],
            result_types=[TensorType(nt.element_type, shape), TensorType(wt.element_type, shape)],
        )

    def verify_(self) -> None:
        c = _conn(self.conn, self.name, "conn")
        shape = self.result_shape(c, _shape(self.neurons), _shape(self.weights))
        for what, res, src in (
            ("processed neurons", self.processed_neurons, self.neurons),
            ("processed weights", self.processed_weights, self.weights),
        ):
            expected = TensorType(src.type.element_type, shape)  # type: ignore[union-attr]
            if res.type != expected:
                raise VerifyException(f"{self.name}: {what} must be {expected}, got {res.type}")


@irdl_op_definition
class GroupPruneOp(IRDLOperation):
    """Group pruning (docs/sparse-mapping.md, section 2 "Method", group pruning).

    For each index of the dimensions before `axis` (default 0: the whole tensor), the
    elements of the remaining dimensions (row-major) are split into `groups` contiguous
    groups (M for neurons, N for weights; sizes differ by at most one). A group is
    deleted (set to 0) when its count of elements with ``|x| <= threshold`` exceeds
    `count_threshold`.
    """

    name = "sparse.group_prune"
    input = operand_def(TensorType)
    after = var_operand_def()
    output = result_def(TensorType)
    groups = prop_def(IntegerAttr)
    threshold = prop_def(FloatAttr)
    count_threshold = prop_def(IntegerAttr)
    axis = opt_prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict " + _AFTER + " `:` type($input) `->` type($output)"

    def __init__(
        self,
        input: SSAValue,
        groups: int,
        threshold: float,
        count_threshold: int,
        axis: int = 0,
        after: Sequence[SSAValue] = (),
    ):
        props: dict[str, Attribute] = {
            "groups": IntegerAttr(groups, i64),
            "threshold": FloatAttr(float(threshold), f64),
            "count_threshold": IntegerAttr(count_threshold, i64),
        }
        if axis:
            props["axis"] = IntegerAttr(axis, i64)
        super().__init__(
            operands=[input, list(after)], result_types=[input.type], properties=props
        )

    @property
    def params(self) -> tuple[int, float, int, int]:
        """(groups, threshold, count_threshold, axis)."""
        return (
            _int(self.groups),
            _float(self.threshold),
            _int(self.count_threshold),
            _int(self.axis, 0),
        )

    def verify_(self) -> None:
        _check_threshold(self.name, self.threshold)
        if self.output.type != self.input.type:
            raise VerifyException(
                f"{self.name}: result type {self.output.type} must equal the input type "
                f"{self.input.type}"
            )
        groups, _, count, axis = self.params
        shape = _shape(self.input)
        if not 0 <= axis < max(len(shape), 1):
            raise VerifyException(f"{self.name}: axis {axis} out of range for rank {len(shape)}")
        n = int(np.prod(shape[axis:], dtype=np.int64))
        if not 1 <= groups <= max(n, 1):
            raise VerifyException(
                f"{self.name}: groups must be in [1, {n}] (elements per grouping), got {groups}"
            )
        if count < 0:
            raise VerifyException(f"{self.name}: count_threshold must be >= 0, got {count}")


# --------------------------------------------------------------------------------------
# Sparse compute ops (the operation unit on the mapping unit's output)
# --------------------------------------------------------------------------------------


def _check_compute_conn(
    op: str, c: ConnType, out_n: int, in_n: int, x_lead: Sequence[int], allow_lead: bool
) -> None:
    lead, co, ci = _weight_conn_matrix(op, c)
    if (co, ci) != (out_n, in_n):
        raise VerifyException(
            f"{op}: connection data {c} is for {co} outputs x {ci} inputs, "
            f"the weights have {out_n} x {in_n}"
        )
    if lead:
        if not allow_lead:
            raise VerifyException(
                f"{op}: connection data must be weight-only ([out, in] or [in, out]), got {c}"
            )
        try:
            ok = np.broadcast_shapes(tuple(lead), tuple(x_lead)) == tuple(x_lead)
        except ValueError:
            ok = False
        if not ok:
            raise VerifyException(
                f"{op}: leading dims {list(lead)} of the connection data do not "
                f"broadcast to the input's {list(x_lead)}"
            )


@irdl_op_definition
class FcOp(IRDLOperation):
    """Fully connected layer on surviving pairs: ``y[..., j] = sum_i x[..., i] W[j, i] + b[j]``.

    `weight` is ``[out, in]`` (the original method's order: one row per output
    neuron); `conn` is its (possibly neuron-combined) connection data. Only pairs whose
    connection is 1 are multiplied (the operation unit computes on the selected neurons
    and weights; docs/sparse-mapping.md, section 2 "Method", selecting), so the result equals the dense fc on the pruned operands.
    """

    name = "sparse.fc"
    traits = traits_def(MatrixCompute())
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    conn = operand_def(ConnType)
    after = var_operand_def()
    output = result_def(TensorType)

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "`(` $input `,` $weight (`,` $bias^)? `)` `conn` `(` $conn `)` attr-dict "
        + _AFTER
        + " `:` `(` type($input) `,` type($weight) (`,` type($bias)^)? `)` `,` "
        "type($conn) `->` type($output)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None,
        conn: SSAValue,
        after: Sequence[SSAValue] = (),
    ):
        xt = input.type
        assert isinstance(xt, TensorType)
        shape = (*_shape(input)[:-1], _shape(weight)[0])
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias], conn, list(after)],
            result_types=[TensorType(xt.element_type, shape)],
        )

    def verify_(self) -> None:
        x = _shape(self.input)
        w = _shape(self.weight)
        if len(w) != 2:
            raise VerifyException(f"{self.name}: weight must be [out, in], got {list(w)}")
        if not x or x[-1] != w[1]:
            raise VerifyException(
                f"{self.name}: input {list(x)} must end in the weight's {w[1]} inputs"
            )
        el = _same_element(self.name, [self.input, self.weight, self.bias])
        if self.bias is not None and _shape(self.bias) not in ((w[0],), (1, w[0])):
            raise VerifyException(
                f"{self.name}: bias must be [{w[0]}], got {list(_shape(self.bias))}"
            )
        _check_compute_conn(
            self.name, _conn(self.conn, self.name, "conn"), w[0], w[1], x[:-1], True
        )
        expected = TensorType(el, (*x[:-1], w[0]))
        if self.output.type != expected:
            raise VerifyException(f"{self.name}: result must be {expected}, got {self.output.type}")


@irdl_op_definition
class MatMulOp(IRDLOperation):
    """ONNX MatMul with a weight matrix ``B[K, N]`` on surviving pairs: ``y = A @ B``.

    B keeps ONNX's layout ``[in, out]``; its per_input connection data is ``[K, N]``,
    per_output ``[N, K]`` (or ``[..., N, K]`` combined with neuron connection data).
    """

    name = "sparse.matmul"
    traits = traits_def(MatrixCompute())
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    conn = operand_def(ConnType)
    after = var_operand_def()
    output = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "`(` $input `,` $weight `)` `conn` `(` $conn `)` attr-dict " + _AFTER
        + " `:` `(` type($input) `,` type($weight) `)` `,` type($conn) `->` type($output)"
    )

    def __init__(
        self, input: SSAValue, weight: SSAValue, conn: SSAValue, after: Sequence[SSAValue] = ()
    ):
        xt = input.type
        assert isinstance(xt, TensorType)
        shape = (*_shape(input)[:-1], _shape(weight)[1])
        super().__init__(
            operands=[input, weight, conn, list(after)],
            result_types=[TensorType(xt.element_type, shape)],
        )

    def verify_(self) -> None:
        x = _shape(self.input)
        w = _shape(self.weight)
        if len(w) != 2:
            raise VerifyException(f"{self.name}: weight must be [K, N], got {list(w)}")
        if not x or x[-1] != w[0]:
            raise VerifyException(
                f"{self.name}: input {list(x)} must end in the weight's K = {w[0]}"
            )
        el = _same_element(self.name, [self.input, self.weight])
        _check_compute_conn(
            self.name, _conn(self.conn, self.name, "conn"), w[1], w[0], x[:-1], True
        )
        expected = TensorType(el, (*x[:-1], w[1]))
        if self.output.type != expected:
            raise VerifyException(f"{self.name}: result must be {expected}, got {self.output.type}")


@irdl_op_definition
class ConvOp(IRDLOperation):
    """ONNX Conv (NCHW, 1-D or 2-D) on surviving weights.

    The input neurons of output channel ``o`` are its receptive field
    ``[Cin/group, kh, kw]`` flattened, so `conn` is ``[Cout, Cin/group*kh*kw]``
    (per_output) or its transpose (per_input). Each output channel multiplies only its
    connected kernel positions. Properties as ONNX (explicit `pads`; no auto_pad).
    """

    name = "sparse.conv"
    traits = traits_def(MatrixCompute())
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    conn = operand_def(ConnType)
    after = var_operand_def()
    output = result_def(TensorType)
    dilations = opt_prop_def(DenseArrayBase)
    group = opt_prop_def(IntegerAttr)
    pads = opt_prop_def(DenseArrayBase)
    strides = opt_prop_def(DenseArrayBase)

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "`(` $input `,` $weight (`,` $bias^)? `)` `conn` `(` $conn `)` attr-dict "
        + _AFTER
        + " `:` `(` type($input) `,` type($weight) (`,` type($bias)^)? `)` `,` "
        "type($conn) `->` type($output)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None,
        conn: SSAValue,
        result_type: Attribute,
        properties: dict[str, Attribute] | None = None,
        after: Sequence[SSAValue] = (),
    ):
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias], conn, list(after)],
            result_types=[result_type],
            properties={
                k: v for k, v in (properties or {}).items()
                if k in ("dilations", "group", "pads", "strides")
            },
        )

    def conv_params(self) -> dict[str, list[int] | int]:
        k = len(_shape(self.weight)) - 2
        return {
            "group": _int(self.group, 1),
            "strides": _ints(self.strides, [1] * k),
            "dilations": _ints(self.dilations, [1] * k),
            "pads": _ints(self.pads, [0] * (2 * k)),
        }

    def verify_(self) -> None:
        x = _shape(self.input)
        w = _shape(self.weight)
        if len(x) not in (3, 4) or len(w) != len(x):
            raise VerifyException(
                f"{self.name}: 1-D or 2-D NCHW conv expected, got input {list(x)} "
                f"and weight {list(w)}"
            )
        el = _same_element(self.name, [self.input, self.weight, self.bias])
        p = self.conv_params()
        g = p["group"]
        k = len(w) - 2
        assert isinstance(g, int)
        if g < 1 or x[1] % g or w[0] % g or x[1] // g != w[1]:
            raise VerifyException(
                f"{self.name}: group {g}: input channels {x[1]} / group must equal the "
                f"weight's {w[1]}, and {w[0]} output channels must divide by {g}"
            )
        for name, n in (("strides", k), ("dilations", k), ("pads", 2 * k)):
            v = p[name]
            assert isinstance(v, list)
            if len(v) != n or any(e < (0 if name == "pads" else 1) for e in v):
                raise VerifyException(f"{self.name}: {name} must be {n} values, got {v}")
        if self.bias is not None and _shape(self.bias) != (w[0],):
            raise VerifyException(
                f"{self.name}: bias must be [{w[0]}], got {list(_shape(self.bias))}"
            )
        _check_compute_conn(
            self.name, _conn(self.conn, self.name, "conn"), *weight_matrix_shape(w), (), False
        )
        out = [x[0], w[0]]
        pads, st, dl = p["pads"], p["strides"], p["dilations"]
        assert isinstance(pads, list) and isinstance(st, list) and isinstance(dl, list)
        for i in range(k):
            span = dl[i] * (w[2 + i] - 1) + 1
            size = x[2 + i] + pads[i] + pads[k + i] - span
            if size < 0:
                raise VerifyException(f"{self.name}: kernel larger than the padded input")
            out.append(size // st[i] + 1)
        expected = TensorType(el, out)
        if self.output.type != expected:
            raise VerifyException(f"{self.name}: result must be {expected}, got {self.output.type}")


SPARSE_OPS = [
    ConnectOp,
    ConvertOp,
    CombineOp,
    SelectOp,
    GroupPruneOp,
    FcOp,
    MatMulOp,
    ConvOp,
]

Sparse = Dialect("sparse", SPARSE_OPS, [ConnType])
