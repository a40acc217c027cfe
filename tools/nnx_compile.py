"""nnx-compile: ONNX model -> nnx assembly program in one step.

    nnx-compile MODEL.onnx -o PROG.s [--target FILE] [--input-shape NAME=DIMS ...]
                [--batch N] [--pipeline PIPELINE] [--print-pipeline] [--objective stages|latency|throughput]
                [--sparsify 'weight-threshold=0.9 ...'] [--load-pass-plugin FILE.py ...]
                [--time-passes] [--mlir-print-ir-after-all] [--mlir-print-ir-before-all]

Imports the model (nnx.importer), runs a pass pipeline ending in `lower-to-chip`
(default: `builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce,lower-to-chip{...})`,
printed by `--print-pipeline`), and translates the chip program to the assembly text
PROG.s plus its weights data file PROG.data (nnx-translate's functions), both written
together or not at all. `--pipeline` takes nnx-opt's syntax (MLIR `builtin.module(...)`
or xDSL `a{x=1},b`; nnx/pipeline.py); `lower-to-chip{target=...}` is appended when it
does not end in it. `--sparsify OPTS` inserts `sparsify{OPTS}` right before
`lower-to-chip` (prune weights into connection data; the mapping unit then skips the
pruned MACs, docs/sparse-mapping.md). `--load-pass-plugin FILE.py` (repeatable) makes
the passes a plugin file defines available to `--pipeline` (nnx/plugins.py);
`--time-passes` and the IR dumps are nnx-opt's.

With a mesh target (docs/mesh.md) and no `--pipeline`, `--objective stages`
(default: the original schedule), `latency` or `throughput` picks the mesh schedule
(docs/mesh.md, "Schedules"), and a
model that does not fit the mesh becomes a program package (docs/subgraph-split-fuse.md); a `--pipeline`
ending in `subgraph-split` or `subgraph-fuse{strategy=...}` makes each of its
subgraphs one program of the package.

A user mistake is one line on stderr and exit status 1, an internal error one line
and exit 2 (nnx/cli.py); no partial output is left.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from nnx.cli import ArgumentParser, UsageError, run_tool

PROG = "nnx-compile"

#: --objective -> the mesh schedule (nnx/mesh/compile.py SCHEDULES): `latency` spreads
#: every layer over the cores its work can use; `throughput` pipelines a stream of
#: inputs through groups of layers on core counts searched to balance them; `stages` is the
#: original schedule, the default while `latency` compiles full-size CNNs many times
#: slower than it (docs/mesh.md, "Schedules")
OBJECTIVES = {"stages": "stages", "latency": "latency", "throughput": "throughput"}


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description="Compile an ONNX model to an nnx assembly program.")
    p.add_argument("model", metavar="MODEL.onnx", nargs="?", help="the ONNX model")
    p.add_argument("-o", "--output", metavar="PROG.s", help="the assembly program (PROG.data is written beside it)")
    p.add_argument("--target", metavar="FILE", help="target description (TOML); default: the embedded default")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="static shape of a graph input, e.g. image=1x3x224x224 (repeatable)")
    p.add_argument("--batch", type=int, metavar="N", help="value of dynamic batch dimensions")
    p.add_argument("--pipeline", metavar="PIPELINE", help="pass pipeline (nnx-opt syntax)")
    p.add_argument("--print-pipeline", action="store_true", help="print the pipeline that would run and exit")
    p.add_argument("--sparsify", metavar="OPTS", help="insert sparsify{OPTS} before lower-to-chip")
    p.add_argument("--load-pass-plugin", action="append", default=[], metavar="FILE.py",
                   help="register the ModulePass subclasses FILE.py defines (repeatable)")
    p.add_argument("--mlir-print-ir-after-all", action="store_true",
                   help="print the IR to stderr after every pass")
    p.add_argument("--mlir-print-ir-before-all", action="store_true",
                   help="print the IR to stderr before every pass")
    p.add_argument("--time-passes", action="store_true", help="print each pass's wall time to stderr")
    from nnx.mesh import DEFAULT_SCHEDULE

    p.add_argument("--objective", choices=OBJECTIVES, default=None,
                   help="mesh targets: what the schedule minimises (docs/mesh.md, \"Schedules\"): latency (one "
                        "input), throughput (a stream of inputs) or stages (the original schedule); default "
                        f"{DEFAULT_SCHEDULE}")
    p.add_argument("--emit-mlir", metavar="FILE", help=argparse.SUPPRESS)
    return p


def _main(argv: list[str]) -> int:
    from nnx import api
    from nnx.importer.shapes import parse_input_shape
    from nnx.plugins import load_pass_plugin
    from nnx.target import load_target

    args = _parser().parse_args(argv)
    for path in args.load_pass_plugin:
        load_pass_plugin(path)
    target_path = os.path.abspath(args.target) if args.target else None
    pipeline = api.compile_pipeline(args.pipeline, target_path, args.sparsify, what="--pipeline")
    if args.print_pipeline:
        print(pipeline.text())
        return 0
    if not args.model:
        raise UsageError("no MODEL.onnx given")
    if not args.output:
        raise UsageError("-o PROG.s is required")
    try:
        load_target(args.target)  # a bad target fails before the import
    except OSError as e:
        raise UsageError(f"--target {args.target}: {e.strerror}") from None
    shapes = dict(parse_input_shape(s) for s in args.input_shape)  # as nnx-import
    module = api.import_onnx(args.model, shapes or None, args.batch)
    api.compile_files(
        module,
        args.output,
        target_path,
        args.pipeline,
        sparsify=args.sparsify,
        filename=args.model,
        print_ir_before_all=args.mlir_print_ir_before_all,
        print_ir_after_all=args.mlir_print_ir_after_all,
        time_passes=args.time_passes,
        emit_mlir=args.emit_mlir,
        schedule=OBJECTIVES[args.objective] if args.objective else None,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(PROG, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
