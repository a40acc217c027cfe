"""Reading and writing nnx IR text: one context, the fast resource path, clean errors.

Every tool goes through here so that all of them load the same dialects, read
`dense_resource` blobs with the fast path of nnx/resources.py, and report a
malformed file as `FILE:LINE:COL: error: MESSAGE` (then the source line and a caret,
as MLIR does) through `IRParseError`, a `UserError`.

Parsing uses `LocatingParser`, xDSL's parser plus: every op gets the
`FileLineColLoc` of where it was parsed (unless the text gives a `loc(...)`), so
verifier and pass diagnostics can point at the op (nnx/diagnostics.py); a value
used but never defined is reported at its first use instead of at the end of file.

API: make_context, parse_module_text, read_module, module_to_text,
write_text_atomically, UserError (and IRParseError, LocatingParser, nnx_dialects).
"""

from __future__ import annotations

import bisect
import io
import os
import re
import sys
from collections.abc import Iterable, Iterator
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import (
    Builtin,
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    StringAttr,
    UnknownLoc,
)
from xdsl.dialects.func import Func
from xdsl.ir import Dialect, Operation
from xdsl.irdl import AttributeInvT
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span

from nnx import diagnostics, resources
from nnx.atomic_file import atomic_open, atomic_outputs


class UserError(Exception):
    """A mistake in the user's input: printed as one line, exit code 1."""


class IRParseError(UserError):
    """Malformed IR text. `str()` is `FILE:LINE:COL: error: MSG` (plus the source
    line and a caret); `file`, `line`, `col`, `msg` give the parts (line/col None
    when the error has no position)."""

    def __init__(
        self, text: str, file: str, line: int | None, col: int | None, msg: str
    ):
        super().__init__(text)
        self.file = file
        self.line = line
        self.col = col
        self.msg = msg


def nnx_dialects() -> list[Dialect]:
    """Every dialect nnx tools understand."""
    from nnx.dialects.graph import Graph

    dialects: list[Dialect] = [Builtin, Func, Graph]
    for mod, attr in (("nnx.dialects.chip", "Chip"), ("nnx.dialects.sparse", "Sparse")):
        try:
            m = __import__(mod, fromlist=[attr])
        except ImportError:
            continue
        d = getattr(m, attr, None)
        if d is not None:
            dialects.append(d)
    return dialects


def make_context(allow_unregistered: bool = False) -> Context:
    ctx = Context(allow_unregistered=allow_unregistered)
    for d in nnx_dialects():
        ctx.load_dialect(d)
    return ctx


def parse_module_text(
    text: str | bytes,
    filename: str = "<stdin>",
    ctx: Context | None = None,
    *,
    line_offset: int = 0,
) -> ModuleOp:
    """Parse IR text (custom or generic form) with its resource section.

    An external weights file named in the section is looked up relative to the
    directory of `filename` (the working directory for `<stdin>`).

    Give the file's bytes when you have them: the blobs are then decoded straight
    from the buffer (nnx/resources.py). Every op parsed without an explicit
    `loc(...)` gets the `FileLineColLoc` of where it starts (as MLIR does), so
    diagnostics can name `FILE:LINE:COL`; ops with a `NameLoc` keep it and their
    parse position is remembered on the side (nnx.diagnostics.op_location).
    `line_offset` is added to every line number (a chunk of a `--split-input-file`
    input). An input of only comments is an empty module, as in MLIR.
    """
    ctx = ctx or make_context()
    try:
        base_dir = os.path.dirname(os.path.abspath(filename)) if os.path.exists(filename) else None
        body, _ = resources.split_resource_section(text, base_dir)
    except resources.ResourceError as e:
        raise IRParseError(f"{filename}: error: {e}", filename, None, None, str(e)) from None
    except UnicodeDecodeError as e:
        msg = f"not UTF-8 text (byte {e.start})"
        raise IRParseError(f"{filename}: error: {msg}", filename, None, None, msg) from None
    if _only_comments(body):
        return ModuleOp([])  # as MLIR: an empty input is an empty module
    parser = LocatingParser(ctx, body, filename, line_offset=line_offset)
    try:
        module = parser.parse_module()
    except ParseError as e:
        line = col = None
        try:
            loc = e.span.get_location()
            line, col = loc.line + line_offset, loc.col
        except Exception:  # noqa: BLE001
            pass
        raise IRParseError(
            _one_line_parse_error(e, filename, line_offset), filename, line, col, e.msg
        ) from None
    parser.assign_locations()
    return module


def _only_comments(text: str) -> bool:
    if len(text) > 4096 and text.lstrip()[:2] != "//":
        return False
    return all(
        not line.strip() or line.lstrip().startswith("//") for line in text.splitlines()
    )


class LocatingParser(Parser):
    """xDSL's parser, recording where each op starts and where values are first used.

    * After `parse_module`, `assign_locations()` gives each op that has no location
      the `FileLineColLoc` of its first token (its result list, as in MLIR).
    * A value used but never defined is reported at its first use, not at the end of
      the file.
    """

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self._text = text
        self._filename = name
        self._line_offset = line_offset
        self._op_starts: list[tuple[Operation, int]] = []
        self._first_use: dict[str, Span] = {}

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        self._op_starts.append((op, start))
        return op

    def resolve_operand(self, operand: UnresolvedOperand, type: AttributeInvT):
        name = operand.operand_name
        if name not in self.ssa_values and name not in self._first_use:
            self._first_use[name] = operand.span
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as e:
            if self.forward_ssa_references and e.msg.startswith("values used but"):
                name = next(iter(self.forward_ssa_references))
                span = self._first_use.get(name)
                if span is not None:
                    raise ParseError(
                        span, f"use of undefined value '%{name}'"
                    ) from None
            raise

    def assign_locations(self) -> None:
        """Give every parsed op without a location its FileLineColLoc."""
        if not self._op_starts:
            return
        text = self._text
        newlines = [m.start() for m in re.finditer("\n", text)]
        fname = StringAttr(self._filename)
        for op, start in self._op_starts:
            line0 = bisect.bisect_left(newlines, start)
            line_start = newlines[line0 - 1] + 1 if line0 else 0
            line = line0 + 1 + self._line_offset
            col = start - line_start + 1
            if isinstance(op.location, UnknownLoc):
                op.location = FileLineColLoc(fname, IntAttr(line), IntAttr(col))
            else:
                diagnostics.record_parse_position(op, self._filename, line, col)


def _one_line_parse_error(e: ParseError, filename: str, line_offset: int = 0) -> str:
    """`FILE:LINE:COL: error: MSG`, then the source line and a caret (as MLIR)."""
    span = e.span
    try:
        loc = span.get_location()
        line = loc.line + line_offset
        head = f"{filename}:{line}:{loc.col}: error: {e.msg}"
    except Exception:  # noqa: BLE001 - fall back to the message alone
        return f"{filename}: error: {e.msg}"
    try:
        inp = span.input
        start = inp.get_start_of_line(span.start)
        end = inp.get_end_of_line(max(span.start, span.end - 1))
        src = inp.content[start:end]
        if isinstance(src, bytes):
            src = src.decode("utf-8", "replace")
        src = src.rstrip("\n")
        if len(src) > 200:
            return head
        caret = " " * (span.start - start) + "^"
        return f"{head}\n{src}\n{caret}"
    except Exception:  # noqa: BLE001
        return head


def read_module(path: str, ctx: Context | None = None) -> ModuleOp:
    """Parse a .mlir file ('-' for stdin)."""
    if path == "-":
        import sys

        return parse_module_text(sys.stdin.buffer.read(), "<stdin>", ctx)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise UserError(f"{path}: error: cannot read: {e.strerror}") from None
    return parse_module_text(data, path, ctx)


def module_chunks(
    module: Operation,
    generic: bool = False,
    debuginfo: bool = False,
    *,
    properties_as_attributes: bool = False,
    ir_dir: str | None = None,
    weights: tuple[IO[bytes], str] | None = None,
) -> Iterator[str]:
    """The op's text, then the resource section of the blobs it uses, in chunks (a
    100 MB model is never one string). `ir_dir`/`weights`: see
    `resources.resource_section_chunks`."""
    out = io.StringIO()
    printer = Printer(
        stream=out,
        print_generic_format=generic,
        print_debuginfo=debuginfo,
        print_properties_as_attributes=properties_as_attributes,
    )
    printer.print_op(module)
    out.write("\n")
    text = out.getvalue()
    yield text
    yield from resources.resource_section_chunks(resources.used_handles(text), ir_dir, weights)


def module_to_text(
    module: Operation,
    generic: bool = False,
    debuginfo: bool = False,
    *,
    properties_as_attributes: bool = False,
    ir_dir: str | None = None,
) -> str:
    """`module_chunks` joined: the op's text followed by its resource section.

    `module` is usually a ModuleOp; any op prints (e.g. one function for an IR dump).
    """
    return "".join(
        module_chunks(
            module,
            generic,
            debuginfo,
            properties_as_attributes=properties_as_attributes,
            ir_dir=ir_dir,
        )
    )


def write_module(
    module: Operation,
    path: str,
    *,
    weights_path: str | None = None,
    generic: bool = False,
    debuginfo: bool = False,
) -> None:
    """Write `module` to `path` ('-': stdout), with its blobs either inline (MLIR hex)
    or, with `weights_path`, in that raw binary weights file referred to from the IR.
    Both files appear whole or not at all."""
    ir_dir = None if path == "-" else os.path.dirname(os.path.abspath(path))
    if weights_path is None:
        write_text_atomically(path, module_chunks(module, generic, debuginfo, ir_dir=ir_dir))
        return
    ref_dir = ir_dir or os.getcwd()
    name = os.path.relpath(os.path.abspath(weights_path), ref_dir)
    if '"' in name or "\n" in name:
        raise UserError(f"{weights_path}: error: a weights file name may not contain quotes")
    if path == "-":
        with atomic_open(weights_path, "wb") as wf:
            _write_all(sys.stdout, module_chunks(module, generic, debuginfo, weights=(wf, name)))
        return
    with atomic_outputs([path, weights_path]) as (ir_tmp, weights_tmp):
        with open(weights_tmp, "wb") as wf, open(ir_tmp, "w", encoding="utf-8") as f:
            _write_all(f, module_chunks(module, generic, debuginfo, ir_dir=ir_dir, weights=(wf, name)))


def write_text_atomically(path: str, chunks: Iterable[str] | str) -> None:
    """Write `path` via a temporary file and rename: no half-written output."""
    if path == "-":
        import sys

        _write_all(sys.stdout, chunks)
        return
    with atomic_open(path, "w", encoding="utf-8") as f:
        _write_all(f, chunks)


def _write_all(f: IO[str], chunks: Iterable[str] | str) -> None:
    if isinstance(chunks, str):
        f.write(chunks)
    else:
        for c in chunks:
            f.write(c)
