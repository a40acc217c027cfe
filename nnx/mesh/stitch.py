"""Per-core chip programs joined by NoC messages into one mesh program (docs/mesh.md,
"Compilation").

Each stage's function is lowered by the single-core chip passes into an ordinary
program whose `.input`/`.output` symbols are its arguments and results. Here the
arguments that are pieces of other stages become RECVs into the argument's storage
tile and the results other stages read become SENDs from the result's tile (the
message tag is the piece name). A core first receives (on DAU0; its other units
WAIT for DAU0's SIGNAL) and, when all its units are done (they SIGNAL, DAU0 WAITs),
sends. The stage graph is acyclic (nnx/mesh/partition.py), so this never deadlocks.
"""

from __future__ import annotations

from dataclasses import dataclass

from nnx.sim.asm import Program
from nnx.sim.asm_mesh import CoreData, CoreSection, MeshProgram
from nnx.sim.isa import Instr
from nnx.sim.isa_mesh import RECV, SEND, noc_instr

NOC_UNIT = "DAU0"


@dataclass
class CoreProgram:
    """One stage lowered: its program, weights image, and which of its arguments are
    received (name -> source core) and results sent (name -> destination cores)."""

    program: Program
    data: bytes | None
    recv: dict[str, int]
    send: dict[str, list[int]]


def _sync(unit: str, mnemonic: str, token: str) -> Instr:
    return Instr(unit, mnemonic, token=token)


def add_messages(cp: CoreProgram) -> Program:
    """`cp.program` with its received inputs and sent outputs turned into RECV/SEND
    (see the module docstring)."""
    p = cp.program
    tiles_in = {s.name: s.tile for s in p.inputs}
    tiles_out = {s.name: s.tile for s in p.outputs}
    p.inputs = [s for s in p.inputs if s.name not in cp.recv]
    p.outputs = [s for s in p.outputs if s.name not in cp.send]
    units = sorted({i.unit for i in p.instrs} - {NOC_UNIT})
    head: list[Instr] = []
    tail: list[Instr] = []
    if cp.recv:
        head = [noc_instr(NOC_UNIT, RECV, tiles_in[n], src, n) for n, src in sorted(cp.recv.items())]
        head += [_sync(NOC_UNIT, "SIGNAL", f"mesh_in_{u}") for u in units]
    if cp.send:
        tail = [_sync(NOC_UNIT, "WAIT", f"mesh_out_{u}") for u in units]
        tail += [noc_instr(NOC_UNIT, SEND, tiles_out[n], dst, n)
                 for n, dsts in sorted(cp.send.items()) for dst in dsts]
    body = list(p.instrs)
    if cp.recv:
        body = [_sync(u, "WAIT", f"mesh_in_{u}") for u in units] + body
    if cp.send:
        body = body + [_sync(u, "SIGNAL", f"mesh_out_{u}") for u in units]
    p.instrs = head + body + tail
    return p


def mesh_program(cores: dict[int, CoreProgram], width: int, height: int, target_name: str,
                 data_file: str) -> tuple[MeshProgram, bytes]:
    """The mesh program of the cores' programs, and the one weights file all cores'
    `.data` lines point into (at their `offset`)."""
    from nnx.sim.asm import crc32_of

    mp = MeshProgram(target=target_name, width=width, height=height)
    blob = bytearray()
    for c in sorted(cores):
        cp = cores[c]
        prog = add_messages(cp)
        segs = []
        for seg in prog.data:
            chunk = cp.data if cp.data is not None else b""
            segs.append(CoreData(data_file, seg.addr, seg.size, crc32_of(chunk), file_offset=len(blob)))
            blob += chunk
        prog.data = segs
        mp.cores[c] = CoreSection(c, prog)
    return mp, bytes(blob)
