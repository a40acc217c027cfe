"""Pass pipelines: parse the text, build the passes, run them on IR.

The one pipeline implementation behind nnx-opt, nnx-compile and the Python API
(nnx/api.py). Three ways to write a pipeline, as in MLIR and xDSL:

* MLIR's syntax, `builtin.module(p1{opt=1 flag=true s="text"},func.func(p2),p3)`: a
  pass inside `OP(...)` runs on every `OP` directly nested in the enclosing op (each
  `func.func` of the module on its own; `any(...)` matches every nested op);
* xDSL's short form, `p1{opt=1},p2` (what `nnx-opt -p` takes);
* mlir-opt's pass flags, `-canonicalize -graph-fold-constants=max-elements=8`
  (`split_pass_flags` turns them into pipeline elements).

Pass names resolve through `nnx.plugins.all_passes()`: the built-in passes
(passes/registry.py) plus pass plugins. Option values are checked against the
pass class's dataclass fields; every mistake is a `PipelineError` (a `UserError`),
one line that names the valid passes or options. An int given to a float option is
accepted.

`Pipeline.run` applies the passes; `RunOptions` selects MLIR's instrumentation:
verification after every pass, IR dumps before/after every pass
(`--mlir-print-ir-before-all`/`--mlir-print-ir-after-all`, with or without
`--mlir-print-debuginfo`), and `--time-passes`. A pass that rejects its input
(`PassError`, `UserError`, xDSL's `DiagnosticException`) or leaves IR that does not
verify ends the run with a `PassFailure` carrying the located `Diagnostic`; any other
exception is a bug in the pass and propagates unchanged (with a note naming the pass),
for the tool's internal-error path (nnx/cli.py).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import NoneType, UnionType
from typing import IO, Any, Union, get_args, get_origin, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

from nnx import ir_io
from nnx.diagnostics import Diagnostic, PassError, diagnostic_at, strip_op_prefix

PassFactories = dict[str, Callable[[], type[ModulePass]]]


class PipelineError(ir_io.UserError):
    """A malformed pipeline, an unknown pass or option, a bad option value."""


class PassFailure(ir_io.UserError):
    """A pass rejected its input, or the IR did not verify: `diagnostic` says where."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(diagnostic.format())
        self.diagnostic = diagnostic


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------


@dataclass
class PassNode:
    """One pass of a pipeline: its name, the option text between the braces ('' if
    none), the column it starts at, and (once instantiated) the pass object."""

    name: str
    options: str
    column: int = 0
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
        return PipelineError(f"{self.what}: {msg} at column {col} of '{self.text}'")

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
    """Parse MLIR (`builtin.module(a{x=1},func.func(b))`) or xDSL (`a{x=1},b`) syntax.

    `what` names where the text came from (`--pass-pipeline`, `-p`) in errors."""
    return _PipelineParser(text, what).parse()


def pipeline_to_text(nodes: PipelineNodes) -> str:
    """The MLIR form `builtin.module(...)` of a pipeline."""

    def one(n: PassNode | AnchorNode) -> str:
        if isinstance(n, PassNode):
            return n.name + (f"{{{n.options}}}" if n.options.strip() else "")
        return f"{n.anchor}(" + ",".join(one(c) for c in n.children) + ")"

    return "builtin.module(" + ",".join(one(n) for n in nodes) + ")"


def iter_passes(nodes: PipelineNodes) -> Iterator[PassNode]:
    """Every pass of a pipeline, nested anchors included, in order."""
    for n in nodes:
        if isinstance(n, PassNode):
            yield n
        else:
            yield from iter_passes(n.children)


def split_pass_flags(
    argv: Sequence[str], tool_options: set[str], pass_names: set[str]
) -> tuple[list[str], list[str]]:
    """mlir-opt's command-line spellings: (argv for argparse, pipeline elements).

    `-split-input-file` becomes `--split-input-file` when `split-input-file` is one
    of `tool_options` (long option names without dashes); `--canonicalize` and
    `-graph-fold-constants=max-elements=8` (a pass name that is not a tool option)
    become pipeline elements `canonicalize`, `graph-fold-constants{max-elements=8}`.
    Everything after `--` is left alone.
    """
    out: list[str] = []
    pass_flags: list[str] = []
    for i, a in enumerate(argv):
        if a == "--":
            out.extend(argv[i:])
            break
        if a.startswith("-") and len(a) > 2:
            body = a[2:] if a.startswith("--") else a[1:]
            name, eq, value = body.partition("=")
            if name in tool_options and not a.startswith("--"):
                out.append("--" + body)
                continue
            if name in pass_names and name not in tool_options:
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                    value = value[1:-1]
                pass_flags.append(f"{name}{{{value}}}" if eq and value else name)
                continue
        out.append(a)
    return out, pass_flags


# --------------------------------------------------------------------------------------
# Pass options
# --------------------------------------------------------------------------------------


def pass_options(cls: type[ModulePass]) -> list[tuple[str, str, Any]]:
    """(kebab-name, type text, default or dataclasses.MISSING) of each option."""
    if not dataclasses.is_dataclass(cls):
        return []
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


def describe_options(cls: type[ModulePass]) -> str:
    """`valid options: a=<int> (default 1), ...` or `it takes no options`."""
    opts = pass_options(cls)
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


def _available(passes: PassFactories | None) -> PassFactories:
    if passes is not None:
        return passes
    from nnx.plugins import all_passes

    return all_passes()


def instantiate_pass(
    node: PassNode, passes: PassFactories | None = None, what: str = "pass pipeline"
) -> ModulePass:
    """The pass object for one pipeline element, with one-line errors for mistakes."""
    from xdsl.utils.arg_spec import ArgSpec, _convert_arg_to_type, parse_spec

    available = _available(passes)
    factory = available.get(node.name)
    if factory is None:
        raise PipelineError(
            f"{what}: unknown pass '{node.name}'; valid passes: " + ", ".join(sorted(available))
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
            f"{what}: cannot parse the options of pass '{node.name}' "
            f"('{{{node.options}}}'): {msg}"
        ) from None
    known = {n for n, _, _ in pass_options(cls)}
    hints = get_type_hints(cls) if dataclasses.is_dataclass(cls) else {}
    params: dict[str, tuple[Any, ...]] = {}
    for key, values in spec.parameters.items():
        kebab = key.replace("_", "-")
        if kebab not in known:
            raise PipelineError(
                f"{what}: pass '{node.name}' has no option '{key}'; " + describe_options(cls)
            )
        hint = hints.get(kebab.replace("-", "_"))
        if _allows(hint, float) and not _allows(hint, int):
            values = tuple(
                float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                for v in values
            )
        try:
            _convert_arg_to_type(values, hint)
        except (ValueError, TypeError):
            given = ",".join(str(v).lower() if isinstance(v, bool) else str(v) for v in values)
            raise PipelineError(
                f"{what}: option '{kebab}' of pass '{node.name}' "
                f"expects {_type_text(hint)}, got '{given}'"
            ) from None
        params[kebab] = values
    try:
        return cls.from_spec(ArgSpec(node.name, params))
    except (ValueError, TypeError) as e:
        raise PipelineError(
            f"{what}: pass '{node.name}': {e}; " + describe_options(cls)
        ) from None


def instantiate_pipeline(
    nodes: PipelineNodes, passes: PassFactories | None = None, what: str = "pass pipeline"
) -> PipelineNodes:
    """Instantiate every pass of `nodes` (in place); returns `nodes`."""
    available = _available(passes)
    for node in iter_passes(nodes):
        node.instance = instantiate_pass(node, available, what)
    return nodes


# --------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunOptions:
    """Instrumentation of a pipeline run (mlir-opt's flags of the same names)."""

    verify_each: bool = True
    """verify the IR after every pass (a failure names the pass)"""
    print_ir_before_all: bool = False
    print_ir_after_all: bool = False
    print_debuginfo: bool = False
    print_generic: bool = False
    print_properties_as_attributes: bool = False
    time_passes: bool = False
    """print `PASS: SECONDS s` per pass run"""
    stream: IO[str] | None = None
    """where dumps and timings go (None: stderr)"""


class Pipeline:
    """A parsed, instantiated pass pipeline."""

    def __init__(self, nodes: PipelineNodes):
        self.nodes = nodes

    @classmethod
    def parse(
        cls, text: str, what: str = "pass pipeline", passes: PassFactories | None = None
    ) -> Pipeline:
        """Parse `text` (any of the three syntaxes) and instantiate its passes."""
        return cls(instantiate_pipeline(parse_pipeline_text(text, what), passes, what))

    def text(self) -> str:
        return pipeline_to_text(self.nodes)

    def pass_names(self) -> list[str]:
        return [n.name for n in iter_passes(self.nodes)]

    def run(
        self,
        module: Operation,
        ctx: Context | None = None,
        *,
        filename: str | None = None,
        options: RunOptions = RunOptions(),
    ) -> None:
        """Apply the pipeline to `module` in place.

        Raises `PassFailure` when a pass rejects the IR or leaves it invalid;
        `filename` is the location of diagnostics without a position of their own.
        """
        _Runner(ctx or ir_io.make_context(), filename, options).run_nodes(self.nodes, module)


class _Runner:
    def __init__(self, ctx: Context, filename: str | None, options: RunOptions):
        self.ctx = ctx
        self.filename = filename
        self.opts = options

    def run_nodes(self, nodes: PipelineNodes, target: Operation) -> None:
        for node in nodes:
            if isinstance(node, PassNode):
                self.run_pass(node, target)
                continue
            for child in list(_direct_children(target)):
                if node.anchor == "any" or child.name == node.anchor:
                    self.run_nodes(node.children, child)

    def run_pass(self, node: PassNode, target: Operation) -> None:
        p = node.instance
        if p is None:
            raise ValueError(f"pass '{node.name}' was not instantiated")
        if self.opts.print_ir_before_all:
            self._dump("Before", node.name, target)
        start = time.perf_counter()
        try:
            apply_anchored(p, self.ctx, target)
        except PassError as e:
            raise PassFailure(
                diagnostic_at(e.op, "error", pass_error_text(e), self.filename)
            ) from None
        except PipelineError:
            raise
        except ir_io.UserError as e:
            raise PassFailure(
                Diagnostic("error", f"pass '{node.name}': {e}", self.filename)
            ) from None
        except DiagnosticException as e:
            msg = (str(e).strip() or type(e).__name__).splitlines()[0]
            raise PassFailure(
                Diagnostic("error", f"pass '{node.name}' failed: {msg}", self.filename)
            ) from None
        except Exception as e:
            e.add_note(f"in pass '{node.name}'")
            raise
        if self.opts.time_passes:
            print(f"{node.name}: {time.perf_counter() - start:.6f} s", file=self._stream())
        if self.opts.verify_each:
            verify(target, self.filename, after=node.name)
        if self.opts.print_ir_after_all:
            self._dump("After", node.name, target)

    def _stream(self) -> IO[str]:
        return self.opts.stream or sys.stderr

    def _dump(self, when: str, name: str, target: Operation) -> None:
        scope = ""
        if not isinstance(target, ModuleOp) or target.parent_op() is not None:
            sym = target.attributes.get("sym_name") or target.properties.get("sym_name")
            sym_text = f": @{sym.data}" if sym is not None and hasattr(sym, "data") else ""
            scope = f" ('{target.name}' operation{sym_text})"
        text = ir_io.module_to_text(
            target,
            generic=self.opts.print_generic,
            debuginfo=self.opts.print_debuginfo,
            properties_as_attributes=self.opts.print_properties_as_attributes,
        )
        out = self._stream()
        out.write(f"// -----// IR Dump {when} {name}{scope} //----- //\n{text}\n")
        out.flush()


def pass_error_text(e: PassError) -> str:
    """The message of a PassError, prefixed `'op.name' op` when it names an op."""
    if e.op is None:
        return e.message
    return f"'{e.op.name}' op {strip_op_prefix(e.op, e.message)}"


def _direct_children(op: Operation) -> Iterator[Operation]:
    for region in op.regions:
        for block in region.blocks:
            yield from block.ops


def apply_anchored(p: ModulePass, ctx: Context, target: Operation) -> None:
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


# --------------------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------------------


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


def verify(root: Operation, filename: str | None = None, after: str | None = None) -> None:
    """Raise `PassFailure` at the first op that does not verify (`after`: the pass
    that produced the IR, named in the message)."""
    failure = first_verify_failure(root)
    if failure is None:
        return
    bad, message = failure
    message = f"'{bad.name}' op {message}"
    if after is not None:
        message += f" (after pass '{after}')"
    raise PassFailure(diagnostic_at(bad, "error", message, filename))
