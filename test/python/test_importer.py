"""ONNX importer (nnx/importer/, tools/nnx_import.py): structure, folding, names, errors.

Small models are built here with onnx.helper (IR version 10); the real-architecture
exports come from model_zoo (skipped without torch/transformers).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from xdsl.dialects import func
from xdsl.dialects.builtin import NameLoc, TensorType

from nnx.importer import import_model, import_onnx
from nnx.ir_io import UserError, parse_module_text
from nnx.tools.nnx_import import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_zoo  # noqa: E402

F = T.FLOAT
I64 = T.INT64

SHAPE_OPS = {
    "graph.shape", "graph.size", "graph.gather", "graph.unsqueeze", "graph.squeeze",
    "graph.concat", "graph.slice", "graph.cast", "graph.range", "graph.constant_of_shape",
    "graph.equal", "graph.where", "graph.identity",
}


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


# ---- helpers --------------------------------------------------------------------------


def make(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=10)


def t(name, a) -> onnx.TensorProto:
    return nh.from_array(np.asarray(a), name)


def save(model: onnx.ModelProto, tmp_path: Path, name: str = "m.onnx") -> str:
    p = tmp_path / name
    onnx.save(model, str(p))
    return str(p)


def the_func(module) -> func.FuncOp:
    f = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return f


def op_names(module) -> list[str]:
    return [op.name for op in the_func(module).body.block.ops]


def loc_name(op) -> str | None:
    return op.location.desc.data if isinstance(op.location, NameLoc) else None


def run_main(argv, capsys):
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def conv_model(batch_dim="N") -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    return make(
        [
            h.make_node("Conv", ["image", "w", "b"], ["c"], name="stem/conv", pads=[1, 1, 1, 1]),
            h.make_node("Relu", ["c"], ["r"], name="stem/relu"),
            h.make_node("Add", ["r", "r"], ["features"], name="stem/add"),
        ],
        [h.make_tensor_value_info("image", F, [batch_dim, 3, 8, 8])],
        [h.make_tensor_value_info("features", F, [batch_dim, 4, 8, 8])],
        [t("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
         t("b", rng.standard_normal(4).astype(np.float32))],
    )


def shape_chain_model() -> onnx.ModelProto:
    """torch's dynamic flatten idiom and an Expand-shape idiom over Shape."""
    return make(
        [
            h.make_node("Relu", ["x"], ["r"], name="relu"),
            h.make_node("Shape", ["r"], ["s"], name="shape"),
            h.make_node("Constant", [], ["zero"], name="c0", value=t("", np.array(0))),
            h.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
            h.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsqueeze"),
            h.make_node("Concat", ["n1", "m1"], ["shp"], name="concat", axis=0),
            h.make_node("Slice", ["s", "one", "three"], ["hw"], name="slice"),
            h.make_node("ReduceProd", ["hw"], ["hw_prod"], name="prod", keepdims=1),
            h.make_node("Concat", ["n1", "hw_prod"], ["shp_b"], name="concat_b", axis=0),
            h.make_node("Equal", ["shp", "m1"], ["is_m1"], name="equal"),
            h.make_node("ConstantOfShape", ["two"], ["ones"], name="cos",
                        value=t("", np.array([1], np.int64))),
            h.make_node("Where", ["is_m1", "ones", "shp"], ["shp2"], name="where"),
            h.make_node("Size", ["r"], ["numel"], name="size"),
            h.make_node("Range", ["r0", "numel", "numel"], ["rng"], name="range"),
            h.make_node("Cast", ["rng"], ["rngf"], name="cast", to=F),
            h.make_node("Reshape", ["r", "shp"], ["flat"], name="reshape"),
            h.make_node("Reshape", ["r", "shp_b"], ["flat_b"], name="reshape_b"),
            h.make_node("Expand", ["flat_b", "shp2"], ["flat_c"], name="expand"),
            h.make_node("Add", ["flat", "flat_c"], ["y"], name="add"),
        ],
        [h.make_tensor_value_info("x", F, ["batch", 2, 4])],
        [h.make_tensor_value_info("y", F, ["batch", None]),
         h.make_tensor_value_info("rngf", F, None)],
        [t("ax0", np.array([0], np.int64)), t("m1", np.array([-1], np.int64)),
         t("two", np.array([2], np.int64)), t("r0", np.array(0, np.int64)),
         t("one", np.array([1], np.int64)), t("three", np.array([3], np.int64))],
    )


# ---- structure ------------------------------------------------------------------------


def test_conv_model_names_types_locations():
    m = import_model(conv_model(), batch=2)
    f = the_func(m)
    assert [str(a.type) for a in f.body.block.args] == ["tensor<2x3x8x8xf32>"]
    assert f.arg_attrs.data[0].data["nnx.name"].data == "image"
    assert f.res_attrs.data[0].data["nnx.name"].data == "features"
    ops = list(f.body.block.ops)
    names = [op.name for op in ops]
    assert names == ["graph.constant", "graph.constant", "graph.conv", "graph.relu",
                     "graph.add", "func.return"]
    assert [loc_name(o) for o in ops[:5]] == ["w", "b", "stem/conv", "stem/relu", "stem/add"]
    for op in ops[:-1]:
        for r in op.results:
            assert isinstance(r.type, TensorType)
            assert all(d >= 0 for d in r.type.get_shape())
    # the 4x3x3x3 weight is a dense_resource blob, the 4-element bias inline
    assert "dense_resource" in str(ops[0].value)
    assert "dense<" in str(ops[1].value)


def test_shape_computations_fold_away():
    m = import_model(shape_chain_model(), batch=3)
    names = op_names(m)
    assert not SHAPE_OPS & set(names), names
    assert names.count("graph.reshape") == 2
    assert names.count("graph.expand") <= 1
    f = the_func(m)
    ret = f.body.block.last_op
    assert [str(v.type) for v in ret.operands] == ["tensor<3x8xf32>", "tensor<1xf32>"]
    # the folded Range (0 .. numel step numel) is a constant output
    assert ret.operands[1].owner.name == "graph.constant"


def test_input_shape_overrides_dynamic_dims():
    model = make(
        [h.make_node("Relu", ["tokens"], ["y"], name="r")],
        [h.make_tensor_value_info("tokens", F, ["batch", "seq", 8])],
        [h.make_tensor_value_info("y", F, ["batch", "seq", 8])],
    )
    m = import_model(model, {"tokens": (2, 5, 8)})
    assert str(the_func(m).body.block.args[0].type) == "tensor<2x5x8xf32>"
    with pytest.raises(UserError, match="dynamic dim 1 'seq'"):
        import_model(model, batch=2)
    with pytest.raises(UserError, match="fixed to 8"):
        import_model(model, {"tokens": (2, 5, 9)})


def test_old_opset_attribute_forms():
    """Opset 11: Squeeze `axes` and Clip `min`/`max` attributes import."""
    model = make(
        [h.make_node("Squeeze", ["x"], ["s"], name="sq", axes=[0]),
         h.make_node("Clip", ["s"], ["y"], name="clip", min=0.0, max=6.0)],
        [h.make_tensor_value_info("x", F, [1, 4])],
        [h.make_tensor_value_info("y", F, [4])],
        opset=11,
    )
    m = import_model(model)
    assert "graph.clip" in op_names(m)
    assert str(the_func(m).body.block.last_op.operands[0].type) == "tensor<4xf32>"


def test_initializer_that_is_also_an_input_is_a_constant():
    model = conv_model(batch_dim=1)
    model.graph.input.append(h.make_tensor_value_info("w", F, [4, 3, 3, 3]))
    f = the_func(import_model(model))
    assert len(f.body.block.args) == 1


def test_text_round_trip_keeps_names(tmp_path, capsys):
    path = save(conv_model(), tmp_path)
    out = tmp_path / "out.mlir"
    rc, _, err = run_main([path, "--batch", "1", "-o", out], capsys)
    assert rc == 0, err
    text = out.read_text()
    assert 'loc("stem/conv")' in text and '{nnx.name = "image"}' in text
    assert "dialect_resources" in text
    m = parse_module_text(text, str(out))
    ops = list(the_func(m).body.block.ops)
    assert [loc_name(o) for o in ops[2:5]] == ["stem/conv", "stem/relu", "stem/add"]
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(out).st_mode & 0o777 == 0o666 & ~umask


def test_generic_output_and_stdout(tmp_path, capsys):
    path = save(conv_model(), tmp_path)
    rc, out, err = run_main([path, "--batch", "1", "--print-op-generic"], capsys)
    assert rc == 0, err
    assert '"graph.conv"(' in out and "<{" in out
    parse_module_text(out)


# ---- errors ---------------------------------------------------------------------------


def _expect_error(argv, capsys, out: Path, *needles: str) -> str:
    rc, stdout, err = run_main([*argv, "-o", out], capsys)
    assert rc == 1, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("nnx-import: error: "), lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".nnx-")]
    return lines[0]


def test_error_truncated_file(tmp_path, capsys):
    data = conv_model().SerializeToString()
    p = tmp_path / "trunc.onnx"
    p.write_bytes(data[: len(data) // 2])
    _expect_error([p, "--batch", "1"], capsys, tmp_path / "o.mlir", str(p), "truncated")


def test_error_not_onnx_and_missing_file(tmp_path, capsys):
    p = tmp_path / "junk.onnx"
    p.write_text("this is not a protobuf\n")
    _expect_error([p], capsys, tmp_path / "o.mlir", str(p))
    _expect_error([tmp_path / "nope.onnx"], capsys, tmp_path / "o.mlir", "no such file")
    (tmp_path / "empty.onnx").write_bytes(b"")
    _expect_error([tmp_path / "empty.onnx"], capsys, tmp_path / "o.mlir", "empty")


def test_error_unsupported_op(tmp_path, capsys):
    model = make(
        [h.make_node("Relu", ["x"], ["r"], name="ok"),
         h.make_node("Frobnicate", ["r"], ["y"], name="mystery", domain="com.example")],
        [h.make_tensor_value_info("x", F, [2])],
        [h.make_tensor_value_info("y", F, [2])],
    )
    line = _expect_error([save(model, tmp_path)], capsys, tmp_path / "o.mlir",
                         "unsupported op (custom operator domain)", "(node 'mystery', op com.example.Frobnicate)")
    assert "Traceback" not in line


def test_error_unsupported_standard_op(tmp_path, capsys):
    from nnx.dialects.graph import ONNX_OPS

    missing = [o for o in ("Det", "Hardmax", "Shrink", "LpNormalization", "Softsign")
               if o not in ONNX_OPS]
    if not missing:
        pytest.skip("every candidate op is supported")
    op = missing[0]
    model = make([h.make_node(op, ["x"], ["y"], name="n1")],
                 [h.make_tensor_value_info("x", F, [3, 3])],
                 [h.make_tensor_value_info("y", F, None)])
    _expect_error([save(model, tmp_path)], capsys, tmp_path / "o.mlir",
                  f"unsupported op {op} (node 'n1', op {op})")


def test_error_unknown_input_name(tmp_path, capsys):
    _expect_error([save(conv_model(), tmp_path), "--input-shape", "imgae=1x3x8x8"],
                  capsys, tmp_path / "o.mlir", "unknown input 'imgae'", "'image'")


@pytest.mark.parametrize("spec", ["image", "image=1x3xAx8", "image=1x-3x8x8", "=1x2", "image=1x3x8x8x"])
def test_error_malformed_input_shape(tmp_path, capsys, spec):
    _expect_error([save(conv_model(), tmp_path), "--input-shape", spec],
                  capsys, tmp_path / "o.mlir", "malformed --input-shape")


def test_error_dynamic_input_dim_left(tmp_path, capsys):
    _expect_error([save(conv_model(), tmp_path)], capsys, tmp_path / "o.mlir",
                  "graph input 'image' has dynamic dim 0 'N'", "--batch")


def test_error_dynamic_result_left(tmp_path, capsys):
    model = make(
        [h.make_node("Reshape", ["x", "target"], ["y"], name="data_dependent")],
        [h.make_tensor_value_info("x", F, [2, 3]), h.make_tensor_value_info("target", I64, [2])],
        [h.make_tensor_value_info("y", F, None)],
    )
    _expect_error([save(model, tmp_path)], capsys, tmp_path / "o.mlir",
                  "result 'y'", "(node 'data_dependent', op Reshape)")


def test_error_bad_options(tmp_path, capsys):
    rc, _, err = run_main([save(conv_model(), tmp_path), "--batch", "0"], capsys)
    assert rc == 1 and err.count("\n") == 1 and "--batch" in err
    rc, _, err = run_main([], capsys)
    assert rc == 1 and "nnx-import: error:" in err


def test_error_undefined_node_input(tmp_path, capsys):
    model = make([h.make_node("Relu", ["ghost"], ["y"], name="r")],
                 [h.make_tensor_value_info("x", F, [2])],
                 [h.make_tensor_value_info("y", F, [2])])
    _expect_error([save(model, tmp_path)], capsys, tmp_path / "o.mlir",
                  "input 'ghost'", "(node 'r', op Relu)")


def test_error_subprocess_no_traceback(tmp_path):
    data = conv_model().SerializeToString()
    p = tmp_path / "trunc.onnx"
    p.write_bytes(data[: len(data) - 7])
    out = tmp_path / "o.mlir"
    exe = Path(sys.executable).parent / "nnx-import"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "nnx.tools.nnx_import"]
    r = subprocess.run([*cmd, str(p), "--batch", "1", "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and str(p) in r.stderr
    assert not out.exists() and r.stdout == ""


# ---- real architectures (model_zoo) ---------------------------------------------------


@pytest.mark.parametrize("name", model_zoo.MODEL_NAMES)
def test_zoo_models_import_static_without_shape_ops(name):
    path = model_zoo.get_model(name)
    shapes = {k: v[0] for k, v in model_zoo.MODEL_INPUTS[name].items()}
    m = import_onnx(str(path), shapes)
    f = the_func(m)
    names = op_names(m)
    assert "graph.shape" not in names and "graph.constant_of_shape" not in names
    assert "graph.range" not in names and "graph.size" not in names
    assert [a.data["nnx.name"].data for a in f.arg_attrs.data] == list(model_zoo.MODEL_INPUTS[name])
    assert [a.data["nnx.name"].data for a in f.res_attrs.data] == list(model_zoo.MODEL_OUTPUTS[name])
    for op in f.body.block.ops:
        for r in op.results:
            assert isinstance(r.type, TensorType) and -1 not in r.type.get_shape()
    m.verify()


def test_zoo_cnn_dynamic_batch():
    path = model_zoo.get_model("tiny_resnet")
    f = the_func(import_onnx(str(path), batch=4))
    assert str(f.body.block.args[0].type) == "tensor<4x3x32x32xf32>"
    assert str(f.function_type.outputs.data[0]) == "tensor<4x10xf32>"


def test_const_input_binds_a_graph_input(tmp_path, capsys):
    """ONNX node tests feed axes/shapes as graph inputs: --const-input folds them in."""
    model = make(
        [h.make_node("Reshape", ["x", "target"], ["y"], name="reshape")],
        [h.make_tensor_value_info("x", F, [2, 3]), h.make_tensor_value_info("target", I64, [2])],
        [h.make_tensor_value_info("y", F, None)],
    )
    m = import_model(model, constants={"target": np.array([3, 2], np.int64)})
    f = the_func(m)
    assert [a.data["nnx.name"].data for a in f.arg_attrs.data] == ["x"]
    assert str(f.function_type.outputs.data[0]) == "tensor<3x2xf32>"
    npy = tmp_path / "target.npy"
    np.save(npy, np.array([6, 1], np.int64))
    path = save(model, tmp_path)
    rc, out, err = run_main([path, "--const-input", f"target={npy}"], capsys)
    assert rc == 0 and "tensor<6x1xf32>" in out, err
    np.save(npy, np.array([6, 1], np.int32))
    _expect_error([path, "--const-input", f"target={npy}"], capsys, tmp_path / "o.mlir",
                  "element type int32")
    _expect_error([path, "--const-input", f"tgt={npy}"], capsys, tmp_path / "o.mlir",
                  "unknown input 'tgt'")
    _expect_error([path, "--const-input", f"target={tmp_path / 'none.npy'}"], capsys,
                  tmp_path / "o.mlir", "no such file")


def test_control_flow_is_unsupported_in_one_line(tmp_path, capsys):
    body = h.make_graph([h.make_node("Identity", ["x"], ["y"])], "b", [],
                        [h.make_tensor_value_info("y", F, [2])])
    model = make(
        [h.make_node("If", ["c"], ["y"], name="branch", then_branch=body, else_branch=body)],
        [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("x", F, [2])],
        [h.make_tensor_value_info("y", F, [2])],
    )
    _expect_error([save(model, tmp_path)], capsys, tmp_path / "o.mlir",
                  "unsupported op", "(node 'branch', op If)")
