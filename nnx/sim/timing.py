"""The simulator's timing of a program without its values (`replay`).

`nnx.sim.simulator.Simulator` executes every instruction on numpy data; its cycles
are those of in-order unit queues: an instruction starts once its unit has finished
the previous one of its queue and it has been fetched (`InstructionCache.fetch_ready`),
a WAIT also waits for the oldest unconsumed SIGNAL of its token, and an instruction
lasts `Target.instr_cycles` (through `nnx.schedule.estimate_cycles`). `replay` runs
exactly that timing over the `Instr` list, in milliseconds instead of seconds, and
gives the same total and busy cycles (tested against the simulator on dense
programs). For sparse programs (packed MPU tiles) the MACs of a packed instruction
are estimated from the packed weights' share of the dense tile, where the simulator
counts the surviving pairs exactly: the replay is then an estimate.

Used by `lower-to-chip` (schedule=true keeps the faster of the scheduled and the
emitted program) and by `topo-reorder` (the `simulate` cost).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from nnx.sim.isa import Instr
from nnx.target import Target


@dataclass(frozen=True)
class Replay:
    """Timing of a replayed program: total cycles, per-unit busy cycles, the busy
    intervals (unit, start, end, instruction index) and, when recorded, the idle
    cycles of each unit by cause: `waits[(unit, on, kind)]` = cycles `unit` stood
    idle before an instruction of `kind` waiting for a SIGNAL of unit `on` (or for
    `on` = "fetch", the instruction stream)."""

    cycles: int
    busy: dict[str, int]
    intervals: tuple[tuple[str, int, int, int], ...]
    waits: dict[tuple[str, str, str], int] = field(default_factory=dict)


def replay(instrs: Sequence[Instr], target: Target, record: bool = False) -> Replay:
    """The simulator's timing of `instrs` without computing values: every unit runs
    its queue in order; an instruction starts once its unit is free and it has been
    fetched; a WAIT also waits for the oldest unconsumed SIGNAL of its token."""
    from nnx.schedule import estimate_cycles
    from nnx.sim.units import InstructionCache

    fetch = InstructionCache(target).fetch_ready(len(instrs))
    units = target.unit_names()
    queues: dict[str, list[int]] = {u: [] for u in units}
    for i, ins in enumerate(instrs):
        queues.setdefault(ins.unit, []).append(i)
    ptr = dict.fromkeys(queues, 0)
    clock = dict.fromkeys(queues, 0)
    busy = dict.fromkeys(queues, 0)
    tokens: dict[str, deque[tuple[int, str]]] = {}
    intervals: list[tuple[str, int, int, int]] = []
    waits: dict[tuple[str, str, str], int] = {}

    def next_kind(q: list[int], p: int) -> str:
        while p < len(q) and instrs[q[p]].mnemonic in ("WAIT", "SIGNAL"):
            p += 1
        return instrs[q[p]].mnemonic if p < len(q) else "end"

    progress = True
    while progress:
        progress = False
        for u, q in queues.items():
            p, t = ptr[u], clock[u]
            start_p = p
            while p < len(q):
                i = q[p]
                ins = instrs[i]
                f = int(fetch[i])
                if record and f > t:
                    key = (u, "fetch", next_kind(q, p))
                    waits[key] = waits.get(key, 0) + f - t
                if ins.mnemonic == "WAIT":
                    dq = tokens.get(ins.token or "")
                    if not dq:
                        break
                    sig, by = dq.popleft()
                    if record and sig > max(t, f):
                        key = (u, by, next_kind(q, p))
                        waits[key] = waits.get(key, 0) + sig - max(t, f)
                    t = max(t, f, sig)
                elif ins.mnemonic == "SIGNAL":
                    t = max(t, f)
                    tokens.setdefault(ins.token or "", deque()).append((t, u))
                else:
                    s = max(t, f)
                    c = estimate_cycles(target, ins)
                    t = s + c
                    busy[u] += c
                    if record:
                        intervals.append((u, s, t, i))
                p += 1
            if p != start_p:
                progress = True
            ptr[u], clock[u] = p, t
    stuck = [u for u, q in queues.items() if ptr[u] < len(q)]
    if stuck:
        raise RuntimeError(f"replay: deadlock on {', '.join(stuck)}")
    end = int(fetch[-1]) if len(instrs) else 0
    return Replay(max([end, *clock.values()]), busy, tuple(intervals), waits)
