"""The numpy interpreter and `nnx-run --interpret` (issue 2, item 4).

* CLI: bad inputs (missing, unknown name, wrong shape, wrong dtype, malformed .mlir,
  missing file) end in exactly one line on stderr, exit code 1, no traceback, no
  output file.
* Differential tests against onnxruntime on small hand-built ONNX models, imported
  with nnx.importer and interpreted.
* The model zoo (test/python/model_zoo.py: ResNet-style CNN, MobileNetV2-style, 2-layer
  BERT, GPT-2) through `nnx-import` + `nnx-run --interpret` against onnxruntime.

Error metric of the model comparisons: max|a - b| / max|b| over each output
(a = nnx, b = onnxruntime), required <= 1e-4.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnx.interp.interpreter import InterpError, run_module
from nnx.ir_io import parse_module_text
from nnx.named_arrays import safe_name
from nnx.tools.nnx_run import main as nnx_run

BIN = Path(sys.executable).parent
REL_TOL = 1e-4


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """max|a-b| / max|b| (the metric of every model comparison here)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    denom = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-30)
    return float(np.max(np.abs(a - b))) / denom if b.size else 0.0


# ---- CLI bad input ---------------------------------------------------------------------

SMALL = """func.func @main(%x: tensor<2x3xf32> {nnx.name = "x"}, %y: tensor<3xf32> {nnx.name = "y"})
    -> (tensor<2x3xf32> {nnx.name = "sum:0"}, tensor<2x3xf32>) {
  %s = graph.add(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = graph.relu(%s) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s, %r : tensor<2x3xf32>, tensor<2x3xf32>
}
"""


@pytest.fixture
def small(tmp_path: Path):
    mlir = tmp_path / "small.mlir"
    mlir.write_text(SMALL)
    x = tmp_path / "x.npy"
    y = tmp_path / "y.npy"
    np.save(x, np.arange(6, dtype=np.float32).reshape(2, 3) - 3)
    np.save(y, np.ones(3, np.float32))
    return tmp_path, mlir, x, y


def test_run_ok(small, capsys):
    d, mlir, x, y = small
    out = d / "out"
    assert nnx_run(["--interpret", str(mlir), "--input", f"x={x}", "--input", f"y={y}",
                    "--output-dir", str(out), "--print"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["out1.npy", "sum_0.npy"]
    s = np.load(out / "sum_0.npy")
    np.testing.assert_array_equal(s, np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
    np.testing.assert_array_equal(np.load(out / "out1.npy"), np.maximum(s, 0))
    assert "sum:0: 2x3 float32" in capsys.readouterr().out


def test_positional_names(small):
    d, mlir, x, y = small
    assert nnx_run(["--interpret", str(mlir), "--input", f"arg0={x}", "--input", f"arg1={y}",
                    "--output-dir", str(d / "o")]) == 0


def _bad(args, capsys, expect: str, out_dir: Path | None = None):
    rc = nnx_run(args)
    err = capsys.readouterr().err
    assert rc == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert expect in lines[0], lines[0]
    if out_dir is not None:
        assert not out_dir.exists() or not any(out_dir.iterdir())


def test_missing_input(small, capsys):
    d, mlir, x, y = small
    _bad(["--interpret", str(mlir), "--input", f"x={x}", "--output-dir", str(d / "o")],
         capsys, "missing input(s): y", d / "o")


def test_unknown_input_name(small, capsys):
    d, mlir, x, y = small
    _bad(["--interpret", str(mlir), "--input", f"x={x}", "--input", f"y={y}", "--input", f"z={x}"],
         capsys, "unknown input 'z'")


def test_wrong_shape(small, capsys, tmp_path):
    d, mlir, x, y = small
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((3, 3), np.float32))
    _bad(["--interpret", str(mlir), "--input", f"x={bad}", "--input", f"y={y}", "--output-dir", str(d / "o")],
         capsys, "input 'x': shape [3, 3], expected [2, 3]", d / "o")


def test_wrong_dtype(small, capsys, tmp_path):
    d, mlir, x, y = small
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((2, 3), np.int64))
    _bad(["--interpret", str(mlir), "--input", f"x={bad}", "--input", f"y={y}"],
         capsys, "input 'x': element type int64, expected float32")


def test_malformed_mlir(small, capsys, tmp_path):
    d, mlir, x, y = small
    bad = tmp_path / "bad.mlir"
    bad.write_text(SMALL.replace("graph.relu(%s)", "graph.relu(%s"))
    _bad(["--interpret", str(bad), "--input", f"x={x}", "--input", f"y={y}"], capsys, "bad.mlir:")


def test_invalid_ir(small, capsys, tmp_path):
    d, mlir, x, y = small
    bad = tmp_path / "bad.mlir"
    # result type contradicts the operands: the verifier rejects it
    bad.write_text(SMALL.replace("-> tensor<2x3xf32>\n  %r", "-> tensor<2x4xf32>\n  %r", 1))
    rc = nnx_run(["--interpret", str(bad), "--input", f"x={x}", "--input", f"y={y}"])
    err = capsys.readouterr().err
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_files(small, capsys, tmp_path):
    d, mlir, x, y = small
    _bad(["--interpret", str(tmp_path / "nope.mlir"), "--input", f"x={x}", "--input", f"y={y}"],
         capsys, "nope.mlir")
    _bad(["--interpret", str(mlir), "--input", f"x={tmp_path / 'nope.npy'}", "--input", f"y={y}"],
         capsys, "nope.npy: no such file")
    _bad(["--interpret", str(mlir), "--input", "x"], capsys, "NAME=FILE.npy")


def test_console_script(small):
    """The installed nnx-run: one line, exit 1, no traceback (a real process)."""
    d, mlir, x, y = small
    exe = BIN / "nnx-run"
    if not exe.exists():
        pytest.skip("nnx-run console script not installed in this environment")
    r = subprocess.run([str(exe), "--interpret", str(mlir), "--input", f"x={x}"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_safe_name():
    assert safe_name("output:0") == "output_0"
    assert safe_name("a/b c.d-e_f") == "a_b_c.d-e_f"


def test_kernel_type_mismatch_is_one_line():
    bad = SMALL.replace("%r = graph.relu(%s) : (tensor<2x3xf32>) -> tensor<2x3xf32>",
                        "%r = graph.relu(%s) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(\"my_relu\")")
    m = parse_module_text(bad)
    relu = [op for op in m.walk() if op.name == "graph.relu"][0]
    from xdsl.dialects.builtin import TensorType, i64

    relu.results[0]._type = TensorType(i64, [2, 3])  # the kernel gives f32: must be reported
    with pytest.raises(InterpError) as e:
        run_module(m, {"x": np.zeros((2, 3), np.float32), "y": np.zeros(3, np.float32)})
    assert "graph.relu" in str(e.value) and "\n" not in str(e.value)


# ---- differential tests against onnxruntime on small ONNX models -------------------------------


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def _nnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tmp_path: Path) -> list[np.ndarray]:
    from nnx.importer import import_onnx

    p = tmp_path / "m.onnx"
    onnx.save(model, str(p))
    module = import_onnx(str(p), {k: v.shape for k, v in feeds.items()})
    return list(run_module(module, feeds).values())


def _model(nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    onnx.checker.check_model(m)
    return m


def _vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


rng = np.random.default_rng(0)


def _f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _cnn_model():
    inits = {
        "w1": _f32(8, 3, 3, 3, scale=0.3), "b1": _f32(8),
        "s": np.abs(_f32(8)) + 0.5, "bb": _f32(8), "mu": _f32(8, scale=0.1), "var": np.abs(_f32(8)) + 0.5,
        "wd": _f32(8, 1, 3, 3), "w2": _f32(16, 8, 1, 1, scale=0.3),
        "wt": _f32(16, 4, 2, 2, scale=0.3), "wg": _f32(16 * 8 * 8, 10, scale=0.1), "bg": _f32(10),
        "shape": np.array([1, -1], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "s", "bb", "mu", "var"], ["n1"], epsilon=1e-3),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "wd"], ["d1"], group=8, pads=[1, 1, 1, 1]),
        helper.make_node("HardSwish", ["d1"], ["c6"]),
        helper.make_node("Conv", ["c6", "w2"], ["p1"]),
        helper.make_node("MaxPool", ["p1"], ["m1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("ConvTranspose", ["m1", "wt"], ["t1"], strides=[2, 2], group=4),
        helper.make_node("AveragePool", ["t1"], ["a1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["a1", "shape"], ["f1"]),
        helper.make_node("Gemm", ["f1", "wg", "bg"], ["g1"]),
        helper.make_node("Softmax", ["g1"], ["y"], axis=-1),
    ]
    return _model(nodes, [_vi("x", [1, 3, 32, 32])], [_vi("y", [1, 10])], inits)


def _attention_model():
    d, h, s = 32, 4, 8
    inits = {
        "wq": _f32(d, d, scale=0.2), "wk": _f32(d, d, scale=0.2), "wv": _f32(d, d, scale=0.2),
        "g": np.abs(_f32(d)) + 0.5, "b": _f32(d), "sh": np.array([1, s, h, d // h], np.int64),
        "sh2": np.array([1, s, d], np.int64), "scale": np.array(1 / np.sqrt(d // h), np.float32),
        "half": np.array(0.5, np.float32), "one": np.array(1.0, np.float32),
        "rs2": np.array(1 / np.sqrt(2), np.float32),
    }
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], epsilon=1e-12),
        helper.make_node("MatMul", ["ln", "wq"], ["q"]),
        helper.make_node("MatMul", ["ln", "wk"], ["k"]),
        helper.make_node("MatMul", ["ln", "wv"], ["v"]),
        helper.make_node("Reshape", ["q", "sh"], ["q4"]),
        helper.make_node("Reshape", ["k", "sh"], ["k4"]),
        helper.make_node("Reshape", ["v", "sh"], ["v4"]),
        helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["att"]),
        helper.make_node("Mul", ["att", "scale"], ["att2"]),
        helper.make_node("Softmax", ["att2"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vt"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ot", "sh2"], ["o3"]),
        # GELU via Erf
        helper.make_node("Mul", ["o3", "rs2"], ["e0"]),
        helper.make_node("Erf", ["e0"], ["e1"]),
        helper.make_node("Add", ["e1", "one"], ["e2"]),
        helper.make_node("Mul", ["o3", "e2"], ["e3"]),
        helper.make_node("Mul", ["e3", "half"], ["gelu"]),
        helper.make_node("Add", ["gelu", "x"], ["y"]),
        helper.make_node("ReduceMean", ["y"], ["m"], axes=[-1], keepdims=1),
    ]
    return _model(nodes, [_vi("x", [1, s, d])], [_vi("y", [1, s, d]), _vi("m", [1, s, 1])], inits)


def _tensor_ops_model():
    inits = {
        "starts": np.array([1, 0], np.int64), "ends": np.array([7, 100], np.int64),
        "axes": np.array([2, 3], np.int64), "steps": np.array([2, 1], np.int64),
        "pads": np.array([0, 0, 1, 2, 0, 0, 1, 2], np.int64),
        "idx": np.array([[0, 2], [1, 1]], np.int64),
        "scales": np.array([1, 1, 2, 2], np.float32),
        "rep": np.array([1, 2, 1, 1], np.int64),
    }
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s1"]),
        helper.make_node("Pad", ["s1", "pads"], ["p1"], mode="reflect"),
        helper.make_node("Resize", ["p1", "", "scales"], ["r1"], mode="linear"),
        helper.make_node("Gather", ["r1", "idx"], ["g1"], axis=1),
        helper.make_node("Tile", ["x", "rep"], ["t1"]),
        helper.make_node("Split", ["t1"], ["sp1", "sp2"], axis=1),
        helper.make_node("Concat", ["sp2", "sp1", "x"], ["c1"], axis=1),
        helper.make_node("ReduceMax", ["c1"], ["rm"], axes=[1], keepdims=0),
        helper.make_node("Sigmoid", ["rm"], ["y2"]),
    ]
    outs = [_vi("g1", [1, 2, 2, 10, 24]), _vi("y2", [1, 8, 8])]
    return _model(nodes, [_vi("x", [1, 3, 8, 8])], outs, inits, opset=13)


@pytest.mark.parametrize(
    "build,shape",
    [(_cnn_model, (1, 3, 32, 32)), (_attention_model, (1, 8, 32)), (_tensor_ops_model, (1, 3, 8, 8))],
    ids=["cnn", "attention", "tensor_ops"],
)
def test_against_onnxruntime(build, shape, tmp_path):
    model = build()
    feeds = {"x": np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
    ref = _ort(model, feeds)
    got = _nnx(model, feeds, tmp_path)
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert rel_err(a, b) <= REL_TOL, rel_err(a, b)


# ---- model zoo through nnx-import + nnx-run --interpret -------------------------------------

try:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import model_zoo  # noqa: E402
except ImportError:  # written by the importer's tests
    model_zoo = None


@pytest.mark.skipif(model_zoo is None, reason="test/python/model_zoo.py not present")
@pytest.mark.parametrize("name", list(getattr(model_zoo, "MODEL_NAMES", ())))
def test_model_zoo_against_onnxruntime(name, tmp_path):
    """nnx-import + nnx-run --interpret vs onnxruntime: max|a-b|/max|b| <= 1e-4 per output."""
    ort = pytest.importorskip("onnxruntime")
    path = model_zoo.get_model(name)
    feeds = model_zoo.sample_inputs(name)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    mlir = tmp_path / "m.mlir"
    r = subprocess.run([str(BIN / "nnx-import"), str(path), "-o", str(mlir), *model_zoo.input_shape_args(name)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    args = [str(BIN / "nnx-run"), "--interpret", str(mlir), "--output-dir", str(tmp_path / "out")]
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / (k + '.npy')}"]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for out_name, b in ref.items():
        f = tmp_path / "out" / (safe_name(out_name) + ".npy")
        assert f.exists(), f"no output file for {out_name}"
        a = np.load(f)
        assert a.shape == b.shape and a.dtype == b.dtype
        err = rel_err(a, b)
        assert err <= REL_TOL, f"{name}/{out_name}: max|a-b|/max|b| = {err:.3g}"


def test_rerun_after_in_place_rewrite():
    """A module rewritten in place (as passes do) is re-planned, not served stale."""
    m = parse_module_text(SMALL)
    feeds = {"x": np.full((2, 3), -1.0, np.float32), "y": np.zeros(3, np.float32)}
    first = run_module(m, feeds)
    relu = [op for op in m.walk() if op.name == "graph.relu"][0]
    ret = relu.next_op
    ret.operands = [ret.operands[0], relu.operands[0]]  # return the add result twice
    second = run_module(m, feeds)
    assert np.all(list(first.values())[1] == 0)
    assert np.all(list(second.values())[1] == -1)
