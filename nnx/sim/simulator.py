"""The reference simulator: the device of seed 004 running an assembled program.

Functional model: every instruction is decoded once (units.py) into a micro-instruction
bound to numpy views of the storage unit and caches (memory.py); executing it is one
vectorised numpy call on a tile.

Timing model (seed 000's cost model made executable): every unit (DAU<i>, MPU<i>,
VPU<i>, MAP<i>) has its own in-order queue and clock. An instruction starts when its
unit is free, it has been fetched (instruction cache, fetch bandwidth), and -- for
WAIT -- when a matching SIGNAL has been issued; it then takes the cycles of its unit
(DMA: latency + bytes / bandwidth; MPU: MACs / MACs-per-cycle; VPU: elements /
elements-per-cycle; MAP: indices / indices-per-cycle). Units wait only on their
dependencies, so the total is the latest end time, not the sum of busy times.

Tokens are counting semaphores: SIGNAL adds one (at the signalling unit's time), WAIT
takes the oldest one. A program whose remaining units all wait on tokens nobody will
signal is a deadlock and is reported with the line of the blocked WAIT.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

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
from nnx.sim.units import SIGNAL, WAIT, InstructionControlUnit, MicroOp
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
        t = sym.tile
        value = np.asarray(value)
        if tuple(value.shape) != t.shape:
            raise SimError(
                f"input '{name}' has shape {'x'.join(map(str, value.shape)) or 'scalar'}, "
                f"the program expects {'x'.join(map(str, t.shape))}"
            )
        want = DTYPES[t.dtype]
        if value.dtype != want and value.dtype.kind != want.kind:
            raise SimError(f"input '{name}' has element type {value.dtype}, the program expects {t.dtype}")
        self.storage.view(t)[...] = value

    # ---- running ------------------------------------------------------------------------
    def run(self, inputs: dict[str, np.ndarray] | None = None) -> RunResult:
        for k, v in (inputs or {}).items():
            self.set_input(k, v)
        missing = [s.name for s in self.program.inputs if inputs is None or s.name not in inputs]
        if missing and inputs is not None:
            raise SimError(f"missing --input for {', '.join(missing)}")
        units = self.target.unit_names()
        queues: dict[str, list[MicroOp]] = {u: [] for u in units}
        for m in self.mops:
            queues[m.unit].append(m)
        active = [u for u in units if queues[u]]
        ptr = {u: 0 for u in units}
        clock = {u: 0 for u in units}
        busy = {u: 0 for u in units}
        count = {u: 0 for u in units}
        tokens: dict[str, deque[int]] = {}
        bytes_moved = {"load": 0, "store": 0, "move": 0, "gather": 0}
        macs = 0
        dense = 0
        events: list[Event] = []
        log: list[tuple] = []
        rec = self.record_events
        path = self.program.path
        progress = True
        while progress:
            progress = False
            for u in active:
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
                    try:
                        m.run()  # type: ignore[misc]
                    except SimError as e:
                        raise AsmError(path, e.line or m.line, e.msg) from None
                    end = start + m.cycles
                    busy[u] += m.cycles
                    count[u] += 1
                    if m.bytes:
                        bytes_moved[m.name.lower()] += m.bytes
                    if m.dense_macs:
                        macs += m.macs
                        dense += m.dense_macs
                    if rec:
                        events.append(Event(u, m.name, start, end, m.line))
                        log.append((start, end, m.reads, m.writes))
                    t = end
                    p += 1
                if p != start_p:
                    progress = True
                ptr[u] = p
                clock[u] = t
        blocked = [queues[u][ptr[u]] for u in active if ptr[u] < len(queues[u])]
        if blocked:
            first = min(blocked, key=lambda m: m.line)
            others = ", ".join(f"{m.unit} (line {m.line}, token {m.token})" for m in blocked if m is not first)
            msg = f"deadlock: {first.unit} waits for token '{first.token}' that no unit will signal"
            if others:
                msg += f"; also waiting: {others}"
            raise AsmError(path, first.line, msg)
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
