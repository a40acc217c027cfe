"""nnx-profile's no-swap peak of one SGD training step against PyTorch on a GPU.

    .venv/bin/python bench/memory_calibration.py [--models resnet50,bert-base-mlm,densenet121]
                                                 [--target targets/v100.toml]

The reference figures are `torch.cuda.max_memory_allocated` of one SGD step in torch
2.11 on one GPU (fp32, TF32 off, parameters and gradients included; BERT with
dropout 0), measured once on real hardware and recorded in
docs/tensor-timing-and-swapping.md ("Calibration against PyTorch"); no GPU is needed
to run this script. Each model is exported in training mode with random weights
(cached under cache/bench-models/), imported, turned into a training step by
`graph-autodiff{loss=cross-entropy optimizer=sgd}` and profiled by the same code as
`nnx-profile` under each memory-accounting rule set (nnx/memory_rules.py): the
presets `torch` (the default), `reuse` and `none` (the literal accounting), each rule
switched from `torch`, the step built without `graph-fuse`, and the state before
calibration (graph-autodiff's former ReLU rule, no graph-fuse, `none`). Printed per
model: peak bytes, the nnx/torch ratio and the op at the peak; then a verdict.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# torch.cuda.max_memory_allocated of one SGD step (torch 2.11, one GPU, fp32, TF32 off)
TORCH_PEAK = {"resnet50": 3.090e9, "bert-base-mlm": 6.657e9, "densenet121": 2.248e9}
BATCH = {"resnet50": 32, "bert-base-mlm": 8, "densenet121": 16}
SEQ = 512
PIPELINE = ("graph-fuse", "dce", "graph-autodiff{loss=cross-entropy optimizer=sgd}")


def export(name: str) -> Path:
    """Training-mode ONNX export with random weights and a dynamic batch, cached:
    ResNet-50 and DenseNet-121 in torchvision's layouts (bench/models.py), and
    BertForMaskedLM (BERT-base, dropout 0, eager attention) returning its logits."""
    import torch

    import models as bench_models

    cache = bench_models.CACHE
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"calib-{name}-train.onnx"
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp.onnx")
    torch.manual_seed(0)
    train = torch.onnx.TrainingMode.TRAINING
    if name in ("resnet50", "densenet121"):
        model = bench_models._resnet50() if name == "resnet50" else bench_models._densenet121()
        bench_models._randomise(model)
        model.train()
        torch.onnx.export(model, (torch.randn(2, 3, 224, 224),), str(tmp), input_names=["input"],
                          output_names=["logits"], opset_version=17, dynamo=False, training=train,
                          do_constant_folding=False, dynamic_axes={"input": {0: "batch"}})
    else:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        bench_models.transformers_importable()
        from transformers import BertConfig, BertForMaskedLM

        bert = BertForMaskedLM(BertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                          attn_implementation="eager"))
        bert.train()

        class Logits(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask).logits

        ids = torch.randint(0, 30522, (2, 16))
        dyn = {0: "batch", 1: "seq"}
        torch.onnx.export(Logits(), (ids, torch.ones_like(ids)), str(tmp),
                          input_names=["input_ids", "attention_mask"], output_names=["logits"],
                          opset_version=17, dynamo=False, training=train, do_constant_folding=False,
                          dynamic_axes={"input_ids": dyn, "attention_mask": dyn})
    tmp.rename(path)
    return path


def build_step(name: str, batch: int, fuse: bool = True):
    """The SGD training step of `name` at `batch`: import, `graph-fuse,dce` (unless
    `fuse` is false), `graph-autodiff{loss=cross-entropy optimizer=sgd}`."""
    from xdsl.utils.arg_spec import parse_spec

    from nnx.importer import import_model
    from nnx.importer.onnx_loader import load_model
    from nnx.interp.interpreter import find_function
    from nnx.ir_io import make_context
    from nnx.passes.registry import ALL_PASSES

    path = export(name)
    shapes = ({"input": (batch, 3, 224, 224)} if name != "bert-base-mlm" else
              {k: (batch, SEQ) for k in ("input_ids", "attention_mask")})
    module = import_model(load_model(str(path)), shapes, None, str(path))
    for spec in PIPELINE if fuse else PIPELINE[2:]:
        parsed = parse_spec(spec)
        ALL_PASSES[parsed.name]().from_pass_spec(parsed).apply(make_context(), module)
    return find_function(module)


class ReluMaskFromInput:
    """Within the block, graph-autodiff's Relu rule as it was before calibration (the
    gradient mask `Greater(x, 0)` on the ReLU's input), for the "before" row."""

    def __enter__(self):
        from nnx.autodiff import rules_elementwise as ew
        from nnx.autodiff.rules import RULES, backward

        self.saved = RULES["Relu"]
        backward("Relu", inputs=(0,))(ew._unary(
            lambda em, x, y, g: em.where(em.emit("Greater", [x, ew._c(em, x, 0.0)]), g, ew._c(em, g, 0.0))))

    def __exit__(self, *exc):
        from nnx.autodiff.rules import RULES

        RULES["Relu"] = self.saved


def peak(func, target, rules) -> tuple[int, str]:
    """(no-swap peak bytes, the op at the peak) under `rules`: nnx-profile's model."""
    from nnx.graph_costs import block_timeline
    from nnx.memory_timeline import simulate

    bt = block_timeline(func.body.block, target, rules)
    tl = simulate(bt.ops, bt.values, bt.units)
    return tl.peak_bytes, (bt.op_list[tl.peak_op].name if tl.peak_op >= 0 else "-")


def main() -> None:
    from nnx import memory_rules as mr
    from nnx.target import load_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(TORCH_PEAK))
    ap.add_argument("--target", default=str(HERE.parent / "targets" / "v100.toml"))
    args = ap.parse_args()
    target = load_target(args.target)
    verdict = []
    for name in args.models.split(","):
        t = time.time()
        batch, ref = BATCH[name], TORCH_PEAK[name]
        func = build_step(name, batch)
        print(f"\n== {name} batch {batch}: torch peak {ref:.4e} B; step of "
              f"{sum(1 for _ in func.body.block.ops)} ops built in {time.time() - t:.0f} s")
        print(f"   {'accounting':<34} {'nnx peak B':>11} {'nnx/torch':>9}  op at the peak")
        rows = [(f"preset {k}", r) for k, r in mr.PRESETS.items()]
        rows += [(f"torch, {'-' if getattr(mr.TORCH, n) else '+'}{n}",
                  dataclasses.replace(mr.TORCH, **{n: not getattr(mr.TORCH, n)})) for n in mr.RULE_NAMES]
        for label, rules in rows:
            p, op = peak(func, target, rules)
            print(f"   {label:<34} {p:>11.4e} {p / ref:>9.3f}  {op}")
            if rules == mr.DEFAULT:
                verdict.append((name, p / ref))
        p, op = peak(build_step(name, batch, fuse=False), target, mr.DEFAULT)
        print(f"   {'preset torch, without graph-fuse':<34} {p:>11.4e} {p / ref:>9.3f}  {op}")
        with ReluMaskFromInput():
            p, op = peak(build_step(name, batch, fuse=False), target, mr.NONE)
        print(f"   {'before (ReLU mask from its input,':<34} {p:>11.4e} {p / ref:>9.3f}  {op}\n"
              f"    no graph-fuse, preset none)")
    print("\nverdict (default accounting, within 10 % of torch: 0.90 <= nnx/torch <= 1.10):")
    for name, r in verdict:
        print(f"   {name:<14} nnx/torch {r:.3f}  {'ok' if 0.9 <= r <= 1.1 else 'OUT OF BOUNDS'}")


if __name__ == "__main__":
    main()
