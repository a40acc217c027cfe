"""nnx-train: train a model by running its training step again and again.

    nnx-train STEP.mlir --data DATA.npz --steps N [--eval-data TEST.npz] [--seed S]
              [--report R.json] [--plot loss.png|.svg|.pdf] [--save-params DIR]

STEP.mlir is a training step built by `graph-autodiff` with an optimizer (sgd,
momentum or adam), possibly after other passes (`swap-insert`...). Each of the N
steps runs it on the reference interpreter with the next batch of DATA.npz (one
array per data input of the step, e.g. `input` and `labels`, with a leading sample
axis; batches of the step's batch size from permutations seeded by S, wrapping
around) and feeds the updated parameters and optimizer state into the next step
(nnx/training.py; docs/training.md, "Training with nnx-train").

Outputs: a one-line summary on stdout; R.json with `losses` (one per step),
`final_loss` (the mean of the last 30), `eval_loss` (with --eval-data: the step's
loss averaged over the full held-out batches, parameters not updated), `seconds`;
the loss curve (matplotlib); DIR/<name>.npy per trained parameter. All files appear
together or none. A bad data file (missing array, wrong shape or element type) or a
step without an optimizer is one line `nnx-train: error: ...`, exit 1.
"""

from __future__ import annotations

import argparse
import json
import os

from nnx.cli import blas_threads  # before numpy loads

blas_threads()

from nnx.cli import ArgumentParser, UsageError, run_tool  # noqa: E402

PROG = "nnx-train"


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description="Train a model: run a graph-autodiff training step "
                       "repeatedly, feeding the updated parameters into the next step.")
    p.add_argument("step", metavar="STEP.mlir", help="training step (graph-autodiff with an optimizer)")
    p.add_argument("--data", required=True, metavar="DATA.npz", help="one array per data input, samples first")
    p.add_argument("--steps", required=True, type=int, metavar="N", help="number of training steps")
    p.add_argument("--eval-data", metavar="TEST.npz", help="held-out data: report the loss on it")
    p.add_argument("--seed", type=int, default=0, help="seed of the batch order (default 0)")
    p.add_argument("--report", metavar="R.json", help="write the JSON report here")
    p.add_argument("--plot", metavar="loss.png", help="write the loss curve here (.png, .svg or .pdf)")
    p.add_argument("--save-params", metavar="DIR", help="write DIR/<name>.npy per trained parameter")
    p.add_argument("--function", metavar="NAME", help="the step function (default @main)")
    return p


def _main(argv: list[str]) -> int:
    from nnx.interp.interpreter import find_function
    from nnx.ir_io import read_module
    from nnx.named_arrays import safe_name
    from nnx.training import (PLOT_FORMATS, load_data, npy_bytes, plot_losses, report, train,
                              training_signature)

    args = build_parser().parse_args(argv)
    if args.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {args.steps}")
    fmt = None
    if args.plot:
        fmt = os.path.splitext(args.plot)[1].lstrip(".").lower()
        if fmt not in PLOT_FORMATS:
            raise UsageError(f"--plot {args.plot}: the file name must end in .png, .svg or .pdf")
    func = find_function(read_module(args.step), args.function)
    sig = training_signature(func)
    data = load_data(args.data, sig)
    held = load_data(args.eval_data, sig) if args.eval_data else None
    res = train(func, data, args.steps, held, args.seed)
    outputs: dict[str, bytes | str] = {}
    if args.report:
        outputs[args.report] = json.dumps(report(res, args.steps, args.seed), indent=1) + "\n"
    if args.plot:
        outputs[args.plot] = plot_losses(res, fmt)
    if args.save_params:
        os.makedirs(args.save_params, exist_ok=True)
        for name, value in res.params.items():
            outputs[os.path.join(args.save_params, safe_name(name) + ".npy")] = npy_bytes(value)
    from nnx.atomic_file import write_files_atomically

    write_files_atomically(outputs)
    r = report(res, args.steps, args.seed)
    held_text = f", held-out loss {r['eval_loss']:.4f} ({r['eval_batches']} batches)" if held else ""
    print(f"{PROG}: {args.steps} steps of batch {res.batch} in {r['seconds']:.1f} s: loss "
          f"{r['first_loss']:.4f} -> {r['final_loss']:.4f} (mean of the last "
          f"{min(30, args.steps)}){held_text}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, _main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
