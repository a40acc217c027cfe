"""Reading and writing nnx IR text: one context, the fast resource path, clean errors.

Every tool goes through here so that all of them load the same dialects, read
`dense_resource` blobs with the fast path of nnx/resources.py, and report a
malformed file as one line `FILE:LINE:COL: error: MESSAGE`.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterable
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.ir import Dialect
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError

from nnx import resources


class UserError(Exception):
    """A mistake in the user's input: printed as one line, exit code 1."""


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
    text: str, filename: str = "<stdin>", ctx: Context | None = None
) -> ModuleOp:
    """Parse IR text (custom or generic form) with its resource section."""
    ctx = ctx or make_context()
    try:
        body, _ = resources.split_resource_section(text)
    except resources.ResourceError as e:
        raise UserError(f"{filename}: error: {e}") from None
    try:
        module = Parser(ctx, body, filename).parse_module()
    except ParseError as e:
        raise UserError(_one_line_parse_error(e, filename)) from None
    return module


def _one_line_parse_error(e: ParseError, filename: str) -> str:
    span = e.span
    try:
        line, col, _ = span.get_line_col()
        return f"{filename}:{line}:{col}: error: {e.msg}"
    except Exception:  # noqa: BLE001 - fall back to the message alone
        return f"{filename}: error: {e.msg}"


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
    module: ModuleOp, generic: bool = False, debuginfo: bool = False
) -> str:
    """The module's text followed by the resource section of the blobs it uses."""
    out = io.StringIO()
    printer = Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo)
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
