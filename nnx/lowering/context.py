"""What the per-op lowering functions share: the options, and the three objects that
hold the lowering's state (storage buffers, cache residency, instruction stream).

The functions of fusion.py, group_chain.py, data_movement.py, compute.py and
sparse_weights.py take a `LoweringContext` as their first parameter and reach the
state through its parts: `cx.store` (nnx/lowering/storage.py: where each value is in
storage), `cx.residency` (nnx/lowering/residency.py: which results stay in a cache,
and where each value is now), `cx.stream` (nnx/lowering/stream.py: the emitted
instructions and their accesses). The rest is the per-function bookkeeping of the
matches around an op (`fused`, `epi_views`) and the rotation of working-set regions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nnx.lowering.residency import Residency
from nnx.lowering.storage import StorageAllocator
from nnx.lowering.stream import InstructionStream


@dataclass
class LoweringContext:
    """The options of one lowering and its state objects (see the module docstring)."""

    target: Any
    double_buffer: bool
    max_tile: int
    chain: bool
    schedule: bool
    store: StorageAllocator
    residency: Residency
    stream: InstructionStream
    # graph values returned by the function (never fused away, stored row-major)
    returned: set = field(default_factory=set)
    # ops lowered as part of another op (epilogues, grouped chains): skipped
    fused: set = field(default_factory=set)
    # epilogue operands read through a view of the op's output (bias_gemm)
    epi_views: dict = field(default_factory=dict)
    # Transpose ops lowered as strided views (fusion.transpose_view)
    views: set = field(default_factory=set)
    # concats whose result's buffer holds some operands in place (in_place_concats)
    # -> those operands (the others are copied in)
    in_place: dict = field(default_factory=dict)
    # op -> (instructions emitted before it, after it): where each op stands
    op_at: dict = field(default_factory=dict)
    # results of those concats that are not complete yet: some operand is copied in
    # when the concat is lowered (no epilogue may read them before)
    unfilled: set = field(default_factory=set)
    # consecutive ops rotate their working sets over parts of the caches
    rotation: int = 0

    @staticmethod
    def create(target, double_buffer: bool, max_tile: int, chain: bool, schedule: bool) -> "LoweringContext":
        store = StorageAllocator()
        stream = InstructionStream(target)
        residency = Residency(target, store, stream, chain=chain, next_fit=schedule)
        return LoweringContext(target, double_buffer, max_tile, chain, schedule, store, residency, stream)
