"""Reverse-mode differentiation of one block of graph ops.

* `parameters(block, pattern)` the trainable constants: `graph.constant`s of a float
  element type and rank >= 1 (exporters write scalar constants such as 1.0, sqrt(d) or
  GELU's coefficients as rank-0 Constant nodes; model parameters have rank >= 1) whose
  name is a parameter name (`is_parameter_name`). Only the ones the loss depends on
  through differentiable operands get a gradient, so a BatchNormalization's running
  statistics (not differentiable in training mode) and constants that only feed
  shapes, masks or indices are not parameters.
* `active_values` the values that depend on a parameter through differentiable
  operands (a rule's `inputs`; every operand of an op without a rule).
* `differentiate` walks the block backwards from the initial (seed) gradients, calls
  each op's rule (nnx/autodiff/rules.py) for the inputs that are active, and sums the
  gradients of a value used several times (one graph.add per extra use).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from xdsl.dialects.builtin import NameLoc, TensorType
from xdsl.dialects.func import ReturnOp
from xdsl.ir import Block, SSAValue

from nnx.autodiff.emitter import EmitError, Emitter, is_float
from nnx.autodiff.rules import rule_for
from nnx.diagnostics import PassError
from nnx.dialects.graph import ConstantOp, GraphOp
from nnx.types import shape_of


def constant_name(op: ConstantOp) -> str | None:
    """The name the importer gave a constant (its ONNX initializer name), if any."""
    loc = op.location
    if isinstance(loc, NameLoc):
        return loc.desc.data
    return None


EXPORTER_PREFIXES = ("/",)
"""Name prefixes of the node outputs the PyTorch exporter generates (such as
`/layer/Sqrt_1_output_0`): a constant so named is a Constant node or a constant the
importer folded (a shape-derived scale), never a parameter, whose name is its
`named_parameters()` key. `onnx::Conv_12`-style names are parameters: an inference
export names the weights it fused with a BatchNormalization so (docs/training.md,
"Parameters")."""


def is_parameter_name(name: str | None, pattern: re.Pattern[str] | None = None) -> bool:
    """Whether a float constant named `name` is a parameter: with `pattern`, when the
    name fully matches it; otherwise when it is unnamed (a hand-written graph) or its
    name does not start with an exporter-generated prefix (EXPORTER_PREFIXES)."""
    if pattern is not None:
        return name is not None and pattern.fullmatch(name) is not None
    return name is None or not name.startswith(EXPORTER_PREFIXES)


def parameters(block: Block, pattern: re.Pattern[str] | None = None) -> list[ConstantOp]:
    """Candidate parameters in block order: float constants of rank >= 1 with a
    parameter name (`is_parameter_name`)."""
    out = []
    for op in block.ops:
        if isinstance(op, ConstantOp) and is_float(op.output):
            t = op.output.type
            if (isinstance(t, TensorType) and len(t.get_shape()) >= 1
                    and is_parameter_name(constant_name(op), pattern)):
                out.append(op)
    return out


def check_flat(block: Block, pass_name: str) -> None:
    """Only graph ops, constants and the return: no subgraphs or foreign ops."""
    for op in block.ops:
        if not isinstance(op, (GraphOp, ConstantOp, ReturnOp)):
            raise PassError(f"{pass_name}: cannot differentiate through {op.name}", op)


def active_values(block: Block, sources: Iterable[SSAValue]) -> set[SSAValue]:
    """Values that depend on `sources` through differentiable operands."""
    active = set(sources)
    for op in block.ops:
        if not isinstance(op, GraphOp):
            continue
        rule = rule_for(op.ONNX_TYPE)
        for i, v in enumerate(op.onnx_inputs()):
            if v is not None and v in active and (rule is None or rule.differentiable(i)):
                active.update(r for r in op.results if is_float(r))
                break
    return active


def differentiate(
    block: Block,
    em: Emitter,
    seeds: dict[SSAValue, SSAValue],
    active: set[SSAValue],
    pass_name: str,
) -> dict[SSAValue, SSAValue]:
    """Gradients of the loss w.r.t. every active value it depends on, given the initial
    (seed) gradients of reverse mode (loss-function outputs -> their gradient)."""
    grads: dict[SSAValue, SSAValue] = dict(seeds)
    forward = [op for op in block.ops if isinstance(op, GraphOp)]
    for op in reversed(forward):
        outs = op.onnx_outputs()
        dys = [None if v is None else grads.get(v) for v in outs]
        if all(d is None for d in dys):
            continue
        ins = op.onnx_inputs()
        rule = rule_for(op.ONNX_TYPE)
        wanted = [
            v is not None and v in active and is_float(v)
            and (rule is None or rule.differentiable(i))
            for i, v in enumerate(ins)
        ]
        if not any(wanted):
            continue
        if rule is None:
            raise PassError(
                f"{pass_name}: no backward rule for {op.name} (ONNX {op.ONNX_TYPE}), "
                "which lies between a parameter and the loss",
                op,
            )
        em.at(op)
        try:
            gins = rule.fn(em, op, dys, wanted)
        except EmitError as e:
            raise PassError(f"{pass_name}: cannot differentiate {op.name}: {e}", op) from None
        for v, w, g in zip(ins, wanted, gins):
            if not w or g is None:
                continue
            if g.type != v.type:
                raise PassError(
                    f"{pass_name}: the backward rule of {op.name} gave a gradient of type "
                    f"{g.type} for an operand of type {v.type}",
                    op,
                )
            prev = grads.get(v)
            grads[v] = g if prev is None else em.add(prev, g)
    em.at(None)
    return grads


def shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(shape_of(v.type))
