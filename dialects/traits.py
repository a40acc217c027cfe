"""nnx op traits: what passes ask about an op instead of comparing its ONNX type with
a list of names (`op.has_trait(Elementwise)`).

A trait states a property of the op's *semantics* that a pass relies on; each is
checked against the interpreter kernels in test/python/test_traits.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.traits import OpTrait


@dataclass(frozen=True)
class Elementwise(OpTrait):
    """Result element i depends only on the operand elements at i (after numpy
    broadcasting of the operands to the result shape): the op commutes with slicing,
    so any output tile is the op applied to the matching input tiles."""


@dataclass(frozen=True)
class DataMovement(OpTrait):
    """The op copies elements of its data operands to new positions without arithmetic
    (transpose, concat, split, slice, gather, expand, tile, pad, depth/space, views).
    `data_operands`: the operand positions whose elements are moved (None: all of
    them); the other operands are indices, shapes or parameters."""

    data_operands: tuple[int, ...] | None = (0,)


@dataclass(frozen=True)
class ViewLike(DataMovement):
    """Result 0 is operand 0 unchanged, possibly seen with another shape: the same
    bytes in the same order (reshape, flatten, squeeze, unsqueeze, identity, inference
    dropout). The lowering aliases it to its operand instead of computing it."""


@dataclass(frozen=True)
class Reduction(OpTrait):
    """The op reduces its input over some axes (`axes` input/attribute or `axis`,
    `keepdims`): the axes that are kept can be tiled, the reduced ones only with
    accumulation."""


@dataclass(frozen=True)
class MatrixCompute(OpTrait):
    """A multiply-accumulate op the accelerator's matrix unit (MPU) computes: conv,
    matmul, gemm and their sparse forms."""


@dataclass(frozen=True)
class ShapeQuery(OpTrait):
    """The result depends only on the operand's shape, not on its values (Shape,
    Size)."""
