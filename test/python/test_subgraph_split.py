"""subgraph-split (docs/subgraph-split-fuse.md): the interpreter's outputs are the same
before and after the split; a BERT exported with every layer's hidden state as an
output is cut exactly after the op producing each hidden state; with a mesh target
a subgraph that does not fit is split further until every one compiles.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import model_zoo
from nnx import api
from nnx.dialects.graph import SubgraphOp
from nnx.split_fuse.chain import inline, main_function, scheduled_ops, target_nodes

HERE = os.path.dirname(__file__)
TARGET = os.path.abspath(os.path.join(HERE, "..", "passes", "lower-to-mesh", "Inputs", "mesh4x4.toml"))
GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"
LAYERS = 3


def bert_hidden_states_model(layers: int = LAYERS, hidden: int = 32):
    """A transformers BertModel (`layers` layers of width `hidden`) exported with the
    embeddings' and every layer's hidden state as outputs (`hidden0..hiddenN`) plus
    `pooler`; cached by model_zoo. Inputs: bert_2layer's `input_ids` and
    `attention_mask`."""
    import hashlib

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers

    def export(path) -> None:
        from transformers import BertConfig, BertModel

        torch.manual_seed(0)
        cfg = BertConfig(vocab_size=model_zoo.VOCAB, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=2, intermediate_size=2 * hidden, max_position_embeddings=64,
                         attn_implementation="eager")
        model = BertModel(cfg).eval()
        model_zoo._randomise_all(model)

        class Wrap(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask):
                out = self.m(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
                return (*out.hidden_states, out.pooler_output)

        feeds = model_zoo.sample_inputs("bert_2layer")
        names = [f"hidden{k}" for k in range(layers + 1)] + ["pooler"]
        torch.onnx.export(Wrap(model), (torch.from_numpy(feeds["input_ids"]),
                                        torch.from_numpy(feeds["attention_mask"])),
                          str(path), input_names=["input_ids", "attention_mask"], output_names=names,
                          opset_version=17, dynamo=False)

    key = hashlib.sha256(open(__file__, "rb").read()
                         + f"{torch.__version__}|{transformers.__version__}".encode()).hexdigest()[:12]
    return model_zoo._cached_export(f"bert_hidden_{layers}x{hidden}", key, export)


def bert_hidden_feeds():
    feeds = model_zoo.sample_inputs("bert_2layer")
    return {k: feeds[k] for k in ("input_ids", "attention_mask")}


@pytest.fixture(scope="module")
def bert_hidden(tmp_path_factory):
    path = bert_hidden_states_model()
    feeds = bert_hidden_feeds()
    module = api.import_onnx(path, {k: v.shape for k, v in feeds.items()}, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    return path, module, feeds


def _returned_producers(module):
    f = main_function(module, "test")
    ops = scheduled_ops(f.body.block)
    ret = f.body.block.last_op
    return [ops.index(v.owner) for v in ret.operands], ops, ret


def test_bert_is_cut_exactly_after_each_hidden_state(bert_hidden):
    _, module, feeds = bert_hidden
    module = module.clone()
    producers, ops, ret = _returned_producers(module)
    # the hidden states 0..LAYERS-1 feed the next layer; the last one feeds the pooler
    assert sorted(target_nodes(ops, ret)) == sorted(producers[: LAYERS + 1])
    before = api.interpret(module, feeds)
    api.run_pipeline(module, "builtin.module(subgraph-split)")
    f = main_function(module, "test")
    subs = [op for op in f.body.block.ops if isinstance(op, SubgraphOp)]
    assert len(subs) == LAYERS + 2
    # each subgraph but the last ends with the op producing one hidden state, yielded
    ret = f.body.block.last_op
    for k, sub in enumerate(subs[:-1]):
        last = [op for op in sub.body.block.ops][-2]
        assert ret.operands[k].owner is sub
        assert any(last.results[0] is y for y in sub.body.block.last_op.operands)
    after = api.interpret(module, feeds)
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])
    # inlining the chain back gives the same ops and outputs
    chain = inline(f)
    assert len(chain) == LAYERS + 2 and chain[0][0] == 0 and chain[-1][1] == len(ops)
    for k, v in api.interpret(module, feeds).items():
        np.testing.assert_array_equal(before[k], v)


@pytest.mark.parametrize("name", ["tiny_resnet", "bert_2layer"])
def test_split_keeps_interpreter_outputs(name):
    shapes = {k: s for k, (s, _) in model_zoo.MODEL_INPUTS[name].items()}
    module = api.import_onnx(model_zoo.get_model(name), shapes, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    feeds = model_zoo.sample_inputs(name)
    before = api.interpret(module, feeds)
    api.run_pipeline(module, "builtin.module(subgraph-split)")
    after = api.interpret(module, feeds)
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])
