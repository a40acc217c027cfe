"""op-split{spatial=true} and `split_to_fit`: row pieces of Conv and pooling
(docs/topological-order.md, "Operator splitting").

* Random single ops (plain, grouped and depthwise Conv; MaxPool; AveragePool with
  count_include_pad both ways; random kernels, strides, dilations, asymmetric pads,
  ceil_mode, odd sizes) split at a small threshold and at 1 byte (one output row per
  piece): the interpreter's outputs after the pass equal those before -- bit for bit
  for pooling and depthwise convolutions (each element is summed tap by tap in the
  same order), within 1e-5 relative for convolutions with several input channels per
  group (their pieces are smaller BLAS calls, which may sum in another order). The
  pieces are also run one by one in onnxruntime (each op of the split function as a
  one-node ONNX model): the same output as onnxruntime's whole op, so the pieces'
  pads and ceil_mode mean in ONNX what they mean in the interpreter.
* SqueezeNet 1.0 (the onnx wheel's light zoo, 224x224) after
  graph-fold-constants,canonicalize,graph-fuse,dce and op-split{spatial=true
  threshold=1 MiB}: every op that can be cut holds at most 1 MiB, the interpreter's
  output matches the unsplit interpreter and onnxruntime.
* `split_to_fit` on one op: returns whether it split, pieces fit, small ops are left.
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
from nnx.passes.op_split import OpSplitPass, op_bytes, split_rule, split_to_fit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_zoo  # noqa: E402

RTOL = 1e-5


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _out(size, k, s, d, p0, p1, ceil):
    dk = (k - 1) * d + 1
    span = size + p0 + p1 - dk
    if not ceil:
        return span // s + 1
    o = -(-span // s) + 1
    return o - 1 if (o - 1) * s >= size + p0 else o


def _window_model(rng: random.Random, seed: int):
    """One random Conv/MaxPool/AveragePool (ONNX model, input shape, kind)."""
    kind = rng.choice(["conv", "gconv", "dwconv", "maxpool", "avgpool", "avgpool_pad"])
    n, c = rng.choice([1, 1, 2]), rng.choice([2, 4, 8])
    h, w = rng.randint(5, 23), rng.randint(3, 17)
    k = rng.choice([1, 2, 3, 5]) if kind.startswith("conv") or kind == "gconv" else rng.choice([2, 3, 4])
    k = min(k, h, w)
    s = rng.choice([1, 2, 3])
    d = rng.choice([1, 1, 2]) if (k - 1) * 2 + 1 <= min(h, w) else 1
    if kind in ("maxpool", "avgpool", "avgpool_pad"):
        pmax = k - 1  # onnxruntime: pads smaller than the kernel
    else:
        pmax = (k - 1) * d
    pads = [rng.randint(0, pmax) for _ in range(4)]
    ceil = rng.random() < 0.5 if "pool" in kind else False
    attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=pads, dilations=[d, d])
    oh = _out(h, k, s, d, pads[0], pads[2], ceil)
    ow = _out(w, k, s, d, pads[1], pads[3], ceil)
    np_rng = np.random.default_rng(seed)
    inits = []
    if kind in ("conv", "gconv", "dwconv"):
        g = {"conv": 1, "gconv": 2, "dwconv": c}[kind]
        m = {"conv": rng.choice([3, 8, 40]), "gconv": 2 * rng.choice([2, 5]), "dwconv": c * rng.choice([1, 2])}[kind]
        inits.append(numpy_helper.from_array(np_rng.standard_normal((m, c // g, k, k)).astype(np.float32), "w"))
        ins = ["x", "w"]
        if rng.random() < 0.5:
            inits.append(numpy_helper.from_array(np_rng.standard_normal(m).astype(np.float32), "b"))
            ins.append("b")
        node = helper.make_node("Conv", ins, ["y"], group=g, **attrs)
        oc = m
    else:
        op = "MaxPool" if kind == "maxpool" else "AveragePool"
        extra = {"count_include_pad": int(kind == "avgpool_pad")} if op == "AveragePool" else {}
        node = helper.make_node(op, ["x"], ["y"], ceil_mode=int(ceil), **attrs, **extra)
        oc = c
    if oh < 1 or ow < 1:
        return None
    g_ = helper.make_graph([node], "w", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, oc, oh, ow])], inits)
    return helper.make_model(g_, opset_imports=[helper.make_opsetid("", 19)], ir_version=8), (n, c, h, w), kind


def _bit_exact(kind: str) -> bool:
    """Pooling and depthwise convolutions sum tap by tap: row pieces are bit-identical."""
    return kind in ("dwconv", "maxpool", "avgpool", "avgpool_pad")


def _func(m):
    return next(iter(m.body.block.ops))


def _run_ops_in_onnxruntime(m, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Evaluate the module's function op by op, each op as a one-node ONNX model in
    onnxruntime (constants as numpy values): an interpreter independent of nnx's."""
    import onnxruntime as ort

    f = _func(m)
    env = {arg: feeds[name] for arg, name in zip(f.body.block.args, feeds)}
    for op in f.body.block.ops:
        if op.name == "func.return":
            return [env[v] for v in op.operands]
        if op.name == "graph.constant":
            env[op.results[0]] = np.asarray(op.numpy_value())
            continue
        ins = op.onnx_inputs()
        names = [f"i{i}" if v is not None else "" for i, v in enumerate(ins)]
        attrs = {k: (list(v) if isinstance(v, (tuple, np.ndarray)) else v) for k, v in op.onnx_attributes().items()}
        node = helper.make_node(op.ONNX_TYPE, names, ["o"], **attrs)
        inputs = [helper.make_tensor_value_info(nm, helper.np_dtype_to_tensor_dtype(env[v].dtype), list(env[v].shape))
                  for nm, v in zip(names, ins) if v is not None]
        out = helper.make_tensor_value_info("o", TensorProto.FLOAT, None)
        model = helper.make_model(helper.make_graph([node], "one", inputs, [out]),
                                  opset_imports=[helper.make_opsetid("", 19)], ir_version=8)
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        env[op.results[0]] = sess.run(None, {nm: env[v] for nm, v in zip(names, ins) if v is not None})[0]
    raise AssertionError("no func.return")


def _close(a: np.ndarray, b: np.ndarray, exact: bool) -> bool:
    if exact:
        return a.shape == b.shape and np.array_equal(a, b)
    return a.shape == b.shape and np.allclose(a, b, rtol=RTOL, atol=RTOL * float(np.max(np.abs(b)) or 1.0))


@pytest.mark.parametrize("seed", range(32))
def test_random_window_ops_split_by_rows(seed):
    """A random window op at a threshold of 1/4 of its data and at 1 byte: outputs as
    before (bit for bit where `_bit_exact`), and (1/4) as onnxruntime's whole op when
    the pieces run in onnxruntime."""
    rng = random.Random(seed)
    made = None
    while made is None:
        made = _window_model(rng, seed)
    model, shape, kind = made
    feeds = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
    base = import_model(model)
    ref = run_module(base, feeds)["y"]
    ort_whole = _run_ops_in_onnxruntime(base, feeds)[0]
    assert np.allclose(ref, ort_whole, rtol=1e-4, atol=1e-4)
    whole = op_bytes(next(o for o in _func(base).body.block.ops if split_rule(o, True) is not None))
    for threshold in (whole // 4, 1):
        m = base.clone()
        OpSplitPass(threshold=threshold, spatial=True).apply(make_context(), m)
        m.verify()
        got = run_module(m, feeds)["y"]
        assert _close(got, ref, _bit_exact(kind)), (kind, threshold, float(np.max(np.abs(got - ref))))
        if threshold > 1:  # (at 1 byte: hundreds of one-node sessions)
            assert _close(_run_ops_in_onnxruntime(m, feeds)[0], ort_whole, False), (kind, threshold)
        window_ops = [o for o in _func(m).body.block.ops if o.name in ("graph.conv", "graph.max_pool",
                                                                      "graph.average_pool")]
        if threshold == 1:  # finest: one output row per piece (two where one would not hold a window)
            assert all(o.results[0].type.get_shape()[2] <= 2 for o in window_ops), kind
        else:
            assert all(op_bytes(o) <= threshold or o.results[0].type.get_shape()[2] == 1 for o in window_ops)


def test_the_random_window_ops_cut_rows_with_every_feature():
    """The generator gives row cuts of every kind with pads, strides > 1, dilations
    and (pooling) ceil_mode, so the test above covers them."""
    seen = set()
    for seed in range(32):
        rng = random.Random(seed)
        made = None
        while made is None:
            made = _window_model(rng, seed)
        model, _, kind = made
        node = model.graph.node[0]
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        seen.add(kind)
        if any(a["pads"]):
            seen.add("pads")
        if a["strides"][0] > 1:
            seen.add("stride")
        if a["dilations"][0] > 1:
            seen.add("dilation")
        if a.get("ceil_mode"):
            seen.add("ceil")
    assert {"conv", "gconv", "dwconv", "maxpool", "avgpool", "avgpool_pad", "pads", "stride", "dilation",
            "ceil"} <= seen, seen


def _conv_module(h=30, c=8, m=16, k=3, pads=(1, 1, 1, 1)):
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=list(pads))], "c",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.random.default_rng(0).standard_normal((m, c, k, k)).astype(np.float32), "w")])
    return import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=8))


def test_split_to_fit_one_op():
    """split_to_fit on the conv: True, every piece within the threshold, the output
    as before; on a piece already small enough, False and nothing changes."""
    m = _conv_module()
    feeds = [np.random.default_rng(1).standard_normal((1, 8, 30, 30)).astype(np.float32)]
    ref = run_module(m, feeds)
    conv = next(o for o in _func(m).body.block.ops if o.name == "graph.conv")
    assert op_bytes(conv) > 40_000
    assert split_to_fit(conv, 20_000) is True
    pieces = [o for o in _func(m).body.block.ops if o.name == "graph.conv"]
    assert len(pieces) > 1 and all(op_bytes(p) <= 20_000 for p in pieces)
    got = run_module(m, feeds)
    assert _close(got["y"] if "y" in got else next(iter(got.values())), next(iter(ref.values())), False)
    n_ops = len(list(m.walk()))
    assert split_to_fit(pieces[0], 20_000) is False and len(list(m.walk())) == n_ops


def test_split_to_fit_below_one_row():
    """A threshold below one output row's data (weights alone exceed it): pieces of
    one row each, no error; the rows a 1x1 conv cannot cut further stay as they are."""
    m = _conv_module(h=12, k=1, pads=(0, 0, 0, 0))
    conv = next(o for o in _func(m).body.block.ops if o.name == "graph.conv")
    assert split_to_fit(conv, 16) is True
    pieces = [o for o in _func(m).body.block.ops if o.name == "graph.conv"]
    assert len(pieces) == 12 and all(p.results[0].type.get_shape()[2] == 1 for p in pieces)
    m.verify()


def test_split_to_fit_rejects_a_non_positive_threshold():
    m = _conv_module()
    conv = next(o for o in _func(m).body.block.ops if o.name == "graph.conv")
    with pytest.raises(ValueError, match="threshold=0"):
        split_to_fit(conv, 0)


def test_spatial_off_keeps_rows_whole():
    """Without spatial=true a conv of one channel block with batch 1 is not cut."""
    m = _conv_module()
    OpSplitPass(threshold=20_000).apply(make_context(), m)
    assert sum(o.name == "graph.conv" for o in _func(m).body.block.ops) == 1


def _with_random_weights(path: Path, out: Path) -> Path:
    """The light zoo's model with He-scaled random weights (biases 0.01) instead of its
    ConstantOfShape(0.02) everywhere, which makes every channel alike and the
    output uniform."""
    import onnx

    model = onnx.load(str(path))
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    rng = np.random.default_rng(0)
    keep = []
    for node in model.graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in shapes:
            keep.append(node)
            continue
        shape = tuple(int(d) for d in shapes[node.input[0]])
        std = np.sqrt(2.0 / np.prod(shape[1:])) if len(shape) > 1 else 0.01
        value = (rng.standard_normal(shape) * std).astype(np.float32)
        model.graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
    del model.graph.node[:]
    model.graph.node.extend(keep)
    onnx.save(model, str(out))
    return out


def test_squeezenet_streams_at_1_mib(tmp_path):
    """SqueezeNet 1.0 (4.9 MB of weights, random here; its first conv's output alone
    is 4.5 MB) after the package compiler's cleanup pipeline and op-split{spatial=true
    threshold=1 MiB}: every op that can be cut fits 1 MiB, some by rows; the output
    matches the unsplit interpreter (1e-5) and onnxruntime (1e-4)."""
    import onnxruntime as ort

    from nnx.api import run_pipeline
    from nnx.importer import import_onnx

    path = _with_random_weights(model_zoo.light_model_path("squeezenet"), tmp_path / "squeezenet.onnx")
    x, _ = model_zoo.light_reference("squeezenet")
    x = np.random.default_rng(0).standard_normal(x.shape).astype(np.float32)
    m = import_onnx(str(path))
    run_pipeline(m, "graph-fold-constants,canonicalize,graph-fuse,dce")
    ref = next(iter(run_module(m, [x]).values()))
    threshold = 1 << 20
    before = max(op_bytes(o) for o in _func(m).body.block.ops)
    run_pipeline(m, f"op-split{{threshold={threshold} spatial=true}}")
    ops = list(_func(m).body.block.ops)
    big = [o for o in ops if op_bytes(o) > threshold and o.name not in ("graph.concat", "graph.slice", "graph.constant")]
    assert before > 4 * threshold and not big, [(o.name, op_bytes(o)) for o in big]
    assert sum(o.name == "graph.concat" and o.attr("axis") == 2 for o in ops) >= 4  # row pieces
    got = next(iter(run_module(m, [x]).values()))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    import onnx

    graph = onnx.load(str(path)).graph
    data = next(i.name for i in graph.input if i.name not in {t.name for t in graph.initializer})
    want = sess.run(None, {data: x})[0]
    assert float(np.max(ref)) > 10 * float(np.min(ref))  # not a uniform output
    assert np.allclose(got, ref, rtol=RTOL, atol=RTOL * float(np.max(np.abs(ref))))
    assert np.max(np.abs(got - want)) <= 1e-4 * max(1.0, float(np.max(np.abs(want))))


@pytest.mark.parametrize("name", ["tiny_resnet", "mobilenet_v2"])
def test_zoo_cnns_fit_a_quarter_of_their_weights(name):
    """The zoo's small CNNs at a threshold of a quarter of their weight bytes (the
    package compiler's mesh size): every op that has a rule fits -- including convs of
    one 32-channel block whose weights alone exceed it (channels cut finer) and
    MobileNetV2's Clip -- and the output stays within 1e-4 of onnxruntime."""
    import onnxruntime as ort

    from nnx.api import run_pipeline
    from nnx.importer import import_onnx

    path = model_zoo.get_model(name)
    shapes = {k: s for k, (s, _) in model_zoo.MODEL_INPUTS[name].items()}
    feeds = model_zoo.sample_inputs(name)
    m = import_onnx(str(path), input_shapes=shapes)
    run_pipeline(m, "graph-fold-constants,canonicalize,graph-fuse,dce")
    threshold = sum(op_bytes(o) for o in _func(m).body.block.ops if o.name == "graph.constant") // 4
    ref = run_module(m, feeds)
    run_pipeline(m, f"op-split{{threshold={threshold} spatial=true}}")
    compute = [o for o in _func(m).body.block.ops if o.name not in ("graph.constant", "graph.slice", "graph.concat")]
    assert not [o.name for o in compute if op_bytes(o) > threshold and split_rule(o, True) is not None]
    assert any(o.name == "graph.concat" and o.attr("axis") == 2 for o in _func(m).body.block.ops)
    got = run_module(m, feeds)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    want = sess.run(None, feeds if isinstance(feeds, dict) else dict(zip(names, feeds)))
    for (k, g), w in zip(got.items(), want):
        assert _close(g, ref[k], False)
        assert np.max(np.abs(g - w)) <= 1e-4 * max(1.0, float(np.max(np.abs(w)))), k


@pytest.mark.parametrize("axis", [-1, -2])
def test_layer_norm_pieces_are_bit_identical(axis):
    """graph-fuse's LayerNormalization cut along the axes before `axis`: the same bits."""
    shape = (2, 6, 10, 12)
    norm = shape[axis:]
    rng = np.random.default_rng(3)
    g = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=axis, epsilon=1e-5)], "ln",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.standard_normal(norm).astype(np.float32), "s"),
         numpy_helper.from_array(rng.standard_normal(norm).astype(np.float32), "b")])
    m = import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=8))
    feeds = [rng.standard_normal(shape).astype(np.float32)]
    ref = next(iter(run_module(m, feeds).values()))
    OpSplitPass(threshold=1500, spatial=True).apply(make_context(), m)
    pieces = [o for o in _func(m).body.block.ops if o.name == "graph.layer_normalization"]
    assert len(pieces) > 4
    assert all(p.results[0].type.get_shape()[len(shape) + axis:] == norm for p in pieces)
    assert np.array_equal(next(iter(run_module(m, feeds).values())), ref)
