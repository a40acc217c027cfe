"""The lowering's own error: what cannot be lowered and at which op.

The functions of `nnx.lowering` do not know which pass runs them (`chip-lower` alone,
or the composite `lower-to-chip`); they raise `LoweringError(message, op)` and the
pass reports it as a `PassError` under its own name (passes/chip_lower.py)."""

from __future__ import annotations

from typing import Any


class LoweringError(Exception):
    """An op (or its operands) that the chip lowering cannot handle."""

    def __init__(self, message: str, op: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.op = op
