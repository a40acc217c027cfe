"""The reference interpreter of the graph dialect: runs a `func.func` on numpy arrays.

The block order is the schedule, so the interpreter walks the ops in order. Each
graph op calls its kernel (nnx/interp/kernels.py) with its ONNX inputs and
attributes; `after` operands are control edges only and are ignored;
`graph.constant` yields its value; `graph.subgraph` runs its body with the block
arguments bound to its inputs; `func.return` gives the results. Every value is
dropped right after its last use (positions precomputed), so peak memory stays near
the live set of the schedule. Every result is checked against the op's result type:
a kernel that disagrees is reported as one line naming the op and its location.

Inputs are matched to function arguments by the `nnx.name` argument attribute (the
importer keeps the ONNX input names that way) or by the positional name `argN`;
results are named by the `nnx.name` result attribute, else `outN`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue

from nnx.dialects.graph import ConstantOp, GraphOp, SubgraphOp, YieldOp
from nnx.interp.kernels import KERNELS, NUM_OUTPUTS_ATTR, KernelError
from nnx.interp.sparse_impls import SPARSE_IMPLS, sparse_kernel, sparse_operands
from nnx.types import UnsupportedTypeError, is_narrow, numpy_dtype_of


class InterpError(Exception):
    """A failure while interpreting (bad inputs, a kernel error): one line of text."""


def location_text(op: Operation) -> str:
    """A short text of the op's location ('' when unknown)."""
    from xdsl.dialects.builtin import FileLineColLoc, NameLoc, UnknownLoc

    loc = getattr(op, "location", None)
    if loc is None or isinstance(loc, UnknownLoc):
        return ""
    try:
        if isinstance(loc, FileLineColLoc):
            return f"{_plain(loc.filename)}:{_plain(loc.line)}:{_plain(loc.column)}"
        if isinstance(loc, NameLoc):
            return f'"{_plain(loc.name)}"'
    except AttributeError:
        pass
    try:
        from io import StringIO

        from xdsl.printer import Printer

        s = StringIO()
        Printer(stream=s).print_attribute(loc)
        return s.getvalue()
    except Exception:  # noqa: BLE001
        return ""


def _plain(v: Any) -> Any:
    """The Python value inside an attribute (StringAttr, IntAttr, IntegerAttr...)."""
    for _ in range(3):
        if isinstance(v, (str, int, float)):
            return v
        v = getattr(v, "value", None) if hasattr(v, "value") else getattr(v, "data", v)
    return v


def describe(op: Operation) -> str:
    loc = location_text(op)
    return f"{op.name} at {loc}" if loc else op.name


def _expected(t: Any) -> tuple[tuple[int, ...], np.dtype] | None:
    if not isinstance(t, TensorType):
        return None
    try:
        return tuple(t.get_shape()), numpy_dtype_of(t.element_type)
    except UnsupportedTypeError:
        return None


# ---- compiled form of a block ---------------------------------------------------------


@dataclass
class _Step:
    op: Operation
    kind: str  # "kernel", "const", "subgraph", "return"
    fn: Any = None
    attrs: dict[str, Any] = field(default_factory=dict)
    inputs: list[SSAValue | None] = field(default_factory=list)
    outputs: list[SSAValue] = field(default_factory=list)
    expected: list[Any] = field(default_factory=list)
    free: list[SSAValue] = field(default_factory=list)
    sub: _Plan | None = None


@dataclass
class _Plan:
    args: list[SSAValue]
    steps: list[_Step]
    free_at_start: list[SSAValue]


def _plan(block: Block) -> _Plan:
    """Compile a block (built afresh per run: passes mutate blocks in place)."""
    steps: list[_Step] = []
    for op in block.ops:
        if isinstance(op, ConstantOp):
            st = _Step(op, "const", outputs=[op.output])
        elif isinstance(op, GraphOp):
            fn = KERNELS.get(op.ONNX_TYPE)
            if fn is None:
                raise InterpError(f"{describe(op)}: no kernel for ONNX operator {op.ONNX_TYPE}")
            attrs = op.onnx_attributes()
            attrs[NUM_OUTPUTS_ATTR] = len(op.results)
            st = _Step(op, "kernel", fn=fn, attrs=attrs, inputs=op.onnx_inputs(), outputs=list(op.results))
        elif op.name in SPARSE_IMPLS:
            st = _Step(op, "kernel", fn=sparse_kernel(op), attrs={},
                       inputs=list(sparse_operands(op)), outputs=list(op.results))
        elif isinstance(op, SubgraphOp):
            st = _Step(op, "subgraph", inputs=list(op.inputs), outputs=list(op.results))
            st.sub = _plan(op.body.block)
        elif isinstance(op, (ReturnOp, YieldOp)):
            st = _Step(op, "return", inputs=list(op.operands))
        else:
            raise InterpError(f"{describe(op)}: the interpreter cannot run this op")
        st.expected = [_expected(v.type) for v in st.outputs]
        steps.append(st)
    # last use of each value within this block
    last: dict[SSAValue, int] = {}
    for i, st in enumerate(steps):
        for v in st.inputs:
            if v is not None:
                last[v] = i
    defined_here = set(block.args)
    for st in steps:
        defined_here.update(st.outputs)
    free_at_start: list[SSAValue] = []
    for v in defined_here:
        if v not in last:
            # never used: drop right after definition
            owner = v.owner
            if isinstance(owner, Block):
                free_at_start.append(v)
            else:
                idx = next(i for i, st in enumerate(steps) if st.op is owner)
                steps[idx].free.append(v)
        elif v in last:
            steps[last[v]].free.append(v)
    return _Plan(list(block.args), steps, free_at_start)


def _run_plan(plan: _Plan, args: Sequence[np.ndarray],
              constants: Mapping[Operation, np.ndarray] | None = None) -> list[np.ndarray]:
    env: dict[SSAValue, np.ndarray] = dict(zip(plan.args, args))
    for v in plan.free_at_start:
        env.pop(v, None)
    for st in plan.steps:
        op = st.op
        if st.kind == "kernel":
            ins = [None if v is None else env[v] for v in st.inputs]
            try:
                with np.errstate(all="ignore"):
                    outs = st.fn(ins, st.attrs)
            except KernelError as e:
                raise InterpError(f"{describe(op)}: {e}") from None
            except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError) as e:
                raise InterpError(f"{describe(op)}: kernel failed: {e}".splitlines()[0]) from None
        elif st.kind == "const":
            given = constants.get(op) if constants else None
            outs = [op.numpy_value() if given is None else given]
        elif st.kind == "subgraph":
            outs = _run_plan(st.sub, [env[v] for v in st.inputs], constants)
        else:  # return / yield
            return [env[v] for v in st.inputs]
        if len(outs) < len(st.outputs):
            raise InterpError(
                f"{describe(op)}: kernel gave {len(outs)} results, op has {len(st.outputs)}"
            )
        for i, (v, a, exp) in enumerate(zip(st.outputs, outs, st.expected)):
            if not isinstance(a, np.ndarray):
                a = np.asarray(a)
            if exp is not None:
                shape, dt = exp
                if a.shape != shape or a.dtype != dt:
                    raise InterpError(
                        f"{describe(op)}: result #{i} is {_fmt(a.shape, a.dtype)} but the op "
                        f"declares {_fmt(shape, dt)}"
                    )
            env[v] = a
        for v in st.free:
            env.pop(v, None)
    raise InterpError("block has no terminator")


def _fmt(shape, dtype) -> str:
    return "tensor<" + "x".join([str(d) for d in shape] + [str(np.dtype(dtype))]) + ">"


# ---- functions ------------------------------------------------------------------------


def find_function(module: ModuleOp, name: str | None = None) -> FuncOp:
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if not funcs:
        raise InterpError("the module has no func.func")
    if name is None:
        for f in funcs:
            if f.sym_name.data == "main":
                return f
        if len(funcs) == 1:
            return funcs[0]
        raise InterpError(
            "the module has several functions and no @main: name one ("
            + ", ".join("@" + f.sym_name.data for f in funcs)
            + ")"
        )
    for f in funcs:
        if f.sym_name.data == name:
            return f
    raise InterpError(f"no function @{name} in the module")


def _name_attr(attrs: Any, i: int) -> str | None:
    if attrs is None:
        return None
    try:
        d = attrs.data[i].data
    except (AttributeError, IndexError):
        return None
    v = d.get("nnx.name")
    return v.data if isinstance(v, StringAttr) else None


def input_names(func: FuncOp) -> list[str]:
    """The name of each argument: its `nnx.name` attribute, else `argN`."""
    return [_name_attr(func.arg_attrs, i) or f"arg{i}" for i in range(len(func.body.block.args))]


def output_names(func: FuncOp) -> list[str]:
    """The name of each result: its `nnx.name` attribute, else `outN`."""
    n = len(func.function_type.outputs.data)
    return [_name_attr(func.res_attrs, i) or f"out{i}" for i in range(n)]


def input_specs(func: FuncOp) -> list[tuple[str, tuple[int, ...], np.dtype | None]]:
    out = []
    for name, a in zip(input_names(func), func.body.block.args):
        exp = _expected(a.type)
        out.append((name, exp[0] if exp else (), exp[1] if exp else None))
    return out


def bind_inputs(
    func: FuncOp, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Arguments in order from named (or positional) inputs; InterpError on mismatch."""
    specs = input_specs(func)
    names = [s[0] for s in specs]
    if isinstance(inputs, Mapping):
        by_name: dict[str, np.ndarray] = {}
        for k, v in inputs.items():
            if k in names:
                by_name[k] = v
            elif k.startswith("arg") and k[3:].isdigit() and int(k[3:]) < len(names):
                by_name[names[int(k[3:])]] = v
            else:
                raise InterpError(
                    f"unknown input '{k}'; the function takes: " + ", ".join(names)
                )
        missing = [n for n in names if n not in by_name]
        if missing:
            raise InterpError("missing input(s): " + ", ".join(missing))
        values = [by_name[n] for n in names]
    else:
        values = list(inputs)
        if len(values) != len(names):
            raise InterpError(f"{len(values)} inputs given, the function takes {len(names)}")
    out = []
    for (name, shape, dt), v in zip(specs, values):
        v = np.asarray(v)
        if dt is not None and v.dtype != dt and _raw_bits_of(v, dt):
            # .npy files keep ml_dtypes arrays (bfloat16, float8, int4...) as raw
            # void bytes ('<V2', '<V1'): read them as the declared type
            v = v.view(dt)
        if dt is not None and v.dtype != dt:
            raise InterpError(
                f"input '{name}': element type {v.dtype}, expected {np.dtype(dt)}"
            )
        if tuple(v.shape) != tuple(shape):
            raise InterpError(
                f"input '{name}': shape {list(v.shape)}, expected {list(shape)}"
            )
        out.append(v)
    return out


def _raw_bits_of(v: np.ndarray, dt: np.dtype) -> bool:
    """v is an unstructured void array with the itemsize of the narrow type dt."""
    return (
        v.dtype.type is np.void and v.dtype.fields is None and is_narrow(dt)
        and v.dtype.itemsize == np.dtype(dt).itemsize
    )


def run_function(
    func: FuncOp, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    constants: Mapping[Operation, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Run `func` and return its results by name (in result order). `constants`
    gives values for some `graph.constant` ops (by op) in place of their attributes:
    how nnx-train feeds the parameters a step updated into the next step."""
    args = bind_inputs(func, inputs)
    plan = _plan(func.body.block)
    results = _run_plan(plan, args, constants)
    names = output_names(func)
    out: dict[str, np.ndarray] = {}
    for i, (n, r) in enumerate(zip(names, results)):
        if n in out:
            n = f"{n}#{i}"
        out[n] = r
    return out


def run_module(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    function: str | None = None,
) -> dict[str, np.ndarray]:
    """Run the module's `@main` (or the named function)."""
    return run_function(find_function(module, function), inputs)
