"""nnx-run: run a model.

    nnx-run --interpret IN.mlir --input NAME=FILE.npy ... [--output-dir DIR] [--print]

interprets `@main` of IN.mlir with the numpy reference interpreter (nnx/interp/) and
writes DIR/NAME.npy per function result, NAME being the result's ONNX output name
(`nnx.name` result attribute, else `outN`) with characters outside [A-Za-z0-9_.-]
replaced by `_`. Inputs are named by their ONNX input names (`nnx.name` argument
attributes) or `argN`.

Without --interpret, nnx-run runs an assembly program on the reference simulator
(issue 3); that mode lives in its own module (`nnx.sim.cli`, `main(argv)`), which this
driver calls when present.

Bad input (missing, unknown, mis-shaped or mistyped input, malformed IR, unreadable
file) ends in one line on stderr and exit code 1, an internal error in one line and
exit code 2 (nnx/cli.py); no output file is left behind.
"""

from __future__ import annotations

import argparse
import os
import sys

from nnx.cli import blas_threads  # before numpy loads

blas_threads()

import numpy as np  # noqa: E402

from nnx.cli import ArgumentParser, run_tool  # noqa: E402
from nnx.named_arrays import load_inputs, write_outputs  # noqa: E402

PROG = "nnx-run"


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=PROG,
        description="Run a model: interpret graph-dialect IR (--interpret) or "
        "simulate an assembly program.",
    )
    p.add_argument("file", help="IN.mlir with --interpret, else an assembly program")
    p.add_argument(
        "--interpret", action="store_true", help="interpret IN.mlir with the numpy interpreter"
    )
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input array (repeatable); NAME is the ONNX input name or argN",
    )
    p.add_argument("--output-dir", metavar="DIR", help="write DIR/NAME.npy per result")
    p.add_argument("--function", metavar="NAME", help="function to run (default @main)")
    p.add_argument("--print", action="store_true", help="print a summary of each result")
    return p


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, _main, argv)


def _main(argv: list[str]) -> int:
    if "--interpret" not in argv and not any(a == "-h" or a == "--help" for a in argv):
        from nnx.sim.cli import simulate_main
        from nnx.sim.mesh_cli import simulate_mesh_main, wants_mesh

        from nnx.sim.package_cli import run_package_main, wants_package

        if wants_package(argv):  # a package of mesh programs (docs/subgraph-split-fuse.md)
            return run_package_main(argv)
        if wants_mesh(argv):  # a mesh program (`.mesh WxH`): the multi-core simulator
            return simulate_mesh_main(argv)
        return simulate_main(argv)
    return _interpret(build_parser().parse_args(argv))


def _interpret(args: argparse.Namespace) -> int:
    from nnx.interp.interpreter import InterpError, find_function, output_names, run_function
    from nnx.ir_io import UserError, read_module
    from nnx.pipeline import verify

    inputs = load_inputs(args.input)
    module = read_module(args.file)
    verify(module, args.file)
    try:
        func = find_function(module, args.function)
        results = run_function(func, inputs)
    except InterpError as e:
        raise UserError(f"{args.file}: {e}") from None
    names = output_names(func)
    if args.output_dir:
        write_outputs(args.output_dir, dict(zip(names, results.values())))
    if args.print or not args.output_dir:
        for name, arr in zip(names, results.values()):
            print(_summary(name, arr))
    return 0


def _summary(name: str, a: np.ndarray) -> str:
    shape = "x".join(str(d) for d in a.shape) or "scalar"
    head = f"{name}: {shape} {a.dtype}"
    if a.size == 0:
        return head + " (empty)"
    if a.dtype.kind in "biuf":
        af = a.astype(np.float64)
        flat = a.reshape(-1)[:6]
        vals = ", ".join(f"{v:.6g}" if a.dtype.kind == "f" else str(v) for v in flat.tolist())
        more = ", ..." if a.size > 6 else ""
        return (
            f"{head} min={np.nanmin(af):.6g} max={np.nanmax(af):.6g} "
            f"mean={np.nanmean(af):.6g} [{vals}{more}]"
        )
    return head


if __name__ == "__main__":
    sys.exit(main())
