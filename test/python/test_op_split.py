"""op-split, property test: random small graphs of Conv (plain, grouped, depthwise),
MatMul, Gemm, pooling, Resize, elementwise ops, Softmax and Transpose, split at random
thresholds. The verifier passes (types, topological block order), no op's data exceed
the threshold unless it has no split rule or cannot be split further, and the
interpreter's outputs are

* bit-identical when the split ops compute each element the same way whatever the
  slice (elementwise, pooling, Resize, Transpose, depthwise Conv: every op but the
  ones the interpreter hands to BLAS), and
* within 1e-5 relative when Conv/Gemm/MatMul are split too: numpy's BLAS (OpenBLAS)
  picks its kernel, and with it the order in which it sums a dot product, by the
  matrix shape (small-matrix and gemv paths): 63 of 354 row/column splits of
  small products differ in the last bit. On the light zoo at the default threshold
  the outputs are bit-identical (test_real_models_bit_identical).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnx.importer import import_model
from nnx.interp.interpreter import run_module
from nnx.ir_io import make_context
from nnx.passes.op_split import OpSplitPass, choose_split, op_bytes, split_rule


def _random_model(rng: random.Random):
    n, c, hw = rng.choice([1, 2]), rng.choice([4, 8, 16]), rng.choice([8, 12, 16])
    nodes, inits = [], []
    tensors = [("x", (n, c, hw, hw))]
    k = 0

    def fresh(tag):
        nonlocal k
        k += 1
        return f"{tag}{k}"

    def const(shape, scale=0.3):
        name = fresh("w")
        arr = (np.random.default_rng(k).standard_normal(shape) * scale).astype(np.float32)
        inits.append(numpy_helper.from_array(arr, name))
        return name

    for _ in range(rng.randint(3, 8)):
        src, shp = rng.choice(tensors)
        nb, cb, hb, wb = shp
        kind = rng.choice(["conv", "dwconv", "gconv", "relu", "sigmoid", "add", "addbias",
                           "maxpool", "avgpool", "resize", "transpose", "matmul", "softmax"])
        out = fresh("t")
        if kind == "conv":
            co = rng.choice([4, 8, 16])
            ks = rng.choice([1, 3])
            ins = [src, const((co, cb, ks, ks))] + ([const((co,))] if rng.random() < 0.5 else [])
            nodes.append(helper.make_node("Conv", ins, [out], pads=[ks // 2] * 4))
            tensors.append((out, (nb, co, hb, wb)))
        elif kind == "dwconv":
            nodes.append(helper.make_node("Conv", [src, const((cb, 1, 3, 3))], [out], group=cb, pads=[1] * 4))
            tensors.append((out, shp))
        elif kind == "gconv" and cb % 2 == 0:
            nodes.append(helper.make_node("Conv", [src, const((cb, cb // 2, 1, 1))], [out], group=2))
            tensors.append((out, shp))
        elif kind in ("relu", "sigmoid"):
            nodes.append(helper.make_node(kind.capitalize(), [src], [out]))
            tensors.append((out, shp))
        elif kind == "add":
            same = [t for t, s in tensors if s == shp]
            nodes.append(helper.make_node("Add", [src, rng.choice(same)], [out]))
            tensors.append((out, shp))
        elif kind == "addbias":
            nodes.append(helper.make_node("Add", [src, const((cb, 1, 1))], [out]))
            tensors.append((out, shp))
        elif kind in ("maxpool", "avgpool"):
            op = "MaxPool" if kind == "maxpool" else "AveragePool"
            nodes.append(helper.make_node(op, [src], [out], kernel_shape=[3, 3], pads=[1] * 4))
            tensors.append((out, shp))
        elif kind == "resize":
            sc = fresh("s")
            inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), sc))
            nodes.append(helper.make_node("Resize", [src, "", sc], [out], mode="nearest"))
            tensors.append((out, (nb, cb, hb * 2, wb * 2)))
        elif kind == "transpose":
            nodes.append(helper.make_node("Transpose", [src], [out], perm=[0, 3, 2, 1]))
            tensors.append((out, (nb, wb, hb, cb)))
        elif kind == "matmul":
            nodes.append(helper.make_node("MatMul", [src, const((wb, wb))], [out]))
            tensors.append((out, shp))
        elif kind == "softmax":
            nodes.append(helper.make_node("Softmax", [src], [out], axis=-1))
            tensors.append((out, shp))
    # head: flatten the last tensor into a Gemm (fc), plus every unused tensor summed
    last, shp = tensors[-1]
    flat = fresh("f")
    nodes.append(helper.make_node("Flatten", [last], [flat]))
    feat = int(np.prod(shp[1:]))
    y = fresh("y")
    nodes.append(helper.make_node("Gemm", [flat, const((10, feat), 0.05), const((10,))], [y], transB=1))
    g = helper.make_graph(nodes, "rand", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, hw, hw])],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), (n, c, hw, hw)


BLAS_KINDS = ("graph.gemm", "graph.matmul")


def _uses_blas(op) -> bool:
    """Whether the interpreter computes `op` with a BLAS matrix product."""
    if op.name in BLAS_KINDS:
        return True
    if op.name != "graph.conv":
        return False
    depthwise = int(op.attr("group", 1) or 1) == op.X.type.get_shape()[1]
    one_by_one = all(k == 1 for k in op.W.type.get_shape()[2:])
    return not depthwise or one_by_one  # only a k x k depthwise conv is tap by tap


@pytest.mark.parametrize("blas", [False, True], ids=["exact-kinds", "all-kinds"])
@pytest.mark.parametrize("seed", range(24))
def test_op_split_on_random_graphs(seed, blas, monkeypatch):
    import nnx.passes.op_split as P

    rng = random.Random(seed)
    model, shape = _random_model(rng)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    m = import_model(model)
    before = run_module(m, [x])
    threshold = rng.choice([1500, 4000, 12000, 40000, 150000])
    ops_before = len(list(m.walk()))
    if not blas:
        rule = P.split_rule
        monkeypatch.setattr(P, "split_rule", lambda op: None if _uses_blas(op) else rule(op))
    P.OpSplitPass(threshold=threshold).apply(make_context(), m)
    m.verify()
    after = run_module(m, [x])
    for k in before:
        if blas:
            scale = float(np.max(np.abs(before[k]))) or 1.0
            assert float(np.max(np.abs(after[k] - before[k]))) <= 1e-5 * scale, k
        else:
            assert np.array_equal(before[k], after[k]), k
    if not blas:
        return
    f = next(iter(m.body.block.ops))
    for op in f.body.block.ops:
        if op_bytes(op) > threshold:
            rule = split_rule(op)
            assert rule is None or choose_split(op, rule, threshold, _target()) is None or _finest(op, rule)
    assert len(list(m.walk())) >= ops_before


def _target():
    from nnx.target import load_target

    return load_target()


def _finest(op, rule) -> bool:
    """Every candidate axis is already at its granule (nothing left to split)."""
    from nnx.passes.op_split import max_pieces

    return all(max_pieces(op, rule, a) < 2 for a in rule.axes)


@pytest.mark.parametrize("name", ["inception_v1"])
def test_real_models_bit_identical(name):
    """A light-zoo CNN (224x224) at the default threshold and at 200 KB: every big
    Conv/Gemm/pool/elementwise op is split, the outputs are bit-identical."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import model_zoo
    from nnx.importer import import_onnx

    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    for threshold in (0, 200_000):
        m = import_onnx(str(model_zoo.light_model_path(name)))
        ref = run_module(m, [x])
        n0 = len(list(m.walk()))
        OpSplitPass(threshold=threshold).apply(make_context(), m)
        m.verify()
        assert len(list(m.walk())) > n0
        got = run_module(m, [x])
        assert all(np.array_equal(ref[k], got[k]) for k in ref)


def test_default_threshold_comes_from_the_target_caches():
    from nnx.passes.op_split import default_threshold

    t = _target()
    total = sum(c.bytes for c in t.caches)
    assert default_threshold(t) == total - total // 8 == 2_752_512
