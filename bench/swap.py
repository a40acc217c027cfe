"""Peak device memory and simulated slowdown of swap policies on a V100-like device.

    .venv/bin/python bench/swap.py [--models resnet50,bert-base] [--target targets/v100.toml]
                                   [--no-batch-search]

For ResNet-50 (batch 32, 3x224x224) and BERT-base (batch 8, sequence 512) one
training step -- the model through `graph-fuse,dce` and `graph-autodiff{loss=...
optimizer=sgd}` -- is measured on the device-memory model (nnx/memory_timeline.py with
the default accounting rules, calibrated against PyTorch: nnx/memory_rules.py; the
same run gives the no-swap baseline every ratio is against):

* no swap;
* vDNN-like: every conv/matmul input of the forward pass that the backward pass
  reads again is swapped out after its producer (the next layer waits for the
  copy) and swapped in one layer ahead (after the previous conv/matmul before its
  first backward reader);
* TFLMS-like: every tensor whose reader lies more than D topological levels after
  its producer is swapped, and swapped in K levels ahead of the reader;
* `swap-insert{memory-budget=B}` with every other option at its default -- the
  acceptance command, with B = half of the no-swap peak -- and the same command with
  B = a third of it (the goal); with only a budget the pass plans (policy=nnx
  mode=auto dtype=auto), run here through the pass itself on the parsed option text;
* the original method, `policy=seed`, at B: with its defaults (mode=swap dtype=f16)
  and with compress/both i8;
* the planner with a fixed dtype (auto f16, auto i8), to show what dtype=auto chose;
* the largest batch that fits the device memory without and with
  `swap-insert{memory-budget=<device memory>}`, and within 10 % slowdown.

A verdict line per model says whether the acceptance command fits B within 10 % and
has a lower peak at equal or lower slowdown than the vDNN-like and TFLMS-like rows.

Until `graph-autodiff` is registered (it is built on another branch), the script
measures the FORWARD graphs instead and says so on every line: those numbers are not
training results (a forward graph keeps few tensors alive, so the acceptance targets
are about training steps). docs/tensor-timing-and-swapping.md records the results.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

GIB = 1 << 30

MODELS = {
    # name: (batch, export builder key, loss)
    "resnet50": (32, "cross-entropy"),
    "bert-base": (8, "cross-entropy"),
}
SEQ = 512


def autodiff_available() -> bool:
    from nnx.passes.registry import ALL_PASSES

    return "graph-autodiff" in ALL_PASSES


def export(name: str, training: bool) -> Path:
    """ONNX export with a dynamic batch (and sequence) dimension, cached."""
    import torch

    import models as bench_models

    cache = bench_models.CACHE
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"swap-{name}-{'train' if training else 'eval'}.onnx"
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp.onnx")
    torch.manual_seed(0)
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    if name == "resnet50":
        model = bench_models._resnet50()
        bench_models._randomise(model)
        model.train(training)
        torch.onnx.export(model, (torch.randn(2, 3, 224, 224),), str(tmp), input_names=["input"],
                          output_names=["logits"], opset_version=17, dynamo=False, training=mode,
                          do_constant_folding=not training, dynamic_axes={"input": {0: "batch"}})
    else:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        bench_models.transformers_importable()
        from transformers import BertConfig, BertModel

        bert = BertModel(BertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
        bert.train(training)

        class Wrapper(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                 token_type_ids=token_type_ids).last_hidden_state

        ids = torch.randint(0, 30522, (2, 16))
        dyn = {0: "batch", 1: "seq"}
        torch.onnx.export(Wrapper(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(tmp),
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False, training=mode,
                          do_constant_folding=not training,
                          dynamic_axes={"input_ids": dyn, "attention_mask": dyn, "token_type_ids": dyn})
    tmp.rename(path)
    return path


_ONNX: dict[str, object] = {}


def build_step(name: str, batch: int):
    """(func, kind): the training step at `batch`, or the forward graph until
    graph-autodiff exists."""
    from nnx.importer import import_model
    from nnx.importer.onnx_loader import load_model
    from nnx.interp.interpreter import find_function

    training = autodiff_available()
    path = export(name, training)
    if str(path) not in _ONNX:
        _ONNX[str(path)] = load_model(str(path))
    shapes = ({"input": (batch, 3, 224, 224)} if name == "resnet50" else
              {k: (batch, SEQ) for k in ("input_ids", "attention_mask", "token_type_ids")})
    module = import_model(_ONNX[str(path)], shapes, None, str(path))
    if training:
        from xdsl.utils.arg_spec import parse_spec

        from nnx.ir_io import make_context
        from nnx.passes.registry import ALL_PASSES

        # graph-fuse first: GELU and LayerNorm as the single ops a framework runs them as
        # (the memory model's calibration, docs/tensor-timing-and-swapping.md)
        for spec in ("graph-fuse", "dce", f"graph-autodiff{{loss={MODELS[name][1]} optimizer=sgd}}"):
            parsed = parse_spec(spec)
            ALL_PASSES[parsed.name]().from_pass_spec(parsed).apply(make_context(), module)
    return find_function(module), ("training step" if training else "FORWARD ONLY (graph-autodiff not merged)")


def measure(func, target):
    from nnx.graph_costs import block_timeline
    from nnx.memory_timeline import simulate

    bt = block_timeline(func.body.block, target)
    tl = simulate(bt.ops, bt.values, bt.units)
    return tl.peak_bytes, tl.cycles


# ---- baseline policies -------------------------------------------------------------------


def _forward_set(block) -> set:
    """Ops the first returned value (the loss; the output of a forward graph) depends on."""
    ret = list(block.ops)[-1]
    todo = [ret.operands[0].owner] if ret.operands else []
    seen: set = set()
    while todo:
        op = todo.pop()
        if not hasattr(op, "operands") or op in seen:
            continue
        seen.add(op)
        todo.extend(v.owner for v in op.operands)
    return seen


def vdnn_like(func, target, mode="swap"):
    """Offload every conv/matmul input of the forward pass that a later (backward)
    op reads; prefetch one layer ahead."""
    from nnx.dialects.traits import MatrixCompute
    from nnx.passes.swap_insert import candidates, insert

    f = func.clone()
    block = f.body.block
    cands, bt = candidates(block, target, mode, "asap")
    fwd = _forward_set(block)
    ops = bt.ops
    mpu = [i for i, o in enumerate(ops) if o.has_trait(MatrixCompute)]
    fwd_inputs = {id(v) for i in mpu if ops[i] in fwd for v in ops[i].onnx_inputs() if v is not None}
    chosen = [c for c in cands if id(c.value) in fwd_inputs and ops[c.consumer] not in fwd]
    # a single-graph forward (no backward) has nothing to offload

    def one_layer_ahead(consumer: int, _cycles: int, _producer: int):
        prev = [i for i in mpu if i < consumer]
        return ops[prev[-1]] if len(prev) >= 2 else None

    insert(block, target, chosen, 1 << 62, mode, "f16", bt, prefetch=one_layer_ahead)
    return f, len(chosen)


def tflms_like(func, target, distance: int, ahead: int, mode="swap"):
    """Swap every tensor read more than `distance` topological levels after its
    producer; swap it in `ahead` levels before the reader."""
    from nnx.passes.swap_insert import candidates, insert

    f = func.clone()
    block = f.body.block
    cands, bt = candidates(block, target, mode, "asap")
    ops = bt.ops
    index = {o: i for i, o in enumerate(ops)}
    level = [0] * len(ops)
    for i, o in enumerate(ops):
        level[i] = 1 + max((level[index[v.owner]] for v in o.operands if v.owner in index), default=-1)
    chosen = [c for c in cands if level[c.consumer] - level[index[c.value.owner]] > distance]

    def levels_ahead(consumer: int, _cycles: int, _producer: int):
        want = level[consumer] - ahead
        for i in range(consumer - 1, -1, -1):
            if level[i] <= want:
                return ops[i]
        return None

    insert(block, target, chosen, -1, mode, "f16", bt, prefetch=levels_ahead)
    return f, len(chosen)


def swap_insert(func, target, budget: int, mode: str, dtype: str = "f16"):
    """policy=seed: the threshold search (`choose_thresholds`), then the insertion."""
    from nnx.passes.swap_insert import apply_thresholds, choose_thresholds

    f = func.clone()
    th, info = choose_thresholds(f, target, budget, mode, dtype)
    if th is None:
        return None, info
    apply_thresholds(f.body.block, target, th, mode, dtype)
    return f, {**info, "thresholds": th}


def swap_plan(func, target, budget: int, mode: str, dtype: str = "i8"):
    """policy=nnx: the plan from the simulated schedule (`best_plan`), inserted."""
    from nnx.passes.swap_insert import best_plan
    from nnx.passes.swap_plan import emit

    r = best_plan(func, target, budget, mode, dtype)
    if r.reductions is None:
        return None, r
    f = func.clone()
    if r.reductions:
        emit(f.body.block, target, r.reductions, *r.times)
    return f, r


def run_pass(func, spec: str):
    """`spec` (a pass pipeline text such as `swap-insert{memory-budget=123}`) through
    the registered pass on a copy of `func`'s module: (the copied function, None), or
    (None, the PassError text) when the pass refuses."""
    from xdsl.utils.arg_spec import parse_spec

    from nnx.diagnostics import PassError
    from nnx.interp.interpreter import find_function
    from nnx.ir_io import make_context
    from nnx.passes.registry import ALL_PASSES

    module = func.parent_op().clone()
    parsed = parse_spec(spec)
    try:
        ALL_PASSES[parsed.name]().from_pass_spec(parsed).apply(make_context(), module)
    except PassError as e:
        return None, str(e)
    return find_function(module), None


def default_plan_meets(func, target, budget: int, slowdown: float | None = None) -> tuple[bool, float]:
    """Whether `swap-insert{memory-budget=budget}` (the planner with mode=auto
    dtype=auto) fits `budget` -- within `slowdown` if given -- and the slowdown of the
    first plan found that does. The default keeps the fastest of its plans
    (`plan_choices`), so it meets the condition exactly when one of them does; the
    plans are tried likeliest first and the search stops at the first that meets it.
    Only plans that do not stall count (`stall=false`, docs/tensor-timing-and-
    swapping.md, "Plans that stall"): with stalls larger batches fit at any slowdown,
    and searching them takes minutes per batch on ResNet-50."""
    from nnx.passes.swap_insert import plan_choices
    from nnx.passes.swap_plan import plan_reductions

    choices = sorted(plan_choices("auto", "auto"), key=lambda c: (c[1] != "i8", c[0] != ("compress", "both")))
    for modes, dtype in choices:
        r = plan_reductions(func, target, budget, modes, dtype, stall=False)
        if r.reductions is not None and (slowdown is None or r.cycles <= slowdown * r.base_cycles):
            return True, r.cycles / r.base_cycles
    return False, 0.0


def largest_batch(fits, lo: int, hi: int) -> int:
    """The largest batch b in [lo, hi] with fits(b), for a monotone fits and
    fits(lo) true, by bisection (lo when nothing larger fits)."""
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def no_swap_batch(step, target, cap: int, batch: int) -> int:
    """The largest batch whose no-swap peak fits `cap`: the peak is affine in the
    batch (parameters + batch x activations), so two measurements give the estimate,
    which is then checked on the graph built at that batch (and its neighbour)."""
    p1 = measure(step(batch), target)[0]
    p2 = measure(step(2 * batch), target)[0]
    per = max((p2 - p1) / batch, 1)
    est = max(int((cap - (p1 - per * batch)) // per), 1)
    return largest_batch(lambda b: measure(step(b), target)[0] <= cap, max(est - 1, 1), est + 1)


def batch_search(name: str, target, target_file: str, cap: int, batch: int) -> None:
    """The largest batch whose step fits `cap`: without swapping (the affine estimate
    of the memory model, checked on the built graph), with
    `swap-insert{memory-budget=cap}` (bisection between the no-swap batch and 8x
    it, `default_plan_meets`), and with it at no more than 10 % simulated slowdown;
    the figures at those batches come from the pass itself."""
    cache: dict[int, object] = {}

    def step(b):
        if b not in cache:
            cache.clear()
            cache[b] = build_step(name, b)[0]
        return cache[b]

    t = time.time()
    b0 = no_swap_batch(step, target, cap, batch)
    b1 = largest_batch(lambda b: default_plan_meets(step(b), target, cap)[0], b0, 8 * b0)
    b2 = largest_batch(lambda b: default_plan_meets(step(b), target, cap, 1.10)[0], b0, b1)
    cmd = f"swap-insert{{memory-budget={cap} target=\"{target_file}\"}}"
    for label, b in (("largest batch", b1), ("largest batch within 10 % slowdown", b2)):
        f0 = step(b)
        f, err = run_pass(f0, cmd)
        p0, c0 = measure(f0, target)
        if f is None:
            print(f"   {label}: {b} -- {err}")
            continue
        p, c = measure(f, target)
        print(f"   {label} in {cap / GIB:.0f} GiB with {cmd}: {b} = {b / max(b0, 1):.2f}x the no-swap "
              f"batch {b0} (peak {p / GIB:.2f} GiB, time per sample x{c / c0:.3f} against no swap at "
              f"that batch; {_dtypes(f)})")
    print(f"   [batch search {time.time() - t:.0f} s]")


def _dtypes(f) -> str:
    """What the plan in `f` chose: its reductions by kind and compressed dtype."""
    kinds: dict[str, int] = {}
    for o in f.body.block.ops:
        if o.name == "graph.compress_tensor":
            both = any(u.operation.name == "graph.swap_out" for u in o.results[0].uses)
            key = f"{'both' if both else 'compress'} {o.attr('dtype')}"
            kinds[key] = kinds.get(key, 0) + 1
        elif o.name == "graph.swap_out" and o.operands[0].owner.name != "graph.compress_tensor":
            kinds["swap"] = kinds.get("swap", 0) + 1
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "nothing reduced"


def main() -> None:
    from nnx.target import load_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,bert-base")
    ap.add_argument("--target", default=str(HERE.parent / "targets" / "v100.toml"))
    ap.add_argument("--no-batch-search", action="store_true")
    ap.add_argument("--all", action="store_true",
                    help="every seed-policy setting and TFLMS distance (slow: ~2 min per seed row)")
    args = ap.parse_args()
    target = load_target(args.target)
    target_file = os.path.relpath(args.target)
    cap = target.device.memory_bytes
    t_all = time.time()
    for name in args.models.split(","):
        batch = MODELS[name][0]
        t0 = time.time()
        func, kind = build_step(name, batch)
        p0, c0 = measure(func, target)
        budget = p0 // 2
        print(f"\n== {name} batch {batch}: {kind}; {sum(1 for _ in func.body.block.ops)} ops; "
              f"target {target.name}; built in {time.time() - t0:.0f} s")
        print(f"   no-swap peak {p0 / GIB:.3f} GiB, {c0} cycles ({target.seconds(c0) * 1e3:.1f} ms); "
              f"budget B = peak/2 = {budget} bytes ({budget / GIB:.3f} GiB)")
        print(f"   {'policy':<46} {'peak GiB':>9} {'peak/no-swap':>13} {'slowdown':>9} {'fits':>5} {'reduced':>8}")
        results: dict[str, tuple[int, int]] = {}

        def row(label, f, n, b=budget):
            p, c = measure(f, target)
            print(f"   {label:<46} {p / GIB:>9.3f} {p / p0:>13.3f} {c / c0:>9.3f} {str(p <= b):>5} {n:>8}")
            results[label] = (p, c)
            return p, c

        def reduced(f):
            return sum(1 for o in f.body.block.ops if o.name in ("graph.swap_out", "graph.compress_tensor")
                       and o.operands[0].owner.name != "graph.compress_tensor")

        row("no swap", func, 0)
        f, n = vdnn_like(func, target)
        row("vDNN-like", f, n)
        tflms = [(50, 5), (100, 10), (200, 20)] if args.all else [(100, 10)]
        for d, k in tflms:
            f, n = tflms_like(func, target, d, k)
            row(f"TFLMS-like (distance {d}, ahead {k})", f, n)
        # the acceptance command, and the goal's budget, through the pass itself
        accept = f"swap-insert{{memory-budget={budget} target=\"{target_file}\"}}"
        for b, label in ((budget, "swap-insert{memory-budget=B} (acceptance)"),
                         (p0 // 3, "swap-insert{memory-budget=peak/3} (goal)")):
            t = time.time()
            f, err = run_pass(func, f"swap-insert{{memory-budget={b} target=\"{target_file}\"}}")
            if f is None:
                print(f"   {label:<46} {err}")
                continue
            row(label, f, reduced(f), b)
            print(f"      ({_dtypes(f)}; {time.time() - t:.0f} s)")
        seed = [("", ""), ("compress", "i8"), ("both", "i8")]
        if args.all:
            seed += [("compress", "f16"), ("both", "f16")]
        for mode, dtype in seed:
            t = time.time()
            label = f"policy=seed {f'mode={mode} dtype={dtype}' if mode else '(mode=swap dtype=f16)'}"
            f, info = swap_insert(func, target, budget, mode or "swap", dtype or "f16")
            if f is None:
                print(f"   {label:<46} does not fit B "
                      f"(lowest peak {info['lowest_peak'] / p0:.3f} after {info['tried']} settings; "
                      f"{time.time() - t:.0f} s)")
                continue
            th = info["thresholds"]
            row(label, f, reduced(f), budget)
            print(f"      (th-tts={th.th_tts} max-n={th.max_n} serialize={th.serialize} timing={th.timing}; "
                  f"{info['tried']} settings in {time.time() - t:.0f} s)")
        for b, bname, dtype in ((budget, "B", "f16"), (budget, "B", "i8"), (p0 // 3, "peak/3", "f16")):
            t = time.time()
            label = f"policy=nnx mode=auto dtype={dtype}" + ("" if b == budget else f" at {bname}")
            f, r = swap_plan(func, target, b, "auto", dtype)
            if f is None:
                print(f"   {label:<46} does not fit {bname} (lowest peak {r.lowest_peak / p0:.3f}; "
                      f"{time.time() - t:.0f} s)")
                continue
            row(label, f, reduced(f), b)
            print(f"      (modes {r.modes}; {r.rounds} rounds in {time.time() - t:.0f} s)")
        acc = results.get("swap-insert{memory-budget=B} (acceptance)")
        if acc is not None:
            pa, ca = acc
            beats = [lbl for lbl, (p, c) in results.items()
                     if lbl.startswith(("vDNN", "TFLMS")) and pa < p and ca <= c]
            others = [lbl for lbl in results if lbl.startswith(("vDNN", "TFLMS"))]
            print(f"   verdict: {accept}: peak {pa / p0:.3f} of no swap (fits B: {pa <= budget}), "
                  f"slowdown x{ca / c0:.3f} (<= 1.10: {ca <= 1.10 * c0}); lower peak at equal or lower "
                  f"slowdown than {len(beats)} of {len(others)} baselines ({', '.join(beats)})")
        if not args.no_batch_search:
            batch_search(name, target, target_file, cap, batch)
    print(f"\ntotal {time.time() - t_all:.0f} s")


if __name__ == "__main__":
    main()
