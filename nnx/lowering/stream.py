"""The instruction stream of one lowering: instructions in emitted order with the
accesses each reads and writes, and the round-robin over the target's unit
instances. The accesses become the program's dependencies (nnx/lowering/deps.py)."""

from __future__ import annotations

from nnx.sim.isa import Instr


class InstructionStream:
    """Emitted instructions `(instr, reads, writes)` and the next unit of each type."""

    def __init__(self, target) -> None:
        self.entries: list[tuple[Instr, list, list]] = []
        self.mpu = "MPU0"  # the first instance: an op's first tile (later tiles round-robin)
        self.vpu = "VPU0"
        self.counts = {u: (target.unit(u).count if u != "MAP" else target.mapping.count)
                       for u in ("DAU", "MPU", "VPU", "MAP")}
        self.rr = {u: 0 for u in self.counts}

    def emit(self, ins: Instr, reads: list[tuple], writes: list[tuple]) -> int:
        """Append `ins`; reads/writes: ('N'|'W'|'O', lo, hi[, box]) or ('S', buffer)."""
        self.entries.append((ins, list(reads), list(writes)))
        return len(self.entries) - 1

    def next_unit(self, ut: str) -> str:
        """Round-robin over the target's instances of a unit type."""
        i = self.rr[ut]
        self.rr[ut] = (i + 1) % self.counts[ut]
        return f"{ut}{i}"

    def next_load_unit(self) -> str:
        return self.next_unit("DAU")
