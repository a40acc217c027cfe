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
file) ends in one line on stderr and exit code 1; no output file is left behind.
"""

from __future__ import annotations

import argparse
import os
import sys


def _blas_threads() -> None:
    """Pick the BLAS thread count before numpy loads (NNX_THREADS overrides).

    OpenBLAS threads busy-wait for each other: on a machine whose cores are already
    busy, two threads run a matmul ~20x slower than one. Use the idle cores (at
    least one) unless the user set OPENBLAS_NUM_THREADS/OMP_NUM_THREADS/NNX_THREADS.
    """
    if "numpy" in sys.modules:
        return
    n = os.environ.get("NNX_THREADS")
    if n is None:
        if "OPENBLAS_NUM_THREADS" in os.environ or "OMP_NUM_THREADS" in os.environ:
            return
        cpus = os.cpu_count() or 1
        try:
            load = os.getloadavg()[0]
        except OSError:
            load = 0.0
        n = str(max(1, min(cpus, int(cpus - load + 0.5))))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = n


_blas_threads()

import numpy as np  # noqa: E402

from nnx.named_arrays import NamedArrayError, load_inputs, write_outputs  # noqa: E402

PROG = "nnx-run"


class _Fail(Exception):
    """A user mistake: printed as `nnx-run: error: MESSAGE`."""


class _Done(Exception):
    """A user mistake whose message is already a full diagnostic line."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
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
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--interpret" not in argv and not any(a == "-h" or a == "--help" for a in argv):
        return _simulate(argv)
    args = build_parser().parse_args(argv)
    try:
        return _interpret(args)
    except (_Fail, NamedArrayError) as e:
        print(f"{PROG}: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    except _Done as e:
        print(str(e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        print(f"{PROG}: error: out of memory", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        if os.environ.get("NNX_TRACEBACK"):
            raise
        msg = f"{type(e).__name__}: {e}".splitlines()[0]
        print(f"{PROG}: internal error: {msg} (set NNX_TRACEBACK=1 for details)", file=sys.stderr)
        return 2


def _simulate(argv: list[str]) -> int:
    from nnx.sim.mesh_cli import main as mesh_main, wants_mesh

    if wants_mesh(argv):  # a mesh program (`.mesh WxH`): the multi-core simulator
        return int(mesh_main(argv) or 0)
    try:
        from nnx.sim.cli import main as sim_main  # issue 3
    except ImportError:
        print(
            f"{PROG}: error: the simulator mode is not available; use --interpret IN.mlir",
            file=sys.stderr,
        )
        return 1
    return int(sim_main(argv) or 0)


def _interpret(args: argparse.Namespace) -> int:
    from xdsl.utils.exceptions import VerifyException

    from nnx.interp.interpreter import (
        InterpError,
        find_function,
        output_names,
        run_function,
    )
    from nnx.ir_io import UserError, read_module

    inputs = load_inputs(args.input)
    try:
        module = read_module(args.file)
    except UserError as e:
        raise _Done(str(e).strip().splitlines()[0]) from None
    try:
        module.verify()
    except VerifyException as e:
        msg = str(e).splitlines()[0] if str(e) else "verification failed"
        raise _Fail(f"{args.file}: invalid IR: {msg}") from None
    except Exception as e:  # noqa: BLE001 - a verifier that crashes on bad IR
        raise _Fail(f"{args.file}: invalid IR: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    try:
        func = find_function(module, args.function)
        results = run_function(func, inputs)
    except InterpError as e:
        raise _Fail(f"{args.file}: {e}") from None
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
