"""nnx-import: ONNX model -> graph-dialect IR text.

    nnx-import MODEL.onnx -o OUT.mlir [--input-shape NAME=1x3x224x224 ...] [--batch N]
               [--const-input NAME=FILE.npy ...] [--keep-initializer-inputs]
               [--print-op-generic] [--no-locations]

`-o -` or no `-o` prints to stdout. A user mistake (bad or truncated file,
unsupported op, unknown input name, malformed shape, dynamic dim left) ends in one
line `nnx-import: error: ...` and exit 1; an internal error in one line and exit 2
(nnx/cli.py; NNX_DEBUG=1 adds the traceback). No output file is written on failure.
"""

from __future__ import annotations

import argparse
import sys

from nnx.cli import ArgumentParser, run_tool

PROG = "nnx-import"


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="nnx-import",
        description="Import an ONNX model into the nnx graph dialect.",
    )
    p.add_argument("model", metavar="MODEL.onnx", help="the ONNX file")
    p.add_argument("-o", "--output", default="-", metavar="OUT.mlir",
                   help="output file ('-' = stdout, the default)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=DxDx...",
                   help="static shape of a graph input, e.g. input=1x3x224x224 (repeatable)")
    p.add_argument("--batch", type=int, default=None, metavar="N",
                   help="size of every dynamic leading (batch) dim of the inputs")
    p.add_argument("--const-input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="bind a graph input to the value in FILE.npy: it becomes a "
                        "constant (folded), not a function argument (repeatable)")
    p.add_argument("--keep-initializer-inputs", action="store_true",
                   help="keep graph inputs that also have an initializer (every weight of "
                        "an IR version 3 model) as function arguments; by default they "
                        "are constants with the initializer's value")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--training", dest="training", action="store_const", const=True,
                      default=None,
                      help="a training-mode export: keep every node that reads a float "
                           "initializer (a parameter) as an op for graph-autodiff "
                           "(default: detected from training-mode BatchNormalization "
                           "or Dropout)")
    mode.add_argument("--inference", dest="training", action="store_const", const=False,
                      help="fold nodes over parameters even in a training-mode export")
    w = p.add_mutually_exclusive_group()
    w.add_argument("--weights-file", metavar="FILE", default=None,
                   help="write the weights to this raw binary file, referred to from the "
                        "IR (external_resources), instead of inline hex blobs: faster to "
                        "read (memory-mapped) and half the size. Default: inline, unless "
                        f"they exceed {AUTO_EXTERNAL_BYTES >> 20} MiB and -o names a file: "
                        "then OUT.weights beside it")
    w.add_argument("--inline-weights", action="store_true",
                   help="always write the weights inline (one self-contained file)")
    p.add_argument("--print-op-generic", action="store_true",
                   help="print the generic op form")
    p.add_argument("--no-locations", action="store_true",
                   help="do not print op locations (the ONNX node names)")
    return p


AUTO_EXTERNAL_BYTES = 64 << 20
"""Above this many bytes of weights nnx-import writes them to OUT.weights by default
(as ONNX moves large models' tensors to external data): reading 2 bytes of hex per
weight byte would dominate every later tool's run time."""


def _weights_path(args, module) -> str | None:
    if args.weights_file is not None:
        return args.weights_file
    if args.inline_weights or args.output == "-":
        return None
    from nnx import resources

    total = sum(resources.blob_nbytes(h) for h in resources.module_handles(module))
    if total <= AUTO_EXTERNAL_BYTES:
        return None
    import os

    path = os.path.splitext(args.output)[0] + ".weights"
    if os.path.abspath(path) == os.path.abspath(args.output):
        path = args.output + ".weights"
    return path


def _load_const_input(spec: str):
    from nnx.ir_io import UserError

    name, eq, file = spec.partition("=")
    if not eq or not name or not file:
        raise UserError(f"malformed --const-input '{spec}': expected NAME=FILE.npy")
    import numpy as np

    try:
        value = np.load(file, allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"--const-input {name}: {file}: no such file") from None
    except Exception as e:  # noqa: BLE001 - ValueError/OSError for non-.npy data
        raise UserError(f"--const-input {name}: {file}: not a .npy file ({e})") from None
    if not isinstance(value, np.ndarray):
        raise UserError(f"--const-input {name}: {file}: not a single array")
    return name, value


def _main(argv: list[str]) -> int:
    from nnx.importer import import_onnx
    from nnx.importer.shapes import parse_input_shape
    from nnx.ir_io import write_module

    args = _parser().parse_args(argv)
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in args.input_shape:
        name, dims = parse_input_shape(spec)
        shapes[name] = dims
    consts = {}
    for spec in args.const_input:
        name, value = _load_const_input(spec)
        consts[name] = value
    module = import_onnx(args.model, shapes, args.batch, consts, args.keep_initializer_inputs,
                         args.training)
    write_module(
        module,
        args.output,
        weights_path=_weights_path(args, module),
        generic=args.print_op_generic,
        debuginfo=not args.no_locations,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
