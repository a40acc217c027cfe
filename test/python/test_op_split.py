"""op-split: the interpreter's outputs are bit-identical (np.array_equal, every case)
before and after the pass.

* Property test on random graphs: CNN graphs of Conv (plain, grouped, depthwise, one
  input channel; strides, pads, dilations), pooling, Resize, Transpose, elementwise
  ops and Softmax ending in a Gemm; matrix graphs of Gemm (transA/transB, bias
  shapes), MatMul (2-D, batched, broadcast), elementwise ops, Softmax and Transpose
  with enough rows and columns for several product blocks. Each graph is split at
  several thresholds, down to 1 byte (every op cut as finely as its rule allows).
  The verifier passes, ops are split, and no op's data exceed the threshold unless it
  has no rule or cannot be cut further.
* Real exports (a light-zoo CNN at 224x224, tiny_resnet, bert_2layer) at the default
  threshold and a small one; the simulator's outputs after op-split stay within 1e-4
  of onnxruntime. More and bigger real models: bench/op_split.py.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnx.importer import import_model
from nnx.interp.interpreter import run_module
from nnx.ir_io import make_context
from nnx.passes.op_split import OpSplitPass, choose_split, max_pieces, op_bytes, split_rule

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_zoo  # noqa: E402


class _Graph:
    """An ONNX graph under construction: nodes, initializers, tensors by shape."""

    def __init__(self, seed: int):
        self.nodes: list = []
        self.inits: list = []
        self.tensors: list[tuple[str, tuple[int, ...]]] = []
        self.k = 0
        self.np_rng = np.random.default_rng(seed)

    def fresh(self, tag: str) -> str:
        self.k += 1
        return f"{tag}{self.k}"

    def const(self, shape, scale=0.3, dtype=np.float32) -> str:
        name = self.fresh("w")
        arr = (self.np_rng.standard_normal(shape) * scale).astype(dtype)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def ints(self, values) -> str:
        name = self.fresh("i")
        self.inits.append(numpy_helper.from_array(np.array(values, np.int64), name))
        return name

    def node(self, op: str, ins: list[str], shape: tuple[int, ...], **attrs) -> str:
        out = self.fresh("t")
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        self.tensors.append((out, shape))
        return out

    def model(self, inputs, output: str):
        vis = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs]
        g = helper.make_graph(self.nodes, "rand", vis, [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
                              self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _conv_out(size, k, s, d, p0, p1):
    return (size + p0 + p1 - ((k - 1) * d + 1)) // s + 1


def _cnn_model(rng: random.Random, seed: int):
    """Random CNN: conv-like, pooling, Resize, Transpose, elementwise, Softmax; a
    Flatten + Gemm head."""
    n, c, hw = rng.choice([1, 2]), rng.choice([3, 8, 16, 32]), rng.choice([8, 12, 16])
    G = _Graph(seed)
    G.tensors.append(("x", (n, c, hw, hw)))
    for _ in range(rng.randint(3, 8)):
        src, shp = rng.choice(G.tensors)
        nb, cb, hb, wb = shp
        kind = rng.choice(["conv", "conv", "conv", "dwconv", "gconv", "relu", "sigmoid", "add", "addbias",
                           "maxpool", "avgpool", "gap", "resize", "transpose", "matmul", "softmax"])
        if kind == "conv":
            co = rng.choice([1, 4, 16, 32, 48, 64, 80, 96])
            k = rng.choice([1, 3, 5]) if hb >= 5 else 1
            s, d = rng.choice([1, 1, 2]), rng.choice([1, 1, 2]) if k > 1 else 1
            pads = [rng.randint(0, k // 2 * d) for _ in range(4)]
            oh = _conv_out(hb, k, s, d, pads[0], pads[2])
            ow = _conv_out(wb, k, s, d, pads[1], pads[3])
            if oh < 1 or ow < 1:
                continue
            ins = [src, G.const((co, cb, k, k))] + ([G.const((co,))] if rng.random() < 0.5 else [])
            G.node("Conv", ins, (nb, co, oh, ow), pads=pads, strides=[s, s], dilations=[d, d])
        elif kind == "dwconv":
            mult = rng.choice([1, 1, 2])
            G.node("Conv", [src, G.const((cb * mult, 1, 3, 3))], (nb, cb * mult, hb, wb), group=cb, pads=[1] * 4)
        elif kind == "gconv":
            g = rng.choice([d for d in (2, 4, 8) if cb % d == 0] or [1])
            co = g * rng.choice([2, 8, 20])
            G.node("Conv", [src, G.const((co, cb // g, 3, 3)), G.const((co,))], (nb, co, hb, wb), group=g,
                   pads=[1] * 4)
        elif kind in ("relu", "sigmoid"):
            G.node(kind.capitalize(), [src], shp)
        elif kind == "add":
            same = [t for t, s_ in G.tensors if s_ == shp]
            G.node("Add", [src, rng.choice(same)], shp)
        elif kind == "addbias":
            G.node("Add", [src, G.const((cb, 1, 1))], shp)
        elif kind in ("maxpool", "avgpool"):
            op = "MaxPool" if kind == "maxpool" else "AveragePool"
            s = rng.choice([1, 2])
            G.node(op, [src], (nb, cb, _conv_out(hb, 3, s, 1, 1, 1), _conv_out(wb, 3, s, 1, 1, 1)),
                   kernel_shape=[3, 3], pads=[1] * 4, strides=[s, s])
        elif kind == "gap":
            G.node("GlobalAveragePool", [src], (nb, cb, 1, 1))
        elif kind == "resize" and hb <= 16:
            sc = G.fresh("s")
            G.inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), sc))
            mode = rng.choice(["nearest", "linear"])
            G.node("Resize", [src, "", sc], (nb, cb, hb * 2, wb * 2), mode=mode)
        elif kind == "transpose":
            G.node("Transpose", [src], (nb, wb, hb, cb), perm=[0, 3, 2, 1])
        elif kind == "matmul":
            G.node("MatMul", [src, G.const((wb, wb))], shp)
        elif kind == "softmax":
            G.node("Softmax", [src], shp, axis=rng.choice([1, -1]))
    last, shp = G.tensors[-1]
    flat = G.node("Flatten", [last], (shp[0], int(np.prod(shp[1:]))))
    feat, classes = int(np.prod(shp[1:])), rng.choice([10, 200, 300])
    y = G.node("Gemm", [flat, G.const((classes, feat), 0.05), G.const((1,))], (shp[0], classes), transB=1)
    return G.model([("x", (n, c, hw, hw))], y), {"x": (n, c, hw, hw)}


def _matrix_model(rng: random.Random, seed: int):
    """Random chain of matrix products on (M, K) activations with M, K, N spanning
    several 32-row and 128-column blocks: Gemm (transA/transB, bias (N,), (M, N),
    (1,)), MatMul 2-D, batched, broadcast, elementwise, Softmax, Transpose."""
    m, k = rng.choice([2, 33, 64, 100, 130]), rng.choice([16, 64, 200])
    G = _Graph(seed)
    G.tensors.append(("x", (m, k)))
    cur, (rows, cols) = "x", (m, k)
    for _ in range(rng.randint(2, 6)):
        kind = rng.choice(["gemm", "gemm", "matmul", "batched", "broadcast", "relu", "softmax", "transpose", "add"])
        if kind == "gemm":
            n = rng.choice([1, 7, 128, 200, 300])
            ta, tb = rng.random() < 0.3, rng.random() < 0.5
            a = G.node("Transpose", [cur], (cols, rows)) if ta else cur
            w = G.const((n, cols) if tb else (cols, n))
            bias = rng.choice([None, (n,), (rows, n), (1,)])
            ins = [a, w] + ([G.const(bias)] if bias else [])
            cur = G.node("Gemm", ins, (rows, n), transA=int(ta), transB=int(tb),
                         alpha=rng.choice([1.0, 0.5]), beta=rng.choice([1.0, 2.0]))
            cols = n
        elif kind == "matmul":
            n = rng.choice([3, 128, 260])
            cur = G.node("MatMul", [cur, G.const((cols, n))], (rows, n))
            cols = n
        elif kind in ("batched", "broadcast") and cols % 4 == 0:
            n = rng.choice([5, 130])
            r3 = G.node("Reshape", [cur, G.ints([rows, 4, cols // 4])], (rows, 4, cols // 4))
            t3 = G.node("Transpose", [r3], (4, rows, cols // 4), perm=[1, 0, 2])
            if kind == "batched":  # activations x activations, both batched
                other = G.node("Transpose", [t3], (4, cols // 4, rows), perm=[0, 2, 1])
                mm = G.node("MatMul", [t3, other], (4, rows, rows))
                cur = G.node("Reshape", [G.node("Transpose", [mm], (rows, 4, rows), perm=[1, 0, 2]),
                                         G.ints([rows, 4 * rows])], (rows, 4 * rows))
                cols = 4 * rows
            else:  # a 2-D weight broadcast against 3-D activations
                mm = G.node("MatMul", [t3, G.const((cols // 4, n))], (4, rows, n))
                cur = G.node("Reshape", [G.node("Transpose", [mm], (rows, 4, n), perm=[1, 0, 2]),
                                         G.ints([rows, 4 * n])], (rows, 4 * n))
                cols = 4 * n
        elif kind == "relu":
            cur = G.node("Relu", [cur], (rows, cols))
        elif kind == "softmax":
            cur = G.node("Softmax", [cur], (rows, cols), axis=-1)
        elif kind == "add":
            cur = G.node("Add", [cur, G.const((cols,))], (rows, cols))
        elif kind == "transpose" and cols * rows <= 40000:
            cur = G.node("Transpose", [cur], (cols, rows))
            rows, cols = cols, rows
    return G.model([("x", (m, k))], cur), {"x": (m, k)}


def _target():
    from nnx.target import load_target

    return load_target()


def _finest(op, rule) -> bool:
    """Every candidate axis is already down to one granule (nothing left to cut)."""
    return all(max_pieces(op, rule, a) < 2 for a in rule.axes)


SPLIT_KINDS = ("graph.conv", "graph.gemm", "graph.matmul")


def _products_only(op, spatial=False):
    """op-split's rule for Conv/Gemm/MatMul, None for every other op."""
    return split_rule(op, spatial) if op.name in SPLIT_KINDS else None


def _check_split(m, feeds, threshold, monkeypatch=None):
    """op-split at `threshold` (with a monkeypatch: on the products only): verifier,
    bit-identical outputs, no op left above the threshold that could still be cut.
    Returns how many ops the pass added."""
    import nnx.passes.op_split as P

    rule_of = split_rule
    if monkeypatch is not None:
        monkeypatch.setattr(P, "split_rule", _products_only)
        rule_of = _products_only
    ref = run_module(m, feeds)
    n0 = len(list(m.walk()))
    OpSplitPass(threshold=threshold).apply(make_context(), m)
    if monkeypatch is not None:
        monkeypatch.undo()
    m.verify()
    got = run_module(m, feeds)
    assert ref.keys() == got.keys()
    for k in ref:
        assert ref[k].dtype == got[k].dtype and np.array_equal(ref[k], got[k]), (
            k, threshold, float(np.max(np.abs(ref[k].astype(np.float64) - got[k]))))
    f = next(iter(m.body.block.ops))
    target = _target()
    for op in f.body.block.ops:
        if op_bytes(op) > threshold:
            rule = rule_of(op)
            assert rule is None or choose_split(op, rule, threshold, target) is None or _finest(op, rule), op.name
    return len(list(m.walk())) - n0


def _largest_op_bytes(m) -> int:
    f = next(iter(m.body.block.ops))
    return max(op_bytes(op) for op in f.body.block.ops)


@pytest.mark.parametrize("family", ["cnn", "matrix"])
@pytest.mark.parametrize("seed", range(16))
def test_op_split_on_random_graphs_is_bit_identical(seed, family, monkeypatch):
    """Thresholds of 1/3 and 1/12 of the largest op, a few KB, and 1 byte on the
    products alone (every Conv/Gemm/MatMul cut into single blocks; elementwise ops
    cut down to single elements would make thousands of ops)."""
    rng = random.Random(seed)
    model, shapes = (_cnn_model if family == "cnn" else _matrix_model)(rng, seed)
    feeds = {k: np.random.default_rng(seed).standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    base = import_model(model)
    top = _largest_op_bytes(base)
    for threshold in (top // 3, top // 12, rng.choice([4000, 12000])):
        _check_split(base.clone(), feeds, threshold)
    m = base.clone()
    cuttable = any(r is not None and not _finest(o, r) for o in m.walk() for r in [_products_only(o)])
    assert (_check_split(m, feeds, 1, monkeypatch) > 0) == cuttable
    f = next(iter(m.body.block.ops))
    for op in f.body.block.ops:  # the finest cut: nothing left to cut
        rule = _products_only(op)
        assert rule is None or _finest(op, rule), op


def test_the_random_graphs_exercise_every_cut():
    """The generators produce products cut along each axis op-split may choose:
    Conv batch/channels/groups, Gemm and MatMul rows/columns/leading axes."""
    seen: set[tuple[str, int, bool]] = set()
    target = _target()
    for family, gen in (("cnn", _cnn_model), ("matrix", _matrix_model)):
        for seed in range(16):
            m = import_model(gen(random.Random(seed), seed)[0])
            f = next(iter(m.body.block.ops))
            for op in f.body.block.ops:
                rule = split_rule(op)
                if op.name in SPLIT_KINDS and rule is not None:
                    choice = choose_split(op, rule, 1, target)
                    if choice is not None:
                        grouped = op.name == "graph.conv" and int(op.attr("group", 1) or 1) > 1
                        seen.add((op.name, choice[0], grouped))
    want = {("graph.conv", 0, False), ("graph.conv", 1, False), ("graph.conv", 1, True),
            ("graph.gemm", 0, False), ("graph.gemm", 1, False), ("graph.matmul", 0, False),
            ("graph.matmul", 1, False)}
    assert want <= seen, want - seen


@pytest.mark.parametrize("name", ["inception_v1", "tiny_resnet", "bert_2layer"])
def test_real_models_bit_identical(name):
    """Real exports at the default threshold and a small one: ops are split, outputs
    bit-identical."""
    from nnx.importer import import_onnx

    if name in model_zoo.MODEL_INPUTS:
        shapes = {k: s for k, (s, _) in model_zoo.MODEL_INPUTS[name].items()}
        base = import_onnx(str(model_zoo.get_model(name)), input_shapes=shapes)
        feeds = model_zoo.sample_inputs(name)
        small = 20_000
    else:
        base = import_onnx(str(model_zoo.light_model_path(name)))
        feeds = [np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)]
        small = 200_000
    added = {t: _check_split(base.clone(), feeds, t or _default()) for t in (0, small)}
    assert added[small] > 0, added


def _default() -> int:
    from nnx.passes.op_split import default_threshold

    return default_threshold(_target())


def test_simulator_after_op_split_matches_onnxruntime(tmp_path, capfd):
    """tiny_resnet at batch 2 compiled with op-split in the pipeline (its 16-channel
    convs cut along the batch, elementwise ops along their cheapest axis): the
    simulator's outputs stay within 1e-4 of onnxruntime."""
    import onnxruntime as ort

    from nnx.tools.nnx_compile import main as compile_main
    from nnx.tools.nnx_run import main as run_main

    path = model_zoo.get_model("tiny_resnet")
    feeds = {"input": np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)}
    prog = tmp_path / "p.s"
    pipeline = "graph-fold-constants,canonicalize,graph-fuse,dce,op-split{threshold=20000},lower-to-chip"
    assert compile_main([str(path), "-o", str(prog), "--input-shape", "input=2x3x32x32",
                         "--pipeline", pipeline, "--mlir-print-ir-after-all"]) == 0
    dumps = capfd.readouterr().err.split("// -----// IR Dump After ")
    before = next(d for d in dumps if d.startswith("dce "))
    after = next(d for d in dumps if d.startswith("op-split "))
    assert after.count("graph.conv(") > before.count("graph.conv(") and "graph.concat" in after
    argv = [str(prog), "--output-dir", str(tmp_path / "out")]
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
        argv += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    assert run_main(argv) == 0
    ref = ort.InferenceSession(str(path)).run(None, feeds)
    sess_out = [o.name for o in ort.InferenceSession(str(path)).get_outputs()]
    for name, r in zip(sess_out, ref):
        got = np.load(tmp_path / "out" / f"{name}.npy")
        assert np.max(np.abs(got - r)) <= 1e-4 * max(1.0, float(np.max(np.abs(r)))), name


def test_default_threshold_comes_from_the_target_caches():
    from nnx.passes.op_split import default_threshold

    t = _target()
    total = sum(c.bytes for c in t.caches)
    assert default_threshold(t) == total - total // 8 == 2_752_512
