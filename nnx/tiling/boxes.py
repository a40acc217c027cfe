"""Boxes and steps: the plain data a tiling is made of.

A *box* is a hyper-rectangle of a tensor, `(start, size, step)` per axis; a *step* is
one tile of one op: the input boxes it reads, the output boxes it writes and the
attributes of the tile-local operation (docs/architecture.md, "Tiling").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# (start, size, step) per axis
Box = tuple[tuple[int, int, int], ...]
Range = tuple[int, int]  # [start, stop)


class TilingError(Exception):
    """Even the smallest tile of an op does not fit the caches."""


def full_box(shape: Sequence[int]) -> Box:
    """The box covering a whole tensor of `shape`."""
    return tuple((0, int(d), 1) for d in shape)


def box_shape(box: Box) -> tuple[int, ...]:
    """The shape of the elements a box selects."""
    return tuple(s for _, s, _ in box)


@dataclass
class Step:
    """One tile of one op: the input boxes it loads, the output boxes it writes."""

    inputs: list[Box | None]
    outputs: list[Box]
    attrs: dict[str, Any]
    consts: dict[int, np.ndarray] = field(default_factory=dict)  # per-tile input values
    acc: bool = False  # accumulate into the output tile (reduction chunk > 0)
    last: bool = True  # last reduction chunk of this output tile (store after it)
    drop: tuple[int, ...] = ()  # inputs not passed on this chunk (bias after chunk 0)


class NoTilingRule(ValueError):
    """An op kind that no tiling rule is registered for (`nnx.tiling.rule_for`)."""
