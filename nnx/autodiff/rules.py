"""The registry of backward rules, keyed by ONNX operator type (like the interpreter's
`@kernel`, nnx/interp/kernels.py).

A rule is `fn(em, op, dys, wanted) -> grads`:

* `em` the Emitter (nnx/autodiff/emitter.py) that builds the backward ops;
* `op` the forward graph op;
* `dys` one entry per ONNX output of `op`: the gradient of the loss with respect to
  that output, or None when no gradient flows into it;
* `wanted` one bool per ONNX input: whether its gradient is needed (the input is a
  float that depends on a parameter, and the rule declares it differentiable);
* returns one entry per ONNX input: its gradient (same type as the input) or None.

`@backward("Relu", inputs=(0,))` registers a rule; `inputs` lists the differentiable
inputs (None: every input). Gradients are never asked of the others: shapes, axes,
indices, conditions, BatchNormalization's running statistics.

The rules live in family modules that register into `RULES`: rules_elementwise,
rules_nn, rules_tensor, rules_reduce.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

RuleFn = Callable[..., "list[SSAValue | None]"]


@dataclass(frozen=True)
class Rule:
    """A backward rule and the indices of the ONNX inputs it differentiates."""

    fn: RuleFn
    inputs: tuple[int, ...] | None

    def differentiable(self, index: int) -> bool:
        return self.inputs is None or index in self.inputs


RULES: dict[str, Rule] = {}


def backward(*onnx_types: str, inputs: Sequence[int] | None = None) -> Callable[[RuleFn], RuleFn]:
    """Register `fn` as the backward rule of `onnx_types`."""

    def register(fn: RuleFn) -> RuleFn:
        for t in onnx_types:
            RULES[t] = Rule(fn, None if inputs is None else tuple(inputs))
        return fn

    return register


def rule_for(onnx_type: str) -> Rule | None:
    """The rule of an operator type, or None."""
    return RULES.get(onnx_type)


# Register the families (they import the decorator above).
from nnx.autodiff import (  # noqa: E402,F401
    rules_elementwise,
    rules_nn,
    rules_reduce,
    rules_tensor,
)
