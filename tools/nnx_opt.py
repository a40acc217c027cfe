"""nnx-opt: parse nnx IR, run a pass pipeline, print the result (MLIR's mlir-opt for nnx).

    nnx-opt in.mlir --pass-pipeline='builtin.module(graph-fold-constants{max-elements=64},func.func(canonicalize),dce)'
    nnx-opt in.mlir -p graph-fold-constants,canonicalize -o out.mlir
    nnx-opt in.mlir --load-pass-plugin my_passes.py -p my-pass{threshold=0.5}
    nnx-opt --split-input-file --verify-diagnostics invalid.mlir
    nnx-opt --print-op-generic in.mlir | mlir-opt-19 --allow-unregistered-dialect

A thin driver built on xDSL's `xDSLOptMain` (its options) with only the nnx dialects
registered. The pipeline syntaxes, pass options, IR dumps and `--time-passes` are
nnx/pipeline.py's; pass plugins (`--load-pass-plugin FILE`, repeatable, and the
`nnx.passes` entry points) nnx/plugins.py's; the error path (one line, exit 1 for a
user mistake, 2 for an internal error) nnx/cli.py's. This file adds:

* diagnostics as `FILE:LINE:COL: error: MSG`: parse errors (with the source line and a
  caret, as MLIR), verifier errors naming the op, pass failures at the op's location;
* `--split-input-file` (`// -----`) and `--verify-diagnostics` (`// expected-error
  {{...}}`, nnx/diagnostics.py), stdin input (`-` or no file), `-o` written
  atomically (nothing is written when any chunk fails);
* MLIR's single-dash long options (`-split-input-file`, `-pass-pipeline=...`) and
  pass flags (`-canonicalize`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.xdsl_opt_main import xDSLOptMain

from nnx import ir_io
from nnx.cli import ArgumentParser, run_tool
from nnx.diagnostics import (
    Diagnostic,
    check_expected,
    collect_expected,
    diagnostic_handler,
    emit,
)
from nnx.pipeline import (
    PassFailure,
    Pipeline,
    PipelineError,
    RunOptions,
    instantiate_pipeline,
    parse_pipeline_text,
    split_pass_flags,
    verify,
)
from nnx.plugins import all_passes, load_pass_plugin

PROG = "nnx-opt"
PLUGIN_FLAG = "load-pass-plugin"


@dataclass(frozen=True)
class _Preformatted(Diagnostic):
    text: str = ""

    def format(self) -> str:
        return self.text


def plugin_paths(argv: Sequence[str]) -> list[str]:
    """The FILEs of every `--load-pass-plugin FILE` / `--load-pass-plugin=FILE` (one
    dash also accepted), read before the pass names are known."""
    out: list[str] = []
    it = iter(range(len(argv)))
    for i in it:
        a = argv[i]
        if a == "--":
            break
        body = a[2:] if a.startswith("--") else a[1:] if a.startswith("-") else None
        if body is None:
            continue
        if body == PLUGIN_FLAG and i + 1 < len(argv):
            out.append(argv[i + 1])
            next(it, None)
        elif body.startswith(PLUGIN_FLAG + "="):
            out.append(body.split("=", 1)[1])
    return out


class NnxOptMain(xDSLOptMain):
    """xDSL's opt driver, with nnx's dialects and passes and MLIR's conventions."""

    version_format: ClassVar[str] = "nnx-opt, built on xDSL {xdsl_version}"

    pipeline: Pipeline
    run_options: RunOptions

    def __init__(
        self,
        description: str = "nnx modular optimizer driver (mlir-opt for nnx IR)",
        args: Sequence[str] | None = None,
    ):
        # Not calling xDSLOptMain.__init__: it registers every xDSL dialect, pass and
        # target, and lets argparse exit with status 2. The steps are the same.
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        self.ctx = Context()
        argv = list(sys.argv[1:] if args is None else args)
        for path in plugin_paths(argv):  # before the pass names are needed
            load_pass_plugin(path)
        self.register_all_dialects()
        self.register_all_frontends()
        self.register_all_passes()
        self.register_all_targets()
        arg_parser = ArgumentParser(prog=PROG, description=description)
        self.register_all_arguments(arg_parser)
        longs = {s[2:] for s in arg_parser._option_string_actions if s.startswith("--")}  # noqa: SLF001
        argv, pass_flags = split_pass_flags(argv, longs, set(self.available_passes))
        self.args = arg_parser.parse_args(args=argv)
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        if self.args.target != "mlir":
            raise ir_io.UserError(f"unknown target '{self.args.target}'; valid targets: mlir")
        self.pipeline = self.setup_pipeline(pass_flags)
        self.run_options = RunOptions(
            verify_each=not self.args.disable_verify,
            print_ir_before_all=self.args.print_ir_before_all,
            print_ir_after_all=self.args.print_ir_after_all or self.args.print_between_passes,
            print_debuginfo=self.args.print_debuginfo,
            print_generic=self.args.print_op_generic,
            print_properties_as_attributes=self.args.print_no_properties,
            time_passes=self.args.time_passes,
        )

    # ---- registration ------------------------------------------------------------

    def register_all_dialects(self) -> None:
        for dialect in ir_io.nnx_dialects():
            self.ctx.load_dialect(dialect)

    def register_all_passes(self) -> None:
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        self.available_targets["mlir"] = lambda: None  # type: ignore[assignment]

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--pass-pipeline",
            type=str,
            default=None,
            help="MLIR pass pipeline, e.g. "
            "'builtin.module(graph-fold-constants{max-elements=64},func.func(canonicalize))'",
        )
        arg_parser.add_argument(
            "--mlir-print-op-generic",
            dest="print_op_generic",
            action="store_true",
            help="alias of --print-op-generic",
        )
        arg_parser.add_argument(
            "--mlir-print-debuginfo",
            dest="print_debuginfo",
            action="store_true",
            help="print op locations (alias of --print-debuginfo)",
        )
        arg_parser.add_argument(
            "--mlir-print-ir-after-all",
            "--print-ir-after-all",
            dest="print_ir_after_all",
            action="store_true",
            help="print the IR to stderr after every pass",
        )
        arg_parser.add_argument(
            "--mlir-print-ir-before-all",
            "--print-ir-before-all",
            dest="print_ir_before_all",
            action="store_true",
            help="print the IR to stderr before every pass",
        )
        arg_parser.add_argument(
            "--load-pass-plugin",
            action="append",
            default=[],
            metavar="FILE.py",
            help="register every ModulePass subclass defined in FILE.py under its "
            "`name` (repeatable)",
        )

    # ---- pipeline ----------------------------------------------------------------

    def setup_pipeline(self, pass_flags: Sequence[str] = ()) -> Pipeline:  # type: ignore[override]
        given = [
            (flag, text)
            for flag, text in (
                ("--pass-pipeline", self.args.pass_pipeline),
                ("-p", self.args.passes or None),
            )
            if text is not None
        ]
        if pass_flags:
            given.append(("pass flags", ",".join(pass_flags)))
        if len(given) > 1:
            raise PipelineError(
                f"give the passes once: {' and '.join(g[0] for g in given)} were both given"
            )
        if not given:
            return Pipeline([])
        what, text = given[0]
        nodes = parse_pipeline_text(text, what)
        return Pipeline(instantiate_pipeline(nodes, self.available_passes, what))

    # ---- running -----------------------------------------------------------------

    def _read_input(self) -> tuple[bytes, str]:
        path = self.args.input_file
        if path is None or path == "-":
            return sys.stdin.buffer.read(), "<stdin>"
        try:
            with open(path, "rb") as f:
                return f.read(), path
        except OSError as e:
            raise ir_io.UserError(f"{path}: error: cannot read: {e.strerror}") from None

    @staticmethod
    def split_chunks(text: str) -> list[tuple[str, int]]:
        """Split at lines `// -----`; each chunk with the number of lines before it."""
        chunks: list[tuple[str, int]] = []
        lines = text.split("\n")
        start = 0
        current: list[str] = []
        for i, line in enumerate(lines):
            if line.lstrip().startswith("// -----"):
                chunks.append(("\n".join(current) + "\n", start))
                current = []
                start = i + 1
            else:
                current.append(line)
        chunks.append(("\n".join(current), start))
        return chunks

    def run(self) -> int:  # type: ignore[override]
        data, filename = self._read_input()
        chunks: list[tuple[str | bytes, int]]
        if self.args.split_input_file:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ir_io.UserError(
                    f"{filename}: error: not UTF-8 text (byte {e.start})"
                ) from None
            chunks = list(self.split_chunks(text))
        else:
            chunks = [(data, 0)]  # bytes: blobs are decoded from the buffer
        outputs: list[str] = []
        failed = False
        for chunk, offset in chunks:
            diags: list[Diagnostic] = []
            out = self.process_chunk(chunk, offset, filename, diags)
            if self.args.verify_diagnostics:
                chunk_text = (
                    chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else chunk
                )
                problems = check_expected(
                    diags, collect_expected(chunk_text, offset), filename
                )
                for p in problems:
                    print(p, file=sys.stderr)
                failed = failed or bool(problems)
            else:
                for d in diags:
                    print(d.format(), file=sys.stderr)
                if any(d.severity == "error" for d in diags):
                    failed = True
            if out is not None:
                outputs.append(out)
        text_out = "// -----\n".join(outputs)
        if self.args.output_file and self.args.output_file != "-":
            if failed:
                return 1
            ir_io.write_text_atomically(self.args.output_file, text_out)
        else:
            sys.stdout.write(text_out)
            sys.stdout.flush()
        return 1 if failed else 0

    def process_chunk(
        self, chunk: str | bytes, offset: int, filename: str, diags: list[Diagnostic]
    ) -> str | None:
        """Parse, verify, run the pipeline, print. None when an error stopped it."""

        def handler(d: Diagnostic) -> None:
            diags.append(d)

        with diagnostic_handler(handler):
            try:
                module = ir_io.parse_module_text(
                    chunk, filename, self.ctx, line_offset=offset
                )
            except ir_io.IRParseError as e:
                msg, text = e.msg, str(e)
                m = re.fullmatch(r"Operation (\w+)\.\S+ is not registered", msg)
                known = {d.name for d in ir_io.nnx_dialects()}
                if m and m.group(1) not in known and not self.ctx.allow_unregistered:
                    hint = " (use --allow-unregistered-dialect to accept unknown ops)"
                    text = text.replace(msg, msg + hint, 1)
                    msg += hint
                if self.args.verify_diagnostics:
                    diags.append(Diagnostic("error", msg, e.file, e.line, e.col))
                elif self.args.parsing_diagnostics:  # xdsl-opt: print, exit 0
                    print(text)
                else:  # with the source line and caret
                    diags.append(_Preformatted("error", msg, e.file, e.line, e.col, text))
                return None
            try:
                if not self.args.disable_verify:
                    verify(module, filename)
                self.pipeline.run(module, self.ctx, filename=filename, options=self.run_options)
            except PassFailure as e:
                emit(e.diagnostic)
                return None
            out = self.args.output_file
            return ir_io.module_to_text(
                module,
                generic=self.args.print_op_generic,
                debuginfo=self.args.print_debuginfo,
                properties_as_attributes=self.args.print_no_properties,
                # external weights are named relative to the output file (else absolute)
                ir_dir=os.path.dirname(os.path.abspath(out)) if out and out != "-" else None,
            )


def _main(argv: list[str]) -> int:
    return NnxOptMain(args=argv).run()


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(PROG, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
