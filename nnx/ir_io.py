"""Reading and writing nnx IR text: one context, the fast resource path, clean errors.

Every tool goes through here so that all of them load the same dialects, read
`dense_resource` blobs with the fast path of nnx/resources.py, and report a
malformed file as one line `FILE:LINE:COL: error: MESSAGE`.
"""

from __future__ import annotations

import bisect
import io
import os
import re
import string
import tempfile
from collections.abc import Iterable
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
    text: str,
    filename: str = "<stdin>",
    ctx: Context | None = None,
    *,
    line_offset: int = 0,
) -> ModuleOp:
    """Parse IR text (custom or generic form) with its resource section.

    Every op parsed without an explicit `loc(...)` gets the `FileLineColLoc` of where
    it starts (as MLIR does), so diagnostics can name `FILE:LINE:COL`; ops with a
    `NameLoc` keep it and their parse position is remembered on the side
    (nnx.diagnostics.op_location). `line_offset` is added to every line number (a
    chunk of a `--split-input-file` input).
    """
    ctx = ctx or make_context()
    try:
        body, _ = split_resource_section(text)
    except resources.ResourceError as e:
        raise IRParseError(f"{filename}: error: {e}", filename, None, None, str(e)) from None
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


_KEY_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_.$-]*|"[^"\n]*"')
_BUILTIN_RE = re.compile(r"\bbuiltin\s*:\s*\{")


def _resource_section_start(text: str) -> int:
    """Offset of the last `{-#` that is not inside a `//` comment, or -1."""
    pos = len(text)
    while True:
        pos = text.rfind("{-#", 0, pos)
        if pos < 0:
            return -1
        line_start = text.rfind("\n", 0, pos) + 1
        if "//" not in text[line_start:pos]:
            return pos


def split_resource_section(text: str) -> tuple[str, int]:
    """Cut the trailing `{-# dialect_resources: {builtin: {...}} #-}` section off
    `text` and load its blobs into the store of nnx/resources.py (decoded lazily by
    `resources.lookup_array`). Returns the IR text, with the section replaced by as
    many newlines so line numbers stay right, and the number of blobs read.

    (Reads the entries itself: `resources.split_resource_section` takes the dialect
    key `builtin` for the first blob's handle.)
    """
    start = _resource_section_start(text)
    if start < 0:
        return text, 0
    end = text.find("#-}", start)
    if end < 0:
        raise resources.ResourceError("unterminated '{-#' resource section")
    count = 0
    m = _BUILTIN_RE.search(text, start, end)
    if m is not None:
        pos = m.end()
        while True:
            while pos < end and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= end:
                raise resources.ResourceError("resource section: 'builtin: {' is not closed")
            if text[pos] == "}":
                break
            km = _KEY_RE.match(text, pos, end)
            if km is None:
                raise resources.ResourceError(
                    f"resource section: expected a blob name near {text[pos:pos + 30]!r}"
                )
            key = km.group(0).strip('"')
            pos = km.end()
            while pos < end and text[pos] in " \t\r\n":
                pos += 1
            if pos >= end or text[pos] != ":":
                raise resources.ResourceError(f"resource '{key}': expected ':'")
            pos += 1
            while pos < end and text[pos] in " \t\r\n":
                pos += 1
            if pos >= end or text[pos] != '"':
                raise resources.ResourceError(f"resource '{key}': expected a quoted blob")
            close = text.find('"', pos + 1, end)
            if close < 0:
                raise resources.ResourceError(f"resource '{key}': unterminated blob string")
            value = text[pos + 1 : close]
            if (
                not value.startswith("0x")
                or len(value) < 10
                or not all(c in string.hexdigits for c in value[2:10])
            ):
                raise resources.ResourceError(
                    f"resource '{key}': blob must be a hex string '0x<alignment><bytes>'"
                )
            try:
                raw = bytes.fromhex(value[10:])  # skip '0x' and the 4-byte alignment
            except ValueError as e:
                raise resources.ResourceError(f"resource '{key}': {e}") from None
            resources._raw[key] = raw  # noqa: SLF001 - the store's loader
            resources._store.pop(key, None)  # noqa: SLF001
            count += 1
            pos = close + 1
    newlines = text.count("\n", start, end + 3)
    return text[:start] + "\n" * newlines + text[end + 3 :], count


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

        return parse_module_text(sys.stdin.read(), "<stdin>", ctx)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UserError(f"{path}: error: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: error: not a text file") from None
    return parse_module_text(text, path, ctx)


def module_to_text(
    module: Operation,
    generic: bool = False,
    debuginfo: bool = False,
    *,
    properties_as_attributes: bool = False,
) -> str:
    """The op's text followed by the resource section of the blobs it uses.

    `module` is usually a ModuleOp; any op prints (e.g. one function for an IR dump).
    """
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
    return text + resources.format_resource_section(resources.used_handles(text))


def write_text_atomically(path: str, chunks: Iterable[str] | str) -> None:
    """Write `path` via a temporary file and rename: no half-written output."""
    if path == "-":
        import sys

        _write_all(sys.stdout, chunks)
        return
    directory = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".nnx-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            _write_all(f, chunks)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _write_all(f: IO[str], chunks: Iterable[str] | str) -> None:
    if isinstance(chunks, str):
        f.write(chunks)
    else:
        for c in chunks:
            f.write(c)
