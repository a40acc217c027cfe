"""The graph dialect: every op builds through `build_onnx`, verifies, and round-trips.

Expected result types come from ONNX's own shape inference (`onnx.shape_inference`
on a one-node model), so these cases also check the verifier's shape rules against
ONNX. Invalid cases check the verifier's messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnx.defs
import pytest
from onnx import helper
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.irdl import OptOperandDef, VarOperandDef
from xdsl.utils.exceptions import VerifyException

from nnx import ir_io
from nnx.dialects import graph as g
from nnx.types import ONNX_TO_NP, tensor_type

F32, I64, I32, B = np.float32, np.int64, np.int32, np.bool_

# --------------------------------------------------------------------------------------
# Case description
# --------------------------------------------------------------------------------------


@dataclass
class Case:
    """One node: inputs are shapes (f32 arguments), (dtype, shape) arguments, numpy
    arrays (graph.constant) or None (absent); `outs` flags which ONNX outputs exist."""

    op: str
    inputs: list[Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    outs: int | list[bool] = 1
    opset: int | None = None
    expect: list[tuple[Any, tuple[int, ...]]] | None = None  # when ONNX cannot infer
    id: str = ""

    def out_flags(self) -> list[bool]:
        return [True] * self.outs if isinstance(self.outs, int) else list(self.outs)

    def name(self) -> str:
        return self.op + (f"-{self.id}" if self.id else "")


def arr(values: Any, dtype: Any = I64) -> np.ndarray:
    return np.array(values, dtype=dtype)


def rnd(*shape: int, dtype: Any = F32) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(dtype)


X4 = (1, 3, 8, 8)

CASES: list[Case] = [
    Case("Abs", [(2, 3)]),
    Case("Acos", [(2, 3)]),
    Case("Acosh", [(2, 3)]),
    Case("Add", [(2, 3, 4), (4,)]),
    Case("Add", [(2, 1, 4), (3, 1)], id="bcast"),
    Case("And", [(B, (2, 3)), (B, (3,))]),
    Case("ArgMax", [(2, 3, 4)], {"axis": 1}),
    Case("ArgMax", [(2, 3, 4)], {"axis": -1, "keepdims": 0}, id="nokeep"),
    Case("ArgMin", [(2, 3, 4)], {"select_last_index": 1}),
    Case("Asin", [(2, 3)]),
    Case("Asinh", [(2, 3)]),
    Case("Atan", [(2, 3)]),
    Case("Atanh", [(2, 3)]),
    Case("AveragePool", [X4], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    Case("AveragePool", [(1, 3, 7, 7)], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1, "count_include_pad": 1}, id="ceil"),
    Case("AveragePool", [(1, 3, 7, 7)], {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, id="same"),
    Case("BatchNormalization", [X4, (3,), (3,), (3,), (3,)], {"epsilon": 1e-5}),
    Case("BatchNormalization", [X4, (3,), (3,), (3,), (3,)], {"spatial": 1}, opset=7, id="opset7"),
    Case("Cast", [(2, 3)], {"to": 7}),
    Case("Cast", [(I64, (2, 3))], {"to": 9}, id="bool"),
    Case("CastLike", [(2, 3), (I64, (1,))]),
    Case("Ceil", [(2, 3)]),
    Case("Celu", [(2, 3)], {"alpha": 2.0}),
    Case("Clip", [(2, 3), arr(0.0, F32), arr(6.0, F32)]),
    Case("Clip", [(2, 3), None, arr(6.0, F32)], id="maxonly"),
    Case("Clip", [(2, 3)], {"min": 0.0, "max": 6.0}, opset=6, id="attrs"),
    Case("Concat", [(2, 3), (2, 5), (2, 1)], {"axis": 1}),
    Case("Concat", [(2, 3), (4, 3)], {"axis": -2}, id="neg"),
    Case("ConstantOfShape", [arr([2, 3])], {"value": arr([1.5], F32)}),
    Case("ConstantOfShape", [arr([4])], id="default"),
    Case("ConstantOfShape", [arr([2, 2])], {"value": arr([7], I64)}, id="i64"),
    Case("Conv", [X4, (6, 3, 3, 3), (6,)], {"pads": [1, 1, 1, 1]}),
    Case("Conv", [X4, (6, 1, 3, 3)], {"group": 3, "strides": [2, 2], "dilations": [2, 2]}, id="group"),
    Case("Conv", [(1, 3, 7, 7), (4, 3, 3, 3)], {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, id="same"),
    Case("Conv", [(1, 3, 7, 7), (4, 3, 2, 2)], {"auto_pad": "VALID", "kernel_shape": [2, 2]}, id="valid"),
    Case("Conv", [(1, 2, 10), (4, 2, 3)], {"strides": [3]}, id="1d"),
    Case("ConvTranspose", [X4, (3, 4, 3, 3), (4,)], {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    Case("ConvTranspose", [X4, (3, 2, 2, 2)], {"group": 3, "strides": [2, 2]}, id="group"),
    Case("ConvTranspose", [X4, (3, 2, 3, 3)], {"output_shape": [17, 17], "strides": [2, 2]}, id="outshape"),
    Case("ConvTranspose", [X4, (3, 2, 3, 3)], {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, id="same"),
    Case("Cos", [(2, 3)]),
    Case("Cosh", [(2, 3)]),
    Case("CumSum", [(2, 3), arr(1)], {"exclusive": 1, "reverse": 1}),
    Case("DepthToSpace", [(1, 8, 2, 3)], {"blocksize": 2, "mode": "CRD"}),
    Case("Div", [(2, 3), (2, 3)]),
    Case("Dropout", [(2, 3)]),
    Case("Dropout", [(2, 3), arr(0.5, F32), arr(False, B)], outs=2, id="mask"),
    Case("Dropout", [(2, 3)], {"ratio": 0.1}, opset=10, id="attr"),
    Case("Einsum", [(2, 3, 4), (2, 4, 5)], {"equation": "bij,bjk->bik"}),
    Case("Einsum", [(3, 4), (4,)], {"equation": "ij,j"}, id="implicit"),
    Case("Einsum", [(2, 3, 4, 5)], {"equation": "...ij->...ji"}, id="ellipsis"),
    Case("Elu", [(2, 3)], {"alpha": 0.5}),
    Case("Equal", [(I64, (2, 3)), (I64, (2, 1))]),
    Case("Erf", [(2, 3)]),
    Case("Exp", [(2, 3)]),
    Case("Expand", [(3, 1), arr([2, 1, 6])]),
    Case("Flatten", [(2, 3, 4, 5)]),
    Case("Flatten", [(2, 3, 4, 5)], {"axis": 0}, id="axis0"),
    Case("Flatten", [(2, 3, 4, 5)], {"axis": -1}, id="neg"),
    Case("Floor", [(2, 3)]),
    Case("Gather", [(5, 4), arr([[0, 1], [2, -1]])], {"axis": 0}),
    Case("Gather", [(5, 4, 3), arr(1)], {"axis": 1}, id="scalar"),
    Case("GatherElements", [(3, 4), arr([[0, 1], [2, 0], [1, 1]])], {"axis": 1}),
    Case("GatherND", [(2, 3, 4), arr([[0, 1], [1, 2]])]),
    Case("GatherND", [(2, 3, 4), arr([[1], [0]])], {"batch_dims": 1}, id="batch"),
    Case("Gelu", [(2, 3)], {"approximate": "tanh"}),
    Case("Gemm", [(4, 3), (5, 3), (5,)], {"transB": 1, "alpha": 0.5, "beta": 2.0}),
    Case("Gemm", [(3, 4), (3, 5)], {"transA": 1}, id="transA"),
    Case("GlobalAveragePool", [X4]),
    Case("GlobalMaxPool", [(1, 3, 5)]),
    Case("Greater", [(2, 3), (3,)]),
    Case("GreaterOrEqual", [(2, 3), (3,)]),
    Case("HardSigmoid", [(2, 3)], {"alpha": 0.25, "beta": 0.4}),
    Case("HardSwish", [(2, 3)]),
    Case("Hardmax", [(2, 3)], {"axis": 0}),
    Case("Identity", [(2, 3)]),
    Case("InstanceNormalization", [X4, (3,), (3,)], {"epsilon": 1e-3}),
    Case("IsInf", [(2, 3)], {"detect_negative": 0}),
    Case("IsNaN", [(2, 3)]),
    Case("LRN", [X4], {"size": 3, "alpha": 1e-4, "beta": 0.75, "bias": 1.0}),
    Case("LayerNormalization", [(2, 5, 8), (8,), (8,)], {"epsilon": 1e-5}),
    Case("LayerNormalization", [(2, 5, 8), (5, 8)], {"axis": 1}, outs=3, id="stats"),
    Case("LayerNormalization", [(2, 5, 8), (8,)], {}, outs=[True, False, True], id="hole"),
    Case("LeakyRelu", [(2, 3)], {"alpha": 0.1}),
    Case("Less", [(2, 3), (2, 3)]),
    Case("LessOrEqual", [(I32, (2, 3)), (I32, (1,))]),
    Case("Log", [(2, 3)]),
    Case("LogSoftmax", [(2, 3)], {"axis": 1}),
    Case("MatMul", [(2, 3, 4), (4, 5)]),
    Case("MatMul", [(4,), (2, 4, 5)], id="vec-mat"),
    Case("MatMul", [(2, 1, 3, 4), (5, 4, 2)], id="batch-bcast"),
    Case("MatMul", [(3, 4), (4,)], id="mat-vec"),
    Case("Max", [(2, 3), (3,), (1, 1)]),
    Case("Max", [(2, 3)], id="single"),
    Case("MaxPool", [X4], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    Case("MaxPool", [(1, 3, 7, 7)], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, outs=2, id="indices"),
    Case("MaxPool", [(1, 3, 9, 9)], {"kernel_shape": [3, 3], "dilations": [2, 2], "storage_order": 1}, id="dil"),
    Case("MaxPool", [(1, 3, 8, 8)], {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"}, id="same"),
    Case("Mean", [(2, 3), (2, 3)]),
    Case("Min", [(2, 3), (1, 3)]),
    Case("Mish", [(2, 3)]),
    Case("Mod", [(I64, (2, 3)), (I64, (3,))]),
    Case("Mod", [(2, 3), (2, 3)], {"fmod": 1}, id="fmod"),
    Case("Mul", [(2, 3), (1,)]),
    Case("Neg", [(2, 3)]),
    Case("NonZero", [arr([[1, 0, 2], [0, 0, 3]], F32)], expect=[(I64, (2, 3))]),
    Case("Not", [(B, (2, 3))]),
    Case("Or", [(B, (2, 3)), (B, (2, 3))]),
    Case("PRelu", [X4, (3, 1, 1)]),
    Case("Pad", [(2, 3), arr([1, 0, 2, 1])], {"mode": "constant"}),
    Case("Pad", [(2, 3, 4), arr([1, 2]), arr(1.5, F32), arr([-1])], {"mode": "reflect"}, id="axes"),
    Case("Pad", [(2, 3)], {"pads": [0, 1, 0, 1], "value": 2.0}, opset=10, id="attr"),
    Case("Pow", [(2, 3), (I64, (1,))]),
    Case("Range", [arr(0), arr(10), arr(3)]),
    Case("Range", [arr(1.0, F32), arr(2.0, F32), arr(0.25, F32)], id="float"),
    Case("Reciprocal", [(2, 3)]),
    Case("ReduceL1", [(2, 3, 4), arr([1])]),
    Case("ReduceL2", [(2, 3, 4), arr([1])], {"keepdims": 0}),
    Case("ReduceLogSum", [(2, 3, 4)]),
    Case("ReduceLogSumExp", [(2, 3, 4), arr([0, 2])]),
    Case("ReduceMax", [(2, 3, 4), arr([-1])]),
    Case("ReduceMax", [(2, 3, 4)], {"axes": [1], "keepdims": 0}, opset=13, id="attr"),
    Case("ReduceMean", [(2, 3, 4), arr([1, 2])]),
    Case("ReduceMean", [(2, 3, 4)], {"axes": [-1]}, opset=13, id="attr"),
    Case("ReduceMean", [(2, 3, 4), arr([], I64)], {"noop_with_empty_axes": 1}, id="noop"),
    Case("ReduceMin", [(2, 3, 4)], {"keepdims": 0}),
    Case("ReduceProd", [(2, 3, 4), arr([0])]),
    Case("ReduceSum", [(2, 3, 4), arr([1])], {"keepdims": 0}),
    Case("ReduceSum", [(2, 3, 4)], {"axes": [0, 2]}, opset=11, id="attr"),
    Case("ReduceSumSquare", [(2, 3, 4), arr([2])]),
    Case("Relu", [(2, 3)]),
    Case("Reshape", [(2, 3, 4), arr([0, -1])]),
    Case("Reshape", [(2, 3, 4), arr([4, 0, 2, -1])], id="zero"),
    Case("Resize", [X4, None, arr([1, 1, 2, 2], F32)], {"mode": "nearest"}),
    Case("Resize", [X4, None, None, arr([1, 3, 5, 7])], {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, id="sizes"),
    Case("Resize", [X4, None, arr([0.5, 1.5], F32)], {"axes": [2, 3], "mode": "cubic", "cubic_coeff_a": -0.5}, id="axes"),
    Case("Round", [(2, 3)]),
    Case("ScatterElements", [(3, 4), arr([[0, 1], [2, 0]]), (2, 2)], {"axis": 0, "reduction": "add"}),
    Case("ScatterND", [(4, 5), arr([[1], [3]]), (2, 5)]),
    Case("Selu", [(2, 3)], {"alpha": 1.67, "gamma": 1.05}),
    Case("Shape", [(2, 3, 4)]),
    Case("Shape", [(2, 3, 4, 5)], {"start": 1, "end": -1}, id="slice"),
    Case("Shrink", [(2, 3)], {"bias": 0.5, "lambd": 1.0}),
    Case("Sigmoid", [(2, 3)]),
    Case("Sign", [(2, 3)]),
    Case("Sin", [(2, 3)]),
    Case("Sinh", [(2, 3)]),
    Case("Size", [(2, 3)]),
    Case("Slice", [(5, 6, 7), arr([1, 0]), arr([4, -1]), arr([0, 2]), arr([2, 3])]),
    Case("Slice", [(5, 6), arr([-1]), arr([-10**9]), arr([1]), arr([-1])], id="reverse"),
    Case("Slice", [(5, 6), arr([1]), arr([100])], id="clamp"),
    Case("Slice", [(5, 6)], {"starts": [1], "ends": [3], "axes": [1]}, opset=9, id="attr"),
    Case("Softmax", [(2, 3)]),
    Case("Softplus", [(2, 3)]),
    Case("Softsign", [(2, 3)]),
    Case("SpaceToDepth", [(1, 2, 4, 6)], {"blocksize": 2}),
    Case("Split", [(2, 6), arr([2, 4])], {"axis": 1}, outs=2),
    Case("Split", [(7, 2)], {"num_outputs": 3}, outs=3, id="uneven"),
    Case("Split", [(6, 2)], {"split": [1, 5]}, outs=2, opset=11, id="attr"),
    Case("Sqrt", [(2, 3)]),
    Case("Squeeze", [(1, 3, 1, 2), arr([0, -2])]),
    Case("Squeeze", [(1, 3, 1, 2)], id="all"),
    Case("Squeeze", [(1, 3, 1, 2)], {"axes": [2]}, opset=11, id="attr"),
    Case("Sub", [(2, 3), (2, 3)]),
    Case("Sum", [(2, 3), (3,), (2, 1)]),
    Case("Tan", [(2, 3)]),
    Case("Tanh", [(2, 3)]),
    Case("ThresholdedRelu", [(2, 3)], {"alpha": 0.5}),
    Case("Tile", [(2, 3), arr([2, 1])]),
    Case("TopK", [(3, 10), arr([4])], {"axis": 1, "largest": 0, "sorted": 1}, outs=2),
    Case("TopK", [(3, 10)], {"k": 2}, outs=2, opset=9, id="attr"),
    Case("Transpose", [(2, 3, 4)], {"perm": [2, 0, 1]}),
    Case("Transpose", [(2, 3, 4)], id="reverse"),
    Case("Trilu", [(3, 4), arr(1)], {"upper": 0}),
    Case("Unsqueeze", [(3, 4), arr([0, -1])]),
    Case("Unsqueeze", [(3, 4)], {"axes": [1]}, opset=11, id="attr"),
    Case("Upsample", [X4, arr([1, 1, 2, 2], F32)], {"mode": "nearest"}, opset=9),
    Case("Upsample", [X4], {"scales": [1.0, 1.0, 2.0, 3.0]}, opset=7, id="attr"),
    Case("Where", [(B, (2, 1)), (2, 3), (3,)]),
    Case("Xor", [(B, (2, 3)), (B, (1, 3))]),
]


# --------------------------------------------------------------------------------------
# ONNX shape inference as the oracle
# --------------------------------------------------------------------------------------

_NP_TO_ONNX = {np.dtype(v): k for k, v in ONNX_TO_NP.items()}


def _input_spec(inp: Any) -> tuple[np.dtype, tuple[int, ...]] | None:
    if inp is None:
        return None
    if isinstance(inp, np.ndarray):
        return inp.dtype, inp.shape
    if inp and not isinstance(inp[0], (int, np.integer)):
        return np.dtype(inp[0]), tuple(inp[1])
    return np.dtype(F32), tuple(inp)


def onnx_output_types(case: Case) -> list[tuple[np.dtype, tuple[int, ...]] | None]:
    if case.expect is not None:
        return [(np.dtype(d), tuple(s)) for d, s in case.expect]
    schema = onnx.defs.get_schema(case.op, max_inclusive_version=case.opset or 25)
    opset = case.opset or max(schema.since_version, 13)
    in_names, vis, inits = [], [], []
    for i, inp in enumerate(case.inputs):
        if inp is None:
            in_names.append("")
            continue
        name = f"in{i}"
        in_names.append(name)
        if isinstance(inp, np.ndarray):
            inits.append(onnx.numpy_helper.from_array(inp, name))
        else:
            dt, shape = _input_spec(inp)
            vis.append(helper.make_tensor_value_info(name, _NP_TO_ONNX[dt], shape))
    flags = case.out_flags()
    out_names = [f"out{i}" if f else "" for i, f in enumerate(flags)]
    attrs = dict(case.attrs)
    if "value" in attrs and isinstance(attrs["value"], np.ndarray):
        attrs["value"] = onnx.numpy_helper.from_array(attrs["value"])
    node = helper.make_node(case.op, in_names, out_names, **attrs)
    graph = helper.make_graph(
        [node], "g", vis, [helper.ValueInfoProto(name=n) for n in out_names if n], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    types = {
        vi.name: vi.type.tensor_type
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output)
    }
    out: list[tuple[np.dtype, tuple[int, ...]] | None] = []
    for n in out_names:
        if not n:
            out.append(None)
            continue
        tt = types[n]
        dims = tuple(d.dim_value for d in tt.shape.dim)
        assert all(d.HasField("dim_value") for d in tt.shape.dim), (case.name(), n, tt)
        out.append((ONNX_TO_NP[tt.elem_type], dims))
    return out


# --------------------------------------------------------------------------------------
# Building a module around one op
# --------------------------------------------------------------------------------------


def build_module(
    case: Case, result_types: list[Any] | None = None
) -> tuple[ModuleOp, g.GraphOp]:
    arg_types = []
    for inp in case.inputs:
        if inp is not None and not isinstance(inp, np.ndarray):
            dt, shape = _input_spec(inp)
            arg_types.append(tensor_type(dt, shape))
    block = Block(arg_types=arg_types)
    args = iter(block.args)
    operands = []
    for inp in case.inputs:
        if inp is None:
            operands.append(None)
        elif isinstance(inp, np.ndarray):
            c = g.ConstantOp(g.python_to_attr(inp) if inp.size > 4 else g.dense_attr(inp))
            block.add_op(c)
            operands.append(c.output)
        else:
            operands.append(next(args))
    if result_types is None:
        result_types = [
            None if t is None else tensor_type(*t) for t in onnx_output_types(case)
        ]
    op = g.ONNX_OPS[case.op].build_onnx(operands, case.attrs, result_types)
    block.add_op(op)
    block.add_op(ReturnOp(*op.results))
    func = FuncOp("f", (arg_types, [r.type for r in op.results]), Region(block))
    return ModuleOp([func]), op


def roundtrip(module: ModuleOp) -> None:
    text = ir_io.module_to_text(module)
    again = ir_io.parse_module_text(text)
    again.verify()
    assert ir_io.module_to_text(again) == text
    generic = ir_io.module_to_text(module, generic=True)
    parsed = ir_io.parse_module_text(generic)
    parsed.verify()
    assert ir_io.module_to_text(parsed, generic=True) == generic
    assert ir_io.module_to_text(parsed) == text


# --------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.name() for c in CASES])
def test_valid_case(case: Case) -> None:
    module, op = build_module(case)
    module.verify()
    assert op.ONNX_TYPE == case.op
    present = [i for i in case.inputs]
    while present and present[-1] is None:
        present.pop()
    assert [v is None for v in op.onnx_inputs()] == [i is None for i in present]
    assert [v is None for v in op.onnx_outputs()] == [
        not f for f in case.out_flags()[: len(op.onnx_outputs())]
    ]
    attrs = op.onnx_attributes()
    assert set(attrs) == set(case.attrs)
    roundtrip(module)


def test_every_op_has_a_case() -> None:
    covered = {c.op for c in CASES}
    assert sorted(set(g.ONNX_OPS) - covered) == []


def test_registry_alphabetical_and_complete() -> None:
    names = [c.ONNX_TYPE for c in g.GRAPH_OPS]
    assert names == sorted(names, key=str.lower)
    assert len(set(names)) == len(names)
    assert all(c.__doc__ and c.__doc__.strip() for c in g.GRAPH_OPS)
    assert {c.name for c in g.GRAPH_OPS} <= {o.name for o in g.Graph.operations}


# Inputs that are optional here because older opsets carry them as attributes.
OLD_FORM_INPUTS = {
    ("Pad", "pads"), ("Slice", "starts"), ("Slice", "ends"), ("TopK", "K"),
    ("Unsqueeze", "axes"), ("Upsample", "scales"),
}
OLD_FORM_ATTRS = {
    "BatchNormalization": {"spatial"}, "Clip": {"min", "max"}, "Dropout": {"ratio"},
    "Pad": {"pads", "value"}, "Slice": {"starts", "ends", "axes"}, "Split": {"split"},
    "Squeeze": {"axes"}, "TopK": {"k"}, "Unsqueeze": {"axes"}, "Upsample": {"scales"},
    **{f"Reduce{k}": {"axes"} for k in (
        "L1", "L2", "LogSum", "LogSumExp", "Max", "Mean", "Min", "Prod", "Sum", "SumSquare"
    )},
}
@pytest.mark.parametrize("onnx_type", sorted(g.ONNX_OPS))
def test_matches_onnx_schema(onnx_type: str) -> None:
    cls = g.ONNX_OPS[onnx_type]
    schema = onnx.defs.get_schema(onnx_type)
    defs = cls.onnx_input_defs()
    assert [n for n, _ in defs] == [i.name for i in schema.inputs]
    for (n, d), i in zip(defs, schema.inputs):
        opt = i.option
        if opt == onnx.defs.OpSchema.FormalParameterOption.Variadic:
            assert isinstance(d, VarOperandDef) and not isinstance(d, OptOperandDef)
        elif opt == onnx.defs.OpSchema.FormalParameterOption.Optional or (onnx_type, n) in OLD_FORM_INPUTS:
            assert isinstance(d, OptOperandDef), n
        else:
            assert not isinstance(d, VarOperandDef), n
    outs = [n for n, _ in cls.onnx_output_defs()]
    assert outs == [o.name for o in schema.outputs]
    assert set(cls.onnx_attribute_names()) == set(schema.attributes) | OLD_FORM_ATTRS.get(
        onnx_type, set()
    )
    assert cls.name == "graph." + cls.name.split(".")[1].lower()


# ---- invalid cases ------------------------------------------------------------------

INVALID: list[tuple[Case, list[Any] | None, str]] = [
    (Case("Conv", [X4, (6, 1, 3, 3)], {"group": 2}), [tensor_type(F32, (1, 6, 6, 6))],
     "graph.conv: input has 3 channels, weight expects 2 (group=2)"),
    (Case("Conv", [X4, (6, 3, 3, 3), (5,)]), [tensor_type(F32, (1, 6, 6, 6))],
     "graph.conv: bias has shape [5], expected [6]"),
    (Case("Conv", [X4, (6, 3, 3, 3)]), [tensor_type(F32, (1, 6, 8, 8))],
     "graph.conv: result #0 has type tensor<1x6x8x8xf32>, operands imply tensor<1x6x6x6xf32>"),
    (Case("Conv", [X4, (6, 3, 3, 3)], {"kernel_shape": [2, 2]}), [tensor_type(F32, (1, 6, 6, 6))],
     "graph.conv: kernel_shape [2, 2] differs from the weight's spatial dims [3, 3]"),
    (Case("Add", [(2, 3), (4,)]), [tensor_type(F32, (2, 3))],
     "graph.add: shapes [2, 3], [4] do not broadcast"),
    (Case("Add", [(2, 3), (I64, (2, 3))]), [tensor_type(F32, (2, 3))],
     "graph.add: operand element types differ: f32, i64"),
    (Case("Equal", [(2, 3), (2, 3)]), [tensor_type(F32, (2, 3))],
     "graph.equal: result #0 has type tensor<2x3xf32>, operands imply tensor<2x3xi1>"),
    (Case("MatMul", [(2, 3), (4, 5)]), [tensor_type(F32, (2, 5))],
     "graph.matmul: inner dimensions differ: A [2, 3] has 3, B [4, 5] has 4"),
    (Case("Gemm", [(2, 3), (4, 3)]), [tensor_type(F32, (2, 4))],
     "graph.gemm: A [2, 3] (transA=0) has K=3, B [4, 3] (transB=0) has K=4"),
    (Case("Reshape", [(2, 3), arr([4, -1])]), [tensor_type(F32, (4, 2))],
     "graph.reshape: cannot reshape [2, 3] (6 elements) to [4, -1]"),
    (Case("Reshape", [(2, 3), (I64, (2,))]), [tensor_type(F32, (4, 2))],
     "graph.reshape: 6 elements cannot become 8"),
    (Case("Transpose", [(2, 3)], {"perm": [0, 0]}), [tensor_type(F32, (2, 2))],
     "graph.transpose: perm [0, 0] is not a permutation of 2 axes"),
    (Case("Softmax", [(2, 3)], {"axis": 2}), [tensor_type(F32, (2, 3))],
     "graph.softmax: axis 2 is out of range for rank 2"),
    (Case("Concat", [(2, 3), (3, 3)], {"axis": 1}), [tensor_type(F32, (2, 6))],
     "graph.concat: input #1 [3, 3] differs from input #0 [2, 3] outside axis 1"),
    (Case("Split", [(2, 6), arr([2, 3])], {"axis": 1}), [tensor_type(F32, (2, 2)), tensor_type(F32, (2, 3))],
     "graph.split: split [2, 3] sums to 5, axis has size 6"),
    (Case("BatchNormalization", [X4, (4,), (3,), (3,), (3,)]), [tensor_type(F32, X4)],
     "graph.batch_normalization: scale has shape [4], input has 3 channels (expected [3])"),
    (Case("MaxPool", [X4]), [tensor_type(F32, X4)],
     "graph.max_pool: kernel_shape attribute is required"),
    (Case("Squeeze", [(1, 3), arr([1])]), [tensor_type(F32, (1,))],
     "graph.squeeze: cannot squeeze axis 1 of size 3 (shape [1, 3])"),
    (Case("Where", [(2, 3), (2, 3), (2, 3)]), [tensor_type(F32, (2, 3))],
     "graph.where: condition must be i1 (bool), got f32"),
    (Case("Cast", [(2, 3)], {"to": 7}), [tensor_type(F32, (2, 3))],
     "graph.cast: result #0 has type tensor<2x3xf32>, operands imply tensor<2x3xi64>"),
    (Case("Gather", [(5, 4), arr([0])], {"axis": 2}), [tensor_type(F32, (5, 1))],
     "graph.gather: axis 2 is out of range for rank 2"),
    (Case("Slice", [(5, 6), arr([1]), arr([3]), arr([1])]), [tensor_type(F32, (5, 3))],
     "graph.slice: result #0 has type tensor<5x3xf32>, operands imply tensor<5x2xf32>"),
    (Case("Expand", [(3, 2), arr([4, 1])]), [tensor_type(F32, (4, 2))],
     "graph.expand: shapes [3, 2], [4, 1] do not broadcast"),
    (Case("Tile", [(3, 2), arr([2])]), [tensor_type(F32, (6, 2))],
     "graph.tile: repeats has 1 values, input rank is 2"),
    (Case("Range", [arr(0), arr(10), arr(3)]), [tensor_type(I64, (3,))],
     "graph.range: result #0 has type tensor<3xi64>, operands imply tensor<4xi64>"),
    (Case("ConstantOfShape", [arr([2, 3])]), [tensor_type(F32, (3, 2))],
     "graph.constant_of_shape: result #0 has type tensor<3x2xf32>, operands imply tensor<2x3xf32>"),
    (Case("LayerNormalization", [(2, 5), (4,)]), [tensor_type(F32, (2, 5))],
     "graph.layer_normalization: Scale shape [4] does not broadcast to [5]"),
    (Case("AveragePool", [(1, 1, 2, 2)], {"kernel_shape": [3, 3]}), [tensor_type(F32, (1, 1, 1, 1))],
     "graph.average_pool: kernel extent 3 exceeds padded input size 2 in spatial dim 0"),
    (Case("Not", [(2, 3)]), [tensor_type(F32, (2, 3))], "graph.not: X must be i1 (bool), got f32"),
    (Case("NonZero", [(2, 3)]), [tensor_type(I64, (3, 4))],
     "graph.non_zero: result must be tensor<2x?xi64> (input rank 2), got tensor<3x4xi64>"),
    (Case("Relu", [(2, 3)]), [TensorType(tensor_type(F32, (1,)).element_type, [DYNAMIC_INDEX, 3])],
     "graph.relu: result #0 has type tensor<?x3xf32>, operands imply tensor<2x3xf32>"),
]


@pytest.mark.parametrize(
    "case,results,message", INVALID, ids=[f"{c.name()}-{i}" for i, (c, _, _) in enumerate(INVALID)]
)
def test_invalid(case: Case, results: list[Any], message: str) -> None:
    module, _ = build_module(case, results)
    with pytest.raises(VerifyException) as info:
        module.verify()
    assert message in str(info.value)


def test_non_zero_dynamic_result_allowed() -> None:
    case = Case("NonZero", [(2, 3)])
    dyn = TensorType(tensor_type(I64, (1,)).element_type, [2, DYNAMIC_INDEX])
    module, op = build_module(case, [dyn])
    module.verify()
    assert op.DYNAMIC_RESULT_SHAPE
    roundtrip(module)


def test_unknown_attribute_rejected() -> None:
    with pytest.raises(ValueError, match="unknown attribute 'alpah'"):
        build_module(Case("LeakyRelu", [(2, 3)], {"alpah": 0.1}))
    module, op = build_module(Case("Relu", [(2, 3)]))
    op.attributes["strides2"] = g.python_to_attr(1)
    with pytest.raises(VerifyException, match="unknown attribute 'strides2'"):
        module.verify()


def test_attribute_kind_coercion() -> None:
    module, op = build_module(Case("LeakyRelu", [(2, 3)], {"alpha": 1}))
    assert op.onnx_attributes() == {"alpha": 1.0}
    with pytest.raises(ValueError, match="attribute 'alpha' cannot hold"):
        build_module(Case("LeakyRelu", [(2, 3)], {"alpha": "x"}))
    module, op = build_module(Case("Conv", [X4, (6, 3, 3, 3)], {"pads": np.array([1, 1, 1, 1])}),
                              [tensor_type(F32, (1, 6, 8, 8))])
    module.verify()
    assert op.onnx_attributes()["pads"] == [1, 1, 1, 1]


def test_build_onnx_errors() -> None:
    x = Block(arg_types=[tensor_type(F32, (2,))]).args[0]
    with pytest.raises(ValueError, match="required input 'B' missing"):
        g.AddOp.build_onnx([x], {}, [tensor_type(F32, (2,))])
    with pytest.raises(ValueError, match="3 inputs, at most 2 allowed"):
        g.AddOp.build_onnx([x, x, x], {}, [tensor_type(F32, (2,))])
    with pytest.raises(ValueError, match="required output 'Y' missing"):
        g.LayerNormalizationOp.build_onnx([x, x], {}, [None, tensor_type(F32, (2,))])


def test_after_edges_and_block_order() -> None:
    module, op = build_module(Case("Relu", [(2, 3)]))
    block = op.parent_block()
    assert block is not None
    first = g.ReluOp.build_onnx([block.args[0]], {}, [tensor_type(F32, (2, 3))])
    block.insert_op_before(first, op)
    op2 = g.ReluOp.build_onnx([block.args[0]], {}, [tensor_type(F32, (2, 3))], after=[first.Y])
    block.insert_op_before(op2, op)
    module.verify()
    roundtrip(module)
    first.detach()
    block.insert_op_after(first, op2)
    with pytest.raises(VerifyException, match="not a topological order"):
        module.verify()
