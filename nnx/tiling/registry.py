"""The tiling-rule registry: `@tiling_rule("Conv")` registers the function that builds
the tiling rule of an ONNX op kind, `@tiling_rule(trait=Elementwise)` the rule of every
graph op carrying an nnx trait (dialects/traits.py), the way the interpreter's
`@kernel` registers kernels (nnx/interp/kernels.py).

A rule function takes `(kind, in_shapes, out_shapes, attrs, const_inputs)` (shapes as
tuples, None for an absent optional input; `const_inputs`: input position -> value of
the inputs that are constants) and returns a `Rule`. An op kind without a rule is a
`NoTilingRule` error naming it; kinds that are deliberately computed as one whole
tile register `whole_op` (nnx/tiling/rules_tensor.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnx.tiling.boxes import NoTilingRule
from nnx.tiling.rule import Rule

Shapes = list[tuple[int, ...] | None]
RuleFn = Callable[[str, Shapes, list[tuple[int, ...]], dict[str, Any], dict[int, np.ndarray]], Rule]

TILING_RULES: dict[str, RuleFn] = {}
"""ONNX op kind -> the function building its tiling rule."""

TRAIT_RULES: list[tuple[type, RuleFn]] = []
"""(nnx op trait, rule function) for the kinds without a rule of their own."""


def tiling_rule(*kinds: str, trait: type | None = None) -> Callable[[RuleFn], RuleFn]:
    """Register the decorated function as the tiling rule of `kinds` (and/or of every
    graph op class with `trait`). A kind registered twice is an error."""

    def register(fn: RuleFn) -> RuleFn:
        for k in kinds:
            if k in TILING_RULES:
                raise ValueError(f"tiling rule for {k} registered twice")
            TILING_RULES[k] = fn
        if trait is not None:
            TRAIT_RULES.append((trait, fn))
        return fn

    return register


def whole_op(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """The whole op is one tile (it must fit the caches as it is)."""
    return Rule(kind, in_shapes, out_shapes, attrs)


def norm_axis(axis: int, rank: int) -> int:
    """A possibly negative ONNX axis as an index in [0, rank)."""
    return axis + rank if axis < 0 else axis


def lookup(kind: str) -> RuleFn:
    """The rule function of `kind`: its own, else the one of a trait its graph op class
    carries; `NoTilingRule` when there is none."""
    fn = TILING_RULES.get(kind)
    if fn is not None:
        return fn
    from nnx.dialects.graph import ONNX_OPS

    cls = ONNX_OPS.get(kind)
    if cls is not None:
        for trait, fn in TRAIT_RULES:
            if cls.has_trait(trait):
                return fn
    raise NoTilingRule(f"no tiling rule for ONNX op kind '{kind}' (register one with @tiling_rule in nnx/tiling/)")


def rule_for(
    kind: str,
    in_shapes: Sequence[tuple[int, ...] | None],
    out_shapes: Sequence[tuple[int, ...]],
    attrs: dict[str, Any],
    const_inputs: dict[int, np.ndarray],
) -> Rule:
    """The tiling rule of one op (`const_inputs`: values of its constant inputs).
    Raises `NoTilingRule` for an op kind without a registered rule."""
    fn = lookup(kind)
    ins: Shapes = [None if s is None else tuple(s) for s in in_shapes]
    outs = [tuple(s) for s in out_shapes]
    if not outs:
        return Rule(kind, ins, outs, attrs)
    return fn(kind, ins, outs, attrs, const_inputs)
