"""What swap and compression plans do to training, measured by training.

    .venv/bin/python bench/swap_accuracy.py [--steps 300] [--big resnet50,bert-base]
                                            [--target targets/v100.toml]

1. A small BatchNorm CNN (six 3x3 conv + BatchNorm + ReLU layers of 16 channels,
   global average pool, linear head) on sklearn's digits (1,797 8x8 images shipped
   inside the wheel; the first 1,500 train, the other 297 are held out),
   batch 32, `graph-autodiff{loss=cross-entropy optimizer=momentum lr=0.05}`,
   trained `--steps` steps with nnx-train's loop (`nnx.api.train`, seed 0):

   * without swap;
   * with each plan at B = 1/2 and 1/3 of the step's no-swap peak on the target:
     the original method with f16 and with i8 compression (`policy=seed
     mode=compress dtype=f16|i8`), the planner as it was (`exact-forward=false
     scales=tensor`: a restored copy feeds every later reader) and the default
     planner (`swap-insert{memory-budget=B target=...}`: forward readers exact,
     i8 scales per channel, gradient-error bound).

   The default planner also runs with `scales=group64` (one i8 scale per 64
   elements: per sample and channel here) and on the step built with
   `graph-autodiff{... forward-masks=true}` (Relu's masks computed in the forward
   pass; docs/training.md, "Masks in the forward pass"), at the same B in bytes;
   the no-swap step also trains with two other batch orders (seeds 1, 2): the
   spread of training itself, against which the plans' differences are judged.

   Per run: the simulated peak / no-swap peak, what was compressed, the one-step
   gradient error (the same plan on the `optimizer=none` step at the initial
   parameters: the largest |g - g0| over each gradient relative to its largest
   |g0|, worst over the parameters), the first and final training loss (mean of
   the last 30 steps), the held-out loss and accuracy (the forward graph with the
   trained parameters, BatchNorm on batch statistics as in the step).
2. Beside it, the one-step gradient error of each plan on ResNet-50 (batch 16,
   3x224x224) and BERT-base (batch 8, sequence 256) training steps, at 1/2 and 1/3
   of their no-swap peaks at that batch (batches at which activations dominate the
   peak, as at the batches of bench/swap.py, and the interpreter runs a step in
   about a minute).

Every ratio is against the no-swap run of the same invocation. Results:
bench/RESULTS.md ("Swap accuracy").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from nnx.cli import blas_threads  # noqa: E402  (before numpy loads)

blas_threads()

import numpy as np  # noqa: E402

BATCH = 32
HW = 8
LAYERS = [(16, 1)] * 6
"""(output channels, stride) of each conv layer of the digits CNN."""


def digits() -> tuple[dict, dict]:
    """(training, held-out) arrays: `input` (N, 1, 8, 8) f32 in [0, 1], `labels`."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = d.images.astype(np.float32)[:, None] / 16.0
    y = d.target.astype(np.int64)
    return {"input": x[:1500], "labels": y[:1500]}, {"input": x[1500:], "labels": y[1500:]}


def digits_cnn_onnx(path: Path) -> Path:
    """The CNN exported in training mode (BatchNorm on batch statistics)."""
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layers, c = [], 1
            for o, s in LAYERS:
                layers += [torch.nn.Conv2d(c, o, 3, s, 1, bias=False), torch.nn.BatchNorm2d(o), torch.nn.ReLU()]
                c = o
            self.features = torch.nn.Sequential(*layers)
            self.fc = torch.nn.Linear(c, 10)

        def forward(self, x):
            return self.fc(self.features(x).mean((2, 3)))

    torch.manual_seed(0)
    torch.onnx.export(Net(), (torch.zeros(BATCH, 1, HW, HW),), str(path), input_names=["input"],
                      output_names=["logits"], training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17, dynamo=False)
    return path


def run_pass(module, spec: str):
    """(a copy of `module` after the pass pipeline `spec`, None) or (None, the error)."""
    from nnx import api
    from nnx.pipeline import PassFailure

    m = module.clone()
    try:
        api.run_pipeline(m, spec, verify_each=False)
    except PassFailure as e:
        return None, str(e).splitlines()[0]
    return m, None


def timeline(module, target):
    """The device-memory model's timeline of `module`'s step on `target`."""
    from nnx.graph_costs import block_timeline
    from nnx.interp.interpreter import find_function
    from nnx.memory_timeline import simulate

    bt = block_timeline(find_function(module).body.block, target)
    return simulate(bt.ops, bt.values, bt.units)


def peak(module, target) -> int:
    return timeline(module, target).peak_bytes


def autodiff(module, optimizer: str, options: str = ""):
    from nnx import api

    m = module.clone()
    extra = " lr=0.05" if optimizer != "none" else ""
    return api.run_pipeline(m, f"graph-autodiff{{loss=cross-entropy optimizer={optimizer}{extra}{options}}}")


def compressed(module) -> str:
    """What a plan compressed: counts by dtype (and i8 scales), swaps."""
    from collections import Counter

    c: Counter = Counter()
    for o in module.walk():
        if o.name == "graph.compress_tensor":
            d = o.attr("dtype")
            c[f"{d}/{o.attr('scales', 'tensor')}" if d == "i8" else d] += 1
        elif o.name == "graph.swap_out" and o.operands[0].owner.name != "graph.compress_tensor":
            c["swap"] += 1
    return ", ".join(f"{n} {k}" for k, n in sorted(c.items())) or "-"


def grad_error(ref: dict, got: dict) -> float:
    """Worst over the gradients of max|g - g0| / max|g0|, over the gradients that
    are not zero: those whose largest magnitude is at least 1e-6 of the model's
    largest gradient (a key bias before softmax has an exact gradient of zero, and
    float32 noise of ~1e-9 there is not a scale to measure errors by)."""
    grads = {k: g for k, g in ref.items() if k.startswith("grad_")}
    floor = 1e-6 * max(float(np.max(np.abs(g))) for g in grads.values())
    worst = 0.0
    for k, g0 in grads.items():
        scale = float(np.max(np.abs(g0)))
        if scale < floor:
            continue
        worst = max(worst, float(np.max(np.abs(got[k].astype(np.float64) - g0))) / scale)
    return worst


def plans(budget: int, target: str) -> list[tuple[str, str]]:
    t = f'target="{target}"'
    return [
        ("seed f16", f"swap-insert{{policy=seed mode=compress dtype=f16 memory-budget={budget} {t}}}"),
        ("seed i8", f"swap-insert{{policy=seed mode=compress dtype=i8 memory-budget={budget} {t}}}"),
        ("planner as before (exact-forward=false scales=tensor)",
         f"swap-insert{{memory-budget={budget} exact-forward=false scales=tensor {t}}}"),
        ("default swap-insert{memory-budget=B}", f"swap-insert{{memory-budget={budget} {t}}}"),
    ]


def held_out_accuracy(forward, params: dict, test: dict) -> float:
    """Accuracy of the forward graph with `params` (constants by name) on the
    full held-out batches."""
    from nnx.autodiff.differentiate import constant_name
    from nnx.dialects.graph import ConstantOp
    from nnx.interp.interpreter import find_function, run_function

    f = find_function(forward)
    consts = {op: params[constant_name(op)] for op in f.body.block.ops
              if isinstance(op, ConstantOp) and constant_name(op) in params}
    right = total = 0
    for s in range(0, len(test["labels"]) - BATCH + 1, BATCH):
        out = run_function(f, {"input": test["input"][s:s + BATCH]}, consts)
        logits = next(iter(out.values()))
        right += int(np.sum(np.argmax(logits, axis=-1) == test["labels"][s:s + BATCH]))
        total += BATCH
    return right / total


def digits_runs(steps: int, target_file: str, only: str = "") -> None:
    import tempfile

    from nnx import api
    from nnx.target import load_target

    target = load_target(target_file)
    train_data, test = digits()
    with tempfile.TemporaryDirectory() as d:
        forward = api.import_onnx(digits_cnn_onnx(Path(d) / "cnn.onnx"))
    masks_fwd = " forward-masks=true"
    steps_of = {"": (autodiff(forward, "momentum"), autodiff(forward, "none")),
                masks_fwd: (autodiff(forward, "momentum", masks_fwd), autodiff(forward, "none", masks_fwd))}
    feeds = {"input": train_data["input"][:BATCH], "labels": train_data["labels"][:BATCH]}
    ref = api.interpret(steps_of[""][1], feeds)
    base_peak = peak(steps_of[""][0], target)
    print(f"digits CNN {LAYERS} on {HW}x{HW}, batch {BATCH}, {steps} steps, momentum lr 0.05; "
          f"no-swap peak {base_peak} B on {target.name} (graph-autodiff{{{masks_fwd.strip()}}}: "
          f"{peak(steps_of[masks_fwd][0], target)} B); B and every peak ratio are against {base_peak} B")
    base_cycles = timeline(steps_of[""][0], target).cycles
    print("| plan | B | peak / no-swap | step cycles / no-swap | compressed | one-step grad error | first loss | "
          "final loss (last 30) | held-out loss | held-out accuracy | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    # (name, B, pass pipeline or None, graph-autodiff options, batch-order seed)
    runs = [("no swap", "-", None, "", 0)]
    # the spread of training itself: the same step with other batch orders
    runs += [(f"no swap, batch order seed {s}", "-", None, "", s) for s in (1, 2)]
    for frac in (2, 3):
        runs += [(name, f"1/{frac}", spec, "", 0) for name, spec in plans(base_peak // frac, target_file)]
        name, spec = plans(base_peak // frac, target_file)[-1]
        runs.append((name + ", step with" + masks_fwd, f"1/{frac}", spec, masks_fwd, 0))
        runs.append((name.replace("}", " scales=group64}"), f"1/{frac}", spec.replace("}", " scales=group64}"), "", 0))
        # the default plan with the other batch orders: against the no-swap rows of the same seed
        runs += [(f"{name}, batch order seed {s}", f"1/{frac}", spec, "", s) for s in (1, 2)]
    base = None
    for name, frac, spec, opts, seed in runs:
        if only and base is not None and only not in f"{name} {frac}":
            continue
        t0 = time.perf_counter()
        step, grads = steps_of[opts]
        s, g = step, grads
        if spec is not None:
            s, err = run_pass(step, spec)
            g, err_g = run_pass(grads, spec)
            err = err or err_g
            if s is None or g is None:
                print(f"| {name} | {frac} | no plan fits: {err.split('lowest peak found')[-1].strip(' )')} "
                      f"lowest | | | | | | | | |", flush=True)
                continue
        gerr = grad_error(ref, api.interpret(g, feeds))
        res = api.train(s, train_data, steps, test, seed=seed)
        final = float(np.mean(res.losses[-30:]))
        acc = held_out_accuracy(forward, res.params, test)
        if base is None:
            base = (final, res.eval_loss, acc)
        tl = timeline(s, target)
        print(f"| {name} | {frac} | {tl.peak_bytes / base_peak:.3f} | {tl.cycles / base_cycles:.3f} | {compressed(s)} | {gerr:.2e} | {res.losses[0]:.4f} | "
              f"{final:.4f} ({final / base[0]:.2f}x) | {res.eval_loss:.4f} ({res.eval_loss / base[1]:.2f}x) | "
              f"{acc:.3f} ({100 * (acc - base[2]):+.1f} pt) | {time.perf_counter() - t0:.0f} |", flush=True)


def big_runs(names: list[str], target_file: str, only: str = "") -> None:
    from nnx.importer import import_onnx
    from nnx.interp.interpreter import find_function, input_specs
    from nnx.target import load_target

    import swap as swap_bench

    target = load_target(target_file)
    shapes = {"resnet50": lambda: {"input": (16, 3, 224, 224)},
              "bert-base": lambda: {k: (8, 256) for k in ("input_ids", "attention_mask", "token_type_ids")}}
    print("\n| model | plan | B | peak / no-swap | compressed | one-step grad error | s |")
    print("|---|---|---|---|---|---|---|")
    from nnx import api

    for name in names:
        module = import_onnx(str(swap_bench.export(name, True)), shapes[name]())
        grads = autodiff(module, "none")
        rng = np.random.default_rng(0)
        feeds = {}
        for n, shape, dt in input_specs(find_function(grads)):
            if n == "labels":
                feeds[n] = rng.integers(0, 10, shape).astype(np.int64)
            elif n == "attention_mask":
                feeds[n] = np.ones(shape, np.int64)
            elif dt == np.int64:
                feeds[n] = rng.integers(0, 1000 if n == "input_ids" else 2, shape).astype(np.int64)
            else:
                feeds[n] = rng.standard_normal(shape).astype(dt)
        t0 = time.perf_counter()
        ref = api.interpret(grads, feeds)
        print(f"| {name} | no swap | - | 1.000 | - | - | {time.perf_counter() - t0:.0f} |", flush=True)
        base_peak = peak(grads, target)
        for frac in (2, 3):
            for plan, spec in plans(base_peak // frac, target_file):
                if only not in plan:
                    continue
                t0 = time.perf_counter()
                g, err = run_pass(grads, spec)
                if g is None:
                    print(f"| {name} | {plan} | 1/{frac} | no plan fits | | | |", flush=True)
                    continue
                gerr = grad_error(ref, api.interpret(g, feeds))
                print(f"| {name} | {plan} | 1/{frac} | {peak(g, target) / base_peak:.3f} | {compressed(g)} | "
                      f"{gerr:.2e} | {time.perf_counter() - t0:.0f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--target", default=str(ROOT / "targets" / "v100.toml"))
    p.add_argument("--big", default="resnet50,bert-base", help="models for the one-step gradient error ('' for none)")
    p.add_argument("--no-digits", action="store_true", help="only the one-step gradient errors")
    p.add_argument("--runs", default="", help="only the digits runs (after the first) whose name and B contain this")
    p.add_argument("--plans", default="", help="only the big-model plans whose name contains this")
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    if not args.no_digits:
        digits_runs(args.steps, args.target, args.runs)
    if args.big:
        big_runs([n for n in args.big.split(",") if n], args.target, args.plans)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
