"""nnx-compile: ONNX model -> nnx assembly program in one step.

    nnx-compile MODEL.onnx -o PROG.s [--target FILE] [--input-shape NAME=DIMS ...]
                [--batch N] [--pipeline PIPELINE] [--print-pipeline]
                [--sparsify 'weight-threshold=0.9 ...']

Imports the model (nnx.importer), runs a pass pipeline ending in `lower-to-chip`
(default: `builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce,lower-to-chip{...})`,
printed by `--print-pipeline`), and translates the chip program to the assembly text
PROG.s plus its weights data file PROG.data (nnx-translate's functions), both written
atomically. `--pipeline` takes nnx-opt's syntax (MLIR `builtin.module(...)` or xDSL
`a{x=1},b`); `lower-to-chip{target=...}` is appended when it does not end in it.
`--sparsify OPTS` inserts `sparsify{OPTS}` right before `lower-to-chip` (seed 004:
prune weights into connection data; the mapping unit then skips the pruned MACs).

Every problem is one line on stderr and exit status 1; no partial output is left.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

PROG = "nnx-compile"


class _Fail(Exception):
    """A user mistake: one line on stderr."""


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise _Fail(f"{PROG}: error: {message}")


def _parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(prog=PROG, description="Compile an ONNX model to an nnx assembly program.")
    p.add_argument("model", metavar="MODEL.onnx", nargs="?", help="the ONNX model")
    p.add_argument("-o", "--output", metavar="PROG.s", help="the assembly program (PROG.data is written beside it)")
    p.add_argument("--target", metavar="FILE", help="target description (TOML); default: the embedded default")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="static shape of a graph input, e.g. image=1x3x224x224 (repeatable)")
    p.add_argument("--batch", type=int, metavar="N", help="value of dynamic batch dimensions")
    p.add_argument("--pipeline", metavar="PIPELINE", help="pass pipeline (nnx-opt syntax)")
    p.add_argument("--print-pipeline", action="store_true", help="print the pipeline that would run and exit")
    p.add_argument("--sparsify", metavar="OPTS", help="insert sparsify{OPTS} before lower-to-chip")
    p.add_argument("--emit-mlir", metavar="FILE", help=argparse.SUPPRESS)
    return p


def _shape_arg(spec: str) -> tuple[str, tuple[int, ...]]:
    name, eq, dims = spec.rpartition("=")
    if not eq or not name or not dims:
        raise _Fail(f"{PROG}: error: --input-shape expects NAME=DIMS (e.g. x=1x3x224x224), got '{spec}'")
    try:
        shape = tuple(int(d) for d in dims.lower().replace(",", "x").split("x"))
    except ValueError:
        raise _Fail(f"{PROG}: error: --input-shape {name}: dims must be integers like 1x3x224x224, got '{dims}'") from None
    if any(d < 1 for d in shape):
        raise _Fail(f"{PROG}: error: --input-shape {name}: dims must be positive, got '{dims}'")
    return name, shape


def _lower_text(target: str | None) -> str:
    return f'lower-to-chip{{target="{target}"}}' if target else "lower-to-chip"


def default_pipeline(target: str | None = None, sparsify: str | None = None) -> str:
    passes = ["graph-fold-constants", "canonicalize", "graph-fuse", "dce"]
    if sparsify is not None:
        passes.append(f"sparsify{{{sparsify}}}" if sparsify.strip() else "sparsify")
    passes.append(_lower_text(target))
    return "builtin.module(" + ",".join(passes) + ")"


def build_pipeline(args) -> list:
    """Pipeline nodes (nnx-opt's parser): the user's or the default, with sparsify
    inserted before lower-to-chip and lower-to-chip appended when missing."""
    from nnx.tools.nnx_opt import PassNode, PipelineError, parse_pipeline_text

    target = os.path.abspath(args.target) if args.target else None
    text = args.pipeline if args.pipeline is not None else default_pipeline(target)
    try:
        nodes = parse_pipeline_text(text, "--pipeline")
    except PipelineError as e:
        raise _Fail(str(e).replace("nnx-opt:", f"{PROG}:", 1)) from None
    top = [n for n in nodes if isinstance(n, PassNode)]
    lowers = [i for i, n in enumerate(nodes) if isinstance(n, PassNode) and n.name == "lower-to-chip"]
    if not lowers:
        nodes.append(PassNode("lower-to-chip", f'target="{target}"' if target else "", 0))
        lowers = [len(nodes) - 1]
    elif target is not None:
        n = nodes[lowers[-1]]
        if "target" not in n.options:
            n.options = (n.options + f' target="{target}"').strip()
    del top
    if args.sparsify is not None:
        nodes.insert(lowers[-1], PassNode("sparsify", args.sparsify, 0))
    return nodes


def run_pipeline(nodes, module, ctx, filename: str) -> None:
    from nnx.diagnostics import PassError, diagnostic_at
    from nnx.ir_io import UserError
    from nnx.tools.nnx_opt import PassNode, _apply_anchored, _direct_children, _pass_error_text
    from xdsl.utils.exceptions import DiagnosticException

    def run(nodes, target) -> None:
        for node in nodes:
            if isinstance(node, PassNode):
                try:
                    _apply_anchored(node.instance, ctx, target)
                except PassError as e:
                    d = diagnostic_at(e.op, "error", _pass_error_text(e), filename)
                    raise _Fail(d.format().splitlines()[0]) from None
                except UserError as e:
                    raise _Fail(f"{PROG}: error: pass '{node.name}': {e}") from None
                except DiagnosticException as e:
                    msg = (str(e).strip() or type(e).__name__).splitlines()[0]
                    raise _Fail(f"{PROG}: error: pass '{node.name}' failed: {msg}") from None
                continue
            for child in list(_direct_children(target)):
                if node.anchor == "any" or child.name == node.anchor:
                    run(node.children, child)

    run(nodes, module)


def compile_model(args) -> None:
    from nnx.importer import import_onnx
    from nnx.ir_io import UserError, make_context, write_text_atomically
    from nnx.passes.registry import ALL_PASSES
    from nnx.target import TargetError, load_target
    from nnx.tools.nnx_opt import PipelineError, instantiate_pipeline, pipeline_to_text
    from nnx.tools.nnx_translate import data_file_name, translate

    nodes = build_pipeline(args)
    try:
        instantiate_pipeline(nodes, ALL_PASSES, "--pipeline")
    except PipelineError as e:
        raise _Fail(str(e).replace("nnx-opt:", f"{PROG}:", 1)) from None
    if args.print_pipeline:
        print(pipeline_to_text(nodes))
        return
    if not args.model:
        raise _Fail(f"{PROG}: error: no MODEL.onnx given")
    if not args.output:
        raise _Fail(f"{PROG}: error: -o PROG.s is required")
    try:
        target = load_target(args.target)
    except TargetError as e:
        raise _Fail(f"{PROG}: error: {e}") from None
    except OSError as e:
        raise _Fail(f"{PROG}: error: --target {args.target}: {e.strerror}") from None
    shapes = dict(_shape_arg(s) for s in args.input_shape)
    try:
        module = import_onnx(args.model, shapes or None, args.batch)
    except UserError as e:
        msg = str(e)
        raise _Fail(msg if msg.startswith(("nnx", args.model)) else f"{PROG}: error: {msg}") from None
    ctx = make_context()
    run_pipeline(nodes, module, ctx, args.model)
    if args.emit_mlir:
        from nnx.ir_io import module_to_text

        write_text_atomically(args.emit_mlir, module_to_text(module))
    try:
        text, data = translate(module, args.output, target)
    except UserError as e:
        raise _Fail(f"{PROG}: error: {e}") from None
    out = args.output
    tmp = None
    if data is not None:
        dpath = os.path.join(os.path.dirname(os.path.abspath(out)), data_file_name(out))
        tmp = dpath + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
    try:
        write_text_atomically(out, text)
    except BaseException:
        if tmp is not None:
            os.unlink(tmp)
        raise
    if tmp is not None:
        os.replace(tmp, dpath)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        compile_model(args)
    except _Fail as e:
        print(str(e), file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
