"""Tiling for `lower-to-chip`: which output axes of an op can be cut into tiles, which
input window each output tile needs, and how large the tiles are.

An op whose data (inputs, parameters, outputs) exceed the chip's caches is split into
same-kind operations over slices, the split axes chosen by the op kind: conv, fc and
matmul prefer the frame (batch) axis, then the channels; other ops never split an axis
they reduce (docs/architecture.md, "Tiling"). A slice is a *tile* (`Step`): the output
box it computes, the input boxes (windows) it reads from storage, and the attributes
of the tile-local operation (e.g. conv pads at the tile edges).

Modules:

* `boxes`: `Box`, `Step`, `TilingError`, `NoTilingRule`;
* `rule`: the rule classes (`Rule` = the whole op, `MappedRule`, `CopyRule`);
* `registry`: `@tiling_rule(kind | trait=...)` and `rule_for` (an op kind without a
  rule is a `NoTilingRule` error naming it);
* `rules_elementwise`, `rules_reduce`, `rules_nn`, `rules_tensor`: the rules, by
  family (elementwise; reductions and normalisations; Conv/pooling/MatMul/Gemm; data
  movement and the kinds computed as one whole tile);
* `plan`: tile sizes (`plan`, and the cost-based `plan_cost` for MPU ops).

`plan(rule, need, capacity)` starts from the whole output and halves the axis (or the
reduction split) that best reduces the overflowing cache, in the rule's preference
order on ties, until every tile fits; when even the minimal tile does not fit it
raises `TilingError`.
"""

from nnx.tiling import rules_elementwise, rules_nn, rules_reduce, rules_tensor  # noqa: F401  (register)
from nnx.tiling.boxes import Box, NoTilingRule, Range, Step, TilingError, box_shape, full_box
from nnx.tiling.plan import Cost, CostPlan, enumerate_steps, plan, plan_cost
from nnx.tiling.registry import TILING_RULES, rule_for, tiling_rule, whole_op
from nnx.tiling.rule import CopyRule, MappedRule, Rule, broadcast_maps
from nnx.tiling.rules_nn import GemmRule, MatMulRule, SpatialRule

__all__ = [
    "Box", "Cost", "CopyRule", "GemmRule", "MappedRule", "MatMulRule", "NoTilingRule", "Range",
    "Rule", "SpatialRule", "Step", "TILING_RULES", "TilingError", "box_shape", "broadcast_maps",
    "CostPlan", "enumerate_steps", "full_box", "plan", "plan_cost", "rule_for", "tiling_rule", "whole_op",
]

