"""The one error path of every nnx command-line tool.

Every tool's `main` is

    def main(argv=None) -> int:
        return run_tool("nnx-x", _main, argv)

(or `@tool_main("nnx-x")` on `_main(argv) -> int | None`). `run_tool` calls the body
and turns whatever ends it into an exit status and at most one line on stderr:

* a user mistake -> `nnx-x: error: MESSAGE` (or the message as is when it already
  says where, like `model.mlir:3:5: error: ...`), exit 1. User mistakes are the
  project's error types (`is_user_error`): `UserError` and its subclasses (IR parse
  errors, pipeline and plugin errors, pass failures), `PassError` and xDSL's
  diagnostics, `TargetError`, assembler/simulator errors, `NamedArrayError`,
  interpreter errors, topology format/mapping errors, command-line errors
  (`ArgumentParser` below; xDSL's `ArgSpecParseError`, a BaseException), and files
  that cannot be read or written (`OSError`), plus a tool's own `extra_user_errors`;
* out of memory -> `nnx-x: error: out of memory`, exit 1;
* Ctrl-C -> `nnx-x: interrupted`, exit 130; a closed stdout pipe -> exit 1, silent;
* anything else is a bug in nnx -> `nnx-x: internal error: TYPE: MESSAGE (set
  NNX_DEBUG=1 for the traceback)`, exit 2.

With the environment variable `NNX_DEBUG=1` the Python traceback is printed before
that line (for user errors too). `--help` and `--version` exit 0 as usual.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence

DEBUG_ENV = "NNX_DEBUG"

ToolBody = Callable[[list[str]], "int | None"]


class UsageError(Exception):
    """A malformed command line (what argparse reports)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises a one-line `UsageError` instead of printing the usage and
    exiting with status 2 (run_tool prints it, exit 1)."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def blas_threads() -> None:
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


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _user_error_types() -> tuple[type[BaseException], ...]:
    """The project's user-error types (imported lazily: a tool that fails early does
    not pay for the simulator or the topology package)."""
    from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

    from nnx.ir_io import UserError
    from nnx.named_arrays import NamedArrayError
    from nnx.target import TargetError

    types: list[type[BaseException]] = [
        UsageError, UserError, DiagnosticException, ArgSpecParseError, TargetError,
        NamedArrayError,
    ]
    for mod, names in (
        ("nnx.sim.asm", ("AsmError",)),
        ("nnx.sim.memory", ("SimError",)),
        ("nnx.interp.interpreter", ("InterpError",)),
        ("nnx.topology.format", ("TopologyFormatError",)),
        ("nnx.topology.partition", ("MappingError",)),
    ):
        try:
            m = __import__(mod, fromlist=list(names))
        except ImportError:  # pragma: no cover - optional part missing
            continue
        types.extend(getattr(m, n) for n in names if hasattr(m, n))
    return tuple(types)


def is_user_error(e: BaseException) -> bool:
    """Whether `e` is a mistake of the user's (exit 1) rather than a bug (exit 2)."""
    return isinstance(e, _user_error_types()) or (
        isinstance(e, OSError) and not isinstance(e, BrokenPipeError)
    )


_LOCATED = re.compile(r"^\S[^\n]*?: (error|warning): ")


def _first_line(text: str) -> str:
    lines = [ln for ln in str(text).strip().splitlines() if ln.strip()]
    return lines[0].strip() if lines else ""


def user_error_line(prog: str, e: BaseException) -> str:
    """The one line reporting user error `e` from tool `prog`."""
    from xdsl.utils.exceptions import ArgSpecParseError

    if isinstance(e, ArgSpecParseError):  # header, position, text, caret, then the reason
        reason = [ln.strip().lstrip("^").strip() for ln in str(e).splitlines()]
        reason = [ln for ln in reason if ln]
        return f"{prog}: error: malformed pass options: {reason[-1] if reason else ''}"
    if isinstance(e, OSError) and not _first_line(str(e)).count(": error: "):
        what = e.strerror or str(e) or type(e).__name__
        return f"{prog}: error: {e.filename}: {what}" if e.filename else f"{prog}: error: {what}"
    msg = _first_line(str(e))
    if _LOCATED.match(msg):
        return msg
    if not msg:
        msg = type(e).__name__
    return f"{prog}: error: {msg}"


def internal_error_line(prog: str, e: BaseException) -> str:
    """`prog: internal error: TYPE: MESSAGE (... set NNX_DEBUG=1 ...)`."""
    msg = _first_line(str(e))
    notes = "; ".join(getattr(e, "__notes__", []) or [])
    head = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    hint = f"set {DEBUG_ENV}=1 for the traceback"
    return f"{prog}: internal error: {head} ({notes + '; ' if notes else ''}{hint})"


def run_tool(
    prog: str,
    body: ToolBody,
    argv: Sequence[str] | None = None,
    *,
    extra_user_errors: tuple[type[BaseException], ...] = (),
) -> int:
    """Run a tool's body with `argv` (default: sys.argv[1:]); the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rc = body(args)
        return 0 if rc is None else int(rc)
    except SystemExit as e:  # --help/--version, or a body that exits itself
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(_first_line(str(e.code)), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except MemoryError:
        _maybe_traceback()
        print(f"{prog}: error: out of memory", file=sys.stderr)
        return 1
    except BaseException as e:  # noqa: BLE001 - the one place that classifies errors
        _maybe_traceback()
        if isinstance(e, extra_user_errors) or is_user_error(e):
            print(user_error_line(prog, e), file=sys.stderr)
            return 1
        print(internal_error_line(prog, e), file=sys.stderr)
        return 2


def tool_main(prog: str, **kwargs) -> Callable[[ToolBody], Callable[..., int]]:
    """Decorator form: `@tool_main("nnx-x")` on `_main(argv)` gives `main(argv=None)`."""

    def wrap(body: ToolBody) -> Callable[..., int]:
        def main(argv: Sequence[str] | None = None) -> int:
            return run_tool(prog, body, argv, **kwargs)

        main.__doc__ = body.__doc__
        main.__name__ = "main"
        return main

    return wrap


def _maybe_traceback() -> None:
    if debug_enabled():
        traceback.print_exc(file=sys.stderr)


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush does
    not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
