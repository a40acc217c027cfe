"""The network-on-chip instructions of a mesh program: SEND and RECV (docs/mesh.md, "Assembly").

A mesh program has one section per core; each section is a single-core program
(nnx/sim/isa.py) plus these two DAU instructions, which move a tile from one core's
memory to another's over the network-on-chip:

    DAU0 SEND @3:t0 <- O:0x0<4x32xf32>      ; send the tile to core 3 with tag t0
    DAU0 SEND @{1,4-6}:t1 <- O:0x0<4x32xf32> ; multicast: to cores 1, 4, 5 and 6
    DAU1 RECV S:0x100<4x32xf32> <- @0:t0    ; write what core 0 sent with tag t0

* SEND reads a tile of the core's memory (S) or of a cache (N, W, O) and sends its
  bytes to (core, tag). It does not wait for the receiver.
* A multicast SEND names a set of cores, `@{A,B,LO-HI,...}:TAG` (core numbers and
  inclusive ranges, each core at most once, not the sender): the tile is delivered to
  every core of the set along the XY tree (noc.py), and each destination receives it
  as the message (sender, destination, tag) with an ordinary RECV.
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
from typing import Sequence

from nnx.sim.isa import SPACES, TOKEN_RE, Instr, Tile, check_tile

SEND, RECV = "SEND", "RECV"
#: NoC mnemonic -> the unit type that executes it
MESH_MNEMONICS = {SEND: "DAU", RECV: "DAU"}
_UNIT_RE = re.compile(r"^DAU\d+$")
_PEER_RE = re.compile(r"^@(\d+|\{[^}]*\}):([A-Za-z_][A-Za-z0-9_.]*)$")
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


@dataclass(frozen=True, slots=True)
class MessageKey:
    """The name of a NoC message: (source core, destination core, tag)."""

    src: int
    dst: int
    tag: str

    def text(self) -> str:
        return f"core {self.src} -> core {self.dst} tag '{self.tag}'"


def noc_instr(unit: str, mnemonic: str, tile: Tile, peer: int | Sequence[int], tag: str, line: int = 0) -> Instr:
    """A SEND (`tile` is its source) or RECV (`tile` is its destination) to/from `peer`;
    a SEND to a sequence of cores is a multicast (one core in a sequence: a unicast)."""
    ins = Instr(unit, mnemonic, line=line)
    if mnemonic == SEND:
        ins.srcs.append(tile)
    else:
        ins.dsts.append(tile)
    if isinstance(peer, int):
        ins.attrs["core"] = int(peer)
    else:
        cores = tuple(int(c) for c in peer)
        ins.attrs["core"] = cores[0] if len(cores) == 1 else cores
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
    """The remote core of a unicast SEND or a RECV (the first destination of a multicast)."""
    return peers(ins)[0]


def peers(ins: Instr) -> tuple[int, ...]:
    """The remote cores of a SEND/RECV: one, or a multicast SEND's destinations in order."""
    c = ins.attrs["core"]
    return tuple(c) if isinstance(c, tuple) else (int(c),)


def is_multicast(ins: Instr) -> bool:
    return isinstance(ins.attrs.get("core"), tuple)


def tag(ins: Instr) -> str:
    return str(ins.attrs["tag"])


def message_key(ins: Instr, core: int) -> MessageKey:
    """The message a unicast SEND or a RECV of section `core` names."""
    if ins.mnemonic == SEND:
        return MessageKey(core, peer(ins), tag(ins))
    return MessageKey(peer(ins), core, tag(ins))


def message_keys(ins: Instr, core: int) -> tuple[MessageKey, ...]:
    """The messages a SEND/RECV of section `core` names: one per destination."""
    if ins.mnemonic == SEND:
        return tuple(MessageKey(core, d, tag(ins)) for d in peers(ins))
    return (message_key(ins, core),)


def _core_set(body: str) -> tuple[int, ...]:
    """`A,B,LO-HI,...` -> the cores in order of appearance; ValueError on a bad item,
    an empty range or a core named twice."""
    out: list[int] = []
    for item in body.split(","):
        m = _RANGE_RE.match(item.strip())
        if not m:
            raise ValueError(f"malformed core set item '{item.strip()}' (expected CORE or LO-HI)")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"empty core range {lo}-{hi}")
        for c in range(lo, hi + 1):
            if c in out:
                raise ValueError(f"core {c} appears twice in the core set")
            out.append(c)
    return tuple(out)


def parse_peer(text: str) -> tuple[int | tuple[int, ...], str]:
    """`@CORE:TAG` -> (core, tag), `@{A,LO-HI,...}:TAG` -> (cores, tag); raises
    ValueError with a one-line reason."""
    m = _PEER_RE.match(text.strip())
    if not m:
        raise ValueError(f"malformed remote end '{text.strip()}' (expected @CORE:TAG or @{{A,B,LO-HI}}:TAG, e.g. @3:t0)")
    who = m.group(1)
    if who.startswith("{"):
        return _core_set(who[1:-1]), m.group(2)
    return int(who), m.group(2)


def format_core_set(cores: Sequence[int]) -> str:
    """The `{...}` text of a core set: runs of consecutive cores as LO-HI."""
    parts: list[str] = []
    i = 0
    while i < len(cores):
        j = i
        while j + 1 < len(cores) and cores[j + 1] == cores[j] + 1:
            j += 1
        parts.append(str(cores[i]) if j == i else f"{cores[i]}-{cores[j]}")
        i = j + 1
    return "{" + ",".join(parts) + "}"


def format_noc(ins: Instr) -> str:
    who = format_core_set(peers(ins)) if is_multicast(ins) else str(peer(ins))
    remote = f"@{who}:{tag(ins)}"
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
    tg = tag(ins)
    if not TOKEN_RE.match(tg):
        return f"{mn}: malformed tag '{tg}'"
    if mn != SEND and is_multicast(ins):
        return "RECV takes one source core (@CORE:TAG); a core set is for a multicast SEND"
    for p in peers(ins):
        if not 0 <= p < cores:
            return f"{mn}: unknown core {p} (the mesh has cores 0..{cores - 1})"
        if p == core:
            if is_multicast(ins):
                return f"SEND: core {core} is in its own multicast set"
            return f"{mn}: core {core} cannot {'send to' if mn == SEND else 'receive from'} itself (use LOAD/STORE/MOVE)"
    return None
