"""The narrow ONNX element types end to end (nnx/types.py).

bfloat16, float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0FNU), float6, float4 E2M1,
int4/uint4 and int2/uint2: the type table, the `dense_resource` byte layout (one
element per byte), inline constants, ONNX tensors with packed 4-/2-bit raw data, and
models using them as graph inputs, initializers and outputs, imported, printed,
parsed back and interpreted. The oracle is onnxruntime where it runs the model, else
ONNX's reference evaluator (used here as an oracle only).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnx.importer import import_model
from nnx.interp.interpreter import run_module
from nnx.interp.kernels import run_kernel
from nnx.ir_io import UserError, module_to_text, parse_module_text
from nnx.resources import elements_value, lookup_array, register_array
from nnx.types import (
    ELEMENT_TYPES,
    ONNX_TO_NP,
    is_narrow_float,
    is_narrow_int,
    mlir_type_of_dtype,
    numpy_dtype_of,
)

NARROW = {
    "bfloat16": TensorProto.BFLOAT16,
    "float8e4m3fn": TensorProto.FLOAT8E4M3FN,
    "float8e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
    "float8e5m2": TensorProto.FLOAT8E5M2,
    "float8e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ,
    "float8e8m0": TensorProto.FLOAT8E8M0,
    "float4e2m1": TensorProto.FLOAT4E2M1,
    "uint4": TensorProto.UINT4,
    "int4": TensorProto.INT4,
    "uint2": TensorProto.UINT2,
    "int2": TensorProto.INT2,
    "float6e2m3": 27,
    "float6e3m2": 28,
}


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8 if a.dtype.itemsize == 1 else np.uint16)


# ---- the table ------------------------------------------------------------------------------


def test_table_matches_onnx_and_is_one_to_one():
    assert len({e.onnx for e in ELEMENT_TYPES}) == len(ELEMENT_TYPES)
    assert len({e.dtype for e in ELEMENT_TYPES}) == len(ELEMENT_TYPES)
    assert len({e.mlir for e in ELEMENT_TYPES}) == len(ELEMENT_TYPES)
    for e in ELEMENT_TYPES:
        assert helper.tensor_dtype_to_np_dtype(e.onnx) == e.dtype, e
        assert numpy_dtype_of(e.mlir) == e.dtype and mlir_type_of_dtype(e.dtype) == e.mlir
    # every ONNX type but strings and complex numbers
    missing = {
        v for k, v in TensorProto.DataType.items() if v not in ONNX_TO_NP
    } - {TensorProto.UNDEFINED, TensorProto.STRING, TensorProto.COMPLEX64, TensorProto.COMPLEX128}
    assert not missing


def test_names_round_trip_and_match_mlir_parsing():
    """Each row's name is its MLIR spelling: it parses back to the row's type and
    leads to the row's dtype and itemsize."""
    from xdsl.dialects.builtin import TensorType

    from nnx.types import dtype_of_name, element_type_named, mlir_type_of_name, name_of_dtype, name_of_type

    assert len({e.name for e in ELEMENT_TYPES}) == len(ELEMENT_TYPES)
    for e in ELEMENT_TYPES:
        parsed = parse_module_text(f"func.func @f(%x: tensor<2x{e.name}>) {{\n  func.return\n}}\n")
        arg_type = next(iter(parsed.ops)).args[0].type
        assert isinstance(arg_type, TensorType) and arg_type.element_type == e.mlir
        assert element_type_named(e.name) is e
        assert dtype_of_name(e.name) == e.dtype and mlir_type_of_name(e.name) == e.mlir
        assert name_of_type(e.mlir) == e.name and name_of_dtype(e.dtype) == e.name
        assert e.itemsize == e.dtype.itemsize
    with pytest.raises(ValueError, match="unsupported element type f7"):
        dtype_of_name("f7")


def test_chip_element_types_come_from_the_table():
    """The element types of the chip ISA are rows of the table, spelled the same."""
    from nnx.dialects.chip import type_name, type_of_name
    from nnx.sim.isa import DTYPES
    from nnx.types import element_type_named

    for name, dt in DTYPES.items():
        e = element_type_named(name)
        assert e.dtype == dt
        assert type_name(e.mlir) == name and type_of_name(name) == e.mlir


@pytest.mark.parametrize(
    "code, text",
    [(16, "bf16"), (17, "f8E4M3FN"), (18, "f8E4M3FNUZ"), (19, "f8E5M2"), (20, "f8E5M2FNUZ"),
     (21, "ui4"), (22, "i4"), (23, "f4E2M1FN"), (24, "f8E8M0FNU"), (25, "ui2"), (26, "i2")],
)
def test_mlir_spelling(code, text):
    from xdsl.dialects.builtin import TensorType

    assert str(TensorType(mlir_type_of_dtype(ONNX_TO_NP[code]), [2])) == f"tensor<2x{text}>"


# ---- blobs and inline constants ------------------------------------------------------------


def _sample(dt: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    if is_narrow_int(dt):
        info = ml_dtypes.iinfo(dt)
        return rng.integers(int(info.min), int(info.max) + 1, n).astype(dt)
    if dt == ONNX_TO_NP[24]:  # e8m0: powers of two only
        return (2.0 ** rng.integers(-20, 20, n)).astype(np.float32).astype(dt)
    x = (rng.standard_normal(n) * 2).astype(np.float32)
    if not dt.name.startswith(("float4", "float6")):
        x[:3] = [0.0, -1.5, 3.25]
    return x.astype(dt)


def _module_with_constant(arr: np.ndarray, inline: bool):
    from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, ModuleOp
    from xdsl.ir import Block, Region

    from nnx.dialects.graph import ConstantOp
    from nnx.types import tensor_type_of

    if inline:
        attr = DenseIntOrFPElementsAttr(tensor_type_of(arr), BytesAttr(arr.tobytes()))
    else:
        attr = register_array(arr, "w")
    op = ConstantOp(attr)
    return ModuleOp(Region(Block([op]))), attr


@pytest.mark.parametrize("name", sorted(NARROW))
@pytest.mark.parametrize("inline", [False, True], ids=["blob", "inline"])
def test_constant_text_round_trip(name, inline):
    dt = ONNX_TO_NP[NARROW[name]]
    arr = _sample(dt, 12, np.random.default_rng(1)).reshape(3, 4)
    module, _ = _module_with_constant(arr, inline)
    text = module_to_text(module)
    assert ("dense_resource<" in text) != inline
    parsed = parse_module_text(text)
    const = next(iter(parsed.body.block.ops))
    back = elements_value(const.value)
    assert back.dtype == dt and back.shape == (3, 4)
    assert np.array_equal(_bits(back), _bits(arr)), (text, back, arr)


def test_sub_byte_blob_layout():
    """One element per byte, the value in the low bits (MLIR's dense storage)."""
    arr = np.array([-1, 7, -8, 0], dtype=ml_dtypes.int4)
    module, attr = _module_with_constant(arr, inline=False)
    text = module_to_text(module)
    assert '"0x01000000' + "0f07080" + '0"' in text.replace("\n", "")
    # a blob written with sign-extended bytes (0xFF for -1) reads the same
    from nnx.resources import split_resource_section

    handle = attr.resource_handle.data
    ir = text.replace(f'{handle}: "0x010000000f070800"', f'{handle}: "0x01000000ff07f800"')
    assert ir != text
    body, n = split_resource_section(ir)
    assert n == 1
    got = lookup_array(attr)
    assert got.tolist() == [-1, 7, -8, 0] and _bits(got).tolist() == [0x0F, 7, 8, 0]


def test_nan_narrow_float_constant_goes_to_a_blob():
    from nnx.importer.builder import _constant_op

    arr = np.array([1.0, np.nan], np.float32).astype(ml_dtypes.float8_e8m0fnu)
    op = _constant_op(arr, "c")
    assert "dense_resource" in str(op.value)
    op = _constant_op(arr[:1], "c")
    assert "dense<" in str(op.value)


# ---- models: import -> print -> parse -> interpret, against ORT / the reference ----------


def _cast_model(code: int, n: int, x: np.ndarray, c: np.ndarray, s: np.ndarray):
    """x: T input, f: float input, c: T initializer (blob), s: small T initializer
    (inline); outputs sum = x + c + s + f (float) and y = Cast(sum, T)."""
    F = TensorProto.FLOAT
    nodes = [
        helper.make_node("Cast", ["x"], ["xf"], to=F),
        helper.make_node("Cast", ["c"], ["cf"], to=F),
        helper.make_node("Cast", ["s"], ["sf"], to=F),
        helper.make_node("Add", ["xf", "cf"], ["a"]),
        helper.make_node("Add", ["a", "sf"], ["b"]),
        helper.make_node("Add", ["b", "f"], ["sum"]),
        helper.make_node("Cast", ["sum"], ["y"], to=code),
    ]
    g = helper.make_graph(
        nodes,
        "narrow",
        [helper.make_tensor_value_info("x", code, [2, n]), helper.make_tensor_value_info("f", F, [2, n])],
        [helper.make_tensor_value_info("sum", F, [2, n]), helper.make_tensor_value_info("y", code, [2, n])],
        initializer=[numpy_helper.from_array(c, "c"), numpy_helper.from_array(s, "s")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)], ir_version=10)
    onnx.checker.check_model(m)
    return m


def _float_boundary(model):
    """The model with float32 graph inputs/outputs in place of narrow ones (Cast at the
    boundary): onnxruntime's Python API takes and returns no bfloat16/int4 arrays.
    Exact: every narrow value is a float32 and casts back to itself."""
    import copy

    m = copy.deepcopy(model)
    g = m.graph
    pre, post = [], []
    for vi in g.input:
        t = vi.type.tensor_type
        if t.elem_type in NARROW.values():
            pre.append(helper.make_node("Cast", [vi.name + "__f"], [vi.name], to=t.elem_type))
            vi.name += "__f"
            t.elem_type = TensorProto.FLOAT
    for vi in g.output:
        t = vi.type.tensor_type
        if t.elem_type in NARROW.values():
            post.append(helper.make_node("Cast", [vi.name], [vi.name + "__f"], to=TensorProto.FLOAT))
            vi.name += "__f"
            t.elem_type = TensorProto.FLOAT
    nodes = pre + list(g.node) + post
    del g.node[:]
    g.node.extend(nodes)
    return m


def _oracle(model, feeds: dict[str, np.ndarray]) -> tuple[str, list[np.ndarray]]:
    """(which oracle ran, outputs as float32 for narrow types)."""
    try:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.log_severity_level = 3
        wrapped = _float_boundary(model)
        sess = ort.InferenceSession(wrapped.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - ORT lacks the type or op: the reference evaluator
        from onnx.reference import ReferenceEvaluator

        outs = ReferenceEvaluator(model).run(None, feeds)
        return "reference", [o.astype(np.float32) if o.dtype.kind == "V" else o for o in outs]
    names = {i.name for i in wrapped.graph.input}
    ort_feeds = {
        (k if k in names else k + "__f"): (v if k in names else v.astype(np.float32))
        for k, v in feeds.items()
    }
    return "onnxruntime", list(sess.run(None, ort_feeds))


def _round_trip(model, shapes, generic: bool = False):
    module = import_model(model, shapes)
    text = module_to_text(module, generic=generic)
    return parse_module_text(text), text


ORT_CAST_TYPES = {"bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
                  "float8e8m0", "uint4", "int4", "uint2", "int2"}


@pytest.mark.parametrize("name", sorted(NARROW))
def test_model_round_trip_against_oracle(name):
    code = NARROW[name]
    dt = ONNX_TO_NP[code]
    rng = np.random.default_rng(code)
    n = 9  # 18 elements: odd nibble/crumb counts in packed raw data, > inline limit
    x = _sample(dt, 2 * n, rng).reshape(2, n)
    c = _sample(dt, 2 * n, rng).reshape(2, n)
    s = _sample(dt, n, rng)
    if is_narrow_int(dt):  # keep the sum in range: Cast of out-of-range ints is undefined
        info = ml_dtypes.iinfo(dt)
        target = rng.integers(int(info.min), int(info.max) + 1, (2, n))
        f = (target - x.astype(np.float32) - c.astype(np.float32) - s.astype(np.float32)).astype(np.float32)
    elif code == 24:  # e8m0: positive values, some exact powers of two
        f = np.abs(rng.standard_normal((2, n))).astype(np.float32) * 4
        f[0, :3] = [1.0, 2.0, 1e30]
    else:
        f = rng.standard_normal((2, n)).astype(np.float32)
        f[0, :3] = [1e9, -1e9, np.nan]  # saturation and NaN
    model = _cast_model(code, n, x, c, s)
    # the initializers of 4-/2-bit types are stored packed in ONNX raw data
    raw = model.graph.initializer[0].raw_data
    if dt.name in ("int4", "uint4", "float4_e2m1fn"):
        assert len(raw) == (2 * n + 1) // 2
    if dt.name in ("int2", "uint2"):
        assert len(raw) == (2 * n + 3) // 4

    feeds = {"x": x, "f": f}
    oracle, expected = _oracle(model, feeds)
    if name in ORT_CAST_TYPES:
        assert oracle == "onnxruntime"
    for generic in (False, True):
        parsed, text = _round_trip(model, {"x": (2, n), "f": (2, n)}, generic)
        assert "dense_resource<" in text
        got = run_module(parsed, feeds)
        assert list(got) == ["sum", "y"]
        np.testing.assert_allclose(got["sum"], expected[0], rtol=1e-6)
        assert got["y"].dtype == dt
        assert np.array_equal(
            got["y"].astype(np.float32), expected[1].astype(np.float32), equal_nan=True
        ), (oracle, f, got["y"], expected[1])


@pytest.mark.parametrize("name", sorted(n for n in NARROW if is_narrow_float(ONNX_TO_NP[NARROW[n]])))
def test_arithmetic_in_narrow_float_against_reference(name):
    """Mul/Where/Concat/Transpose on T (onnxruntime has no such kernels): computed in
    float32 and rounded once, which for one product is exactly the reference's."""
    code = NARROW[name]
    dt = ONNX_TO_NP[code]
    rng = np.random.default_rng(7)
    x = _sample(dt, 12, rng).reshape(3, 4)
    y = _sample(dt, 12, rng).reshape(3, 4)
    nodes = [
        helper.make_node("Mul", ["x", "y"], ["p"]),
        helper.make_node("Greater", ["x", "y"], ["gt"]),
        helper.make_node("Where", ["gt", "p", "x"], ["w"]),
        helper.make_node("Transpose", ["w"], ["t"], perm=[1, 0]),
        helper.make_node("Concat", ["t", "t"], ["out"], axis=0),
    ]
    g = helper.make_graph(
        nodes,
        "arith",
        [helper.make_tensor_value_info("x", code, [3, 4]), helper.make_tensor_value_info("y", code, [3, 4])],
        [helper.make_tensor_value_info("out", code, [8, 3])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)], ir_version=10)
    from onnx.reference import ReferenceEvaluator

    (expected,) = ReferenceEvaluator(model).run(None, {"x": x, "y": y})
    parsed, _ = _round_trip(model, {"x": (3, 4), "y": (3, 4)})
    got = run_module(parsed, {"x": x, "y": y})["out"]
    assert got.dtype == dt
    assert np.array_equal(got.astype(np.float32), expected.astype(np.float32), equal_nan=True)


def test_npy_void_input_reads_as_declared_type(tmp_path):
    """np.save keeps ml_dtypes arrays as raw void bytes; the interpreter views them."""
    code = TensorProto.BFLOAT16
    x = np.array([1.5, -2.0, 3.0], ml_dtypes.bfloat16)
    g = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
        "g",
        [helper.make_tensor_value_info("x", code, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)], ir_version=10)
    np.save(tmp_path / "x.npy", x)
    raw = np.load(tmp_path / "x.npy")
    assert raw.dtype.kind == "V" and raw.dtype.type is np.void
    module = import_model(model, {"x": (3,)})
    assert run_module(module, {"x": raw})["y"].tolist() == [1.5, -2.0, 3.0]
    with pytest.raises(Exception, match="element type"):
        run_module(module, {"x": x.astype(ml_dtypes.float8_e4m3fn)[:3].view("V1")})


# ---- Cast semantics ----------------------------------------------------------------------


SPECIAL = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e6, -1e6, 0.3, 449.0, 57345.0], np.float32)


@pytest.mark.parametrize("code", [17, 18, 19, 20])
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_float8_special_values_as_reference(code, saturate):
    from onnx.reference.ops.op_cast import cast_to

    got = run_kernel("Cast", [SPECIAL], {"to": code, "saturate": saturate})[0]
    want = cast_to(SPECIAL, code, bool(saturate))
    assert got.dtype == want.dtype
    assert np.array_equal(got.astype(np.float32), want.astype(np.float32), equal_nan=True), (got, want)


def test_cast_float8_saturate_table():
    """ONNX's table: saturate maps +-Inf to +-max for every float8 type."""
    for code in (17, 18, 19, 20):
        dt = ONNX_TO_NP[code]
        m = float(ml_dtypes.finfo(dt).max)
        got = run_kernel("Cast", [np.array([np.inf, -np.inf], np.float32)], {"to": code})[0]
        assert got.astype(np.float32).tolist() == [m, -m]
    got = run_kernel("Cast", [np.array([np.inf, 1e9], np.float32)], {"to": 19, "saturate": 0})[0]
    assert np.isinf(got.astype(np.float32)).all()  # E5M2 keeps Inf without saturate
    got = run_kernel("Cast", [np.array([np.inf, 1e9], np.float32)], {"to": 17, "saturate": 0})[0]
    assert np.isnan(got.astype(np.float32)).all()


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_float8e8m0_round_modes_as_reference(round_mode, saturate):
    rng = np.random.default_rng(3)
    x = np.concatenate([
        np.abs(rng.standard_normal(200)).astype(np.float32) * 10,
        np.array([1.0, 1.5, 1.75, 3.0, 2.0 ** 127, 1.9 * 2.0 ** 127, 2.0 ** -126, np.nan], np.float32),
    ])
    got = run_kernel("Cast", [x], {"to": 24, "saturate": saturate, "round_mode": round_mode})[0]
    want = numpy_helper.to_float8e8m0(x, bool(saturate), round_mode)
    assert np.array_equal(_bits(got), _bits(want))


def test_cast_float8e8m0_spec_special_values():
    """ONNX's E8M0 table: saturate+up: 0 -> 2^-127 (0x00), Inf -> max (0xFE), NaN -> NaN;
    non-saturate: 0 and Inf -> NaN (0xFF)."""
    x = np.array([0.0, np.inf, np.nan], np.float32)
    sat = run_kernel("Cast", [x], {"to": 24})[0]
    assert _bits(sat).tolist() == [0x00, 0xFE, 0xFF]
    nosat = run_kernel("Cast", [x], {"to": 24, "saturate": 0, "round_mode": "nearest"})[0]
    assert _bits(nosat).tolist() == [0xFF, 0xFF, 0xFF]


def test_castlike_narrow_to_narrow():
    x = np.array([1.0, -2.5, 300.0, 0.1], np.float32).astype(ml_dtypes.bfloat16)
    like = np.zeros(1, ml_dtypes.float8_e4m3fn)
    got = run_kernel("CastLike", [x, like], {})[0]
    want = x.astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    assert got.dtype == like.dtype and np.array_equal(_bits(got), _bits(want))


# ---- importer ------------------------------------------------------------------------------


def test_string_tensors_fail_in_one_line():
    g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    with pytest.raises(UserError, match="unsupported element type string of graph input 'x'"):
        import_model(model, {"x": (2,)})


def test_folded_split_without_sizes_uses_the_output_count():
    """Constant folding tells kernels how many outputs the node has (Split of opset 13
    without `split`, MaxPool with its optional indices)."""
    c = np.arange(12, dtype=np.float32).reshape(6, 2)
    g = helper.make_graph(
        [
            helper.make_node("Split", ["c"], ["a", "b", "d"], axis=0),
            helper.make_node("Concat", ["d", "a"], ["cat"], axis=0),
            helper.make_node("Add", ["cat", "x"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])],
        initializer=[numpy_helper.from_array(c, "c")],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    module = import_model(model, {"x": (4, 2)})
    names = [op.name for op in module.walk()]
    assert "graph.split" not in names and "graph.concat" not in names
    x = np.ones((4, 2), np.float32)
    got = run_module(module, {"x": x})["y"]
    assert np.array_equal(got, np.concatenate([c[4:], c[:2]]) + 1)
