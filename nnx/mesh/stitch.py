"""Per-core chip programs joined by NoC messages into one mesh program (docs/mesh.md,
"Compilation").

Each stage's function is lowered by the single-core chip passes into an ordinary
program whose `.input`/`.output` symbols are its arguments and results. Here the
arguments that are pieces of other stages become RECVs into the argument's storage
tile and the results other stages read become SENDs from the result's tile (the
message tag is the piece name). Messages are placed per message, so that a core
pipelines: a RECV just before the first instruction that uses its tile, a
SEND just after the last instruction that writes its tile; when that instruction runs
on another unit, a SIGNAL/WAIT pair orders the two. The instruction list is a valid
sequential order of the core's program and the stage graph is acyclic
(nnx/mesh/partition.py), so this never deadlocks: every RECV's sender is a stage
earlier in the stage order, and a SEND never waits for its receiver. A RECV runs
on the DMA queue of the instruction that first touches its tile (the queue that
would wait for it anyway), not on one queue for all messages, where a RECV still
waiting held up the loads queued behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nnx.sim.asm import Program
from nnx.sim.asm_mesh import CoreData, CoreSection, IOSlice, MeshProgram, SlicedSymbol
from nnx.sim.isa import Instr, Tile
from nnx.sim.isa_mesh import RECV, SEND, noc_instr

NOC_UNIT = "DAU0"

#: a received piece no instruction touches, passed on through a view (a reshape
#: emits nothing), is received and sent where the view stands in the core's op
#: order (`CoreProgram.op_positions`); False: the first rule, received at the
#: program's start and sent at its end, which can deadlock two cores that pass
#: pieces to each other across layers (the 2-layer BERT with the latency
#: schedule's part floor capped, `latency.LATENCY_FLOOR_MAX`). So is a received
#: piece no instruction touches that stays on the core (a graph output made by a
#: view of it): it went to the program's start, where torchvision's SqueezeNet 1.1
#: exported by torch.export (its pooled logits reshaped into the output) deadlocked
PASS_ON_IN_ORDER = True

#: a RECV runs on the DMA queue (DAU) of the first instruction that touches its
#: tile, and a SEND on the queue of the last instruction that writes it, so that a
#: RECV waiting for its message blocks only the queue that would wait for it anyway
#: (docs/mesh.md, "Compilation"); False: every RECV and SEND on `NOC_UNIT`, where a
#: RECV held up the loads of weights and of pieces already there queued behind it
NOC_ON_TOUCHING_UNIT = True
#: the latency schedule's SENDs go on the queue of the last write of their tile
#: (`add_messages(sends_on_writer=True)`; False: on `NOC_UNIT`). The throughput
#: pipeline keeps them on `NOC_UNIT`: in a stream a SEND waits for its receiver's
#: free buffer, and on the writer's queue it held up that queue's loads (ResNet-50
#: streamed 3 % slower; bench/RESULTS.md)
SEND_ON_WRITING_UNIT = True


def _queue(units: dict[str, int], first: bool) -> str:
    """The DMA queue a message goes on: of the first (or last) of the instructions
    `units` (unit -> index) that touch its tile, if that is a DAU; else `NOC_UNIT`."""
    if not NOC_ON_TOUCHING_UNIT or not units:
        return NOC_UNIT
    unit = (min if first else max)(units, key=units.get)
    return unit if unit.startswith("DAU") else NOC_UNIT


@dataclass
class CoreProgram:
    """One stage lowered: its program, weights image, and which of its arguments are
    received (name -> source core) and results sent (name -> destination cores);
    `slices`: the arguments and results that are a slice of a graph input or output
    (name -> (graph name, slice)), declared `.input/.output ... slice=` (docs/mesh.md,
    "Inputs and outputs")."""

    program: Program
    data: bytes | None
    recv: dict[str, int]
    send: dict[str, list[int]]
    slices: dict[str, tuple[str, IOSlice]] = field(default_factory=dict)
    #: received arguments whose memory the program reuses (chip-allocate `reuse`):
    #: name -> position of the first instruction using them, SIGNAL/WAIT not counted
    first_use: dict[str, int] = field(default_factory=dict)
    #: `program` has its RECV/SEND already (`add_messages` ran where it was lowered)
    joined: bool = False
    #: in a program lowered in op order: received argument -> (position, index in
    #: the stage's op order) of the first op reading it, sent result -> (position
    #: just after, index) of the op producing it; positions count instructions,
    #: SIGNAL/WAIT not counted: where a message no instruction touches stands
    op_positions: dict[str, tuple[int, int]] = field(default_factory=dict)


def send_instrs(tile: Tile, dsts: list[int], tag: str, unit: str = NOC_UNIT) -> list[Instr]:
    """The SEND of a piece to its destination cores: one multicast SEND along the XY
    tree (each link carries the bytes once; docs/mesh.md, "Assembly"), a unicast
    SEND for one destination."""
    return [noc_instr(unit, SEND, tile, dsts[0] if len(dsts) == 1 else list(dsts), tag)]


def _sync(unit: str, mnemonic: str, token: str) -> Instr:
    return Instr(unit, mnemonic, token=token)


class _Touches:
    """Which instructions of a program touch a tile's memory: every tile of every
    instruction (destinations apart, for writes) as address intervals, queried with
    numpy (a core of the latency schedule has thousands of instructions and receives
    and sends hundreds of messages: scanning the program per message took most of
    ResNet-18's compile time). The intervals of each memory space are sorted by
    their start, so a query looks only at those starting within the longest
    interval's length before the tile's end."""

    def __init__(self, instrs: list[Instr]):
        import numpy as np

        rows: dict[str, list[tuple[int, int, int, bool]]] = {}  # space -> (lo, hi, index, written)
        for k, ins in enumerate(instrs):
            dsts = [t for t in ins.dsts if t is not None]
            for t in ins.tiles():
                rows.setdefault(t.space, []).append((t.offset, t.end, k, any(t is d for d in dsts)))
        self.units = [ins.unit for ins in instrs]
        self.spaces = {}
        for sp, rs in rows.items():
            rs.sort()
            lo = np.array([r[0] for r in rs], np.int64)
            hi = np.array([r[1] for r in rs], np.int64)
            self.spaces[sp] = (lo, hi, np.array([r[2] for r in rs], np.int64), np.array([r[3] for r in rs], bool),
                               int((hi - lo).max()), lo.tolist())

    def touching(self, tile: Tile, writes_only: bool = False) -> list[int]:
        """The indices, ascending, of the instructions with a tile (a destination
        tile with `writes_only`) that overlaps `tile`."""
        from bisect import bisect_left

        got = self.spaces.get(tile.space)
        if got is None:
            return []
        lo, hi, index, written, longest, starts = got
        # an interval overlapping [offset, end) starts before end and after offset - longest
        a, b = bisect_left(starts, tile.offset - longest), bisect_left(starts, tile.end)
        hit = hi[a:b] > tile.offset
        if writes_only:
            hit &= written[a:b]
        return sorted(set(index[a:b][hit].tolist()))

    def first_uses(self, tile: Tile, start: int = 0) -> dict[str, int]:
        """Unit -> index of its first instruction from `start` on that touches `tile`."""
        out: dict[str, int] = {}
        for k in self.touching(tile):
            if k >= start and self.units[k] not in out:
                out[self.units[k]] = k
        return out

    def last_touches(self, tile: Tile, end: int) -> dict[str, int]:
        """Unit -> index of its last instruction before `end` that touches `tile`'s
        memory (another buffer that had it before: reused memory)."""
        return {self.units[k]: k for k in self.touching(tile) if k < end}

    def last_writes(self, tile: Tile) -> dict[str, int]:
        """Unit -> index of its last instruction that writes `tile`."""
        return {self.units[k]: k for k in self.touching(tile, True)}


def _positions(instrs: list[Instr]) -> list[int]:
    """Indices in `instrs` of the instructions that are not a SIGNAL/WAIT: the k-th
    is where the lowering's k-th instruction (an ordinal of `first_use`) now stands."""
    return [k for k, ins in enumerate(instrs) if ins.mnemonic not in ("SIGNAL", "WAIT")]


def _body_index(positions: list[int], k: int, end: int) -> int:
    """Where the lowering's k-th instruction stands in the body (`_positions`); `end`
    (the body's length) for an ordinal past its last instruction."""
    return positions[k] if k < len(positions) else end


def _graph_symbol(sym, slices: dict[str, tuple[str, IOSlice]]):
    """The `.input`/`.output` symbol of a stage argument or result: a slice of a graph
    tensor under the graph tensor's symbol (`storage.symbol_name`, as a core holding
    it whole declares it), else the symbol unchanged."""
    from nnx.lowering.storage import symbol_name

    if sym.name not in slices:
        return sym
    name, sl = slices[sym.name]
    return SlicedSymbol(symbol_name(name), sym.tile, sym.line, sl)


def add_messages(cp: CoreProgram, sends_on_writer: bool = False) -> Program:
    """`cp.program` with its received inputs and sent outputs turned into RECV/SEND
    (see the module docstring). A RECV goes just before the first instruction that
    touches its tile, on that instruction's DMA queue (`NOC_ON_TOUCHING_UNIT`; for
    memory the program reuses, `cp.first_use`: the first from the argument's own
    first use on, after a WAIT for every other unit's last touch of that memory
    before); every other unit that touches the tile WAITs for the RECV's SIGNAL
    before its own first touch. A SEND goes just after the last instruction that
    writes its tile, on DAU0 (with `sends_on_writer`, on that instruction's queue),
    first WAITing for a SIGNAL from every other unit after its last write of the
    tile (units run concurrently, so the last write in program order need not be
    the last in time). A received piece passed on through a view (a sent result no
    instruction writes) is received no later than where the view stands in the op
    order and sent just after (`PASS_ON_IN_ORDER`, `cp.op_positions`: `_Passing`);
    any other sent result no instruction writes is sent at the end from DAU0, after
    every unit is done."""
    p = cp.program
    tiles_in = {s.name: s.tile for s in p.inputs}
    tiles_out = {s.name: s.tile for s in p.outputs}
    p.inputs = [_graph_symbol(s, cp.slices) for s in p.inputs if s.name not in cp.recv]
    p.outputs = [_graph_symbol(s, cp.slices) for s in p.outputs if s.name not in cp.send]
    body = list(p.instrs)
    touches = _Touches(body)
    positions = _positions(body)
    units = sorted({i.unit for i in body} - {NOC_UNIT})
    before: dict[int, list[Instr]] = {}
    after: dict[int, list[Instr]] = {}
    head: list[Instr] = []
    late: list[Instr] = []
    passing = _Passing(cp, tiles_in, tiles_out, touches, positions, len(body))
    for n, src in sorted(cp.recv.items()):
        k = cp.first_use.get(n)
        start = 0 if k is None else _body_index(positions, k, len(body))
        uses = touches.first_uses(tiles_in[n], start)
        unit = _queue(uses, first=True)
        recv = noc_instr(unit, RECV, tiles_in[n], src, n)
        if passing.passes(n) and (n not in cp.first_use or not uses):
            at = passing.receive(n, recv, min(uses.values(), default=len(body)))
        elif not uses and (n not in cp.first_use or start >= len(body)):
            reader = cp.op_positions.get(n) if PASS_ON_IN_ORDER else None
            if reader is None:
                head.append(recv)
            else:  # where its first reader stands (a view making a graph output of it)
                before.setdefault(_body_index(positions, reader[0], len(body)), []).append(recv)
            continue
        else:
            # a piece written in place into a value no instruction reads piece by piece
            # alone (a strided read skipping it): before the value's first use
            at = before.setdefault(min(uses.values()) if uses else start, [])
            if n in cp.first_use:  # reused memory: the units that had it before are done with it
                for u, k in sorted(touches.last_touches(tiles_in[n], start).items()):
                    if u != unit:
                        tok = f"mesh_free_{n}_{u}"
                        after.setdefault(k, []).append(_sync(u, "SIGNAL", tok))
                        at.append(_sync(unit, "WAIT", tok))
            at.append(recv)
            passing.placed_in(n, recv, at)
        for u, k in sorted(uses.items()):
            if u != unit:
                tok = f"mesh_rx_{n}_{u}"
                at.append(_sync(unit, "SIGNAL", tok))
                before.setdefault(k, []).append(_sync(u, "WAIT", tok))
    for n, dsts in sorted(cp.send.items()):
        writes = touches.last_writes(tiles_out[n])
        if not writes and passing.send(n, dsts):
            continue
        if not writes:
            late.extend(send_instrs(tiles_out[n], dsts, n))
            continue
        unit = _queue(writes, first=False) if sends_on_writer else NOC_UNIT
        waits = []
        for u, k in sorted(writes.items()):
            if u != unit:
                tok = f"mesh_tx_{n}_{u}"
                after.setdefault(k, []).append(_sync(u, "SIGNAL", tok))
                waits.append(_sync(unit, "WAIT", tok))
        after.setdefault(max(writes.values()), []).extend(waits + send_instrs(tiles_out[n], dsts, n, unit))
    tail: list[Instr] = []
    if late:
        tail = [_sync(u, "SIGNAL", f"mesh_out_{u}") for u in units]
        tail += [_sync(NOC_UNIT, "WAIT", f"mesh_out_{u}") for u in units] + late
    out = list(head)
    for k, ins in enumerate(body):
        out.extend(passing.at(k))
        out.extend(before.get(k, ()))
        out.append(ins)
        out.extend(after.get(k, ()))
    p.instrs = out + passing.at(len(body)) + before.get(len(body), []) + tail
    return p


class _Passing:
    """The messages of the received pieces a core passes on through a view (a
    reshape emits nothing: the sent result is the received memory, no instruction
    writes it). With only instructions to go by, such a RECV would go at the
    program's start and its SEND at the end, after every layer the core runs: two
    cores passing pieces to each other across layers then wait for each other
    forever. Each such RECV goes instead no later than where the first op reading it
    stands in the core's op order (`CoreProgram.op_positions`), ahead of the other
    messages there, and the SEND just after the RECVs that fill it, on their DMA
    queue (or on `NOC_UNIT` after a SIGNAL from each, when they are on several)."""

    def __init__(self, cp: CoreProgram, tiles_in: dict[str, Tile], tiles_out: dict[str, Tile], touches: _Touches,
                 positions: list[int], end: int):
        self.cp, self.tiles_in, self.tiles_out = cp, tiles_in, tiles_out
        self.positions, self.end = positions, end
        where = cp.op_positions if PASS_ON_IN_ORDER else {}
        self.unwritten = [n for n in cp.send if n in where and not touches.last_writes(tiles_out[n])]
        #: per body index, the chunks placed before it: (op index, 0 RECV / 1 SEND, name) -> instructions
        self.chunks: dict[int, dict[tuple, list[Instr]]] = {}
        #: name -> (where, chunk key, RECV); RECVs placed by their use instead: name -> (RECV, its list)
        self.placed: dict[str, tuple[int, tuple, Instr]] = {}
        self.by_use: dict[str, tuple[Instr, list[Instr]]] = {}

    def _fills(self, recv: str, send: str) -> bool:
        """Whether received argument `recv` fills (part of) sent result `send`'s
        memory: their tiles overlap and `recv` is read no later than `send` is made
        (a later argument reusing that memory does not)."""
        a, b = self.tiles_in[recv], self.tiles_out[send]
        where = self.cp.op_positions
        return a.space == b.space and a.offset < b.end and b.offset < a.end and recv in where and \
            where[recv][1] <= where[send][1]

    def passes(self, recv: str) -> bool:
        return any(self._fills(recv, m) for m in self.unwritten)

    def receive(self, name: str, recv: Instr, first_touch: int) -> list[Instr]:
        """Place the RECV of a piece passed on, before `first_touch` (a body index) at
        the latest; the list its SIGNALs go into."""
        pos, op = self.cp.op_positions[name]
        where = min(_body_index(self.positions, pos, self.end), first_touch)
        key = (op, 0, name)
        chunk = self.chunks.setdefault(where, {})[key] = [recv]
        self.placed[name] = (where, key, recv)
        return chunk

    def placed_in(self, name: str, recv: Instr, lst: list[Instr]) -> None:
        """A RECV placed by its first use (memory the program reuses), in `lst`."""
        if self.passes(name):
            self.by_use[name] = (recv, lst)

    def send(self, name: str, dsts: list[int]) -> bool:
        """Place the SEND of result `name` (no instruction writes it) just after the
        RECVs that fill it; False, nothing placed, when not all of them were placed
        here (it goes at the end)."""
        if name not in self.unwritten:
            return False
        fill = [n for n in self.cp.recv if self._fills(n, name)]
        if len(fill) == 1 and fill[0] in self.by_use:  # just after it, on its queue
            recv, lst = self.by_use[fill[0]]
            lst.insert(next(i for i, x in enumerate(lst) if x is recv) + 1,
                       send_instrs(self.tiles_out[name], dsts, name, recv.unit)[0])
            return True
        if not fill or any(n not in self.placed for n in fill):
            return False
        queues = {self.placed[n][2].unit for n in fill}
        unit = queues.pop() if len(queues) == 1 else NOC_UNIT
        where, key, _ = max((self.placed[n] for n in fill), key=lambda x: (x[0], x[1]))
        instrs = []
        for n in fill:
            w, k, recv = self.placed[n]
            if recv.unit != unit:
                tok = f"mesh_pass_{n}_{name}"
                self.chunks[w][k].append(_sync(recv.unit, "SIGNAL", tok))
                instrs.append(_sync(unit, "WAIT", tok))
        self.chunks[where][(key[0], 1, name)] = instrs + send_instrs(self.tiles_out[name], dsts, name, unit)
        return True

    def at(self, k: int) -> list[Instr]:
        """The instructions placed before body index k, in the op order."""
        got = self.chunks.get(k)
        return [ins for key in sorted(got) for ins in got[key]] if got else []


def mesh_program(cores: dict[int, CoreProgram], width: int, height: int, target_name: str,
                 data_file: str) -> tuple[MeshProgram, bytes]:
    """The mesh program of the cores' programs, and the one weights file all cores'
    `.data` lines point into (at their `offset`)."""
    from nnx.sim.asm import crc32_of

    mp = MeshProgram(target=target_name, width=width, height=height)
    blob = bytearray()
    for c in sorted(cores):
        cp = cores[c]
        prog = cp.program if cp.joined else add_messages(cp)
        segs = []
        for seg in prog.data:
            chunk = cp.data if cp.data is not None else b""
            segs.append(CoreData(data_file, seg.addr, seg.size, crc32_of(chunk), file_offset=len(blob)))
            blob += chunk
        prog.data = segs
        mp.cores[c] = CoreSection(c, prog)
    return mp, bytes(blob)
