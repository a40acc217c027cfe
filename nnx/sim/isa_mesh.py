"""The network-on-chip instructions of a mesh program: SEND and RECV (docs/mesh.md, "Assembly").

A mesh program has one section per core; each section is a single-core program
(nnx/sim/isa.py) plus these two DAU instructions, which move a tile from one core's
memory to another's over the network-on-chip:

    DAU0 SEND @3:t0 <- O:0x0<4x32xf32>      ; send the tile to core 3 with tag t0
    DAU1 RECV S:0x100<4x32xf32> <- @0:t0    ; write what core 0 sent with tag t0

* SEND reads a tile of the core's memory (S) or of a cache (N, W, O) and sends its
  bytes to (core, tag). It does not wait for the receiver.
* RECV writes the arriving bytes into a tile (S, N, W or O); it blocks until the
  matching SEND's data have arrived.
* A message is named by (source core, destination core, tag). The k-th SEND of a
  name pairs with the k-th RECV of that name; both tiles hold the same number of
  elements of the same type (the shapes may differ: the bytes are row-major).

This module defines the instructions and their target-independent checks; the mesh
assembler (asm_mesh.py) parses and pairs them, the mesh simulator runs them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nnx.sim.isa import SPACES, TOKEN_RE, Instr, Tile, check_tile

SEND, RECV = "SEND", "RECV"
#: NoC mnemonic -> the unit type that executes it
MESH_MNEMONICS = {SEND: "DAU", RECV: "DAU"}
_UNIT_RE = re.compile(r"^DAU\d+$")
_PEER_RE = re.compile(r"^@(\d+):([A-Za-z_][A-Za-z0-9_.]*)$")


@dataclass(frozen=True, slots=True)
class MessageKey:
    """The name of a NoC message: (source core, destination core, tag)."""

    src: int
    dst: int
    tag: str

    def text(self) -> str:
        return f"core {self.src} -> core {self.dst} tag '{self.tag}'"


def noc_instr(unit: str, mnemonic: str, tile: Tile, peer: int, tag: str, line: int = 0) -> Instr:
    """A SEND (`tile` is its source) or RECV (`tile` is its destination) to/from `peer`."""
    ins = Instr(unit, mnemonic, line=line)
    if mnemonic == SEND:
        ins.srcs.append(tile)
    else:
        ins.dsts.append(tile)
    ins.attrs["core"] = int(peer)
    ins.attrs["tag"] = str(tag)
    return ins


def is_noc(ins: Instr) -> bool:
    return ins.mnemonic in MESH_MNEMONICS


def noc_tile(ins: Instr) -> Tile:
    """The local tile of a SEND (its source) or RECV (its destination)."""
    t = ins.srcs[0] if ins.mnemonic == SEND else ins.dsts[0]
    assert t is not None
    return t


def peer(ins: Instr) -> int:
    return int(ins.attrs["core"])


def tag(ins: Instr) -> str:
    return str(ins.attrs["tag"])


def message_key(ins: Instr, core: int) -> MessageKey:
    """The message a SEND/RECV of section `core` names."""
    if ins.mnemonic == SEND:
        return MessageKey(core, peer(ins), tag(ins))
    return MessageKey(peer(ins), core, tag(ins))


def parse_peer(text: str) -> tuple[int, str]:
    """`@CORE:TAG` -> (core, tag); raises ValueError with a one-line reason."""
    m = _PEER_RE.match(text.strip())
    if not m:
        raise ValueError(f"malformed remote end '{text.strip()}' (expected @CORE:TAG, e.g. @3:t0)")
    return int(m.group(1)), m.group(2)


def format_noc(ins: Instr) -> str:
    remote = f"@{peer(ins)}:{tag(ins)}"
    t = noc_tile(ins).text()
    body = f"{remote} <- {t}" if ins.mnemonic == SEND else f"{t} <- {remote}"
    s = f"{ins.unit} {ins.mnemonic:<7} {body}"
    if ins.comment:
        s += f"  ; {ins.comment}"
    return s


def check_noc_instr(ins: Instr, core: int, cores: int) -> str | None:
    """The first problem of a SEND/RECV in the section of `core` on a mesh of `cores`."""
    mn = ins.mnemonic
    if not _UNIT_RE.match(ins.unit):
        return f"{mn} runs on a DAU unit, not on {ins.unit}"
    t = noc_tile(ins)
    err = check_tile(t, "source" if mn == SEND else "destination")
    if err:
        return err
    if t.space not in SPACES:  # pragma: no cover - check_tile rejects it
        return f"{mn}: unknown address space '{t.space}'"
    p, tg = peer(ins), tag(ins)
    if not TOKEN_RE.match(tg):
        return f"{mn}: malformed tag '{tg}'"
    if not 0 <= p < cores:
        return f"{mn}: unknown core {p} (the mesh has cores 0..{cores - 1})"
    if p == core:
        return f"{mn}: core {core} cannot {'send to' if mn == SEND else 'receive from'} itself (use LOAD/STORE/MOVE)"
    return None
