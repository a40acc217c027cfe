"""Diagnostics attached to ops: pass failures, warnings and remarks with locations.

A pass whose preconditions do not hold raises `PassError(message, op)`; nnx-opt (and
every other driver) reports it as `FILE:LINE:COL: error: MESSAGE` at the op's
location and exits 1, never with a traceback (nnx/pipeline.py, nnx/cli.py).

Passes may also emit non-fatal diagnostics with `emit_warning(op, msg)` and
`emit_remark(op, msg)`. They go to the innermost handler installed with
`diagnostic_handler(...)` (nnx-opt installs one to match them against
`// expected-warning {{...}}` under `--verify-diagnostics`); without a handler they
are printed to stderr.

`--verify-diagnostics` (nnx-opt): `collect_expected(text)` reads the
`// expected-error {{...}}` comments of an input (`@+N`, `@-N`, `@above`, `@below`,
`@unknown`, a count), and `check_expected(diags, expected, file)` lists every
diagnostic that was not expected and every expectation that was not produced.

Locations: `op_location(op)` gives `(file, line, col)` from the op's
`FileLineColLoc` (also inside a `NameLoc`, `FusedLoc` or `CallSiteLoc`), falling back
to the nearest ancestor that has one. nnx/ir_io.py gives every parsed op without an
explicit `loc(...)` the `FileLineColLoc` of where it was parsed, as MLIR does.
"""

from __future__ import annotations

import contextlib
import re
import sys
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    NameLoc,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException


class PassError(DiagnosticException):
    """A pass cannot run on this IR (a precondition does not hold).

    `op` is the op the problem is about; the driver reports the message at its
    location. `op` may be None when no single op is to blame.
    """

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.message = message
        self.op = op


@dataclass(frozen=True)
class Diagnostic:
    severity: str  # "error" | "warning" | "remark" | "note"
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None

    def format(self) -> str:
        if self.file is None:
            where = "nnx"
        elif self.line is None:
            where = self.file
        else:
            where = f"{self.file}:{self.line}:{self.col or 1}"
        return f"{where}: {self.severity}: {self.message}"


Handler = Callable[[Diagnostic], None]
_handlers: list[Handler] = []


@contextlib.contextmanager
def diagnostic_handler(handler: Handler) -> Iterator[None]:
    """Route diagnostics emitted inside the `with` block to `handler`."""
    _handlers.append(handler)
    try:
        yield
    finally:
        _handlers.pop()


def emit(diag: Diagnostic) -> None:
    if _handlers:
        _handlers[-1](diag)
    else:
        print(diag.format(), file=sys.stderr)


def _describe(op: Operation | None, message: str) -> str:
    if op is None:
        return message
    return f"'{op.name}' op {strip_op_prefix(op, message)}"


def emit_warning(op: Operation | None, message: str) -> None:
    emit(diagnostic_at(op, "warning", _describe(op, message)))


def emit_remark(op: Operation | None, message: str) -> None:
    emit(diagnostic_at(op, "remark", _describe(op, message)))


def strip_op_prefix(op: Operation, message: str) -> str:
    """'graph.conv: bad pads' -> 'bad pads' (the op name is printed separately)."""
    for prefix in (f"{op.name}: ", f"{op.name} "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


def location_of_attr(loc: Attribute | None) -> tuple[str, int, int] | None:
    """(file, line, col) of a location attribute, if it has a file position."""
    if isinstance(loc, FileLineColLoc):
        return (loc.filename.data, loc.line.data, loc.column.data)
    if isinstance(loc, NameLoc):
        return location_of_attr(loc.location)
    if isinstance(loc, CallSiteLoc):
        return location_of_attr(loc.callee) or location_of_attr(loc.caller)
    if isinstance(loc, FusedLoc):
        for sub in loc.locations.data:
            found = location_of_attr(sub)
            if found is not None:
                return found
    return None


def name_of_loc(loc: Attribute | None) -> str | None:
    """The name of a NameLoc (e.g. the ONNX node name the importer recorded)."""
    if isinstance(loc, NameLoc):
        return loc.desc.data
    if isinstance(loc, FusedLoc):
        for sub in loc.locations.data:
            n = name_of_loc(sub)
            if n is not None:
                return n
    return None


_parse_positions: "weakref.WeakKeyDictionary[Operation, tuple[str, int, int]]" = (
    weakref.WeakKeyDictionary()
)


def record_parse_position(op: Operation, file: str, line: int, col: int) -> None:
    """Remember where `op` was parsed (used when its location has no file position)."""
    _parse_positions[op] = (file, line, col)


def op_location(op: Operation | None) -> tuple[str, int, int] | None:
    """(file, line, col) of `op`, or of its nearest ancestor that has one.

    An explicit file location on the op wins (as in MLIR), then the position the op
    was parsed at.
    """
    while op is not None:
        found = location_of_attr(op.location) or _parse_positions.get(op)
        if found is not None:
            return found
        op = op.parent_op()
    return None


def diagnostic_at(
    op: Operation | None, severity: str, message: str, default_file: str | None = None
) -> Diagnostic:
    """A diagnostic located at `op` (or at `default_file` when it has no position)."""
    loc = op_location(op)
    if op is not None and location_of_attr(op.location) is None:
        name = name_of_loc(op.location)
        if name is not None:
            message = f"{message} (at \"{name}\")"
    if loc is None:
        return Diagnostic(severity, message, default_file)
    file, line, col = loc
    return Diagnostic(severity, message, file, line, col)


# --------------------------------------------------------------------------------------
# --verify-diagnostics
# --------------------------------------------------------------------------------------

_EXPECTED_RE = re.compile(
    r"expected-(error|warning|remark|note)(@[+-]\d+|@above|@below|@unknown)?"
    r"\s*(\d+)?\s*\{\{(.*?)\}\}"
)


@dataclass
class Expected:
    """One `// expected-SEVERITY@WHERE COUNT {{MESSAGE}}` comment: the diagnostic it
    expects (on `line`, None for @unknown), where the comment is, how many are left."""

    severity: str
    line: int | None  # None: @unknown
    message: str
    comment_line: int
    comment_col: int
    count: int = 1


def collect_expected(text: str, line_offset: int) -> list[Expected]:
    """The expectations written in `text` (a chunk starting after `line_offset` lines)."""
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
