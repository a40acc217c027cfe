"""The mesh assembly text: parser, printer and checks of a program for a core mesh.

A mesh program (docs/mesh.md, "Assembly"; README.md, "Mesh assembly") is a header and
one section per core; every section is a single-core program (asm.py) whose `.storage`
is the core's memory, plus the NoC instructions SEND/RECV (isa_mesh.py):

    .target nnx-mesh                 ; informative (nnx-run uses it when --target is absent)
    .mesh 2x2                        ; the mesh the program was compiled for (W x H)
    .core 0
    .storage 4096                    ; bytes of this core's memory the program uses
    .data prog.data S:0x800 2048 offset=0 crc32=0x...   ; this core's weights image
    .input  x S:0x0<8x64xf32>        ; graph input x: core 0 holds it at S:0x0
    .output y S:0x1000<8x32xf32>     ; graph output y: read from core 0 after the run
    .const  w0 S:0x800<16x32xf32>
    .text
    DAU0 SEND @3:t0 <- O:0x0<4x32xf32>
    DAU0 SEND @{1,3}:t1 <- O:0x0<4x32xf32>   ; multicast to cores 1 and 3
    .core 3
    ...
    DAU0 RECV S:0x0<4x32xf32> <- @0:t0

`.data FILE S:ADDR BYTES [offset=N] [crc32=0x...]` copies BYTES bytes of FILE from
byte N into the core's memory before the run; several cores may share one file.
A graph input may be declared on several cores (each receives a copy); a whole graph
output on exactly one. A graph input or output too big for one core is declared in
slices (docs/mesh.md, "Inputs and outputs"):

    .input  x S:0x0<1x3x10x32xf32> slice=2:6:16 of 1x3x32x32   ; rows 6..15 of x
    .output y S:0x0<1x8x8x32xf32> slice=2:8:16 of 1x8x32x32    ; rows 8..15 of y

each core loads (or writes) only its slice along AXIS, [LO, HI), of the whole tensor
of shape SHAPE in the off-chip memory. Input slices may overlap (a row window's
halo); the slices of an output must tile it exactly. Every problem is an `AsmError`
naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nnx.sim.asm import (
    AsmError,
    DataSegment,
    Program,
    Symbol,
    _LineError,
    _strip_comment,
    format_instr,
    parse_program,
    parse_tile,
    symbol_name_and_tile,
    read_text,
)
from nnx.sim.isa import Instr, Tile
from nnx.sim.isa_mesh import (
    MESH_MNEMONICS,
    SEND,
    MessageKey,
    check_noc_instr,
    format_noc,
    is_noc,
    message_keys,
    noc_instr,
    noc_tile,
    parse_peer,
)

_MESH_RE = re.compile(r"^([0-9]+)x([0-9]+)$")


def _split_comment(raw: str) -> tuple[str, str]:
    """(body, comment) of a line; the common comment-free line costs one scan."""
    if ";" not in raw:
        return raw, ""
    return _strip_comment(raw)


@dataclass(slots=True)
class CoreData(DataSegment):
    """A weights image of one core: `size` bytes of `file` from byte `file_offset`."""

    file_offset: int = 0


@dataclass(frozen=True)
class IOSlice:
    """The slice [lo, hi) along `axis` of a graph input or output of shape `shape` that
    one core loads or writes (docs/mesh.md, "Inputs and outputs")."""

    axis: int
    lo: int
    hi: int
    shape: tuple[int, ...]

    def index(self) -> tuple[slice, ...]:
        """The numpy index of the slice in the whole tensor."""
        idx = [slice(None)] * len(self.shape)
        idx[self.axis] = slice(self.lo, self.hi)
        return tuple(idx)

    def slice_shape(self) -> tuple[int, ...]:
        dims = list(self.shape)
        dims[self.axis] = self.hi - self.lo
        return tuple(dims)

    def text(self) -> str:
        return f"slice={self.axis}:{self.lo}:{self.hi} of {'x'.join(map(str, self.shape))}"


@dataclass(slots=True)
class SlicedSymbol(Symbol):
    """A `.input`/`.output` holding one slice of the graph tensor `name`."""

    slice: IOSlice | None = None


@dataclass
class CoreSection:
    """One core's program (`.core N` ... up to the next `.core`)."""

    core: int
    program: Program
    line: int = 0  # the `.core` line
    storage_line: int = 0


@dataclass
class MeshProgram:
    path: str = "<program>"
    target: str | None = None
    width: int = 1
    height: int = 1
    cores: dict[int, CoreSection] = field(default_factory=dict)
    mesh_line: int = 0

    @property
    def ncores(self) -> int:
        return self.width * self.height


# --------------------------------------------------------------------------------------
# Detection and parsing
# --------------------------------------------------------------------------------------


def is_mesh_text(text: str) -> bool:
    """True when the program's first directive (after an optional `.target`) is `.mesh`."""
    for raw in text.splitlines():
        body = _split_comment(raw)[0].strip()
        if not body:
            continue
        word = body.split()[0]
        if word == ".target":
            continue
        return word == ".mesh"
    return False


def _noc_line(body: str, line: int) -> Instr:
    """`UNIT SEND @CORE:TAG <- TILE` or `UNIT RECV TILE <- @CORE:TAG`."""
    unit, mn, rest = (body.split(None, 2) + [""])[:3]
    lhs, arrow, rhs = rest.partition("<-")
    if not arrow or not lhs.strip() or not rhs.strip():
        want = "@CORE:TAG <- TILE" if mn == SEND else "TILE <- @CORE:TAG"
        raise _LineError(f"{mn} takes '{want}'")
    remote, local = (lhs, rhs) if mn == SEND else (rhs, lhs)
    try:
        core, tag = parse_peer(remote)
    except ValueError as e:
        raise _LineError(str(e)) from None
    return noc_instr(unit, mn, parse_tile(local.strip()), core, tag, line)


def _data_line(words: list[str], line: int) -> CoreData:
    """`.data FILE S:ADDR BYTES [offset=N] [crc32=0x...]`."""
    if len(words) < 4 or len(words) > 6:
        raise _LineError(".data takes FILE S:ADDR BYTES [offset=N] [crc32=0x...]")
    m = re.match(r"^S:(0x[0-9a-fA-F]+|[0-9]+)$", words[2])
    if not m:
        raise _LineError(f".data: expected a storage address S:ADDR, got '{words[2]}'")
    opts: dict[str, int] = {}
    for w in words[4:]:
        k, eq, v = w.partition("=")
        if not eq or k not in ("offset", "crc32") or k in opts:
            raise _LineError(f".data: unexpected '{w}'")
        try:
            opts[k] = int(v, 0)
        except ValueError:
            raise _LineError(f".data: {k}: expected an integer, got '{v}'") from None
    try:
        size = int(words[3], 0)
    except ValueError:
        raise _LineError(f".data size: expected an integer, got '{words[3]}'") from None
    if size < 0 or opts.get("offset", 0) < 0:
        raise _LineError(".data: size and offset must not be negative")
    return CoreData(words[1], int(m.group(1), 0), size, opts.get("crc32"), line, opts.get("offset", 0))


_SLICE_RE = re.compile(r"^slice=([0-9]+):([0-9]+):([0-9]+)$")
_SHAPE_RE = re.compile(r"^[0-9]+(x[0-9]+)*$")


def _sliced_symbol(words: list[str], line: int) -> SlicedSymbol:
    """`.input|.output NAME TILE slice=AXIS:LO:HI of SHAPE`."""
    kw = words[0]
    if len(words) != 6 or words[4] != "of":
        raise _LineError(f"{kw} takes NAME TILE [slice=AXIS:LO:HI of SHAPE]")
    name, tile = symbol_name_and_tile(kw, words[1], words[2])
    m = _SLICE_RE.match(words[3])
    if not m:
        raise _LineError(f"{kw} {name}: expected slice=AXIS:LO:HI, got '{words[3]}'")
    if not _SHAPE_RE.match(words[5]):
        raise _LineError(f"{kw} {name}: expected the whole tensor's shape DxDx..., got '{words[5]}'")
    axis, lo, hi = (int(g) for g in m.groups())
    shape = tuple(int(d) for d in words[5].split("x"))
    if axis >= len(shape):
        raise _LineError(f"{kw} {name}: slice axis {axis} is not an axis of {words[5]}")
    if not 0 <= lo < hi <= shape[axis]:
        raise _LineError(f"{kw} {name}: slice {lo}:{hi} is not a non-empty range within 0:{shape[axis]} of axis {axis}")
    sl = IOSlice(axis, lo, hi, shape)
    if tile.shape != sl.slice_shape():
        raise _LineError(f"{kw} {name}: tile shape {'x'.join(map(str, tile.shape))} is not the slice's "
                         f"{'x'.join(map(str, sl.slice_shape()))}")
    return SlicedSymbol(name, tile, line, sl)


def _parse_section(lines: list[str], first: int, core: int, ncores: int, path: str) -> CoreSection:
    """The section whose `.core` line is file line `first` and whose body is `lines`."""
    kept: list[str] = []
    noc: list[Instr] = []
    data: list[CoreData] = []
    sliced: dict[str, list[SlicedSymbol]] = {".input": [], ".output": []}
    in_text = False
    storage_line = 0
    for i, raw in enumerate(lines):
        lineno = first + 1 + i
        body, comment = _split_comment(raw)
        words = body.split()
        try:
            if words and words[0] == ".text":
                in_text = True
            elif words and words[0] == ".storage":
                storage_line = lineno
            if len(words) >= 2 and not words[0].startswith(".") and words[1] in MESH_MNEMONICS:
                if not in_text:
                    raise _LineError(f"{words[1]} before .text")
                ins = _noc_line(body.strip(), lineno)
                ins.comment = comment
                err = check_noc_instr(ins, core, ncores)
                if err:
                    raise _LineError(err)
                noc.append(ins)
                kept.append("")
                continue
            if words and words[0] == ".data":
                if in_text:
                    raise _LineError("directive .data after .text")
                data.append(_data_line(words, lineno))
                kept.append("")
                continue
            if len(words) > 3 and words[0] in sliced:
                if in_text:
                    raise _LineError(f"directive {words[0]} after .text")
                sym = _sliced_symbol(words, lineno)
                for prev in sliced[words[0]]:
                    if prev.name == sym.name and prev.slice == sym.slice:
                        raise _LineError(f"{words[0]} {sym.name} {sym.slice.text()} already declared on line {prev.line}")
                sliced[words[0]].append(sym)
                kept.append("")
                continue
        except _LineError as e:
            raise AsmError(path, lineno, str(e)) from None
        kept.append(raw)
    try:
        prog = parse_program("\n".join(kept), path)
    except AsmError as e:
        if e.line:
            raise AsmError(path, e.line + first, e.msg) from None
        raise AsmError(path, first, f"core {core}: {e.msg}") from None
    for ins in prog.instrs:
        ins.line += first
    for sym in prog.inputs + prog.outputs + prog.consts:
        sym.line += first
    for sym in sliced[".input"] + sliced[".output"]:
        if sym.tile.end > prog.storage_bytes:
            raise AsmError(path, sym.line, f"'{sym.name}' ends at byte {sym.tile.end}, beyond .storage {prog.storage_bytes}")
    if sliced[".input"]:
        prog.inputs = sorted(prog.inputs + sliced[".input"], key=lambda x: x.line)
    if sliced[".output"]:
        prog.outputs = sorted(prog.outputs + sliced[".output"], key=lambda x: x.line)
    for seg in data:
        if seg.addr + seg.size > prog.storage_bytes:
            raise AsmError(path, seg.line, f".data ends at byte {seg.addr + seg.size}, beyond .storage {prog.storage_bytes}")
    for ins in noc:
        t = noc_tile(ins)
        if t.space == "S" and t.end > prog.storage_bytes:
            raise AsmError(path, ins.line, f"tile {t.text()} ends at byte {t.end}, beyond .storage {prog.storage_bytes}")
    prog.data = list(data)
    if noc:
        prog.instrs = sorted(prog.instrs + noc, key=lambda x: x.line)
    prog.path = path
    return CoreSection(core, prog, first, storage_line)


def parse_mesh_program(text: str, path: str = "<program>") -> MeshProgram:
    """Assemble a mesh program; raises AsmError(path, line, msg)."""
    mp = MeshProgram(path=path)
    lines = text.splitlines()
    starts: list[tuple[int, int]] = []  # (index of the .core line, core)
    seen: dict[int, int] = {}
    for idx, raw in enumerate(lines):
        lineno = idx + 1
        body = _split_comment(raw)[0].strip()
        if not body:
            continue
        words = body.split()
        if words[0] == ".core":
            if mp.mesh_line == 0:
                raise AsmError(path, lineno, "missing '.mesh WxH' before the first .core")
            if len(words) != 2 or not words[1].isdigit():
                raise AsmError(path, lineno, ".core takes one core number")
            c = int(words[1])
            if c >= mp.ncores:
                raise AsmError(path, lineno, f"unknown core {c} (the {mp.width}x{mp.height} mesh has cores 0..{mp.ncores - 1})")
            if c in seen:
                raise AsmError(path, lineno, f"core {c} already has a section (line {seen[c]})")
            seen[c] = lineno
            starts.append((idx, c))
        elif not starts:
            if words[0] == ".target":
                if len(words) != 2:
                    raise AsmError(path, lineno, ".target takes one name")
                mp.target = words[1]
            elif words[0] == ".mesh":
                m = _MESH_RE.match(words[1]) if len(words) == 2 else None
                if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
                    raise AsmError(path, lineno, ".mesh takes WxH, e.g. .mesh 16x16")
                if mp.mesh_line:
                    raise AsmError(path, lineno, f".mesh already given on line {mp.mesh_line}")
                mp.width, mp.height, mp.mesh_line = int(m.group(1)), int(m.group(2)), lineno
            else:
                raise AsmError(path, lineno, f"'{words[0]}' before the first '.core N' section")
    if mp.mesh_line == 0:
        raise AsmError(path, 0, "missing '.mesh WxH' directive")
    if not starts:
        raise AsmError(path, mp.mesh_line, "the mesh program has no '.core N' section")
    for k, (idx, c) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        mp.cores[c] = _parse_section(lines[idx + 1 : end], idx + 1, c, mp.ncores, path)
    mp.cores = dict(sorted(mp.cores.items()))
    _check_symbols(mp)
    _check_pairs(mp)
    return mp


def read_mesh_program(path: str) -> MeshProgram:
    return parse_mesh_program(read_text(path), path)


def io_slice(sym: Symbol) -> IOSlice | None:
    """The slice a `.input`/`.output` symbol holds (None: the whole tensor)."""
    return sym.slice if isinstance(sym, SlicedSymbol) else None


def whole_shape(sym: Symbol) -> tuple[int, ...]:
    """The shape of the whole graph tensor a symbol holds (a slice of)."""
    sl = io_slice(sym)
    return sl.shape if sl is not None else sym.tile.shape


def _check_symbols(mp: MeshProgram) -> None:
    """A whole graph output lives on one core, a sliced one is tiled exactly by its
    slices; a graph input has one shape and type on every core (whole or sliced)."""
    outs: dict[str, list[tuple[int, Symbol]]] = {}
    ins: dict[str, tuple[int, Symbol]] = {}
    for c, sec in mp.cores.items():
        for s in sec.program.outputs:
            outs.setdefault(s.name, []).append((c, s))
        for s in sec.program.inputs:
            prev = ins.get(s.name)
            if prev is not None and (whole_shape(prev[1]), prev[1].tile.dtype) != (whole_shape(s), s.tile.dtype):
                raise AsmError(mp.path, s.line, f".input {s.name} has another shape or type on core {prev[0]} (line {prev[1].line})")
            ins.setdefault(s.name, (c, s))
    for name, held in outs.items():
        c0, s0 = held[0]
        for c, s in held[1:]:
            if io_slice(s) is None or io_slice(s0) is None:
                raise AsmError(mp.path, s.line, f".output {name} is already held by core {c0} (line {s0.line})")
            if (io_slice(s).shape, io_slice(s).axis, s.tile.dtype) != (io_slice(s0).shape, io_slice(s0).axis, s0.tile.dtype):
                raise AsmError(mp.path, s.line, f".output {name}: slice of another shape, axis or type than on core {c0} (line {s0.line})")
        if io_slice(s0) is not None:
            _check_tiling(mp.path, name, held)


def _check_tiling(path: str, name: str, held: list[tuple[int, Symbol]]) -> None:
    """The slices of output `name` cover its axis exactly: no gap, no overlap."""
    pieces = sorted(held, key=lambda cs: (cs[1].slice.lo, cs[1].slice.hi))
    sl0 = pieces[0][1].slice
    at, prev = 0, None
    for c, s in pieces:
        sl = s.slice
        if sl.lo < at:
            pc, ps = prev
            raise AsmError(path, max(s.line, ps.line), f".output {name}: slice {sl.lo}:{sl.hi} (core {c}, line {s.line}) "
                           f"overlaps slice {ps.slice.lo}:{ps.slice.hi} (core {pc}, line {ps.line}) along axis {sl.axis}")
        if sl.lo > at:
            raise AsmError(path, s.line, f".output {name}: no core writes {at}:{sl.lo} along axis {sl.axis} "
                           f"of {'x'.join(map(str, sl.shape))}")
        at, prev = sl.hi, (c, s)
    if at < sl0.shape[sl0.axis]:
        c, s = prev
        raise AsmError(path, s.line, f".output {name}: no core writes {at}:{sl0.shape[sl0.axis]} along axis "
                       f"{sl0.axis} of {'x'.join(map(str, sl0.shape))}")


def _describe(t: Tile) -> str:
    return f"{t.nelems} x {t.dtype}"


def _check_pairs(mp: MeshProgram) -> None:
    """Every SEND has its RECV (k-th with k-th per message name; a multicast SEND is
    one SEND of each of its destinations' names), of the same size and type."""
    sends: dict[MessageKey, list[Instr]] = {}
    recvs: dict[MessageKey, list[Instr]] = {}
    for c, sec in mp.cores.items():
        for ins in sec.program.instrs:
            if is_noc(ins):
                for key in message_keys(ins, c):
                    (sends if ins.mnemonic == SEND else recvs).setdefault(key, []).append(ins)
    problems: list[tuple[int, str]] = []
    for key in set(sends) | set(recvs):
        ss, rr = sends.get(key, []), recvs.get(key, [])
        for s, r in zip(ss, rr):
            ts, tr = noc_tile(s), noc_tile(r)
            if (ts.nelems, ts.dtype) != (tr.nelems, tr.dtype):
                problems.append((r.line, f"RECV of {key.text()} takes {_describe(tr)}, the matching SEND (line {s.line}) sends {_describe(ts)}"))
        for s in ss[len(rr):]:
            why = "" if key.dst in mp.cores else f" (core {key.dst} has no .core section)"
            problems.append((s.line, f"SEND of {key.text()} has no matching RECV on core {key.dst}{why}"))
        for r in rr[len(ss):]:
            why = "" if key.src in mp.cores else f" (core {key.src} has no .core section)"
            problems.append((r.line, f"RECV of {key.text()} has no matching SEND on core {key.src}{why}"))
    if problems:
        line, msg = min(problems)
        raise AsmError(mp.path, line, msg)


# --------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------


def format_mesh_program(mp: MeshProgram) -> str:
    """The text of a mesh program (parse_mesh_program reads it back)."""
    out = ["; nnx mesh assembly (README.md, \"Mesh assembly\")"]
    if mp.target:
        out.append(f".target {mp.target}")
    out.append(f".mesh {mp.width}x{mp.height}")
    for c, sec in sorted(mp.cores.items()):
        p = sec.program
        out.append(f".core {c}")
        out.append(f".storage {p.storage_bytes}")
        for seg in p.data:
            off = getattr(seg, "file_offset", 0)
            extra = f" offset={off}" if off else ""
            if seg.crc32 is not None:
                extra += f" crc32=0x{seg.crc32:08x}"
            out.append(f".data {seg.file} S:0x{seg.addr:x} {seg.size}{extra}")
        for kw, syms in ((".input", p.inputs), (".output", p.outputs), (".const", p.consts)):
            for s in syms:
                sl = io_slice(s) if kw != ".const" else None
                out.append(f"{kw} {s.name} {s.tile.text()}" + (f" {sl.text()}" if sl is not None else ""))
        out.append(".text")
        out.extend(format_noc(i) if is_noc(i) else format_instr(i) for i in p.instrs)
    return "\n".join(out) + "\n"
