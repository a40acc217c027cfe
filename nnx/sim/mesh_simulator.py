"""The multi-core simulator: every core of a mesh program running concurrently
(docs/mesh.md, "Simulator" and "Timing model").

Each core is the single-core device of simulator.py -- its own DAU/MPU/VPU/MAP queues
(a `UnitEngine`), instruction cache, neuron/weight/output caches -- with its core
memory as the asm space `S`. The cores are joined by the network-on-chip of
nnx/sim/noc.py and share the off-chip memory of nnx/sim/offchip.py:

* **Program start.** Every core's weights image (`.data`) and graph inputs
  (`.input`, or only its slice of a sliced input) stream in from the off-chip
  memory, all cores sharing its bandwidth; a core's units (and its instruction
  fetch) start when its own bytes are in.
* **SEND** (a DAU instruction) starts when its unit is free and it has been fetched;
  it reads its tile at that moment, is ready for the network `DAU.latency_cycles`
  later, and occupies its DAU until the last byte has left (route reservation in
  noc.py: hops, link bandwidth, contention). It does not wait for the receiver.
* **RECV** blocks its unit until the matching SEND has executed; it ends when the
  last byte has arrived, or at once if they arrived earlier. Its busy cycles are
  those during which bytes arrive while it is posted.
* **Program end.** When a core's units are done its graph outputs (or its slices
  of them) stream out to the off-chip memory (shared bandwidth again); a sliced
  output is the slices of every core put together. `cycles` is the last of these ends.

Each unit runs its queue in order; the simulator interleaves the cores' queues in an
order that respects tokens and messages (so data are exactly what the program states),
revisiting a core only when it made progress or a message arrived for it. When no core can progress
and some are blocked on WAITs or RECVs nobody will satisfy, the run stops with a
deadlock error naming every blocked instruction's line.
"""

from __future__ import annotations

import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnx.sim.asm import AsmError
from nnx.sim.asm_mesh import CoreSection, MeshProgram, io_slice
from nnx.sim.isa_mesh import SEND, MessageKey, is_noc, message_key, noc_tile
from nnx.sim.memory import InputNeuronCache, Memory, OutputCache, SimError, WeightCache
from nnx.sim.noc import Noc, serialisation_cycles
from nnx.sim.offchip import shared_transfers
from nnx.sim.simulator import Event, UnitEngine, checked_input
from nnx.sim.units import InstructionControlUnit, MicroOp
from nnx.target import Target

#: micro-op kind of SEND and RECV (beside units.EXEC/WAIT/SIGNAL)
NOC_KIND = 3


@dataclass
class CoreStats:
    """One core's run: when its units started and ended, and per unit busy cycles
    and instruction counts."""

    start: int
    end: int
    unit_busy: dict[str, int]
    unit_instructions: dict[str, int]
    fetch_end: int
    events: list[Event] = field(default_factory=list)


@dataclass
class MeshRunResult:
    outputs: dict[str, np.ndarray]
    cycles: int
    cores: dict[int, CoreStats]
    load_cycles: int  # the last core's weights and inputs are in
    store_cycles: int  # the last graph output is out
    offchip_bytes: dict[str, int]  # weights, inputs, outputs
    noc_bytes: int
    noc_byte_hops: int
    noc_messages: int
    link_bytes: dict[tuple[int, int], int]
    link_cycles: dict[tuple[int, int], int]
    bytes_moved: dict[str, int]
    macs: int
    macs_skipped: int
    #: per used link, its busy intervals (start, end) in cycles (recorded with events)
    link_busy: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)


class _Core:
    """The memories, decoded program and unit engine of one core."""

    def __init__(self, sec: CoreSection, target: Target):
        self.sec = sec
        self.core = sec.core
        p = sec.program
        self.storage = Memory("S", f"core {sec.core} memory", p.storage_bytes)
        self.mem: dict[str, Memory] = {
            "S": self.storage,
            "N": InputNeuronCache(target.cache("neuron").bytes),
            "W": WeightCache(target.cache("weight").bytes),
            "O": OutputCache(target.cache("output").bytes),
        }
        self.icu = InstructionControlUnit(target, self.mem)
        self.units = set(target.unit_names())
        self.engine: UnitEngine | None = None
        self.start = 0
        #: SEND/RECV micro-op index -> (view of its local tile, message name)
        self.noc: dict[int, tuple[np.ndarray, MessageKey]] = {}

    def decode(self, start: int) -> list[MicroOp]:
        """Micro-ops of the section, fetched from cycle `start` on."""
        instrs = self.sec.program.instrs
        ready = self.icu.icache.fetch_ready(len(instrs))
        out: list[MicroOp] = []
        for i, ins in enumerate(instrs):
            try:
                if is_noc(ins):
                    if ins.unit not in self.units:
                        raise SimError(f"unit {ins.unit} does not exist in the target (units: {', '.join(sorted(self.units))})", ins.line)
                    m = MicroOp(ins, i, NOC_KIND)
                    t = noc_tile(ins)
                    self.noc[i] = (self.mem[t.space].view(t), message_key(ins, self.core))
                    m.bytes = t.nbytes
                    sp = () if t.space == "S" else ((t.space, t.offset, t.end),)
                    if ins.mnemonic == SEND:
                        m.reads = sp
                    else:
                        m.writes = sp
                else:
                    m = self.icu.decode(ins, i)
            except SimError as e:
                raise AsmError(self.sec.program.path, e.line or ins.line, e.msg) from None
            m.fetch = int(ready[i]) + start
            out.append(m)
        return out


class MeshSimulator:
    """Loads a `MeshProgram` onto the mesh of a `Target` and runs all cores."""

    def __init__(self, program: MeshProgram, target: Target, record_events: bool = False):
        self.program = program
        self.target = target
        self.record_events = record_events
        mesh = target.mesh
        path = program.path
        if (program.width, program.height) != (mesh.width, mesh.height):
            raise AsmError(
                path, program.mesh_line,
                f"the program is for a {program.width}x{program.height} mesh, the target "
                f"'{target.name}' has {mesh.width}x{mesh.height} (choose it with --target)",
            )
        self.cores: dict[int, _Core] = {}
        for c, sec in program.cores.items():
            if sec.program.storage_bytes > mesh.core_memory_bytes:
                raise AsmError(
                    path, sec.storage_line or sec.line,
                    f"core {c}: .storage {sec.program.storage_bytes} exceeds the core memory "
                    f"(mesh.core_memory_bytes = {mesh.core_memory_bytes})",
                )
            self.cores[c] = _Core(sec, target)
        self._load_data()

    # ---- loading ----------------------------------------------------------------------
    def _load_data(self) -> None:
        files: dict[str, bytes] = {}
        path = self.program.path
        for core in self.cores.values():
            p = core.sec.program
            for seg in p.data:
                fpath = p.data_path(seg)
                if fpath not in files:
                    try:
                        with open(fpath, "rb") as f:
                            files[fpath] = f.read()
                    except OSError as e:
                        raise AsmError(path, seg.line, f"cannot read data file {seg.file}: {e.strerror}") from None
                off = getattr(seg, "file_offset", 0)
                raw = files[fpath][off : off + seg.size]
                if len(raw) != seg.size:
                    raise AsmError(path, seg.line, f"data file {seg.file} has {len(files[fpath])} bytes, .data needs {off + seg.size}")
                if seg.crc32 is not None and zlib.crc32(raw) & 0xFFFFFFFF != seg.crc32:
                    raise AsmError(path, seg.line, f"data file {seg.file} does not match its crc32 (stale or corrupt)")
                core.storage.write_bytes(seg.addr, raw)

    def input_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for core in self.cores.values():
            for s in core.sec.program.inputs:
                seen.setdefault(s.name, None)
        return list(seen)

    def set_input(self, name: str, value: np.ndarray) -> None:
        """Write a graph input into every core that holds it (or its slice of it)."""
        hits = [(core, s) for core in self.cores.values() for s in core.sec.program.inputs if s.name == name]
        if not hits:
            raise SimError(f"the program has no input '{name}' (inputs: {', '.join(self.input_names()) or 'none'})")
        for core, sym in hits:
            sl = io_slice(sym)
            if sl is not None:
                value = np.asarray(value)
                if tuple(value.shape) != sl.shape:
                    raise SimError(f"input '{name}' has shape {'x'.join(map(str, value.shape)) or 'scalar'}, "
                                   f"the program expects {'x'.join(map(str, sl.shape))}")
                core.storage.view(sym.tile)[...] = checked_input(name, value[sl.index()], sym.tile)
            else:
                core.storage.view(sym.tile)[...] = checked_input(name, value, sym.tile)

    # ---- running ------------------------------------------------------------------------
    def run(self, inputs: dict[str, np.ndarray] | None = None) -> MeshRunResult:
        for k, v in (inputs or {}).items():
            self.set_input(k, v)
        if inputs is not None:
            missing = [n for n in self.input_names() if n not in inputs]
            if missing:
                raise SimError(f"missing --input for {', '.join(missing)}")
        t = self.target
        mesh = t.mesh
        off = mesh.offchip
        core_dma = t.storage.dma_bytes_per_cycle * t.unit("DAU").count
        cores = list(self.cores.values())

        # program start: weights images and inputs stream in through the shared off-chip memory
        wbytes = [sum(seg.size for seg in c.sec.program.data) for c in cores]
        ibytes = [sum(s.tile.nbytes for s in c.sec.program.inputs) for c in cores]
        starts = shared_transfers([(0, w + i) for w, i in zip(wbytes, ibytes)],
                                  off.bytes_per_cycle, core_dma, off.latency_cycles)

        noc = Noc(mesh.width, mesh.height, mesh.noc.hop_latency_cycles, mesh.noc.link_bytes_per_cycle)
        mailbox: dict[Any, deque] = {}
        woken: set[int] = set()
        dau_lat = t.unit("DAU").latency_cycles
        link_bw = mesh.noc.link_bytes_per_cycle
        units = t.unit_names()
        path = self.program.path
        messages = 0

        def make_hook(core: _Core):
            core_id, noc_ops = core.core, core.noc

            def hook(m: MicroOp, start: int) -> tuple[int, int] | None:
                nonlocal messages
                view, key = noc_ops[m.index]
                if m.name == SEND:
                    s, arrival = noc.transfer(core_id, key.dst, m.bytes, start + dau_lat)
                    end = s + serialisation_cycles(m.bytes, link_bw)
                    mailbox.setdefault(key, deque()).append((arrival, view.copy(), m.line))
                    woken.add(key.dst)
                    messages += 1
                    return end, end - start
                dq = mailbox.get(key)
                if not dq:
                    return None
                arrival, payload, sline = dq.popleft()
                if payload.size != view.size or payload.dtype != view.dtype:
                    raise SimError(
                        f"RECV of {key.text()} takes {view.size} x {view.dtype}, the SEND on line "
                        f"{sline} sent {payload.size} x {payload.dtype}", m.line)
                view[...] = payload.reshape(view.shape)
                end = max(start, arrival)
                first_byte = arrival - serialisation_cycles(m.bytes, link_bw)
                return end, end - max(start, first_byte)
            return hook

        for core, st in zip(cores, starts):
            core.start = st
            core.engine = UnitEngine(core.decode(st), units, path, self.record_events, start=st,
                                     extra=make_hook(core))

        runnable = [c.core for c in cores]
        by_id = self.cores
        while runnable:
            nxt: set[int] = set()
            for cid in runnable:
                if by_id[cid].engine.advance():  # type: ignore[union-attr]
                    nxt.add(cid)
            nxt |= woken
            woken.clear()
            runnable = sorted(nxt)
        self._check_deadlock(cores)

        stats: dict[int, CoreStats] = {}
        ends: list[int] = []
        macs = dense = 0
        moved = {"load": 0, "store": 0, "move": 0, "gather": 0}
        for core in cores:
            e = core.engine
            assert e is not None
            mops_fetch = max((m.fetch for q in e.queues.values() for m in q[-1:]), default=core.start)
            end = max([mops_fetch] + [e.clock[u] for u in units])
            ends.append(end)
            stats[core.core] = CoreStats(core.start, int(end), dict(e.busy), dict(e.count), int(mops_fetch), e.events)
            macs += e.macs
            dense += e.dense
            for k, v in e.bytes_moved.items():
                moved[k] += v
        obytes = [sum(s.tile.nbytes for s in c.sec.program.outputs) for c in cores]
        stores = shared_transfers([(e, b) for e, b in zip(ends, obytes)],
                                  off.bytes_per_cycle, core_dma, off.latency_cycles)
        outputs = self._outputs(cores)
        store_end = max((s for s, b in zip(stores, obytes) if b), default=0)
        return MeshRunResult(
            outputs=outputs,
            cycles=int(max(ends + stores + [0])),
            cores=stats,
            load_cycles=int(max(starts, default=0)),
            store_cycles=int(store_end),
            offchip_bytes={"weights": sum(wbytes), "inputs": sum(ibytes), "outputs": sum(obytes)},
            noc_bytes=noc.bytes,
            noc_byte_hops=noc.byte_hops,
            noc_messages=messages,
            link_bytes=dict(noc.link_bytes),
            link_cycles=dict(noc.link_cycles),
            bytes_moved=moved,
            macs=int(macs),
            macs_skipped=int(dense - macs),
            link_busy={k: list(zip(b.starts, b.ends)) for k, b in noc.busy.items()} if self.record_events else {},
        )

    @staticmethod
    def _outputs(cores: list[_Core]) -> dict[str, np.ndarray]:
        """The graph outputs: whole ones read from their core, sliced ones assembled
        from every core's slice (the assembler checked that they tile the output)."""
        outputs: dict[str, np.ndarray] = {}
        for c in cores:
            for s in c.sec.program.outputs:
                sl = io_slice(s)
                if sl is None:
                    outputs[s.name] = c.storage.view(s.tile).copy()
                    continue
                view = c.storage.view(s.tile)
                if s.name not in outputs:
                    outputs[s.name] = np.empty(sl.shape, view.dtype)
                outputs[s.name][sl.index()] = view
        return outputs

    def _check_deadlock(self, cores: list[_Core]) -> None:
        blocked: list[tuple[int, int, str]] = []
        for core in cores:
            assert core.engine is not None
            for m in core.engine.blocked():
                if m.kind == NOC_KIND:
                    what = f"RECV of {core.noc[m.index][1].text()}"
                else:
                    what = f"WAIT for token '{m.token}'"
                blocked.append((m.line, core.core, f"core {core.core} {m.unit} {what}"))
        if not blocked:
            return
        blocked.sort()
        line, _, first = blocked[0]
        msg = f"deadlock: {first} can never complete"
        rest = [f"{d} (line {ln})" for ln, _, d in blocked[1:]]
        if rest:
            more = f" and {len(rest) - 6} more" if len(rest) > 6 else ""
            msg += "; also blocked: " + ", ".join(rest[:6]) + more
        raise AsmError(self.program.path, line, msg)
