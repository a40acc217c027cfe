"""The mesh assembly (nnx/sim/asm_mesh.py, nnx/sim/isa_mesh.py): round trip through the
printer, and one clear line with the line number for every malformed program."""

from __future__ import annotations

import pytest

from nnx.sim.asm import AsmError
from nnx.sim.asm_mesh import format_mesh_program, is_mesh_text, parse_mesh_program
from nnx.sim.isa_mesh import MessageKey, message_key

GOOD = """; two cores
.target nnx-mesh
.mesh 2x2
.core 3
.storage 256
.output y S:0x0<4x16xf32>
.text
DAU0 RECV S:0x0<4x16xf32> <- @0:t0   ; from core 0
.core 0
.storage 4096
.data prog.data S:0x800 2048 offset=64 crc32=0x0000abcd
.input x S:0x0<4x16xf32>
.const w S:0x800<16x32xf32>
.text
DAU0 LOAD N:0x0<4x16xf32> <- S:0x0<4x16xf32>
DAU0 SIGNAL ld
DAU1 WAIT ld
DAU1 SEND @3:t0 <- N:0x0<4x16xf32>
"""


def test_parse_and_round_trip():
    mp = parse_mesh_program(GOOD, "p.s")
    assert (mp.width, mp.height, mp.target) == (2, 2, "nnx-mesh")
    assert list(mp.cores) == [0, 3]  # sorted by core
    c0 = mp.cores[0].program
    assert [i.mnemonic for i in c0.instrs] == ["LOAD", "SIGNAL", "WAIT", "SEND"]
    send = c0.instrs[3]
    assert send.line == 18 and message_key(send, 0) == MessageKey(0, 3, "t0")
    assert c0.data[0].file_offset == 64 and c0.data[0].crc32 == 0xABCD and c0.data[0].line == 11
    assert c0.inputs[0].line == 12
    recv = mp.cores[3].program.instrs[0]
    assert recv.line == 8 and recv.comment == "from core 0"
    again = parse_mesh_program(format_mesh_program(mp), "q.s")
    assert format_mesh_program(again) == format_mesh_program(mp)
    assert [i.mnemonic for i in again.cores[0].program.instrs] == ["LOAD", "SIGNAL", "WAIT", "SEND"]


def test_detection():
    assert is_mesh_text(GOOD)
    assert not is_mesh_text(".storage 64\n.text\n")
    assert not is_mesh_text("")


def _lines(*body: str) -> str:
    return "\n".join(body) + "\n"


BAD = [
    # unknown core in a section header
    (_lines(".mesh 2x2", ".core 4", ".storage 4", ".text"),
     "p.s:2: error: unknown core 4 (the 2x2 mesh has cores 0..3)"),
    # a duplicated core section
    (_lines(".mesh 2x2", ".core 1", ".storage 4", ".text", ".core 1", ".storage 4", ".text"),
     "p.s:5: error: core 1 already has a section (line 2)"),
    # SEND to a core outside the mesh
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".text", "DAU0 SEND @9:t <- S:0x0<4xf32>"),
     "p.s:5: error: SEND: unknown core 9 (the mesh has cores 0..3)"),
    # SEND without a RECV
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".text", "DAU0 SEND @1:t <- S:0x0<4xf32>",
            ".core 1", ".storage 16", ".text"),
     "p.s:5: error: SEND of core 0 -> core 1 tag 't' has no matching RECV on core 1"),
    # RECV without a SEND (and the sender has no section)
    (_lines(".mesh 2x2", ".core 1", ".storage 16", ".text", "DAU0 RECV S:0x0<4xf32> <- @2:t"),
     "p.s:5: error: RECV of core 2 -> core 1 tag 't' has no matching SEND on core 2 (core 2 has no .core section)"),
    # the second RECV of a name has no second SEND
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".text", "DAU0 SEND @1:t <- S:0x0<4xf32>",
            ".core 1", ".storage 32", ".text", "DAU0 RECV S:0x0<4xf32> <- @0:t", "DAU0 RECV S:0x10<4xf32> <- @0:t"),
     "p.s:10: error: RECV of core 0 -> core 1 tag 't' has no matching SEND on core 0"),
    # sizes that differ
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".text", "DAU0 SEND @1:t <- S:0x0<4xf32>",
            ".core 1", ".storage 32", ".text", "DAU0 RECV S:0x0<8xf32> <- @0:t"),
     "p.s:9: error: RECV of core 0 -> core 1 tag 't' takes 8 x f32, the matching SEND (line 5) sends 4 x f32"),
    # element types that differ
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".text", "DAU0 SEND @1:t <- S:0x0<4xf32>",
            ".core 1", ".storage 32", ".text", "DAU0 RECV S:0x0<4xi32> <- @0:t"),
     "p.s:9: error: RECV of core 0 -> core 1 tag 't' takes 4 x i32, the matching SEND (line 5) sends 4 x f32"),
    # SEND to itself
    (_lines(".mesh 2x2", ".core 2", ".storage 16", ".text", "DAU0 SEND @2:t <- S:0x0<4xf32>"),
     "p.s:5: error: SEND: core 2 cannot send to itself (use LOAD/STORE/MOVE)"),
    # NoC instructions run on DAUs
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".text", "MPU0 SEND @1:t <- S:0x0<4xf32>"),
     "p.s:5: error: SEND runs on a DAU unit, not on MPU0"),
    # malformed remote end
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".text", "DAU0 RECV S:0x0<4xf32> <- core1"),
     "p.s:5: error: malformed remote end 'core1' (expected @CORE:TAG or @{A,B,LO-HI}:TAG, e.g. @3:t0)"),
    # a SEND tile beyond the core's .storage
    (_lines(".mesh 2x2", ".core 0", ".storage 8", ".text", "DAU0 SEND @1:t <- S:0x0<4xf32>"),
     "p.s:5: error: tile S:0x0<4xf32> ends at byte 16, beyond .storage 8"),
    # an ordinary error inside a section keeps its file line
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".text", "DAU0 LOAD N:0x0<4xf32> <- S:0x0<4xi32>"),
     "p.s:5: error: LOAD: element types differ (f32 <- i32)"),
    # a section without .storage
    (_lines(".mesh 2x2", ".core 3", ".text"), "p.s:2: error: core 3: missing '.storage BYTES' directive"),
    # no .mesh, or something else before the first section
    (_lines(".core 0", ".storage 4", ".text"), "p.s:1: error: missing '.mesh WxH' before the first .core"),
    (_lines(".mesh 2x2", ".storage 4"), "p.s:2: error: '.storage' before the first '.core N' section"),
    (_lines(".mesh 2x"), "p.s:1: error: .mesh takes WxH, e.g. .mesh 16x16"),
    (_lines(".mesh 2x2"), "p.s:1: error: the mesh program has no '.core N' section"),
    # a graph output held by two cores
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".output y S:0x0<4xf32>", ".text",
            ".core 1", ".storage 16", ".output y S:0x0<4xf32>", ".text"),
     "p.s:8: error: .output y is already held by core 0 (line 4)"),
    # .data after .text, and with an unknown option
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".text", ".data w.data S:0x0 16"),
     "p.s:5: error: directive .data after .text"),
    (_lines(".mesh 2x2", ".core 0", ".storage 16", ".data w.data S:0x0 16 skip=3", ".text"),
     "p.s:4: error: .data: unexpected 'skip=3'"),
]


@pytest.mark.parametrize("text,expect", BAD)
def test_malformed_mesh_programs(text, expect):
    with pytest.raises(AsmError) as e:
        parse_mesh_program(text, "p.s")
    assert str(e.value) == expect


# ---------------------------------------------------------------- sliced inputs and outputs

SLICED = """; rows 0..2 and 2..4 of y on two cores, each loading the rows of x it needs (a halo row)
.mesh 2x1
.core 0
.storage 64
.input x S:0x0<3x4xf32> slice=0:0:3 of 4x4
.output y S:0x30<2x2xf32> slice=0:0:2 of 4x2   ; top half
.text
.core 1
.storage 64
.input x S:0x0<3x4xf32> slice=0:1:4 of 4x4
.input z S:0x30<4x1xf32>
.output y S:0x30<2x2xf32> slice=0:2:4 of 4x2
.text
"""


def test_sliced_inputs_and_outputs_parse_and_round_trip():
    from nnx.sim.asm_mesh import IOSlice, io_slice

    mp = parse_mesh_program(SLICED, "p.s")
    c0, c1 = mp.cores[0].program, mp.cores[1].program
    assert [(s.name, io_slice(s)) for s in c0.inputs] == [("x", IOSlice(0, 0, 3, (4, 4)))]
    assert [(s.name, io_slice(s), s.line) for s in c1.inputs] == [("x", IOSlice(0, 1, 4, (4, 4)), 10),
                                                                  ("z", None, 11)]
    assert io_slice(c1.outputs[0]) == IOSlice(0, 2, 4, (4, 2)) and c1.outputs[0].tile.shape == (2, 2)
    text = format_mesh_program(mp)
    assert ".input x S:0x0<3x4xf32> slice=0:1:4 of 4x4" in text
    assert format_mesh_program(parse_mesh_program(text, "q.s")) == text


def _sliced(*core_lines: list[str]) -> str:
    body = [".mesh 2x1"]
    for c, lines in enumerate(core_lines):
        body += [f".core {c}", ".storage 64", *lines, ".text"]
    return _lines(*body)


SLICED_BAD = [
    # the slice's range must lie within the axis, and be non-empty
    (_sliced([".input x S:0x0<3x4xf32> slice=0:2:5 of 4x4"]),
     "p.s:4: error: .input x: slice 2:5 is not a non-empty range within 0:4 of axis 0"),
    # the axis must exist
    (_sliced([".input x S:0x0<3x4xf32> slice=2:0:3 of 4x4"]),
     "p.s:4: error: .input x: slice axis 2 is not an axis of 4x4"),
    # the tile is the slice's shape
    (_sliced([".output y S:0x0<2x4xf32> slice=0:0:3 of 4x4"]),
     "p.s:4: error: .output y: tile shape 2x4 is not the slice's 3x4"),
    # malformed slice, malformed shape, missing 'of'
    (_sliced([".input x S:0x0<3x4xf32> slice=0:3 of 4x4"]),
     "p.s:4: error: .input x: expected slice=AXIS:LO:HI, got 'slice=0:3'"),
    (_sliced([".input x S:0x0<3x4xf32> slice=0:0:3 of 4by4"]),
     "p.s:4: error: .input x: expected the whole tensor's shape DxDx..., got '4by4'"),
    (_sliced([".input x S:0x0<3x4xf32> slice=0:0:3 4x4"]),
     "p.s:4: error: .input takes NAME TILE [slice=AXIS:LO:HI of SHAPE]"),
    # beyond the core's storage
    (_sliced([".input x S:0x30<3x4xf32> slice=0:0:3 of 4x4"]),
     "p.s:4: error: 'x' ends at byte 96, beyond .storage 64"),
    # the same slice twice on one core
    (_sliced([".input x S:0x0<1x4xf32> slice=0:0:1 of 4x4", ".input x S:0x10<1x4xf32> slice=0:0:1 of 4x4"]),
     "p.s:5: error: .input x slice=0:0:1 of 4x4 already declared on line 4"),
    # an input whose whole shape differs between cores
    (_sliced([".input x S:0x0<3x4xf32> slice=0:0:3 of 4x4"], [".input x S:0x0<3x4xf32> slice=0:0:3 of 5x4"]),
     "p.s:8: error: .input x has another shape or type on core 0 (line 4)"),
    # output slices leaving a gap, overlapping, or not reaching the end
    (_sliced([".output y S:0x0<1x4xf32> slice=0:0:1 of 4x4"], [".output y S:0x0<2x4xf32> slice=0:2:4 of 4x4"]),
     "p.s:8: error: .output y: no core writes 1:2 along axis 0 of 4x4"),
    (_sliced([".output y S:0x0<3x4xf32> slice=0:0:3 of 4x4"], [".output y S:0x0<2x4xf32> slice=0:2:4 of 4x4"]),
     "p.s:8: error: .output y: slice 2:4 (core 1, line 8) overlaps slice 0:3 (core 0, line 4) along axis 0"),
    (_sliced([".output y S:0x0<3x4xf32> slice=0:0:3 of 4x4"]),
     "p.s:4: error: .output y: no core writes 3:4 along axis 0 of 4x4"),
    # a whole output and a slice of it
    (_sliced([".output y S:0x0<4x4xf32>"], [".output y S:0x0<2x4xf32> slice=0:2:4 of 4x4"]),
     "p.s:8: error: .output y is already held by core 0 (line 4)"),
    # slices along different axes
    (_sliced([".output y S:0x0<2x4xf32> slice=0:0:2 of 4x4"], [".output y S:0x0<4x2xf32> slice=1:2:4 of 4x4"]),
     "p.s:8: error: .output y: slice of another shape, axis or type than on core 0 (line 4)"),
]


@pytest.mark.parametrize("text,expect", SLICED_BAD)
def test_malformed_sliced_inputs_and_outputs(text, expect):
    with pytest.raises(AsmError) as e:
        parse_mesh_program(text, "p.s")
    assert str(e.value) == expect
