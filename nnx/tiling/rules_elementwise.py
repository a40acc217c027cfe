"""Tiling rules of elementwise ops: every output axis is separable and each input
follows the output by broadcasting."""

from __future__ import annotations

from nnx.dialects.traits import Elementwise
from nnx.tiling.registry import tiling_rule
from nnx.tiling.rule import MappedRule, Rule, broadcast_maps


@tiling_rule(trait=Elementwise)
def elementwise_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Every axis; inputs broadcast to the output. One tile when the outputs differ in
    rank."""
    r = len(out_shapes[0])
    if not all(len(s) == r for s in out_shapes):
        return Rule(kind, in_shapes, out_shapes, attrs)
    return MappedRule(kind, in_shapes, out_shapes, attrs, broadcast_maps(in_shapes, r), range(r))


@tiling_rule("Dropout")
def dropout_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Inference Dropout (identity): every axis, the data input follows the output,
    ratio and training_mode are read whole. One tile with the mask output."""
    r = len(out_shapes[0])
    if len(out_shapes) > 1:
        return Rule(kind, in_shapes, out_shapes, attrs)
    maps = broadcast_maps(in_shapes, r)[:1] + [None] * (len(in_shapes) - 1)
    return MappedRule(kind, in_shapes, out_shapes, attrs, maps, range(r))
