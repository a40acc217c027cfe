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
from nnx.sim.asm_mesh import CoreSection, MeshProgram, io_slice, whole_shape
from nnx.sim.isa_mesh import SEND, MessageKey, is_noc, message_keys, noc_tile
from nnx.sim.memory import InputNeuronCache, Memory, OutputCache, SimError, WeightCache
from nnx.sim.noc import Noc, serialisation_cycles
from nnx.sim.offchip import BandwidthCalendar, shared_transfers
from nnx.sim.simulator import Event, UnitEngine, checked_input
from nnx.sim.units import InstructionControlUnit, MicroOp
from nnx.target import Target

#: micro-op kind of SEND and RECV (beside units.EXEC/WAIT/SIGNAL)
NOC_KIND = 3


@dataclass
class CoreStats:
    """One core's run: when its units started and ended, and per unit busy cycles
    and instruction counts (summed over the inferences of a stream)."""

    start: int
    end: int
    unit_busy: dict[str, int]
    unit_instructions: dict[str, int]
    fetch_end: int
    events: list[Event] = field(default_factory=list)
    #: (begin, end) cycle of each inference the core ran (one without a stream)
    inferences: list[tuple[int, int]] = field(default_factory=list)
    #: per unit, its busy intervals [start, end) in cycles, back-to-back ones merged
    busy_spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


@dataclass
class MeshRunResult:
    outputs: dict[str, np.ndarray]
    cycles: int
    cores: dict[int, CoreStats]
    load_cycles: int  # the weights of every core are in (weight_load_cycles)
    store_cycles: int  # the last graph output is out
    offchip_bytes: dict[str, int]  # weights, inputs, outputs (over all inferences)
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
    #: inferences run (docs/mesh.md, "Streams")
    inferences: int = 1
    #: per inference, the cycle its first graph input starts to stream in (without
    #: inputs: the first core begins it) and its last graph output is out (without
    #: outputs: the last core ends it)
    inference_in: list[int] = field(default_factory=list)
    inference_out: list[int] = field(default_factory=list)

    @property
    def latencies(self) -> list[int]:
        """Each inference's latency: first input in to last output out."""
        return [b - a for a, b in zip(self.inference_in, self.inference_out)]

    @property
    def latency_cycles(self) -> int:
        """The first inference's latency (weights resident, the mesh otherwise idle)."""
        return self.latencies[0] if self.inference_in else self.cycles

    @property
    def cycles_per_inference(self) -> float:
        """Steady-state cycles between two inferences' last outputs, over the stream
        (one inference: its latency)."""
        n = len(self.inference_out)
        if n < 2:
            return float(self.latency_cycles)
        return (self.inference_out[-1] - self.inference_out[0]) / (n - 1)


def _write_inputs(core: "_Core", values: dict[str, np.ndarray]) -> None:
    """Write the graph inputs in `values` that `core` holds (or its slices of them)."""
    for sym in core.sec.program.inputs:
        if sym.name not in values:
            continue
        value = values[sym.name]
        sl = io_slice(sym)
        if sl is not None:
            value = np.asarray(value)
            if tuple(value.shape) != sl.shape:
                raise SimError(f"input '{sym.name}' has shape {'x'.join(map(str, value.shape)) or 'scalar'}, "
                               f"the program expects {'x'.join(map(str, sl.shape))}")
            value = value[sl.index()]
        core.storage.view(sym.tile)[...] = checked_input(sym.name, value, sym.tile)


def _read_outputs(core: "_Core", into: dict[str, np.ndarray]) -> None:
    """Copy the graph outputs `core` holds into `into`: a whole one as it is, a slice
    into its place in the whole tensor (the assembler checked that slices tile it)."""
    for s in core.sec.program.outputs:
        view = core.storage.view(s.tile)
        sl = io_slice(s)
        if sl is None:
            into[s.name] = view.copy()
            continue
        if s.name not in into:
            into[s.name] = np.empty(sl.shape, view.dtype)
        into[s.name][sl.index()] = view


def _inference_inputs(sim: "MeshSimulator", inputs: dict[str, np.ndarray], n: int, k: int) -> dict[str, np.ndarray]:
    """The inputs of inference k of a stream of n: an array with one more axis than
    the program's input and a leading axis of n is one value per inference."""
    shapes: dict[str, tuple[int, ...]] = {}
    for core in sim.cores.values():
        for s in core.sec.program.inputs:
            shapes.setdefault(s.name, whole_shape(s))
    out: dict[str, np.ndarray] = {}
    for name, v in inputs.items():
        v = np.asarray(v)
        want = shapes.get(name)
        per = want is not None and v.ndim == len(want) + 1 and v.shape[0] == n
        out[name] = v[k] if per else v
    return out


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
        self.hook: Any = None
        #: SEND/RECV micro-op index -> (view of its local tile, its message names)
        self.noc: dict[int, tuple[np.ndarray, tuple[MessageKey, ...]]] = {}
        self.mops: list[MicroOp] = []
        self.ready: list[int] = []  # fetch-ready cycle of each micro-op after the core begins
        self.inference = 0
        self.begins: list[int] = []
        self.ends: list[int] = []
        self.fetch_end = 0
        self.busy: dict[str, int] = {}
        self.count: dict[str, int] = {}
        self.events: list[Event] = []
        self.spans: dict[str, list[list[int]]] = {}
        self.macs = self.dense = 0
        self.bytes_moved: dict[str, int] = {}

    def decode_once(self) -> None:
        """Decode the section (its micro-ops are re-run by every inference)."""
        instrs = self.sec.program.instrs
        self.ready = [int(r) for r in self.icu.icache.fetch_ready(len(instrs))]
        out: list[MicroOp] = []
        for i, ins in enumerate(instrs):
            try:
                if is_noc(ins):
                    if ins.unit not in self.units:
                        raise SimError(f"unit {ins.unit} does not exist in the target (units: {', '.join(sorted(self.units))})", ins.line)
                    m = MicroOp(ins, i, NOC_KIND)
                    t = noc_tile(ins)
                    self.noc[i] = (self.mem[t.space].view(t), message_keys(ins, self.core))
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
            out.append(m)
        self.mops = out

    def absorb(self, e: UnitEngine, fetch_end: int, end: int) -> None:
        """Add one finished inference's engine to the core's totals."""
        if not self.ends:
            self.fetch_end = int(fetch_end)
        self.ends.append(end)
        for u, b in e.busy.items():
            self.busy[u] = self.busy.get(u, 0) + b
        for u, c in e.count.items():
            self.count[u] = self.count.get(u, 0) + c
        self.events.extend(e.events)
        self.macs += e.macs
        self.dense += e.dense
        for k, v in e.bytes_moved.items():
            self.bytes_moved[k] = self.bytes_moved.get(k, 0) + v

    def stats(self) -> CoreStats:
        return CoreStats(self.begins[0], self.ends[-1], dict(self.busy), dict(self.count), self.fetch_end,
                         self.events, list(zip(self.begins, self.ends)),
                         {u: [(a, b) for a, b in sp] for u, sp in self.spans.items() if sp})


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
        hits = [core for core in self.cores.values() if any(s.name == name for s in core.sec.program.inputs)]
        if not hits:
            raise SimError(f"the program has no input '{name}' (inputs: {', '.join(self.input_names()) or 'none'})")
        for core in hits:
            _write_inputs(core, {name: value})

    # ---- running ------------------------------------------------------------------------
    def run(self, inputs: dict[str, np.ndarray] | None = None, stream: int | None = None,
            depth: int = 2) -> MeshRunResult:
        """Run the program once, or with `stream=N` N inferences back to back
        (docs/mesh.md, "Streams"): an input whose leading axis is N gives each
        inference its own value (else every inference reads the same one), every
        output is stacked along a new leading axis of N, and a SEND of inference i
        waits until each destination has begun inference i - depth + 1 (`depth`
        receive buffers per message name)."""
        n = 1 if stream is None else int(stream)
        if n < 1:
            raise SimError(f"--stream must be at least 1, got {n}")
        if depth < 1:
            raise SimError(f"the stream depth must be at least 1, got {depth}")
        feeds = [dict(inputs or {}) for _ in range(n)]
        if stream is not None:
            feeds = [_inference_inputs(self, inputs or {}, n, k) for k in range(n)]
        if inputs is not None:
            missing = [nm for nm in self.input_names() if nm not in inputs]
            if missing:
                raise SimError(f"missing --input for {', '.join(missing)}")
        for k, v in feeds[0].items():
            self.set_input(k, v)  # every input checked once, before the run
        t = self.target
        mesh = t.mesh
        off = mesh.offchip
        core_dma = t.storage.dma_bytes_per_cycle * t.unit("DAU").count
        cores = list(self.cores.values())
        by_id = self.cores

        # program start: the weights images stream in through the shared off-chip memory;
        # then the first inference's inputs (weights are resident before any input moves)
        wbytes = [sum(seg.size for seg in c.sec.program.data) for c in cores]
        ibytes = [sum(s.tile.nbytes for s in c.sec.program.inputs) for c in cores]
        obytes = [sum(s.tile.nbytes for s in c.sec.program.outputs) for c in cores]
        wends = shared_transfers([(0, w) for w in wbytes], off.bytes_per_cycle, core_dma, off.latency_cycles)
        weights_in = max([e for e, w in zip(wends, wbytes) if w] + [0])
        io = BandwidthCalendar(off.bytes_per_cycle, core_dma, off.latency_cycles)

        noc = Noc(mesh.width, mesh.height, mesh.noc.hop_latency_cycles, mesh.noc.link_bytes_per_cycle)
        mailbox: dict[Any, deque] = {}
        woken: set[int] = set()
        #: destination core -> cores whose SEND waits for it to begin an inference
        waiters: dict[int, set[int]] = {}
        dau_lat = t.unit("DAU").latency_cycles
        link_bw = mesh.noc.link_bytes_per_cycle
        units = t.unit_names()
        path = self.program.path
        messages = 0
        in_start: list[list[int]] = [[] for _ in range(n)]
        out_end: list[list[int]] = [[] for _ in range(n)]
        outs: list[dict[str, np.ndarray]] = [{} for _ in range(n)]

        def make_hook(core: _Core):
            core_id, noc_ops = core.core, core.noc

            def hook(m: MicroOp, start: int) -> tuple[int, int] | None:
                nonlocal messages
                view, keys = noc_ops[m.index]
                if m.name == SEND:
                    need = core.inference - depth + 1  # each destination has begun this inference
                    if need > 0:
                        late = [k.dst for k in keys if len(by_id[k.dst].begins) <= need]
                        if late:
                            for d in late:
                                waiters.setdefault(d, set()).add(core_id)
                            return None
                        start = max([start] + [by_id[k.dst].begins[need] for k in keys])
                    s, arrivals = noc.multicast(core_id, [k.dst for k in keys], m.bytes, start + dau_lat)
                    end = s + serialisation_cycles(m.bytes, link_bw)
                    payload = view.copy()
                    for key, arrival in zip(keys, arrivals):
                        mailbox.setdefault(key, deque()).append((arrival, payload, m.line))
                        woken.add(key.dst)
                    messages += 1
                    return end, end - start
                (key,) = keys
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

        def begin(core: _Core, at: int) -> None:
            core.begins.append(int(at))
            core.inference = len(core.begins) - 1
            for m, r in zip(core.mops, core.ready):
                m.fetch = r + at
            core.engine = UnitEngine(core.mops, units, path, self.record_events, start=at,
                                     extra=core.hook, spans=core.spans)

        def finish(core: _Core) -> bool:
            """End the core's inference; begin its next one (True) if any is left."""
            e = core.engine
            k = core.inference
            fetch_end = max((m.fetch for q in e.queues.values() for m in q[-1:]), default=core.begins[k])
            end = int(max([fetch_end] + [e.clock[u] for u in units]))
            core.absorb(e, fetch_end, end)
            woken.update(waiters.pop(core.core, ()))
            _read_outputs(core, outs[k])
            out_done = io.transfer(end, obytes_of[core.core])
            if obytes_of[core.core]:
                out_end[k].append(out_done)
            if k + 1 >= n:
                return False
            _write_inputs(core, feeds[k + 1])
            in_done = io.transfer(end, ibytes_of[core.core])
            if ibytes_of[core.core]:
                in_start[k + 1].append(end)
            begin(core, max(end, out_done, in_done))
            return True

        ibytes_of = {c.core: b for c, b in zip(cores, ibytes)}
        obytes_of = {c.core: b for c, b in zip(cores, obytes)}
        for core, wend in zip(cores, wends):
            core.hook = make_hook(core)
            core.decode_once()
            at = wend
            if ibytes_of[core.core]:
                in_start[0].append(weights_in)
                at = io.transfer(weights_in, ibytes_of[core.core])
            begin(core, at)

        runnable = [c.core for c in cores]
        while runnable:
            nxt: set[int] = set()
            for cid in runnable:
                core = by_id[cid]
                if core.engine.advance():  # type: ignore[union-attr]
                    nxt.add(cid)
                if len(core.ends) < len(core.begins) and core.engine.done():  # type: ignore[union-attr]
                    if finish(core):
                        nxt.add(cid)
            nxt |= woken
            woken.clear()
            runnable = sorted(nxt)
        self._check_deadlock(cores)

        ends = [c.ends[-1] for c in cores]
        stores = [e for per in out_end for e in per]
        begins_k = [min(c.begins[k] for c in cores) for k in range(n)] if cores else [0] * n
        ends_k = [max(c.ends[k] for c in cores) for k in range(n)] if cores else [0] * n
        first_in = [min(v) if v else b for v, b in zip(in_start, begins_k)]
        last_out = [max(v) if v else e for v, e in zip(out_end, ends_k)]
        macs = sum(c.macs for c in cores)
        dense = sum(c.dense for c in cores)
        moved = {"load": 0, "store": 0, "move": 0, "gather": 0}
        for c in cores:
            for k2, v in c.bytes_moved.items():
                moved[k2] += v
        if stream is None:
            outputs = outs[0]
        else:
            outputs = {nm: np.stack([o[nm] for o in outs]) for nm in outs[0]}
        return MeshRunResult(
            outputs=outputs,
            cycles=int(max(ends + stores + [0])),
            cores={c.core: c.stats() for c in cores},
            load_cycles=int(weights_in),
            store_cycles=int(max(stores, default=0)),
            offchip_bytes={"weights": sum(wbytes), "inputs": sum(ibytes) * n, "outputs": sum(obytes) * n},
            noc_bytes=noc.bytes,
            noc_byte_hops=noc.byte_hops,
            noc_messages=messages,
            link_bytes=dict(noc.link_bytes),
            link_cycles=dict(noc.link_cycles),
            bytes_moved=moved,
            macs=int(macs),
            macs_skipped=int(dense - macs),
            link_busy={k: list(zip(b.starts, b.ends)) for k, b in noc.busy.items()} if self.record_events else {},
            inferences=n,
            inference_in=[int(v) for v in first_in],
            inference_out=[int(v) for v in last_out],
        )

    def _check_deadlock(self, cores: list[_Core]) -> None:
        blocked: list[tuple[int, int, str]] = []
        for core in cores:
            assert core.engine is not None
            for m in core.engine.blocked():
                if m.kind == NOC_KIND and m.name == SEND:
                    keys = core.noc[m.index][1]
                    what = (f"SEND of inference {core.inference} to core(s) "
                            f"{', '.join(str(k.dst) for k in keys)} (receive buffers full)")
                elif m.kind == NOC_KIND:
                    what = f"RECV of {core.noc[m.index][1][0].text()}"
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
