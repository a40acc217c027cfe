"""Assembler/printer of the nnx assembly text: round trips and file:line diagnostics."""

from __future__ import annotations

import pytest

from nnx.sim.asm import AsmError, format_instr, format_program, parse_instr, parse_program
from nnx.sim.isa import Instr, Tile

PROG = """\
; header comment
.target nnx-default
.storage 65536
.data p.data S:0x1000 64 crc32=0x1
.input x S:0x0<8x64xf32>
.output y S:0x2000<8x32xf32>
.const w S:0x1000<4x4xf32>
.text
DAU0 LOAD N:0x0<4x64xf32> <- S:0x0<4x64xf32>[64,1]   ; strided gather
DAU0 SIGNAL ld0
MPU0 WAIT ld0
MPU0 MatMul O:0x0<4x32xf32> <- N:0x0<4x64xf32>, W:0x0<64x32xf32>, acc
MPU0 Conv O:0x0<1x8x4x4xf32> <- N:0x0<1x3x6x6xf32>, W:0x0<8x3x3x3xf32>, none, {pads=[0,0,0,0], strides=[1,1], auto_pad="NOTSET"}, wmask=W:0x400<8x3x3x3xui8>
VPU0 Split O:0x0<2x32xf32>, O:0x100<2x32xf32> <- O:0x200<4x32xf32>, {axis=0}
VPU0 FILL O:0x0<4x32xf32> <- {value=-Infinity}
MAP0 CONN N:0x800<4x64xi32> <- N:0x0<4x64xf32>, {threshold=0.5}
MAP0 COMBINE N:0x1800<4x64xui8> <- N:0x800<4x64xi32>, W:0x0<64xui8>
MAP0 EXPAND W:0x0<4x64xf32> <- W:0x1000<256xf32>, N:0x1800<4x64xui8>
"""


def test_parse_and_round_trip():
    p = parse_program(PROG, "t.s")
    assert p.storage_bytes == 65536 and p.target == "nnx-default"
    assert [s.name for s in p.inputs] == ["x"] and p.data[0].addr == 0x1000
    assert len(p.instrs) == 10
    ld = p.instrs[0]
    assert ld.srcs[0] == Tile("S", 0, (4, 64), "f32", (64, 1)) and ld.comment == "strided gather"
    conv = p.instrs[4]
    assert conv.srcs[2] is None and conv.attrs["auto_pad"] == "NOTSET" and conv.opts["wmask"].dtype == "ui8"
    assert p.instrs[5].dsts[1].offset == 0x100
    assert p.instrs[6].attrs["value"] == float("-inf")
    text = format_program(p)
    q = parse_program(text, "t2.s")
    assert [format_instr(i) for i in q.instrs] == [format_instr(i) for i in p.instrs]
    assert format_program(q) == text


def test_instr_builder_round_trip():
    ins = Instr("VPU0", "Softmax", [Tile("O", 64, (2, 8), "f32")], [Tile("O", 0, (2, 8), "f32")], {"axis": -1})
    assert format_instr(parse_instr(format_instr(ins))) == format_instr(ins)


BAD = [
    ("DAU0 LOAD N:0x0<4xf32>", "LOAD takes 1 source(s), got 0"),
    ("DAU0 LOAD N:0x0<4xf32> <- S:0x0<8xf32>", "shapes differ"),
    ("DAU0 LOAD N:0x0<4xf32> <- N:0x10<4xf32>", "LOAD moves storage (S) -> cache"),
    ("MPU0 LOAD N:0x0<4xf32> <- S:0x0<4xf32>", "LOAD runs on a DAU unit, not on MPU0"),
    ("XPU0 Relu O:0x0<4xf32> <- O:0x0<4xf32>", "unknown unit 'XPU0'"),
    ("VPU0 Relu O:0x2<4xf32> <- O:0x0<4xf32>", "not aligned"),
    ("VPU0 Relu Q:0x0<4xf32> <- O:0x0<4xf32>", "unknown address space 'Q'"),
    ("VPU0 Relu O:0x0<4xf33> <- O:0x0<4xf32>", "unknown element type 'f33'"),
    ("VPU0 Relu O:0x0<4xf32 <- O:0x0<4xf32>", "missing '>'"),
    ("VPU0 Relu O:0x0<4xf32> <- S:0x0<4xf32>", "must be in a cache"),
    ("VPU0 Relu O:0x0<4xf32> <- O:0x0<4xf32>, {axis=}", "malformed value"),
    ("VPU0 Relu O:0x0<4xf32> <- O:0x0<4xf32>, {axis=1", "missing '}'"),
    ("VPU0 relu O:0x0<4xf32> <- O:0x0<4xf32>", "unknown mnemonic 'relu'"),
    ("MPU0 MatMul O:0x0<4x4xf32> <- N:0x0<4x4xf32>", "needs a neuron and a weight source"),
    ("MPU0 MatMul O:0x0<4x4xf32> <- N:0x0<4x4xf32>, W:0x0<4x4xf32>, wmask=W:0x100<4x4xf32>", "direct-index"),
    ("MPU0 MatMul O:0x0<4x4xf32> <- N:0x0<4x4xf32>, W:0x0<4x4xf32>, bogus", "unknown option 'bogus'"),
    ("MAP0 CONN N:0x0<5xf32> <- N:0x100<4xf32>, {threshold=0.0}", "must be a direct"),
    ("MAP0 CONN N:0x0<4xui8> <- N:0x100<4xf32>", "threshold"),
    ("MAP0 CONVERT N:0x0<4xui8> <- N:0x100<4xui8>", "same index form"),
    ("DAU0 SIGNAL", "SIGNAL takes one token name"),
    ("DAU0 WAIT a b", "WAIT takes one token name"),
    ("VPU0 FILL O:0x0<4xf32> <- {value=\"x\"}", "numeric parameter 'value'"),
    ("DAU0", "expected 'UNIT MNEMONIC operands'"),
]


@pytest.mark.parametrize("line,msg", BAD)
def test_bad_instruction_lines(line, msg):
    text = ".storage 64\n.text\n" + line + "\n"
    with pytest.raises(AsmError) as e:
        parse_program(text, "bad.s")
    s = str(e.value)
    assert s.startswith("bad.s:3: error: ") and "\n" not in s
    assert msg in s


@pytest.mark.parametrize(
    "text,lineno,msg",
    [
        (".text\n", 0, "missing '.storage BYTES'"),
        (".storage 64\n.bogus 1\n", 2, "unknown directive '.bogus'"),
        (".storage 64\n.input x N:0x0<4xf32>\n", 2, "must live in storage"),
        (".storage 64\n.input x S:0x0<4xf32>\n.input x S:0x10<4xf32>\n", 3, "already declared on line 2"),
        (".storage 16\n.output y S:0x0<8xf32>\n", 2, "beyond .storage 16"),
        (".storage 16\n.text\nDAU0 LOAD N:0x0<8xf32> <- S:0x0<8xf32>\n", 3, "beyond .storage 16"),
        (".storage 64\n.text\n.storage 5\n", 3, "directive .storage after .text"),
        (".storage x\n", 1, "expected an integer"),
    ],
)
def test_bad_directives(text, lineno, msg):
    with pytest.raises(AsmError) as e:
        parse_program(text, "d.s")
    assert e.value.line == lineno and msg in str(e.value)
