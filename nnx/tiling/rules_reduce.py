"""Tiling rules of ops that reduce over some axes (reductions, arg-reductions,
softmax-like ops, normalisations, global pooling, LRN, CumSum): every axis that is
not reduced is separable; a reduced axis is never split (no accumulation across
tiles), so each tile reads the reduced axes whole."""

from __future__ import annotations

import numpy as np

from nnx.dialects.traits import Reduction
from nnx.tiling.registry import norm_axis, tiling_rule
from nnx.tiling.rule import MappedRule, Rule


@tiling_rule("BatchNormalization")
def batch_norm_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Inference BatchNormalization: every axis, parameters by channel. One tile with
    the training outputs."""
    if len(out_shapes) != 1:
        return Rule(kind, in_shapes, out_shapes, attrs)
    r = len(out_shapes[0])
    maps = [list(range(r))] + [[1] for _ in in_shapes[1:]]
    return MappedRule(kind, in_shapes, out_shapes, attrs, maps, range(r))


@tiling_rule("InstanceNormalization")
def instance_norm_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """N and C (statistics over the spatial axes), scale and bias by channel."""
    r = len(out_shapes[0])
    maps = [[0, 1] + [None] * (r - 2), [1], [1]]
    return MappedRule(kind, in_shapes, out_shapes, attrs, maps, [0, 1])


@tiling_rule("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def global_pool_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """N and C (the spatial axes are reduced)."""
    r = len(out_shapes[0])
    return MappedRule(kind, in_shapes, out_shapes, attrs, [[0, 1] + [None] * (r - 2)], [0, 1])


@tiling_rule("LRN")
def lrn_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Every axis but the channels (the window runs across channels)."""
    r = len(out_shapes[0])
    maps = [[0, None] + list(range(2, r))]
    return MappedRule(kind, in_shapes, out_shapes, attrs, maps, [0] + list(range(2, r)))


def _all_but(kind, in_shapes, out_shapes, attrs, ax: int) -> Rule:
    r = len(out_shapes[0])
    m = [None if i == ax else i for i in range(r)]
    return MappedRule(kind, in_shapes, out_shapes, attrs, [m], [i for i in range(r) if i != ax])


@tiling_rule("Softmax", "LogSoftmax", "Hardmax", "LpNormalization")
def softmax_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Every axis but `axis`."""
    return _all_but(kind, in_shapes, out_shapes, attrs, norm_axis(int(attrs.get("axis", -1)), len(out_shapes[0])))


@tiling_rule("CumSum")
def cumsum_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Every axis but the summed one; one tile when that axis is not a constant."""
    if 1 not in const_inputs:
        return Rule(kind, in_shapes, out_shapes, attrs)
    ax = int(np.asarray(const_inputs[1]).reshape(-1)[0])
    return _all_but(kind, in_shapes, out_shapes, attrs, norm_axis(ax, len(out_shapes[0])))


@tiling_rule("LayerNormalization", "RMSNormalization")
def layer_norm_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """The axes before `axis` (statistics over `axis` and after); one tile when the
    outputs differ in rank."""
    r = len(out_shapes[0])
    if not all(len(s) == r for s in out_shapes):
        return Rule(kind, in_shapes, out_shapes, attrs)
    ax = norm_axis(int(attrs.get("axis", -1)), r)
    m = [i if i < ax else None for i in range(r)]
    return MappedRule(kind, in_shapes, out_shapes, attrs, [m], list(range(ax)))


@tiling_rule("MeanVarianceNormalization")
def mvn_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Every axis not in `axes`."""
    r = len(out_shapes[0])
    red = {norm_axis(a, r) for a in attrs.get("axes", [0, 2, 3])}
    m = [None if i in red else i for i in range(r)]
    return MappedRule(kind, in_shapes, out_shapes, attrs, [m], [i for i in range(r) if i not in red])


@tiling_rule("GroupNormalization")
def group_norm_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """N only."""
    if len(out_shapes) != 1:
        return Rule(kind, in_shapes, out_shapes, attrs)
    r = len(out_shapes[0])
    return MappedRule(kind, in_shapes, out_shapes[:1], attrs, [[0] + [None] * (r - 1)], [0])


@tiling_rule("ArgMax", "ArgMin")
def arg_reduce_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """ArgMax/ArgMin: every axis but `axis`."""
    x = in_shapes[0]
    assert x is not None
    return _kept_axes(kind, in_shapes, out_shapes, attrs, {norm_axis(int(attrs.get("axis", 0)), len(x))})


@tiling_rule(trait=Reduction)
def reduce_rule(kind, in_shapes, out_shapes, attrs, const_inputs) -> Rule:
    """Reduce*: the axes that are kept. One tile when the axes input is not a
    constant."""
    x = in_shapes[0]
    assert x is not None
    xr = len(x)
    if len(in_shapes) > 1 and in_shapes[1] is not None:
        if 1 not in const_inputs:
            return Rule(kind, in_shapes, out_shapes, attrs)
        axes = [int(v) for v in np.asarray(const_inputs[1]).reshape(-1)]
    else:
        axes = [int(v) for v in attrs.get("axes", [])]
    if not axes:
        if int(attrs.get("noop_with_empty_axes", 0)):
            r = len(out_shapes[0])
            return MappedRule(kind, in_shapes, out_shapes, attrs, [list(range(xr))], range(r))
        axes = list(range(xr))
    return _kept_axes(kind, in_shapes, out_shapes, attrs, {norm_axis(a, xr) for a in axes})


def _kept_axes(kind, in_shapes, out_shapes, attrs, red: set[int]) -> Rule:
    """Input axis i follows the output axis it is kept as (keepdims aware); the
    reduced axes `red` are read whole."""
    xr = len(in_shapes[0])
    keep = int(attrs.get("keepdims", 1))
    m: list[int | None] = []
    o = 0
    for i in range(xr):
        if i in red:
            m.append(None)
            if keep:
                o += 1
        else:
            m.append(o)
            o += 1
    sep = [a for a in m if a is not None]
    return MappedRule(kind, in_shapes, out_shapes, attrs, [m], sep)
