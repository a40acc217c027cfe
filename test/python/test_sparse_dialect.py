"""The sparse dialect (docs/sparse-mapping.md, section 4): build, verify, print/parse
round-trips (custom and generic), invalid IR, and the numpy implementations of every
op."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import ParseError, VerifyException

from nnx import connection_data as cd
from nnx.dialects import sparse as sp
from nnx.interp.sparse_impls import SPARSE_IMPLS, run_sparse_op, sparse_operands
from nnx.ir_io import UserError, module_to_text, parse_module_text


def t(*shape: int) -> TensorType:
    return TensorType(f32, list(shape))


def build_module():
    """func @f(x[2,8], w[4,8], b[4], img[1,3,6,6], k[4,3,3,3]) with every sparse op."""
    arg_types = [t(2, 8), t(4, 8), t(4), t(1, 3, 6, 6), t(4, 3, 3, 3), t(8, 4)]
    block = Block(arg_types=arg_types)
    x, w, b, img, k, bm = block.args
    ops = []

    def add(op):
        ops.append(op)
        return op

    wc = add(sp.ConnectOp(w, 0.5, cd.DIRECT, cd.PER_OUTPUT)).result
    ws = add(sp.ConvertOp(wc, form=cd.STRIDE)).result
    wi = add(sp.ConvertOp(ws, order=cd.PER_INPUT)).result
    nc = add(sp.ConnectOp(x, 0.0, cd.STRIDE, cd.NEURON)).result
    c = add(sp.CombineOp(nc, wc, form=cd.DIRECT)).result
    cs = add(sp.CombineOp(nc, ws)).result
    sel = add(sp.SelectOp(c, x, w))
    g = add(sp.GroupPruneOp(x, 2, 0.1, 1, axis=1, after=[sel.processed_neurons])).output
    y = add(sp.FcOp(g, w, b, cs)).output
    y2 = add(sp.FcOp(x, w, None, wi, after=[y])).output
    bc = add(sp.ConnectOp(bm, 0.25, cd.DIRECT, cd.PER_INPUT, layout=sp.IN_OUT)).result
    m = add(sp.MatMulOp(x, bm, bc)).output
    kc = add(sp.ConnectOp(k, 0.5, cd.STRIDE, cd.PER_OUTPUT)).result
    from xdsl.dialects.builtin import DenseArrayBase, i64

    v = add(
        sp.ConvOp(
            img,
            k,
            None,
            kc,
            t(1, 4, 3, 3),
            {"pads": DenseArrayBase.from_list(i64, [1, 1, 1, 1]),
             "strides": DenseArrayBase.from_list(i64, [2, 2])},
        )
    ).output
    ops.append(ReturnOp(y, y2, m, v, sel.processed_weights))
    block.add_ops(ops)
    func = FuncOp(
        "f",
        (arg_types, [t(2, 4), t(2, 4), t(2, 4), t(1, 4, 3, 3), t(2, 4, 8)]),
        Region(block),
    )
    return ModuleOp([func])


def test_build_verify_print_parse_roundtrip():
    module = build_module()
    module.verify()
    text = module_to_text(module)
    assert "!sparse.conn<stride, 2x4x8, per_output>" in text
    assert "sparse.fc(%" in text and "conn(%" in text
    again = parse_module_text(text)
    again.verify()
    assert module_to_text(again) == text
    generic = module_to_text(module, generic=True)
    assert '"sparse.select"' in generic and "operandSegmentSizes" in generic
    from_generic = parse_module_text(generic)
    from_generic.verify()
    assert module_to_text(from_generic) == text


def test_result_types_inferred_by_builders():
    module = build_module()
    ops = {op.name: op for op in module.walk()}
    assert ops["sparse.combine"].result.type == sp.ConnType("stride", (2, 4, 8), "per_output")
    assert ops["sparse.select"].processed_neurons.type == t(2, 4, 8)
    assert ops["sparse.matmul"].output.type == t(2, 4)


def test_conn_type_accessors():
    ct = sp.ConnType("stride", (3, 5), "per_input")
    assert ct.get_shape() == (3, 5)
    assert ct.storage_dtype() == np.int32
    assert sp.ConnType("direct", (5,), "neuron").storage_dtype() == np.uint8
    with pytest.raises(VerifyException, match="per_input connection data is"):
        sp.ConnType("direct", (5,), "per_input")


INVALID = [
    ("!sparse.conn<sparse, 4, neuron>", "form must be direct or stride"),
    ("!sparse.conn<direct, 4, diagonal>", "order must be neuron, per_output or per_input"),
    ("!sparse.conn<direct, 4, per_output>", "per_output connection data is"),
    ("!sparse.conn<direct, 0x4, per_output>", "dimensions must be >= 1"),
]


@pytest.mark.parametrize("type_text,message", INVALID)
def test_invalid_types_are_parse_errors(type_text, message):
    text = f"func.func @f(%c: {type_text}) {{\n  func.return\n}}\n"
    with pytest.raises(UserError, match=message):
        parse_module_text(text)


INVALID_OPS = [
    (
        "%c = sparse.connect %w {threshold = 0.5 : f64} : tensor<4x8xf32> -> !sparse.conn<direct, 4x8, per_input>",
        "has shape [8, 4], the result type says [4, 8]",
    ),
    (
        "%c = sparse.group_prune %x {groups = 0 : i64, threshold = 0.1 : f64, count_threshold = 0 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>",
        "groups must be in [1, 16]",
    ),
    (
        "%c = sparse.group_prune %x {groups = 1 : i64, threshold = 0.1 : f64, count_threshold = 0 : i64, axis = 2 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>",
        "axis 2 out of range for rank 2",
    ),
    (
        "%c = sparse.fc(%x, %w) conn(%wc) : (tensor<2x8xf32>, tensor<4x8xf32>), !sparse.conn<direct, 4x8, per_output> -> tensor<2x5xf32>",
        "result must be tensor<2x4xf32>",
    ),
    (
        "%c = sparse.fc(%x, %w) conn(%nc) : (tensor<2x8xf32>, tensor<4x8xf32>), !sparse.conn<direct, 2x8, neuron> -> tensor<2x4xf32>",
        "needs weight connection data",
    ),
]


@pytest.mark.parametrize("line,message", INVALID_OPS)
def test_invalid_ops(line, message):
    text = (
        "func.func @f(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, "
        "%wc: !sparse.conn<direct, 4x8, per_output>, %nc: !sparse.conn<direct, 2x8, neuron>) {\n"
        f"  {line}\n  func.return\n}}\n"
    )
    module = parse_module_text(text)
    with pytest.raises(VerifyException, match=message.replace("[", r"\[").replace("]", r"\]")):
        module.verify()


def test_valid_connect_on_neurons_per_output_is_weight_view():
    # a [2, 8] tensor read as weights [out=2, in=8] is legal (one row per output neuron)
    text = (
        "func.func @f(%x: tensor<2x8xf32>) {\n"
        "  %c = sparse.connect %x {threshold = 0.5 : f64} : tensor<2x8xf32> -> "
        "!sparse.conn<direct, 2x8, per_output>\n  func.return\n}\n"
    )
    parse_module_text(text).verify()


def test_malformed_syntax_is_a_parse_error():
    text = "func.func @f(%c: !sparse.conn<direct 4, neuron>) {\n  func.return\n}\n"
    with pytest.raises((UserError, ParseError)):
        parse_module_text(text)


# --------------------------------------------------------------------------------------
# Implementations
# --------------------------------------------------------------------------------------


def test_every_op_has_an_implementation():
    assert {op.name for op in sp.SPARSE_OPS} == set(SPARSE_IMPLS)


def run_module(module, args):
    func = next(op for op in module.ops)
    block = func.body.block
    env = dict(zip(block.args, args))
    for op in block.ops:
        if isinstance(op, ReturnOp):
            return env, [env[v] for v in op.operands]
        outs = run_sparse_op(op, [env[v] for v in sparse_operands(op)])
        for r, o in zip(op.results, outs):
            if isinstance(r.type, sp.ConnType):
                assert o.shape == r.type.get_shape() and o.dtype == r.type.storage_dtype()
            else:
                assert o.shape == tuple(r.type.get_shape()) and o.dtype == np.float32
            env[r] = o


def test_impls_equal_dense_on_pruned_operands():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    x[x < 0] = 0  # ReLU-like neurons
    w = rng.standard_normal((4, 8)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    img = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    k = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    bm = rng.standard_normal((8, 4)).astype(np.float32)
    module = build_module()
    _, (y, y2, m, v, pw) = run_module(module, [x, w, b, img, k, bm])

    wp = np.where(np.abs(w) > 0.5, w, 0)
    g, _ = cd.group_prune(x, 2, 0.1, 1, axis=1)
    # y: neurons of the group-pruned x, connection data of x (combined with w's)
    np.testing.assert_allclose(y, (np.where(x != 0, g, 0)) @ wp.T + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y2, x @ wp.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m, x @ np.where(np.abs(bm) > 0.25, bm, 0), rtol=1e-5, atol=1e-5)
    # conv against a loop reference on the pruned kernel
    kp = np.where(np.abs(k) > 0.5, k, 0)
    xp = np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 4, 3, 3))
    for o in range(4):
        for i in range(3):
            for j in range(3):
                ref[0, o, i, j] = np.sum(xp[0, :, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3] * kp[o])
    np.testing.assert_allclose(v, ref, rtol=1e-5, atol=1e-5)
    # processed weights of output neuron j: its surviving weights, left-packed
    for s in range(2):
        for j in range(4):
            keep = (x[s] != 0) & (np.abs(w[j]) > 0.5)
            n = int(keep.sum())
            assert np.array_equal(pw[s, j, :n], w[j, keep]) and not pw[s, j, n:].any()


def test_impl_rejects_malformed_runtime_connection_data():
    module = build_module()
    func = next(iter(module.ops))
    fc = next(op for op in func.body.block.ops if isinstance(op, sp.FcOp))
    rng = np.random.default_rng(0)
    with pytest.raises(cd.ConnectionDataError, match="the type says"):
        run_sparse_op(
            fc,
            [rng.standard_normal((2, 8)).astype(np.float32),
             rng.standard_normal((4, 8)).astype(np.float32),
             np.zeros(4, np.float32),
             np.zeros((4, 8), np.int32)],
        )
