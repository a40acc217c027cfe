"""nnx-opt: parse nnx IR, run a pass pipeline, print the result (MLIR's mlir-opt for nnx).

    nnx-opt in.mlir --pass-pipeline='builtin.module(graph-fold-constants{max-elements=64},func.func(canonicalize),dce)'
    nnx-opt in.mlir -p graph-fold-constants,canonicalize -o out.mlir
    nnx-opt --split-input-file --verify-diagnostics invalid.mlir
    nnx-opt --print-op-generic in.mlir | mlir-opt-19 --allow-unregistered-dialect

Built on xDSL's `xDSLOptMain` with only the nnx dialects and passes registered
(passes/registry.py). On top of xdsl-opt it adds what MLIR users expect:

* MLIR pipeline syntax, `builtin.module(p1{opt=1 flag=true},func.func(p2),p3)`: a
  pass inside `OP(...)` runs on every `OP` directly nested in the enclosing op (each
  `func.func` of the module on its own); xDSL's flat `-p p1,p2` still works, and so do
  MLIR's `-canonicalize`-style pass flags. Unknown passes and options are reported in
  one line listing the valid ones; an int given to a float option is accepted.
* Diagnostics as `FILE:LINE:COL: error: MSG`: parse errors; verifier errors naming
  the op (`'graph.conv' op ...`) at its location; `PassError(msg, op)` raised by a
  pass (nnx/diagnostics.py). Exit 1, no Python traceback for a user mistake.
* `--split-input-file` (`// -----`), `--verify-diagnostics` (`// expected-error
  {{...}}`, `@+N`, `@-N`, `@above`, `@below`, `@unknown`, warnings, remarks, notes),
  `--print-op-generic`, `--mlir-print-debuginfo`, `--mlir-print-ir-after-all` and
  `--mlir-print-ir-before-all` (to stderr), stdin input (`-` or no file), `-o` written
  atomically (nothing is written when any chunk fails).
* MLIR's single-dash long options (`-split-input-file`, `-pass-pipeline=...`).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import NoneType, UnionType
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException
from xdsl.xdsl_opt_main import xDSLOptMain

from nnx import ir_io
from nnx.diagnostics import (
    Diagnostic,
    PassError,
    diagnostic_at,
    diagnostic_handler,
    strip_op_prefix,
)

PROG = "nnx-opt"


class PipelineError(ir_io.UserError):
    """A malformed pipeline, an unknown pass or option, a bad option value."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that raises a one-line UserError instead of printing usage + exit 2."""

    def error(self, message: str):  # type: ignore[override]
        raise ir_io.UserError(f"{PROG}: error: {message} (see {PROG} --help)")


# --------------------------------------------------------------------------------------
# Pass pipelines
# --------------------------------------------------------------------------------------


@dataclass
class PassNode:
    name: str
    options: str  # text between the braces, '' if none
    column: int
    instance: ModulePass | None = None


@dataclass
class AnchorNode:
    """`op-name(...)`: run the children on every `op-name` directly nested in the
    current op (`any(...)`: on every directly nested op)."""

    anchor: str
    children: list[PassNode | AnchorNode] = field(default_factory=list)


PipelineNodes = list[PassNode | AnchorNode]


class _PipelineParser:
    """MLIR's textual pipeline: `anchor(elem, elem)` / `pass{opt=v ...}` lists."""

    _NAME = re.compile(r"[A-Za-z0-9_.\-]+")

    def __init__(self, text: str, what: str):
        self.text = text
        self.what = what
        self.i = 0

    def error(self, msg: str, at: int | None = None) -> PipelineError:
        col = (self.i if at is None else at) + 1
        return PipelineError(
            f"{PROG}: error: {self.what}: {msg} at column {col} of '{self.text}'"
        )

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def skip_ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def parse(self) -> PipelineNodes:
        self.skip_ws()
        if self.i == len(self.text):
            return []
        nodes = self.parse_list(None)
        if len(nodes) == 1 and isinstance(nodes[0], AnchorNode):
            if nodes[0].anchor == "builtin.module":
                return nodes[0].children
        return nodes

    def parse_list(self, closing: str | None) -> PipelineNodes:
        nodes: PipelineNodes = []
        self.skip_ws()
        if closing is not None and self.peek() == closing:
            return nodes
        while True:
            nodes.append(self.parse_element())
            self.skip_ws()
            c = self.peek()
            if c == ",":
                self.i += 1
                self.skip_ws()
                continue
            if closing is None and c == "":
                return nodes
            if closing is not None and c == closing:
                return nodes
            if c == "":
                raise self.error(f"expected ',' or '{closing}' but the pipeline ended")
            expected = f"',' or '{closing}'" if closing else "',' or end of pipeline"
            raise self.error(f"expected {expected}, found '{c}'")

    def parse_element(self) -> PassNode | AnchorNode:
        m = self._NAME.match(self.text, self.i)
        if m is None:
            found = self.peek() or "end of pipeline"
            raise self.error(f"expected a pass name, found '{found}'")
        start = self.i
        name = m.group(0)
        self.i = m.end()
        if self.peek() == "{":
            end = self._matching_brace(self.i)
            options = self.text[self.i + 1 : end]
            self.i = end + 1
            return PassNode(name, options, start)
        if self.peek() == "(":
            self.i += 1
            children = self.parse_list(")")
            if self.peek() != ")":
                raise self.error(f"'{name}(' is not closed")
            self.i += 1
            return AnchorNode(name, children)
        return PassNode(name, "", start)

    def _matching_brace(self, open_pos: int) -> int:
        depth = 0
        i = open_pos
        quote = False
        while i < len(self.text):
            c = self.text[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == '"':
                    quote = False
            elif c == '"':
                quote = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        raise self.error("'{' of the pass options is not closed", open_pos)


def parse_pipeline_text(text: str, what: str = "pass pipeline") -> PipelineNodes:
    """Parse MLIR (`builtin.module(a{x=1},func.func(b))`) or xDSL (`a{x=1},b`) syntax."""
    return _PipelineParser(text, what).parse()


def _pass_options(cls: type[ModulePass]) -> list[tuple[str, str, Any]]:
    """(kebab-name, type text, default) of each option of a pass class."""
    hints = get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name == "name" or not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        out.append((f.name.replace("_", "-"), _type_text(hints.get(f.name)), default))
    return out


def _type_text(hint: Any) -> str:
    if hint is None:
        return "?"
    if get_origin(hint) in (Union, UnionType):
        return " | ".join(_type_text(a) for a in get_args(hint))
    if get_origin(hint) is tuple:
        args = [a for a in get_args(hint) if a is not Ellipsis]
        return "list of " + " | ".join(_type_text(a) for a in args)
    if hint is NoneType:
        return "none"
    return getattr(hint, "__name__", str(hint))


def _describe_options(cls: type[ModulePass]) -> str:
    opts = _pass_options(cls)
    if not opts:
        return "it takes no options"
    parts = []
    for name, ty, default in opts:
        if default is dataclasses.MISSING:
            parts.append(f"{name}=<{ty}> (required)")
        else:
            shown = str(default).lower() if isinstance(default, bool) else default
            parts.append(f"{name}=<{ty}> (default {shown})")
    return "valid options: " + ", ".join(parts)


def _allows(hint: Any, kind: type) -> bool:
    if hint is kind:
        return True
    origin = get_origin(hint)
    if origin in (Union, UnionType) or origin is tuple:
        return any(_allows(a, kind) for a in get_args(hint) if a is not Ellipsis)
    return False


def instantiate_pass(
    node: PassNode, available: dict[str, Callable[[], type[ModulePass]]], what: str
) -> ModulePass:
    """The pass instance for one pipeline element, with clear errors for mistakes."""
    from xdsl.utils.arg_spec import ArgSpec, parse_spec

    factory = available.get(node.name)
    if factory is None:
        raise PipelineError(
            f"{PROG}: error: {what}: unknown pass '{node.name}'; valid passes: "
            + ", ".join(sorted(available))
        )
    cls = factory()
    spec_text = f"{node.name}{{{node.options}}}" if node.options.strip() else node.name
    try:
        spec = parse_spec(spec_text)
    except ArgSpecParseError as e:  # a BaseException, not an Exception
        detail = str(e).splitlines()
        msg = detail[-1].strip() if detail else "malformed options"
        msg = msg.lstrip("^ ").strip() or "malformed options"
        raise PipelineError(
            f"{PROG}: error: {what}: cannot parse the options of pass '{node.name}' "
            f"('{{{node.options}}}'): {msg}"
        ) from None
    known = {n: (n, ty, d) for n, ty, d in _pass_options(cls)}
    hints = get_type_hints(cls)
    params: dict[str, tuple[Any, ...]] = {}
    for key, values in spec.parameters.items():
        kebab = key.replace("_", "-")
        if kebab not in known:
            raise PipelineError(
                f"{PROG}: error: {what}: pass '{node.name}' has no option '{key}'; "
                + _describe_options(cls)
            )
        hint = hints.get(kebab.replace("-", "_"))
        if _allows(hint, float) and not _allows(hint, int):
            values = tuple(
                float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                for v in values
            )
        params[kebab] = values
    try:
        from xdsl.utils.arg_spec import _convert_arg_to_type  # noqa: PLC0415

        for key, values in params.items():
            hint = hints.get(key.replace("-", "_"))
            try:
                _convert_arg_to_type(values, hint)
            except (ValueError, TypeError):
                given = ",".join(str(v).lower() if isinstance(v, bool) else str(v) for v in values)
                raise PipelineError(
                    f"{PROG}: error: {what}: option '{key}' of pass '{node.name}' "
                    f"expects {_type_text(hint)}, got '{given}'"
                ) from None
    except ImportError:  # pragma: no cover - private helper moved
        pass
    try:
        return cls.from_spec(ArgSpec(node.name, params))
    except PipelineError:
        raise
    except (ValueError, TypeError) as e:
        raise PipelineError(
            f"{PROG}: error: {what}: pass '{node.name}': {e}; " + _describe_options(cls)
        ) from None


def instantiate_pipeline(
    nodes: PipelineNodes,
    available: dict[str, Callable[[], type[ModulePass]]],
    what: str = "pass pipeline",
) -> PipelineNodes:
    for node in nodes:
        if isinstance(node, PassNode):
            node.instance = instantiate_pass(node, available, what)
        else:
            instantiate_pipeline(node.children, available, what)
    return nodes


def pipeline_to_text(nodes: PipelineNodes) -> str:
    def one(n: PassNode | AnchorNode) -> str:
        if isinstance(n, PassNode):
            return n.name + (f"{{{n.options}}}" if n.options.strip() else "")
        return f"{n.anchor}(" + ",".join(one(c) for c in n.children) + ")"

    return "builtin.module(" + ",".join(one(n) for n in nodes) + ")"


# --------------------------------------------------------------------------------------
# --verify-diagnostics
# --------------------------------------------------------------------------------------

_EXPECTED_RE = re.compile(
    r"expected-(error|warning|remark|note)(@[+-]\d+|@above|@below|@unknown)?"
    r"\s*(\d+)?\s*\{\{(.*?)\}\}"
)


@dataclass
class Expected:
    severity: str
    line: int | None  # None: @unknown
    message: str
    comment_line: int
    comment_col: int
    count: int = 1


def collect_expected(text: str, line_offset: int) -> list[Expected]:
    out: list[Expected] = []
    for i, src in enumerate(text.split("\n")):
        if "expected-" not in src:
            continue
        comment = src.find("//")
        if comment < 0:
            continue
        line = i + 1 + line_offset
        for m in _EXPECTED_RE.finditer(src, comment):
            where = m.group(2)
            if where is None:
                target: int | None = line
            elif where == "@above":
                target = line - 1
            elif where == "@below":
                target = line + 1
            elif where == "@unknown":
                target = None
            else:
                target = line + int(where[1:])
            count = int(m.group(3)) if m.group(3) else 1
            out.append(
                Expected(m.group(1), target, m.group(4), line, m.start() + 1, count)
            )
    return out


def check_expected(
    diags: list[Diagnostic], expected: list[Expected], filename: str
) -> list[str]:
    """Errors (as lines) for unexpected diagnostics and expectations not produced."""
    problems: list[str] = []
    for d in diags:
        hit = None
        for e in expected:
            if e.count <= 0 or e.severity != d.severity:
                continue
            if e.line is None:
                if d.line is not None:
                    continue
            elif d.line != e.line or (d.file is not None and d.file != filename):
                continue
            if e.message in d.message:
                hit = e
                break
        if hit is not None:
            hit.count -= 1
        else:
            where = (
                f"{d.file}:{d.line}:{d.col}" if d.line is not None else (d.file or filename)
            )
            problems.append(f"{where}: error: unexpected {d.severity}: {d.message}")
    for e in expected:
        if e.count > 0:
            problems.append(
                f"{filename}:{e.comment_line}:{e.comment_col}: error: expected "
                f'{e.severity} "{e.message}" was not produced'
            )
    return problems


# --------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Preformatted(Diagnostic):
    text: str = ""

    def format(self) -> str:
        return self.text


class _ChunkFailed(Exception):
    """Processing of one input chunk stopped after an error diagnostic."""


class NnxOptMain(xDSLOptMain):
    """xDSL's opt driver, with nnx's dialects and passes and MLIR's conventions."""

    version_format: ClassVar[str] = "nnx-opt, built on xDSL {xdsl_version}"

    pipeline_nodes: PipelineNodes

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
        self.register_all_dialects()
        self.register_all_frontends()
        self.register_all_passes()
        self.register_all_targets()

        arg_parser = _ArgumentParser(prog=PROG, description=description)
        self.register_all_arguments(arg_parser)
        argv = list(sys.argv[1:] if args is None else args)
        argv, pass_flags = self._mlir_style_argv(arg_parser, argv)
        self.args = arg_parser.parse_args(args=argv)
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        if self.args.target != "mlir":
            raise ir_io.UserError(f"{PROG}: error: unknown target '{self.args.target}'; valid targets: mlir")
        self.setup_pipeline(pass_flags)

    # ---- registration ------------------------------------------------------------

    def register_all_dialects(self) -> None:
        for dialect in ir_io.nnx_dialects():
            self.ctx.load_dialect(dialect)

    def register_all_passes(self) -> None:
        from nnx.passes.registry import ALL_PASSES

        for name, factory in ALL_PASSES.items():
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

    def _mlir_style_argv(
        self, arg_parser: argparse.ArgumentParser, argv: list[str]
    ) -> tuple[list[str], list[str]]:
        """Accept `-split-input-file` for `--split-input-file` (mlir-opt spelling) and
        pass flags `--canonicalize`, `--graph-fold-constants=max-elements=8`."""
        longs = {
            s[2:]
            for s in arg_parser._option_string_actions  # noqa: SLF001
            if s.startswith("--")
        }
        out: list[str] = []
        pass_flags: list[str] = []
        for i, a in enumerate(argv):
            if a == "--":
                out.extend(argv[i:])
                break
            if a.startswith("-") and len(a) > 2:
                body = a[2:] if a.startswith("--") else a[1:]
                name, eq, value = body.partition("=")
                if name in longs and not a.startswith("--"):
                    out.append("--" + body)
                    continue
                if name in self.available_passes and name not in longs:
                    value = value.strip()
                    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                        value = value[1:-1]
                    pass_flags.append(f"{name}{{{value}}}" if eq and value else name)
                    continue
            out.append(a)
        return out, pass_flags

    # ---- pipeline ----------------------------------------------------------------

    def setup_pipeline(self, pass_flags: Sequence[str] = ()) -> None:  # type: ignore[override]
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
                f"{PROG}: error: give the passes once: {' and '.join(g[0] for g in given)} "
                "were both given"
            )
        nodes: PipelineNodes = []
        if given:
            what, text = given[0]
            nodes = parse_pipeline_text(text, what)
            instantiate_pipeline(nodes, self.available_passes, what)
        self.pipeline_nodes = nodes

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
                    self.verify(module, filename)
                self.run_nodes(self.pipeline_nodes, module, filename)
            except _ChunkFailed:
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

    # ---- verification ------------------------------------------------------------

    def verify(self, op: Operation, filename: str, after: str | None = None) -> None:
        failure = first_verify_failure(op)
        if failure is None:
            return
        bad, message = failure
        message = _op_message(bad, message)
        if after is not None:
            message += f" (after pass '{after}')"
        from nnx.diagnostics import emit

        emit(diagnostic_at(bad, "error", message, filename))
        raise _ChunkFailed

    # ---- passes --------------------------------------------------------------------

    def run_nodes(self, nodes: PipelineNodes, target: Operation, filename: str) -> None:
        for node in nodes:
            if isinstance(node, PassNode):
                self.run_pass(node, target, filename)
                continue
            for child in list(_direct_children(target)):
                if node.anchor == "any" or child.name == node.anchor:
                    self.run_nodes(node.children, child, filename)

    def run_pass(self, node: PassNode, target: Operation, filename: str) -> None:
        p = node.instance
        assert p is not None
        if self.args.print_ir_before_all:
            self._dump("Before", node.name, target)
        start = time.perf_counter()
        from nnx.diagnostics import emit

        try:
            _apply_anchored(p, self.ctx, target)
        except PassError as e:
            emit(diagnostic_at(e.op, "error", _pass_error_text(e), filename))
            raise _ChunkFailed from None
        except ir_io.UserError as e:
            emit(Diagnostic("error", f"pass '{node.name}': {e}", filename))
            raise _ChunkFailed from None
        except DiagnosticException as e:
            msg = str(e).strip() or type(e).__name__
            emit(Diagnostic("error", f"pass '{node.name}' failed: {msg}", filename))
            raise _ChunkFailed from None
        except Exception as e:  # a bug in a pass: say so, with the traceback
            tb = traceback.format_exc()
            print(tb, file=sys.stderr, end="")
            emit(
                Diagnostic(
                    "error",
                    f"internal error in pass '{node.name}' (a bug in nnx, please "
                    f"report it): {type(e).__name__}: {e}",
                    filename,
                )
            )
            raise _ChunkFailed from None
        if self.args.time_passes:
            print(
                f"{node.name}: {time.perf_counter() - start:.6f} s", file=sys.stderr
            )
        if not self.args.disable_verify:
            self.verify(target, filename, after=node.name)
        if self.args.print_ir_after_all or self.args.print_between_passes:
            self._dump("After", node.name, target)

    def _dump(self, when: str, name: str, target: Operation) -> None:
        scope = ""
        if not isinstance(target, ModuleOp) or target.parent_op() is not None:
            sym = target.attributes.get("sym_name") or target.properties.get("sym_name")
            sym_text = f": @{sym.data}" if sym is not None and hasattr(sym, "data") else ""
            scope = f" ('{target.name}' operation{sym_text})"
        text = ir_io.module_to_text(
            target,
            generic=self.args.print_op_generic,
            debuginfo=self.args.print_debuginfo,
            properties_as_attributes=self.args.print_no_properties,
        )
        sys.stderr.write(f"// -----// IR Dump {when} {name}{scope} //----- //\n{text}\n")
        sys.stderr.flush()


def _pass_error_text(e: PassError) -> str:
    if e.op is None:
        return e.message
    return f"'{e.op.name}' op {strip_op_prefix(e.op, e.message)}"


def _direct_children(op: Operation):
    for region in op.regions:
        for block in region.blocks:
            yield from block.ops


def _apply_anchored(p: ModulePass, ctx: Context, target: Operation) -> None:
    """Run a module pass on `target`; a non-module op is moved into a temporary module
    for the run and put back where it was."""
    if isinstance(target, ModuleOp):
        p.apply(ctx, target)
        return
    block = target.parent_block()
    after = target.next_op
    target.detach()
    tmp = ModuleOp([])
    tmp.body.block.add_op(target)
    try:
        p.apply(ctx, tmp)
    finally:
        for o in list(tmp.body.block.ops):
            o.detach()
            if block is None:
                continue
            if after is not None:
                block.insert_op_before(o, after)
            else:
                block.add_op(o)


def first_verify_failure(root: Operation) -> tuple[Operation, str] | None:
    """The first op (innermost first, in block order) whose verifier fails, and why."""
    from xdsl.traits import NoTerminator

    stack: list[tuple[Operation, bool]] = [(root, False)]
    while stack:
        op, children_done = stack.pop()
        if not children_done:
            stack.append((op, True))
            for region in reversed(op.regions):
                for block in reversed(region.blocks):
                    if not block.ops and len(region.blocks) == 1 and not op.has_trait(
                        NoTerminator
                    ):
                        return op, "empty block: expected at least a terminator"
                    for child in reversed(list(block.ops)):
                        stack.append((child, False))
            continue
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as e:
            return op, strip_op_prefix(op, str(e).strip())
        except Exception as e:  # noqa: BLE001 - a verifier crashing on odd IR
            return op, f"verifier failed: {type(e).__name__}: {e}"
    return None


def _op_message(op: Operation, message: str) -> str:
    return f"'{op.name}' op {message}"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        tool = NnxOptMain(args=argv)
        return tool.run()
    except ir_io.UserError as e:
        print(str(e), file=sys.stderr)
        return 1
    except ArgSpecParseError as e:  # pragma: no cover - caught in instantiate_pass
        print(f"{PROG}: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else 0
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
