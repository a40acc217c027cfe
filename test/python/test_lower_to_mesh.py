"""lower-to-mesh (docs/mesh.md, "Compilation"): the mesh simulator's outputs equal the
single-core simulator's and onnxruntime's on small zoo models, compiled for a 4 x 4
mesh of 512 KiB cores (test/passes/lower-to-mesh/Inputs/mesh4x4.toml); a model whose
weights exceed the mesh's memory fails with one line, exit 1 and no output files;
bisection placement moves fewer byte-hops than row-major placement.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import model_zoo
from nnx import api
from nnx.mesh.compile import compile_for_mesh
from nnx.mesh.errors import MeshFitError
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.target import load_target

HERE = os.path.dirname(__file__)
TARGET = os.path.abspath(os.path.join(HERE, "..", "passes", "lower-to-mesh", "Inputs", "mesh4x4.toml"))
GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"


pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _shapes(name):
    return {k: s for k, (s, _) in model_zoo.MODEL_INPUTS[name].items()}


def _graph(name):
    module = api.import_onnx(model_zoo.get_model(name), _shapes(name), 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    return module


def _run_mesh(comp, feeds, tmp_path):
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.asm_mesh import read_mesh_program

    path = str(tmp_path / "prog.s")
    save_mesh_program(comp, path)
    return MeshSimulator(read_mesh_program(path), load_target(TARGET)).run(feeds)


@pytest.mark.parametrize("name", ["tiny_resnet", "mobilenet_v2", "bert_2layer"])
def test_mesh_outputs_equal_single_core_and_onnxruntime(name, tmp_path):
    import onnxruntime as ort

    feeds = model_zoo.sample_inputs(name)
    comp = compile_for_mesh(_graph(name), TARGET, "bisect")
    assert len(comp.program.cores) > 1  # the model really is spread over the mesh
    mesh = _run_mesh(comp, feeds, tmp_path)
    single = api.simulate(api.compile(str(model_zoo.get_model(name)), None, input_shapes=_shapes(name), batch=1), feeds)
    sess = ort.InferenceSession(str(model_zoo.get_model(name)))
    for out, ref in zip(sess.get_outputs(), sess.run(None, feeds)):
        got = mesh.outputs[out.name]
        np.testing.assert_allclose(got, single.outputs[out.name], rtol=0, atol=1e-5)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4)
    assert mesh.noc_byte_hops > 0


def test_bisect_moves_fewer_byte_hops_than_rowmajor(tmp_path):
    # bert_2layer: 5 stages (tiny_resnet and mobilenet_v2 are too small for more
    # than a few cores under the floor of work per core, and place alike)
    name = "bert_2layer"
    feeds = model_zoo.sample_inputs(name)
    hops = {}
    for placement in ("bisect", "rowmajor"):
        comp = compile_for_mesh(_graph(name), TARGET, placement, schedule="stages")  # placement is a stages option
        hops[placement] = _run_mesh(comp, feeds, tmp_path).noc_byte_hops
    assert hops["bisect"] < hops["rowmajor"], hops


def _big_gemm_model(path, n=2048):
    """One Gemm with an n x n f32 weight (16 MiB for n = 2048: twice the test mesh)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((n, n)).astype(np.float32), "W")
    node = helper.make_node("Gemm", ["x", "W"], ["y"], name="big_gemm")
    g = helper.make_graph([node], "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def test_too_big_model_fails_with_the_reason_as_exception(tmp_path):
    path = str(tmp_path / "big.onnx")
    _big_gemm_model(path)
    module = api.import_onnx(path, None, None)
    with pytest.raises(MeshFitError) as e:
        compile_for_mesh(module, TARGET)
    err = e.value
    assert err.reason == "cores" and err.available == 16 and err.needed > 16
    assert err.op_name == "graph.gemm 'big_gemm'"  # the ONNX node, by name


def test_too_big_model_nnx_compile_exit_1_one_line_no_outputs(tmp_path, capsys):
    from nnx.tools.nnx_compile import main

    path = str(tmp_path / "big.onnx")
    _big_gemm_model(path)
    out = tmp_path / "prog.s"
    assert main([path, "--target", TARGET, "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cores needed" in err and "16 available" in err, err
    assert "graph.gemm 'big_gemm'" in err, err  # names the ONNX node
    assert not out.exists() and not (tmp_path / "prog.data").exists()


def test_nnx_compile_writes_a_mesh_program_for_a_mesh_target(tmp_path):
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.tools.nnx_compile import main

    out = tmp_path / "prog.s"
    assert main([str(model_zoo.get_model("tiny_resnet")), "--input-shape", "input=1x3x32x32",
                 "--target", TARGET, "-o", str(out)]) == 0
    mp = read_mesh_program(str(out))  # parses and checks the SEND/RECV pairing
    assert (mp.width, mp.height) == (4, 4) and (tmp_path / "prog.data").exists()
    feeds = model_zoo.sample_inputs("tiny_resnet")
    r = MeshSimulator(mp, load_target(TARGET)).run(feeds)
    assert r.outputs["logits"].shape == (1, 10)


def _bert_big_vocab(path, vocab=6000, seq=16):
    """A 1-layer BERT (hidden 32, 2 heads) whose 6000 x 32 f32 word-embedding table
    (750 KiB) is larger than a core of the test mesh (512 KiB): lower-to-mesh must
    split the embedding Gather (by table columns)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=seq, attn_implementation="eager")
    bert = BertModel(cfg).eval()

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids):
            return self.bert(input_ids=input_ids).last_hidden_state

    torch.onnx.export(Wrap().eval(), (torch.zeros(1, seq, dtype=torch.int64),), path, input_names=["input_ids"],
                      output_names=["last_hidden_state"], opset_version=17, dynamo=False)


def test_embedding_gather_split_by_table_columns_matches_onnxruntime(tmp_path):
    import onnxruntime as ort

    path = str(tmp_path / "bert_vocab.onnx")
    _bert_big_vocab(path)
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    comp = compile_for_mesh(module, TARGET, "bisect")
    # split by the table's columns: each part holds a slice of the table and of the
    # output, no full-size partial results
    cols = [comp.plan.splits[i] for i, op in enumerate(comp.plan.ops)
            if op.name == "graph.gather" and comp.plan.kinds[i] == "split"]
    assert len(cols) == 1 and cols[0].combine == "concat" and cols[0].axis == 2 and cols[0].k >= 2, cols
    # ids from every part's row range, both ends of the table included
    ids = np.array([[0, 5999, 1, 2999, 3000, 3001, 4500, 17, 5998, 1500, 2000, 4000, 5000, 100, 3500, 2500]])
    feeds = {"input_ids": ids.astype(np.int64)}
    got = _run_mesh(comp, feeds, tmp_path).outputs["last_hidden_state"]
    ref = ort.InferenceSession(path).run(None, feeds)[0]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4)


def _wide_hidden_model(path):
    """Two blocks whose middle activation is larger than a core of the test mesh can
    plan for (512 KiB x 0.6): an MLP 64 -> 1024 -> 16 on 128 rows (hidden 512 KiB)
    and 1x1 convs 4 -> 64 -> 4 at 40 x 40 (hidden 400 KiB). The second matmul/conv
    cannot be split by output features (each part would need the whole input), so
    lower-to-mesh must split the matmul along its reduction axis into partial sums,
    added along a chain of its parts, and the convs by image rows."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def w(name, *dims):
        return numpy_helper.from_array((rng.standard_normal(dims) / np.sqrt(dims[0])).astype(np.float32), name)

    inits = [w("W1", 64, 1024), w("W2", 1024, 16), w("C1", 64, 4, 1, 1), w("C2", 4, 64, 1, 1),
             numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), "B1"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "B2")]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="up"),
             helper.make_node("Relu", ["h"], ["hr"], name="act"),
             helper.make_node("MatMul", ["hr", "W2"], ["y"], name="down"),
             helper.make_node("Conv", ["img", "C1", "B1"], ["c"], name="expand"),
             helper.make_node("Relu", ["c"], ["cr"], name="cact"),
             helper.make_node("Conv", ["cr", "C2", "B2"], ["z"], name="project")]
    gr = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [128, 64]),
                                           helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 4, 40, 40])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [128, 16]),
                            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 40, 40])], inits)
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def test_reduction_split_of_an_op_whose_input_is_too_big_matches_onnxruntime(tmp_path):
    import onnxruntime as ort

    path = str(tmp_path / "wide.onnx")
    _wide_hidden_model(path)
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    # `stages` (the latency schedule splits such a matmul in 2-D: test_mesh_split2d.py)
    comp = compile_for_mesh(module, TARGET, "bisect", schedule="stages")
    kinds = {(op.name, comp.plan.kinds[i]) for i, op in enumerate(comp.plan.ops)}
    # the matmul is split along K; the 1x1 convs on a large image are split by rows
    # instead (their activations outweigh their weights: no full-size partial sums)
    assert ("graph.matmul", "reduce") in kinds and ("graph.conv", "rows") in kinds, kinds
    assert not any(op.name == "graph.conv" and comp.plan.kinds[i] == "reduce" for i, op in enumerate(comp.plan.ops))
    assert all(comp.plan.reductions[i].k >= 2 for i in range(len(comp.plan.ops)) if comp.plan.kinds[i] == "reduce")
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((128, 64)).astype(np.float32),
             "img": rng.standard_normal((1, 4, 40, 40)).astype(np.float32)}
    got = _run_mesh(comp, feeds, tmp_path).outputs
    for name, ref in zip(["y", "z"], ort.InferenceSession(path).run(["y", "z"], feeds)):
        np.testing.assert_allclose(got[name], ref, rtol=0, atol=1e-4)


def _narrow_table_model(path, rows=100000, cols=2, seq=16):
    """One Gather from a 100000 x 2 f32 table (781 KiB, larger than a test core) with
    too few columns to split by: lower-to-mesh splits it by table rows, each part
    gathering the ids in its range, the partial results summed along a chain."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    table = numpy_helper.from_array(np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32), "T")
    node = helper.make_node("Gather", ["T", "ids"], ["y"], name="embed", axis=0)
    gr = helper.make_graph([node], "narrow", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, cols])], [table])
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def test_narrow_table_gather_split_by_table_rows_matches_onnxruntime(tmp_path):
    import onnxruntime as ort

    path = str(tmp_path / "narrow.onnx")
    _narrow_table_model(path)
    module = api.import_onnx(path, None, 1)
    comp = compile_for_mesh(module, TARGET, "bisect")
    (i,) = [i for i, op in enumerate(comp.plan.ops) if op.name == "graph.gather"]
    assert comp.plan.kinds[i] == "reduce" and comp.plan.reductions[i].combine == "sum"
    assert comp.plan.reductions[i].k >= 2
    ids = np.array([[0, 99999, 1, 50000, 49999, 3, 77777, 12345, 99998, 500, 2, 66666, 33333, 40000, 7, 88888]])
    feeds = {"ids": ids.astype(np.int64)}
    got = _run_mesh(comp, feeds, tmp_path).outputs["y"]
    ref = ort.InferenceSession(path).run(None, feeds)[0]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)


def _row_split_cnn(path, hw=128):
    """A small CNN on a 128 x 128 image whose first activations (256 KiB) outweigh
    its weights: a strided 3x3 conv with padding, batch norm, relu, a depthwise 3x3
    conv, clip, a strided max pool with padding, a 1x1 conv, a residual add, an
    SE-style scale (global average pool -> sigmoid -> mul, a broadcast activation
    operand), an average pool; lower-to-mesh splits them by image rows. Two outputs:
    the residual sum (a row-split graph output) and the final pool."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def t(name, *dims, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(dims) * scale).astype(np.float32), name)

    inits = [t("W1", 16, 3, 3, 3), t("B1", 16), t("gamma", 16), t("beta", 16), t("mean", 16),
             numpy_helper.from_array((rng.random(16) + 0.5).astype(np.float32), "var"),
             t("DW", 16, 1, 3, 3), t("W3", 16, 16, 1, 1), t("B3", 16),
             numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], name="stem", pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["bn"], name="bn"),
             helper.make_node("Relu", ["bn"], ["r1"], name="relu"),
             helper.make_node("Conv", ["r1", "DW"], ["dw"], name="depthwise", pads=[1, 1, 1, 1], group=16),
             helper.make_node("Clip", ["dw", "lo", "hi"], ["r6"], name="relu6"),
             helper.make_node("MaxPool", ["r6"], ["mp"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Conv", ["mp", "W3", "B3"], ["pw"], name="pointwise"),
             helper.make_node("Add", ["mp", "pw"], ["res"], name="residual"),
             helper.make_node("GlobalAveragePool", ["res"], ["gap"], name="squeeze"),
             helper.make_node("Sigmoid", ["gap"], ["gate"], name="gate"),
             helper.make_node("Mul", ["res", "gate"], ["se"], name="excite"),
             helper.make_node("AveragePool", ["se"], ["y"], name="avg", kernel_shape=[2, 2], strides=[2, 2])]
    gr = helper.make_graph(nodes, "rows", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                           [helper.make_tensor_value_info("res", TensorProto.FLOAT, [1, 16, hw // 4, hw // 4]),
                            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, hw // 8, hw // 8])], inits)
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def test_row_split_cnn_matches_onnxruntime(tmp_path):
    import onnxruntime as ort

    path = str(tmp_path / "rows.onnx")
    _row_split_cnn(path)
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    comp = compile_for_mesh(module, TARGET, "bisect")
    plan = comp.plan
    rows = {op.name for i, op in enumerate(plan.ops) if plan.kinds[i] == "rows"}
    # the stem, the depthwise conv and the max pool (halo rows, stride, padding) are
    # split by rows; the ops between them follow their pieces or are split by rows too
    assert {"graph.conv", "graph.max_pool", "graph.average_pool", "graph.mul"} <= rows, rows
    assert all(plan.splits[i].axis == 2 and plan.splits[i].k >= 2 for i in range(len(plan.ops))
               if plan.kinds[i] == "rows")
    assert sum(1 for i, op in enumerate(plan.ops) if op.name == "graph.conv" and plan.kinds[i] == "rows") >= 2
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 128, 128)).astype(np.float32)}
    got = _run_mesh(comp, feeds, tmp_path).outputs
    for name, ref in zip(["res", "y"], ort.InferenceSession(path).run(["res", "y"], feeds)):
        np.testing.assert_allclose(got[name], ref, rtol=0, atol=1e-4)


def _attention_model(path, heads=2, seq=128, dim=32):
    """Attention on rank-4 activations: scores = q @ kT (1 x 2 x 128 x 128, 128 KiB),
    plus a mask, softmax over the last axis, @ v. On cores of 192 KiB the scores do
    not fit one core's plan: the matmuls (by rows of their left operand) and the
    softmax are split by rows (axis 2), the mask add follows, kT and v are read whole."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    mask = np.zeros((1, 1, 1, seq), np.float32)
    mask[..., -5:] = -10000.0
    nodes = [helper.make_node("MatMul", ["q", "kT"], ["s"], name="scores"),
             helper.make_node("Add", ["s", "mask"], ["sm"], name="mask"),
             helper.make_node("Softmax", ["sm"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["o"], name="context")]
    f = TensorProto.FLOAT
    gr = helper.make_graph(nodes, "attn", [helper.make_tensor_value_info("q", f, [1, heads, seq, dim]),
                                           helper.make_tensor_value_info("kT", f, [1, heads, dim, seq]),
                                           helper.make_tensor_value_info("v", f, [1, heads, seq, dim])],
                           [helper.make_tensor_value_info("o", f, [1, heads, seq, dim])],
                           [numpy_helper.from_array(mask, "mask")])
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def test_attention_split_by_rows_matches_onnxruntime(tmp_path):
    import re

    import onnxruntime as ort

    target = tmp_path / "mesh192k.toml"
    with open(TARGET, encoding="utf-8") as f:
        target.write_text(re.sub(r"(?m)^core_memory_bytes = \d+", "core_memory_bytes = 196608", f.read()))
    path = str(tmp_path / "attn.onnx")
    _attention_model(path)
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    comp = compile_for_mesh(module, str(target), "bisect")
    kinds = [(op.name, comp.plan.kinds[i]) for i, op in enumerate(comp.plan.ops)]
    # the mask add follows the scores' row pieces; the others are split by rows
    assert [k for _, k in kinds] == ["rows", "follow", "rows", "rows"], kinds
    assert all(comp.plan.splits[i].axis == 2 and comp.plan.splits[i].k >= 2 for i in range(4))
    rng = np.random.default_rng(2)
    feeds = {"q": rng.standard_normal((1, 2, 128, 32)).astype(np.float32),
             "kT": rng.standard_normal((1, 2, 32, 128)).astype(np.float32),
             "v": rng.standard_normal((1, 2, 128, 32)).astype(np.float32)}
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.asm_mesh import read_mesh_program

    save_mesh_program(comp, str(tmp_path / "prog.s"))
    got = MeshSimulator(read_mesh_program(str(tmp_path / "prog.s")), load_target(str(target))).run(feeds).outputs["o"]
    ref = ort.InferenceSession(path).run(None, feeds)[0]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4)


def _channel_shuffle_cnn(path, hw=96):
    """ShuffleNet's channel shuffle between two convs, random weights: conv 3 -> 8
    (3 x 3) + relu, reshape 1x8xHxW -> 1x2x4xHxW, transpose perm 0,2,1,3,4, reshape
    back (1x8xHxW, 295 KiB at 96 x 96), a depthwise 3 x 3 conv of stride 2."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w1"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.standard_normal((8, 1, 3, 3)).astype(np.float32) * 0.3, "w2"),
             numpy_helper.from_array(np.array([1, 2, 4, hw, hw], np.int64), "s5"),
             numpy_helper.from_array(np.array([1, 8, hw, hw], np.int64), "s4")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], name="stem", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "s5"], ["g"], name="group"),
             helper.make_node("Transpose", ["g"], ["t"], name="shuffle", perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "s4"], ["u"], name="ungroup"),
             helper.make_node("Conv", ["u", "w2"], ["y"], name="dw", group=8, pads=[1, 1, 1, 1], strides=[2, 2])]
    gr = helper.make_graph(nodes, "shuffle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, hw // 2, hw // 2])], inits)
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def test_channel_shuffle_split_by_rows_matches_onnxruntime(tmp_path):
    import onnxruntime as ort

    path = str(tmp_path / "shuffle.onnx")
    _channel_shuffle_cnn(path)
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    comp = compile_for_mesh(module, TARGET, "bisect")
    plan = comp.plan
    kinds = {op.name + ("5" if len(op.results[0].type.get_shape()) == 5 else ""): (plan.kinds[i], plan.splits.get(i))
             for i, op in enumerate(plan.ops) if op.name in ("graph.reshape", "graph.transpose")}
    # the shuffle passes the stem's row split through: the rank-5 values are split
    # along their row axis 3, the reshape back along axis 2, each in >= 2 parts
    assert kinds["graph.reshape5"][0] == kinds["graph.transpose5"][0] == kinds["graph.reshape"][0] == "rows", kinds
    assert kinds["graph.reshape5"][1].axis == kinds["graph.transpose5"][1].axis == 3, kinds
    assert kinds["graph.reshape"][1].axis == 2 and kinds["graph.reshape"][1].k >= 2, kinds
    feeds = {"x": np.random.default_rng(4).standard_normal((1, 3, 96, 96)).astype(np.float32)}
    got = _run_mesh(comp, feeds, tmp_path).outputs["y"]
    ref = ort.InferenceSession(path).run(None, feeds)[0]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4)


def test_row_axis_maps_through_views_that_keep_it_and_not_others():
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.ir import Block

    from nnx.dialects import graph as g
    from nnx.mesh.rows import mapped_row_axis
    from nnx.resources import register_array

    x = Block(arg_types=[TensorType(f32, [1, 8, 6, 5])]).args[0]

    def reshape(out_shape):
        dims = g.ConstantOp(register_array(np.array(out_shape, np.int64))).results[0]
        return g.ReshapeOp.build_onnx([x, dims], {}, [TensorType(f32, out_shape)])

    # splitting the channels into groups keeps H (axis 2 -> 3) and W
    assert mapped_row_axis(reshape([1, 2, 4, 6, 5]), 2) == 3
    # merging the batch and channel axes keeps H as an axis of its own
    assert mapped_row_axis(reshape([8, 6, 5]), 2) == 1
    # merging H with W, or splitting H, loses the rows: no row split passes
    assert mapped_row_axis(reshape([1, 8, 30]), 2) is None
    assert mapped_row_axis(reshape([1, 8, 2, 3, 5]), 2) is None
    # a transpose moves the rows where its permutation says (NCHW -> NHWC: axis 1)
    nhwc = g.TransposeOp.build_onnx([x], {"perm": [0, 2, 3, 1]}, [TensorType(f32, [1, 6, 5, 8])])
    assert mapped_row_axis(nhwc, 2) == 1
    # flattening C, H, W into one axis loses them
    flat = g.FlattenOp.build_onnx([x], {"axis": 1}, [TensorType(f32, [1, 240])])
    assert mapped_row_axis(flat, 2) is None
