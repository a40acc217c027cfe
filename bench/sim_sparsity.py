"""Simulator and sparsity benchmark (issue 3): dense vs sparsified cycles, and the
simulator's wall time against onnxruntime's, measured in the same run.

    .venv/bin/python bench/sim_sparsity.py [--models resnet18,mobilenet_v2,bert2,zoo:mobilenet_v2,zoo:bert_2layer]
                                           [--levels 0.5,0.8,0.9,0.95] [--target FILE]

For each model (ResNet-18 and MobileNetV2 1.0 layouts at 1x3x224x224; a 2-layer BERT,
hidden 256, 4 heads, sequence 128; `zoo:NAME`: test/python/model_zoo.py's small
exports), generated with random weights and cached under cache/bench-models/ (not
in git): the weights of every Conv/Gemm/MatMul are magnitude-pruned per tensor to each
sparsity level (numpy), the pruned model is compiled twice -- dense lowering and
`--sparsify weight-threshold=0.0` (docs/sparse-mapping.md: compacted weights + connection data,
MACs on pruned pairs skipped) -- and both run on the reference simulator; outputs are
checked against onnxruntime on the pruned model. Printed: cycles, the sparse/dense
ratio, macs_skipped; ReLU neuron sparsity (`neuron-threshold=0.0`, fc/matmul inputs)
on top of 90% weights; simulator wall time / onnxruntime wall time (dense model).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "cache" / "bench-models"
sys.path.insert(0, str(ROOT / "test" / "python"))


def _resnet18():
    from torch import nn

    from model_zoo import resnet_basic_block  # test/python/model_zoo.py

    Basic = resnet_basic_block()
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


def get_model(name: str) -> tuple[Path, dict[str, np.ndarray], list[str]]:
    """(ONNX path, inputs, nnx-compile input-shape args); `zoo:NAME` is a model of
    test/python/model_zoo.py (small: MobileNetV2 at 32x32, BERT hidden 64, seq 16)."""
    import torch

    if name.startswith("zoo:"):
        import model_zoo as mz

        z = name[4:]
        return mz.get_model(z), mz.sample_inputs(z), mz.input_shape_args(z)

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}.onnx"
    rng = np.random.default_rng(0)
    if name in ("resnet18", "mobilenet_v2"):
        feeds = {"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
    else:
        mask = np.ones((1, 128), np.int64)
        if name == "bert_tiny":
            mask[0, 121:] = 0  # padded tail: the attention mask matters
        feeds = {
            "input_ids": rng.integers(0, 1000, (1, 128)).astype(np.int64),
            "attention_mask": mask,
            "token_type_ids": np.zeros((1, 128), np.int64),
        }
    if path.exists():
        return path, feeds, []
    from models import _mobilenet_v2, _randomise  # bench/models.py

    torch.manual_seed(0)
    tmp = path.with_suffix(".tmp.onnx")
    if name in ("resnet18", "mobilenet_v2"):
        model = (_resnet18() if name == "resnet18" else _mobilenet_v2()).eval()
        _randomise(model)
        torch.onnx.export(model, (torch.from_numpy(feeds["input"]),), str(tmp), input_names=["input"],
                          output_names=["logits"], opset_version=17, dynamo=False)
    else:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import BertConfig, BertModel

        if name == "bert_tiny":
            # the layout of google/bert_uncased_L-2_H-128_A-2 ("bert-tiny"), exported
            # at opset 14 (LayerNorm and GELU written out)
            cfg = BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=512, max_position_embeddings=512)
        else:
            cfg = BertConfig(vocab_size=1000, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=1024, max_position_embeddings=128)
        bert = BertModel(cfg).eval()

        class Wrapper(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
                return out.last_hidden_state, out.pooler_output

        args = tuple(torch.from_numpy(feeds[k]) for k in ("input_ids", "attention_mask", "token_type_ids"))
        torch.onnx.export(Wrapper().eval(), args, str(tmp), input_names=list(feeds),
                          output_names=["last_hidden_state", "pooler_output"],
                          opset_version=14 if name == "bert_tiny" else 17, dynamo=False)
    import onnx

    m = onnx.load(str(tmp))
    if m.ir_version > 10:
        m.ir_version = 10
    onnx.save(m, str(path))
    tmp.unlink()
    return path, feeds, []


def run(model: Path, feeds, work: Path, *args: str, sim_args=()):
    import test_compile_e2e as e2e

    prog = work / "prog.s"
    t0 = time.perf_counter()
    assert e2e.compile_model(model, prog, *args) == 0
    t1 = time.perf_counter()
    outs, report = e2e.simulate(prog, feeds, *sim_args)
    t2 = time.perf_counter()
    return outs, report, t1 - t0, t2 - t1


def main(argv=None) -> int:
    import onnxruntime as ort

    import test_compile_e2e as e2e

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18,mobilenet_v2,bert2,zoo:mobilenet_v2,zoo:bert_2layer")
    ap.add_argument("--target", default=None, help="target TOML for both runs (default: the embedded one)")
    ap.add_argument("--levels", default="0.5,0.8,0.9,0.95")
    args = ap.parse_args(argv)
    levels = [float(x) for x in args.levels.split(",")]
    rows = []
    for name in args.models.split(","):
        model, feeds, shape_args = get_model(name)
        targs = ("--target", args.target) if args.target else ()
        sargs = targs
        with tempfile.TemporaryDirectory() as td:
            td = Path(td)
            # dense baseline + simulator wall time vs onnxruntime
            sess = ort.InferenceSession(str(model))
            sess.run(None, feeds)
            t = time.perf_counter()
            n = 5
            for _ in range(n):
                want = sess.run(None, feeds)
            ort_wall = (time.perf_counter() - t) / n
            (td / "dense").mkdir()
            outs, rep, tc, ts = run(model, feeds, td / "dense", *shape_args, *targs, sim_args=sargs)
            err = max(e2e.rel_err(outs[e2e.safe(o.name)], w) for o, w in zip(sess.get_outputs(), want))
            print(f"{name}: dense cycles {rep['cycles']}  macs {rep['macs']}  rel.err {err:.2e}  "
                  f"compile {tc:.1f}s  sim {ts:.2f}s  ort {ort_wall * 1e3:.1f}ms  sim/ort {ts / ort_wall:.0f}x", flush=True)
            rows.append((name, "dense", 0.0, rep["cycles"], 1.0, rep["macs_skipped"], err, ts, ort_wall))
            for lv in levels:
                pruned = td / f"p{lv}.onnx"
                e2e.prune_model(model, pruned, lv)
                want = dict(zip([o.name for o in sess.get_outputs()], ort.InferenceSession(str(pruned)).run(None, feeds)))
                res = {}
                variants = [("dense", ()), ("sparse", ("--sparsify", "weight-threshold=0.0"))]
                if lv == 0.9:
                    variants.append(("sparse+relu", ("--sparsify", "weight-threshold=0.0 neuron-threshold=0.0")))
                for kind, extra in variants:
                    w = td / f"{kind}{lv}"
                    w.mkdir()
                    outs, r, tc, ts = run(pruned, feeds, w, *shape_args, *targs, *extra, sim_args=sargs)
                    err = max(e2e.rel_err(outs[e2e.safe(k)], v) for k, v in want.items())
                    res[kind] = (r, err, ts)
                d = res["dense"][0]["cycles"]
                for kind in res:
                    r, err, ts = res[kind]
                    ratio = r["cycles"] / d
                    dma = r["bytes_moved"]
                    print(f"{name}: weights {lv:.0%} pruned, {kind:<11} cycles {r['cycles']:>10}  ratio {ratio:.3f}  dma bytes {dma}  "
                          f"macs_skipped {r['macs_skipped']}  rel.err {err:.2e}  sim {ts:.2f}s", flush=True)
                    rows.append((name, kind, lv, r["cycles"], ratio, r["macs_skipped"], err, ts, None))
    (ROOT / "cache").mkdir(exist_ok=True)
    (ROOT / "cache" / "sim_sparsity.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
