"""The nnx assembly text: printer and assembler (parser) with `file:line` diagnostics.

One instruction per line (README.md ("The accelerator") has the full reference):

    ; comment
    .target nnx-default                      ; informative
    .storage 69632                           ; bytes of the storage unit the program uses
    .data prog.data S:0x1000 65536 crc32=0x1234abcd   ; storage image beside the program
    .input  x  S:0x0<4x64xf32>
    .output y  S:0x11000<4x64xf32>
    .const  w0 S:0x1000<64x64xf32>           ; a symbol inside the .data image
    .text
    DAU0 LOAD   N:0x0<4x64xf32> <- S:0x0<4x64xf32>
    DAU0 SIGNAL x_ready
    MPU0 WAIT   x_ready
    MPU0 MatMul O:0x0<4x64xf32> <- N:0x0<4x64xf32>, W:0x0<64x64xf32>, acc
    VPU0 Relu   O:0x0<4x64xf32> <- O:0x0<4x64xf32>
    MPU0 Conv   O:0x0<1x8x4x4xf32> <- N:0x0<1x3x6x6xf32>, W:0x0<8x3x3x3xf32>, none, {pads=[0,0,0,0], strides=[1,1]}, wmask=W:0x400<8x3x3x3xi1>

Operands: destinations, `<-`, sources (`none` for an absent optional ONNX input), then
`{...}` parameters (ONNX attributes; values in JSON), `key=TILE` options and flags.
A tile is `SPACE:ADDR<DIMSxTYPE>` with an optional `[STRIDES]` in elements.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from nnx.sim.isa import DTYPES, FIXED, SYNC, Instr, Tile, check_instr, check_tile


class AsmError(Exception):
    """`file:line: error: message` for a malformed program."""

    def __init__(self, path: str, line: int, msg: str):
        self.path, self.line, self.msg = path, line, msg
        super().__init__(f"{path}:{line}: error: {msg}" if line else f"{path}: error: {msg}")


@dataclass(slots=True)
class Symbol:
    name: str
    tile: Tile
    line: int = 0


@dataclass(slots=True)
class DataSegment:
    """A storage image: the raw little-endian bytes of `file` go to storage at `addr`."""

    file: str
    addr: int
    size: int
    crc32: int | None = None
    line: int = 0


@dataclass
class Program:
    path: str = "<program>"
    target: str | None = None
    storage_bytes: int = 0
    data: list[DataSegment] = field(default_factory=list)
    inputs: list[Symbol] = field(default_factory=list)
    outputs: list[Symbol] = field(default_factory=list)
    consts: list[Symbol] = field(default_factory=list)
    instrs: list[Instr] = field(default_factory=list)

    def data_path(self, seg: DataSegment) -> str:
        return os.path.join(os.path.dirname(os.path.abspath(self.path)), seg.file)


# --------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------


def format_value(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"))


def format_instr(ins: Instr) -> str:
    head = f"{ins.unit} {ins.mnemonic:<7}"
    if ins.mnemonic in SYNC:
        body = str(ins.token)
    else:
        parts = [", ".join("none" if t is None else t.text() for t in ins.dsts)]
        rest: list[str] = ["none" if t is None else t.text() for t in ins.srcs]
        if ins.attrs:
            rest.append(
                "{" + ", ".join(f"{k}={format_value(v)}" for k, v in ins.attrs.items()) + "}"
            )
        for k, v in ins.opts.items():
            rest.append(k if v is True else f"{k}={v.text() if isinstance(v, Tile) else format_value(v)}")
        body = parts[0]
        if rest:
            body += " <- " + ", ".join(rest)
    s = f"{head} {body}"
    if ins.comment:
        s += f"  ; {ins.comment}"
    return s


def format_program(prog: Program) -> str:
    out = ["; nnx assembly (README.md, \"The accelerator\")"]
    if prog.target:
        out.append(f".target {prog.target}")
    out.append(f".storage {prog.storage_bytes}")
    for seg in prog.data:
        crc = f" crc32=0x{seg.crc32:08x}" if seg.crc32 is not None else ""
        out.append(f".data {seg.file} S:0x{seg.addr:x} {seg.size}{crc}")
    for kw, syms in ((".input", prog.inputs), (".output", prog.outputs), (".const", prog.consts)):
        for s in syms:
            out.append(f"{kw} {s.name} {s.tile.text()}")
    out.append(".text")
    out.extend(format_instr(i) for i in prog.instrs)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------

_TILE_RE = re.compile(
    r"^([A-Z]):(0x[0-9a-fA-F]+|[0-9]+)<((?:[0-9]+x)*)([a-z][a-z0-9]*)>(?:\[([0-9,\s]*)\])?$"
)
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPEN = {"<": ">", "[": "]", "{": "}", "(": ")"}


class _LineError(Exception):
    pass


def symbol_name_and_tile(kw: str, name: str, tile_text: str) -> tuple[str, Tile]:
    """The checked NAME and TILE of a `.input`/`.output`/`.const` line: a well-formed
    name and a dense tile in storage (S); else a line error."""
    if not _NAME_RE.match(name):
        raise _LineError(f"{kw}: malformed name '{name}'")
    tile = parse_tile(tile_text)
    if tile.space != "S":
        raise _LineError(f"{kw} {name}: must live in storage (S), not {tile.space}")
    if not tile.contiguous:
        raise _LineError(f"{kw} {name}: must be a dense tile")
    return name, tile


def parse_tile(text: str) -> Tile:
    m = _TILE_RE.match(text.strip())
    if not m:
        raise _LineError(f"malformed tile '{text.strip()}' (expected SPACE:ADDR<DIMSxTYPE>[STRIDES])")
    space, addr, dims, dtype, strides = m.groups()
    if dtype not in DTYPES:
        raise _LineError(f"unknown element type '{dtype}' in '{text.strip()}'")
    shape = tuple(int(d) for d in dims.split("x") if d)
    st = None
    if strides is not None:
        try:
            st = tuple(int(s) for s in strides.split(","))
        except ValueError:
            raise _LineError(f"malformed strides in '{text.strip()}'") from None
    t = Tile(space, int(addr, 0), shape, dtype, st)
    err = check_tile(t, f"tile '{text.strip()}'")
    if err:
        raise _LineError(err)
    return t


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside brackets, quotes; brackets must balance."""
    parts: list[str] = []
    depth: list[str] = []
    cur: list[str] = []
    i, n = 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            cur.append(c)
            if c == "\\" and i + 1 < n:
                cur.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            cur.append(c)
        elif c in _OPEN and not (c == "<" and i + 1 < n and text[i + 1] == "-"):
            depth.append(_OPEN[c])
            cur.append(c)
        elif depth and c == depth[-1]:
            depth.pop()
            cur.append(c)
        elif c in ">]})" and not depth:
            raise _LineError(f"unbalanced '{c}'")
        elif c == sep and not depth:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    if in_str:
        raise _LineError("unterminated string")
    if depth:
        raise _LineError(f"missing '{depth[-1]}'")
    parts.append("".join(cur))
    return parts


def _find_arrow(text: str) -> int:
    depth = 0
    in_str = False
    for i, c in enumerate(text):
        if c == '"':
            in_str = not in_str
        elif in_str:
            continue
        elif c == "<" and text[i + 1 : i + 2] == "-" and depth == 0:
            return i
        elif c in "<[{(":
            depth += 1
        elif c in ">]})":
            depth -= 1
    return -1


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise _LineError(f"malformed value '{text}' (numbers, \"strings\" and [lists] only)") from None


def _parse_attrs(text: str) -> dict[str, Any]:
    inner = text.strip()[1:-1].strip()
    out: dict[str, Any] = {}
    if not inner:
        return out
    for item in _split_top(inner):
        k, eq, v = item.partition("=")
        k = k.strip()
        if not eq or not _KEY_RE.match(k):
            raise _LineError(f"malformed parameter '{item.strip()}' (expected name=value)")
        if k in out:
            raise _LineError(f"parameter '{k}' given twice")
        out[k] = _parse_value(v.strip())
    return out


def parse_instr(text: str, line: int = 0) -> Instr:
    """One instruction (no comment); raises _LineError."""
    head = text.split(None, 2)
    if len(head) < 2:
        raise _LineError(f"expected 'UNIT MNEMONIC operands', got '{text.strip()}'")
    unit, mnemonic = head[0], head[1]
    rest = head[2].strip() if len(head) > 2 else ""
    ins = Instr(unit, mnemonic, line=line)
    if mnemonic in SYNC:
        if not rest or len(rest.split()) != 1:
            raise _LineError(f"{mnemonic} takes one token name")
        ins.token = rest
    else:
        if mnemonic not in FIXED and not re.match(r"^[A-Z][A-Za-z0-9]*$", mnemonic):
            raise _LineError(f"unknown mnemonic '{mnemonic}'")
        arrow = _find_arrow(rest)
        dst_text, src_text = (rest, "") if arrow < 0 else (rest[:arrow], rest[arrow + 2 :])
        if dst_text.strip():
            for item in _split_top(dst_text):
                item = item.strip()
                if not item:
                    raise _LineError("empty destination operand")
                if item.startswith("{") and arrow < 0:
                    ins.attrs.update(_parse_attrs(item))
                else:
                    ins.dsts.append(None if item == "none" else parse_tile(item))
        if arrow >= 0:
            if not src_text.strip():
                raise _LineError("nothing after '<-'")
            for item in _split_top(src_text):
                item = item.strip()
                if not item:
                    raise _LineError("empty source operand")
                if item == "none":
                    ins.srcs.append(None)
                elif item.startswith("{"):
                    for k, v in _parse_attrs(item).items():
                        if k in ins.attrs:
                            raise _LineError(f"parameter '{k}' given twice")
                        ins.attrs[k] = v
                elif ":" in item.split("=", 1)[0] and "<" in item:
                    if ins.attrs or ins.opts:
                        raise _LineError(f"source '{item}' after parameters/options")
                    ins.srcs.append(parse_tile(item))
                elif "=" in item:
                    k, _, v = item.partition("=")
                    k, v = k.strip(), v.strip()
                    if not _KEY_RE.match(k):
                        raise _LineError(f"malformed option '{item}'")
                    ins.opts[k] = parse_tile(v) if ":" in v and "<" in v else _parse_value(v)
                elif _KEY_RE.match(item):
                    ins.opts[item] = True
                else:
                    raise _LineError(f"malformed operand '{item}'")
    err = check_instr(ins)
    if err:
        raise _LineError(err)
    return ins


def _strip_comment(raw: str) -> tuple[str, str]:
    in_str = False
    for i, c in enumerate(raw):
        if c == '"':
            in_str = not in_str
        elif c == ";" and not in_str:
            return raw[:i], raw[i + 1 :].strip()
    return raw, ""


def _int(text: str, what: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise _LineError(f"{what}: expected an integer, got '{text}'") from None
    if v < 0:
        raise _LineError(f"{what}: must not be negative")
    return v


def parse_program(text: str, path: str = "<program>") -> Program:
    """Assemble a program text; raises AsmError(path, line, msg)."""
    prog = Program(path=path)
    seen_storage = False
    in_text = False
    names: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        body, comment = _strip_comment(raw)
        body = body.strip()
        if not body:
            continue
        try:
            if body.startswith("."):
                words = body.split()
                kw = words[0]
                if kw == ".text":
                    if len(words) != 1:
                        raise _LineError(".text takes no operands")
                    in_text = True
                    continue
                if in_text:
                    raise _LineError(f"directive {kw} after .text")
                if kw == ".target":
                    if len(words) != 2:
                        raise _LineError(".target takes one name")
                    prog.target = words[1]
                elif kw == ".storage":
                    if len(words) != 2:
                        raise _LineError(".storage takes one byte count")
                    prog.storage_bytes = _int(words[1], ".storage")
                    seen_storage = True
                elif kw == ".data":
                    if len(words) not in (4, 5):
                        raise _LineError(".data takes FILE S:ADDR BYTES [crc32=0x...]")
                    m = re.match(r"^S:(0x[0-9a-fA-F]+|[0-9]+)$", words[2])
                    if not m:
                        raise _LineError(f".data: expected a storage address S:ADDR, got '{words[2]}'")
                    crc = None
                    if len(words) == 5:
                        if not words[4].startswith("crc32="):
                            raise _LineError(f".data: unexpected '{words[4]}'")
                        crc = _int(words[4][6:], "crc32")
                    prog.data.append(
                        DataSegment(words[1], int(m.group(1), 0), _int(words[3], ".data size"), crc, lineno)
                    )
                elif kw in (".input", ".output", ".const"):
                    if len(words) != 3:
                        raise _LineError(f"{kw} takes NAME TILE")
                    name, tile = symbol_name_and_tile(kw, words[1], words[2])
                    key = f"{kw}:{name}"
                    if key in names:
                        raise _LineError(f"{kw} {name} already declared on line {names[key]}")
                    names[key] = lineno
                    {".input": prog.inputs, ".output": prog.outputs, ".const": prog.consts}[kw].append(
                        Symbol(name, tile, lineno)
                    )
                else:
                    raise _LineError(f"unknown directive '{kw}'")
            else:
                ins = parse_instr(body, lineno)
                ins.comment = comment
                prog.instrs.append(ins)
        except _LineError as e:
            raise AsmError(path, lineno, str(e)) from None
    if not seen_storage:
        raise AsmError(path, 0, "missing '.storage BYTES' directive")
    for sym in prog.inputs + prog.outputs + prog.consts:
        if sym.tile.end > prog.storage_bytes:
            raise AsmError(path, sym.line, f"'{sym.name}' ends at byte {sym.tile.end}, beyond .storage {prog.storage_bytes}")
    for seg in prog.data:
        if seg.addr + seg.size > prog.storage_bytes:
            raise AsmError(path, seg.line, f".data ends at byte {seg.addr + seg.size}, beyond .storage {prog.storage_bytes}")
    for ins in prog.instrs:
        for t in ins.tiles():
            if t.space == "S" and t.end > prog.storage_bytes:
                raise AsmError(
                    path, ins.line, f"tile {t.text()} ends at byte {t.end}, beyond .storage {prog.storage_bytes}"
                )
    return prog


def read_text(path: str) -> str:
    """The text of an assembly file; an unreadable or binary file is an AsmError."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise AsmError(path, 0, f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise AsmError(path, 0, "not a text file") from None


def read_program(path: str) -> Program:
    return parse_program(read_text(path), path)


def crc32_of(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF
