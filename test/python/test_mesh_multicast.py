"""NoC multicast (docs/mesh.md, "Multicast"): one SEND to a set of cores along the XY
tree, on hand-written programs for the 2x2 test mesh (test/sim/Inputs/mesh2x2.toml:
hop latency 2, links of 16 bytes/cycle, off-chip 64 bytes/cycle with latency 10;
instruction i of a core is fetched 32 + (i + 1) cycles after the core begins).

The expected cycles, link loads and byte-hops are computed by hand from the routes
(and, for the traffic, against the same deliveries as unicasts); the delivered data
against the sent tile; the assembler's checks give one line each.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from nnx.sim.asm import AsmError, parse_tile
from nnx.sim.asm_mesh import format_mesh_program, parse_mesh_program
from nnx.sim.isa_mesh import SEND, format_noc, noc_instr
from nnx.sim.mesh_cli import main as mesh_run
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.sim.noc import Noc, xy_tree
from test_mesh_sim import TARGET_FILE, T, events


def run(text, inputs=None):
    return MeshSimulator(parse_mesh_program(text, "m.s"), T, record_events=True).run(inputs)


def receivers(send_line: str, tags: dict[int, str]) -> str:
    """Core 0 holds x (4x16 f32, 256 bytes) and sends it with `send_line`; every core
    of `tags` receives it (from core 0, tag tags[c]) into its output y<c>."""
    text = f""".mesh 2x2
.core 0
.storage 256
.input x S:0x0<4x16xf32>
.text
{send_line}
"""
    for c, tg in tags.items():
        text += f""".core {c}
.storage 256
.output y{c} S:0x0<4x16xf32>
.text
DAU0 RECV S:0x0<4x16xf32> <- @0:{tg}
"""
    return text


X = np.arange(64, dtype=np.float32).reshape(4, 16)


def test_one_multicast_reaches_three_cores_each_link_carrying_the_bytes_once():
    r = run(receivers("DAU0 SEND @{1-3}:t <- S:0x0<4x16xf32>", {1: "t", 2: "t", 3: "t"}), {"x": X})
    for c in (1, 2, 3):
        np.testing.assert_array_equal(r.outputs[f"y{c}"], X)
    # x: 256 bytes in 4 cycles + latency 10 -> core 0 begins at 14, its SEND is fetched
    # at 14 + 33 = 47. XY tree from (0,0): 0->1 and 0->2 at depth 0, 1->3 at depth 1.
    # 256 bytes = 16 cycles per link: cores 1 and 2 get the last byte at 47 + 2 + 16,
    # core 3 (two hops) at 47 + 4 + 16.
    (send,) = events(r, 0, "SEND")
    assert (send.start, send.end) == (47, 47 + 16)
    assert {c: events(r, c, "RECV")[0].end for c in (1, 2, 3)} == {1: 65, 2: 65, 3: 67}
    assert r.link_bytes == {(0, 1): 256, (0, 2): 256, (1, 3): 256}
    assert r.noc_bytes == 256 and r.noc_byte_hops == 3 * 256 and r.noc_messages == 1

    # the same three deliveries as unicasts: 3 SENDs, 4 link crossings (core 3 is 2 hops)
    uni = run(receivers("\n".join(f"DAU0 SEND @{c}:t{c} <- S:0x0<4x16xf32>" for c in (1, 2, 3)),
                        {1: "t1", 2: "t2", 3: "t3"}), {"x": X})
    for c in (1, 2, 3):
        np.testing.assert_array_equal(uni.outputs[f"y{c}"], X)
    assert uni.noc_bytes == 3 * 256 and uni.noc_byte_hops == 4 * 256 > r.noc_byte_hops
    assert uni.link_bytes[(0, 1)] == 2 * 256  # to core 1 and through it to core 3
    # the unicasts leave core 0's DAU one after another: the last one is later
    assert max(e.end for c in (1, 2, 3) for e in events(uni, c, "RECV")) > 67


def test_two_multicasts_sharing_a_link_wait_for_each_other():
    r = run(""".mesh 2x2
.core 0
.storage 256
.text
DAU0 SEND @{1,3}:a <- S:0x0<4x16xf32>
DAU0 RECV S:0x0<4x16xf32> <- @1:b
.core 1
.storage 256
.text
DAU0 SEND @{0,3}:b <- S:0x0<4x16xf32>
DAU0 RECV S:0x0<4x16xf32> <- @0:a
.core 3
.storage 512
.text
DAU0 RECV S:0x0<4x16xf32> <- @0:a
DAU0 RECV S:0x100<4x16xf32> <- @1:b
""")
    # both SENDs are fetched at 33. Core 0's tree holds 0->1 over [33, 49) and 1->3
    # (depth 1) over [35, 51). Core 1's tree is 1->0 and 1->3, both at depth 0: 1->3 is
    # taken until 51, so it starts at 51 and holds 1->0 and 1->3 over [51, 67).
    (sa,) = events(r, 0, "SEND")
    (sb,) = events(r, 1, "SEND")
    assert (sa.start, sa.end) == (33, 49) and sb.end == 67
    assert [e.end for e in events(r, 3, "RECV")] == [33 + 4 + 16, 51 + 2 + 16]
    assert events(r, 0, "RECV")[0].end == 51 + 2 + 16
    assert events(r, 1, "RECV")[0].end == 67  # core 0's tile arrived at 51, its DAU is free at 67
    assert r.link_bytes[(1, 3)] == 512 and r.link_cycles[(1, 3)] == 32
    assert r.noc_byte_hops == 256 * 4 and r.cycles == 69


def test_the_xy_tree_is_the_union_of_the_xy_routes():
    # 4x4 mesh, source 5 = (1,1): to 7 = (3,1) along the row, 13 = (1,3) down the column,
    # 15 = (3,3) along the row then down column 3: links 5->6, 6->7, 7->11, 11->15, 5->9, 9->13
    tree = dict(xy_tree(5, [7, 13, 15], 4))
    assert tree == {(5, 6): 0, (6, 7): 1, (7, 11): 2, (11, 15): 3, (5, 9): 0, (9, 13): 1}
    noc = Noc(4, 4, hop_latency=1, link_bytes_per_cycle=32)
    s, arrivals = noc.multicast(5, [7, 13, 15], 320, 100)
    assert s == 100 and arrivals == [100 + 2 + 10, 100 + 2 + 10, 100 + 4 + 10]
    assert noc.byte_hops == 6 * 320 and noc.bytes == 320
    # a unicast over 6->7 ready inside it must wait for the multicast's body to pass: [101, 111)
    assert noc.transfer(6, 7, 32, 101) == (111, 113)


def test_round_trip_prints_core_sets_as_ranges():
    text = receivers("DAU0 SEND @{3,1,2}:t <- S:0x0<4x16xf32>", {1: "t", 2: "t", 3: "t"})
    mp = parse_mesh_program(text, "m.s")
    printed = format_mesh_program(mp)
    assert "DAU0 SEND    @{3,1-2}:t <- S:0x0<4x16xf32>" in printed
    assert format_mesh_program(parse_mesh_program(printed, "m.s")) == printed
    # the compiler's constructor: a sequence of cores is a multicast, one core a unicast
    tile = parse_tile("S:0x0<4x16xf32>")
    assert format_noc(noc_instr("DAU0", SEND, tile, [5, 6, 7, 9], "a")) == "DAU0 SEND    @{5-7,9}:a <- S:0x0<4x16xf32>"
    assert format_noc(noc_instr("DAU0", SEND, tile, np.array([2])[0], "a")) == "DAU0 SEND    @2:a <- S:0x0<4x16xf32>"
    assert format_noc(noc_instr("DAU0", SEND, tile, (2,), "a")) == "DAU0 SEND    @2:a <- S:0x0<4x16xf32>"


def _one(text: str) -> str:
    with pytest.raises(AsmError) as e:
        parse_mesh_program(text, "p.s")
    return str(e.value)


@pytest.mark.parametrize("send,tags,expect", [
    ("DAU0 SEND @{1,4}:t <- S:0x0<4x16xf32>", {1: "t"}, "p.s:6: error: SEND: unknown core 4 (the mesh has cores 0..3)"),
    ("DAU0 SEND @{0,1}:t <- S:0x0<4x16xf32>", {1: "t"}, "p.s:6: error: SEND: core 0 is in its own multicast set"),
    ("DAU0 SEND @{1,1-2}:t <- S:0x0<4x16xf32>", {1: "t"},
     "p.s:6: error: core 1 appears twice in the core set"),
    ("DAU0 SEND @{2-1}:t <- S:0x0<4x16xf32>", {1: "t"}, "p.s:6: error: empty core range 2-1"),
    ("DAU0 SEND @{1,x}:t <- S:0x0<4x16xf32>", {1: "t"},
     "p.s:6: error: malformed core set item 'x' (expected CORE or LO-HI)"),
    # core 3 has no RECV for it
    ("DAU0 SEND @{1,3}:t <- S:0x0<4x16xf32>", {1: "t", 3: "u"},
     "p.s:6: error: SEND of core 0 -> core 3 tag 't' has no matching RECV on core 3"),
])
def test_assembler_checks_a_multicast(send, tags, expect):
    assert _one(receivers(send, tags)) == expect


def test_every_destination_must_receive_the_same_size_and_type():
    text = receivers("DAU0 SEND @{1,2}:t <- S:0x0<4x16xf32>", {1: "t"}) + """.core 2
.storage 256
.text
DAU0 RECV S:0x0<4x8xf32> <- @0:t
"""
    assert _one(text) == ("p.s:15: error: RECV of core 0 -> core 2 tag 't' takes 32 x f32, the matching SEND "
                          "(line 6) sends 64 x f32")
    bad_type = text.replace("<4x8xf32> <- @0:t", "<4x16xi32> <- @0:t")
    assert _one(bad_type).endswith("takes 64 x i32, the matching SEND (line 6) sends 64 x f32")
    # a RECV names one source core
    assert _one(receivers("DAU0 SEND @1:t <- S:0x0<4x16xf32>", {}) + ".core 1\n.storage 256\n.text\n"
                "DAU0 RECV S:0x0<4x16xf32> <- @{0,2}:t\n") == (
        "p.s:10: error: RECV takes one source core (@CORE:TAG); a core set is for a multicast SEND")


def test_nnx_run_reports_the_multicast_and_rejects_a_bad_one(tmp_path, capsys):
    (tmp_path / "m.s").write_text(receivers("DAU0 SEND @{1-3}:t <- S:0x0<4x16xf32>", {1: "t", 2: "t", 3: "t"}))
    np.save(tmp_path / "x.npy", X)
    rc = mesh_run([str(tmp_path / "m.s"), "--target", TARGET_FILE, "--input", f"x={tmp_path / 'x.npy'}",
                   "--report", str(tmp_path / "r.json"), "--output-dir", str(tmp_path / "out")])
    assert rc == 0, capsys.readouterr().err
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["noc_bytes"] == 256 and rep["noc_byte_hops"] == 768 and rep["noc_messages"] == 1
    assert set(rep["links"]) == {"0->1", "0->2", "1->3"}
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y3.npy"), X)
    (tmp_path / "b.s").write_text(receivers("DAU0 SEND @{0-2}:t <- S:0x0<4x16xf32>", {1: "t", 2: "t"}))
    assert mesh_run([str(tmp_path / "b.s"), "--target", TARGET_FILE, "--report", str(tmp_path / "b.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"{tmp_path / 'b.s'}:6: error: SEND: core 0 is in its own multicast set"
    assert not (tmp_path / "b.json").exists()


def test_tree_sizes_match_the_row_and_column_extents():
    """Differential: the XY tree from (x0, y0) covers the source row from x0 out to the
    farthest destination column on each side, then in every destination column the
    span from y0 out to its farthest destination on each side; its link count is
    that, and never more than the unicast routes' total."""
    rng = np.random.default_rng(7)
    w, h = 8, 6
    for _ in range(200):
        src = int(rng.integers(w * h))
        others = [c for c in range(w * h) if c != src]
        dsts = [int(c) for c in rng.choice(others, size=int(rng.integers(1, 12)), replace=False)]
        x0, y0 = src % w, src // w
        xs = [d % w for d in dsts]
        row = max(0, max(xs) - x0) + max(0, x0 - min(xs))
        cols = 0
        for x in set(xs):
            ys = [d // w for d in dsts if d % w == x]
            cols += max(0, max(ys) - y0) + max(0, y0 - min(ys))
        noc = Noc(w, h, hop_latency=3, link_bytes_per_cycle=8)
        s, arrivals = noc.multicast(src, dsts, 80, 5)
        assert noc.byte_hops == 80 * (row + cols) == 80 * len(xy_tree(src, dsts, w))
        assert row + cols <= sum(abs(d % w - x0) + abs(d // w - y0) for d in dsts)
        assert s == 5 and arrivals == [5 + 3 * (abs(d % w - x0) + abs(d // w - y0)) + 10 for d in dsts]
