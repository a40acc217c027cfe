"""The reference simulator: the device of docs/architecture.md, section 9, running an
assembled program.

Functional model: every instruction is decoded once (units.py) into a micro-instruction
bound to numpy views of the storage unit and caches (memory.py); executing it is one
vectorised numpy call on a tile.

Timing model (the cost model of docs/architecture.md, section 10, made executable):
every unit (DAU<i>, MPU<i>, VPU<i>, MAP<i>) has its own in-order queue and clock. An
instruction starts when its unit is free, it has been fetched (instruction cache, fetch
bandwidth), and -- for WAIT -- when a matching SIGNAL has been issued; it then takes the
cycles of its unit (DMA: latency + bytes / bandwidth; MPU: MACs / MACs-per-cycle; VPU:
elements / elements-per-cycle; MAP: indices / indices-per-cycle). Units wait only on
their dependencies, so the total is the latest end time, not the sum of busy times.

Tokens are counting semaphores: SIGNAL adds one (at the signalling unit's time), WAIT
takes the oldest one. A program whose remaining units all wait on tokens nobody will
signal is a deadlock and is reported with the line of the blocked WAIT.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from nnx.sim.asm import AsmError, Program, crc32_of
from nnx.sim.isa import DTYPES
from nnx.sim.memory import (
    InputNeuronCache,
    Memory,
    OutputCache,
    SimError,
    StorageUnit,
    WeightCache,
)
from nnx.sim.units import EXEC, SIGNAL, WAIT, InstructionControlUnit, MicroOp
from nnx.target import SPACES, Target, load_target


@dataclass
class Event:
    unit: str
    name: str
    start: int
    end: int
    line: int


@dataclass
class RunResult:
    outputs: dict[str, np.ndarray]
    cycles: int
    fetch_cycles: int
    unit_busy: dict[str, int]
    unit_instructions: dict[str, int]
    bytes_moved: dict[str, int]
    macs: int
    macs_skipped: int
    events: list[Event] = field(default_factory=list)
    access_log: list[tuple] = field(default_factory=list)


#: A hook for micro-op kinds beyond EXEC/WAIT/SIGNAL (the mesh's SEND/RECV): called
#: with the op and its start cycle, returns (end cycle, busy cycles), or None while
#: the op cannot run yet (it blocks its unit like an unsatisfied WAIT).
ExtraHook = Callable[[MicroOp, int], "tuple[int, int] | None"]


class UnitEngine:
    """The in-order instruction queues of one core and their clocks (the timing model
    above), reusable by the single-core and the mesh simulators.

    `advance()` lets every unit run ahead until it blocks (a WAIT without a signal, or
    an op the `extra` hook refuses) and reports whether anything ran; `run()` repeats
    it until nothing can. Units start at cycle `start`. With `spans` (a dict unit ->
    list), every unit's busy intervals are appended there as [start, end] pairs,
    back-to-back ones merged (cheap enough to keep when events are not recorded)."""

    def __init__(self, mops: list[MicroOp], units: list[str], path: str, record: bool = True,
                 start: int = 0, extra: ExtraHook | None = None,
                 spans: dict[str, list[list[int]]] | None = None):
        self.units = units
        self.path = path
        self.record = record
        self.extra = extra
        self.queues: dict[str, list[MicroOp]] = {u: [] for u in units}
        for m in mops:
            self.queues[m.unit].append(m)
        self.active = [u for u in units if self.queues[u]]
        self.ptr = {u: 0 for u in units}
        self.clock = {u: start for u in units}
        self.busy = {u: 0 for u in units}
        self.count = {u: 0 for u in units}
        self.tokens: dict[str, deque[int]] = {}
        self.bytes_moved = {"load": 0, "store": 0, "move": 0, "gather": 0}
        self.macs = 0
        self.dense = 0
        self.events: list[Event] = []
        self.log: list[tuple] = []
        self.spans = spans

    def done(self) -> bool:
        return all(self.ptr[u] >= len(self.queues[u]) for u in self.active)

    def run(self) -> None:
        while self.advance():
            pass

    def advance(self) -> bool:
        queues, ptr, clock, busy, count = self.queues, self.ptr, self.clock, self.busy, self.count
        tokens, bytes_moved, events, log = self.tokens, self.bytes_moved, self.events, self.log
        rec, path, extra, spans = self.record, self.path, self.extra, self.spans
        progress = False
        for u in self.active:
            sp = spans.setdefault(u, []) if spans is not None else None
            q = queues[u]
            p = ptr[u]
            n = len(q)
            if p >= n:
                continue
            t = clock[u]
            start_p = p
            while p < n:
                m = q[p]
                k = m.kind
                if k == WAIT:
                    dq = tokens.get(m.token)  # type: ignore[arg-type]
                    if not dq:
                        break
                    s = dq.popleft()
                    t = max(t, m.fetch, s)
                    count[u] += 1
                    p += 1
                    continue
                start = t if t >= m.fetch else m.fetch
                if k == SIGNAL:
                    tokens.setdefault(m.token, deque()).append(start)  # type: ignore[arg-type]
                    t = start
                    count[u] += 1
                    p += 1
                    continue
                if k != EXEC:
                    try:
                        r = extra(m, start)  # type: ignore[misc]
                    except SimError as e:
                        raise AsmError(path, e.line or m.line, e.msg) from None
                    if r is None:
                        break
                    end, b = r
                    busy[u] += b
                    count[u] += 1
                    if sp is not None and end > start:
                        _add_span(sp, end - b, end)
                    if rec:
                        events.append(Event(u, m.name, start, end, m.line))
                        log.append((start, end, m.reads, m.writes))
                    t = end
                    p += 1
                    continue
                try:
                    m.run()  # type: ignore[misc]
                except SimError as e:
                    raise AsmError(path, e.line or m.line, e.msg) from None
                end = start + m.cycles
                busy[u] += m.cycles
                count[u] += 1
                if sp is not None and end > start:
                    _add_span(sp, start, end)
                if m.bytes:
                    bytes_moved[m.name.lower()] += m.bytes
                if m.dense_macs:
                    self.macs += m.macs
                    self.dense += m.dense_macs
                if rec:
                    events.append(Event(u, m.name, start, end, m.line))
                    log.append((start, end, m.reads, m.writes))
                t = end
                p += 1
            if p != start_p:
                progress = True
            ptr[u] = p
            clock[u] = t
        return progress

    def blocked(self) -> list[MicroOp]:
        """The op at the head of every unit that has work left."""
        return [self.queues[u][self.ptr[u]] for u in self.active if self.ptr[u] < len(self.queues[u])]

    def deadlock(self) -> AsmError | None:
        """The deadlock error of a single core whose units are all blocked, else None."""
        blocked = self.blocked()
        if not blocked:
            return None
        first = min(blocked, key=lambda m: m.line)
        others = ", ".join(f"{m.unit} (line {m.line}, token {m.token})" for m in blocked if m is not first)
        msg = f"deadlock: {first.unit} waits for token '{first.token}' that no unit will signal"
        if others:
            msg += f"; also waiting: {others}"
        return AsmError(self.path, first.line, msg)


def _add_span(spans: list[list[int]], start: int, end: int) -> None:
    """Append the busy interval [start, end) to a unit's in-order list, merging it
    with the last one when they touch."""
    if spans and spans[-1][1] >= start:
        if end > spans[-1][1]:
            spans[-1][1] = end
    else:
        spans.append([start, end])


def checked_input(name: str, value: Any, tile: Any) -> np.ndarray:
    """`value` as an array for the input tile `tile`; a shape or element-kind mismatch
    is a SimError naming the input."""
    value = np.asarray(value)
    if tuple(value.shape) != tile.shape:
        raise SimError(
            f"input '{name}' has shape {'x'.join(map(str, value.shape)) or 'scalar'}, "
            f"the program expects {'x'.join(map(str, tile.shape))}"
        )
    want = DTYPES[tile.dtype]
    if value.dtype != want and value.dtype.kind != want.kind:
        raise SimError(f"input '{name}' has element type {value.dtype}, the program expects {tile.dtype}")
    return value


class Simulator:
    """Loads a `Program` into the device of a `Target` and runs it."""

    def __init__(self, program: Program, target: Target | None = None, record_events: bool = True):
        self.program = program
        self.target = target or load_target()
        self.record_events = record_events
        t = self.target
        if program.storage_bytes > t.storage.bytes:
            raise AsmError(
                program.path, 0,
                f".storage {program.storage_bytes} exceeds the target's storage unit ({t.storage.bytes} bytes)",
            )
        self.storage = StorageUnit(program.storage_bytes)
        self.neuron = InputNeuronCache(t.cache("neuron").bytes)
        self.weight = WeightCache(t.cache("weight").bytes)
        self.output = OutputCache(t.cache("output").bytes)
        self.mem: dict[str, Memory] = {
            "S": self.storage, "N": self.neuron, "W": self.weight, "O": self.output,
        }
        self.icu = InstructionControlUnit(t, self.mem)
        try:
            self.mops = self.icu.decode_program(program.instrs)
        except SimError as e:
            raise AsmError(program.path, e.line, e.msg) from None
        self._load_data()

    # ---- loading ----------------------------------------------------------------------
    def _load_data(self) -> None:
        p = self.program
        for seg in p.data:
            path = p.data_path(seg)
            try:
                with open(path, "rb") as f:
                    raw = f.read()
            except OSError as e:
                raise AsmError(p.path, seg.line, f"cannot read data file {seg.file}: {e.strerror}") from None
            if len(raw) != seg.size:
                raise AsmError(p.path, seg.line, f"data file {seg.file} has {len(raw)} bytes, .data says {seg.size}")
            if seg.crc32 is not None and crc32_of(raw) != seg.crc32:
                raise AsmError(p.path, seg.line, f"data file {seg.file} does not match its crc32 (stale or corrupt)")
            self.storage.write_bytes(seg.addr, raw)

    def set_input(self, name: str, value: np.ndarray) -> None:
        sym = next((s for s in self.program.inputs if s.name == name), None)
        if sym is None:
            known = ", ".join(s.name for s in self.program.inputs) or "none"
            raise SimError(f"the program has no input '{name}' (inputs: {known})")
        self.storage.view(sym.tile)[...] = checked_input(name, value, sym.tile)

    # ---- running ------------------------------------------------------------------------
    def run(self, inputs: dict[str, np.ndarray] | None = None) -> RunResult:
        for k, v in (inputs or {}).items():
            self.set_input(k, v)
        missing = [s.name for s in self.program.inputs if inputs is None or s.name not in inputs]
        if missing and inputs is not None:
            raise SimError(f"missing --input for {', '.join(missing)}")
        engine = UnitEngine(self.mops, self.target.unit_names(), self.program.path, self.record_events)
        engine.run()
        err = engine.deadlock()
        if err is not None:
            raise err
        clock, busy, count = engine.clock, engine.busy, engine.count
        bytes_moved, macs, dense = engine.bytes_moved, engine.macs, engine.dense
        events, log = engine.events, engine.log
        units = self.target.unit_names()
        fetch_end = int(self.mops[-1].fetch) if self.mops else 0
        total = max([fetch_end] + [clock[u] for u in units])
        outputs = {s.name: self.storage.view(s.tile).copy() for s in self.program.outputs}
        return RunResult(
            outputs=outputs,
            cycles=int(total),
            fetch_cycles=fetch_end,
            unit_busy=busy,
            unit_instructions=count,
            bytes_moved=bytes_moved,
            macs=int(macs),
            macs_skipped=int(dense - macs),
            events=events,
            access_log=log,
        )


def cache_spaces() -> dict[str, str]:
    return dict(SPACES)


def data_dir(program: Program) -> str:
    return os.path.dirname(os.path.abspath(program.path))
