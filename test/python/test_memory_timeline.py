"""The device-memory model (nnx/memory_timeline.py) on hand-built timelines, and on
graph IR through nnx/graph_costs.py."""

from __future__ import annotations

import pytest

from nnx.memory_timeline import TimelineOp as Op
from nnx.memory_timeline import TimelineValue as Val
from nnx.memory_timeline import simulate

UNITS = {"MPU": 1, "VPU": 1, "D2H": 1, "H2D": 1}


def test_allocate_at_start_free_after_last_reader():
    # a(10) -> b(10) -> c(10), c also reads a: a lives 0..30, b 10..30, c 20..end
    vals = [Val(100), Val(10), Val(1, keep=True)]
    ops = [Op("a", "VPU", 10, (), (0,)), Op("b", "VPU", 10, (0,), (1,)), Op("c", "VPU", 10, (0, 1), (2,))]
    tl = simulate(ops, vals, UNITS)
    assert (tl.start, tl.finish, tl.cycles) == ([0, 10, 20], [10, 20, 30], 30)
    assert tl.peak_bytes == 111 and tl.peak_op == 2 and tl.peak_time == 20
    assert tl.curve[-1] == (30, 1)  # c's output is a result: kept


def test_resident_values_count_from_the_start():
    vals = [Val(1000, "resident"), Val(10, keep=True)]
    tl = simulate([Op("a", "MPU", 5, (0,), (1,))], vals, UNITS)
    assert tl.resident_bytes == 1000 and tl.peak_bytes == 1010 and tl.curve == [(0, 1010)]  # kept result allocated at 0


def test_units_run_in_parallel_and_in_order():
    ops = [Op("m", "MPU", 100, (), (0,)), Op("v", "VPU", 10, (), (1,)), Op("v2", "VPU", 10, (0,), (2,))]
    tl = simulate(ops, [Val(1), Val(1), Val(1)], UNITS)
    assert tl.start == [0, 0, 100] and tl.cycles == 110


def test_after_edges_delay_the_op():
    ops = [Op("a", "MPU", 50, (), (0,)), Op("b", "VPU", 5, (), (1,), after=(0,))]
    tl = simulate(ops, [Val(1), Val(1)], UNITS)
    assert tl.start[1] == 50


def _swap_graph(duplex_units):
    # x (1000 B) produced, swapped out, y computed meanwhile, swapped back in for z
    vals = [Val(1000), Val(1000, "host"), Val(10), Val(1000), Val(1, keep=True)]
    ops = [
        Op("x", "VPU", 10, (), (0,)),
        Op("out", duplex_units[0], 100, (0,), (1,)),
        Op("y", "VPU", 300, (), (2,)),
        Op("in", duplex_units[1], 100, (1,), (3,), after=(2,)),
        Op("z", "VPU", 10, (3, 2), (4,)),
    ]
    return ops, vals


def test_swap_out_frees_when_the_copy_completes_and_swap_in_allocates_at_start():
    ops, vals = _swap_graph(("D2H", "H2D"))
    tl = simulate(ops, vals, UNITS)
    assert tl.finish[1] == 110 and tl.start[3] == 310
    mem = dict(tl.curve)
    assert mem[110] == 10  # x freed when the swap-out finished; host copy not counted
    assert mem[310] == 1010  # swap-in allocates when it starts
    assert tl.link_busy_cycles == 200


def test_half_duplex_link_serializes_the_two_directions():
    # swap-out of a and swap-in of an earlier host copy b overlap on a full-duplex link
    vals = [Val(1000), Val(8, "host"), Val(1000, "host"), Val(8), Val(1, keep=True)]
    def ops(o, i):
        return [Op("a", "VPU", 1, (), (0,)), Op("out", o, 100, (0,), (2,)),
                Op("in", i, 100, (1,), (3,)), Op("z", "VPU", 1, (3,), (4,))]
    full = simulate(ops("D2H", "H2D"), vals, UNITS)
    half = simulate(ops("LINK", "LINK"), vals, {"VPU": 1, "LINK": 1})
    assert full.cycles == 101 and half.cycles == 202  # in: 0-100 beside out: 1-101, or after it


def test_compression_has_its_transient_peak():
    vals = [Val(1000), Val(500), Val(1, keep=True)]
    ops = [Op("x", "VPU", 10, (), (0,)), Op("compress", "VPU", 10, (0,), (1,)),
           Op("use", "VPU", 10, (1,), (2,))]
    tl = simulate(ops, vals, UNITS)
    assert tl.peak_bytes == 1500 and tl.peak_op == 1


def test_views_alias_and_keep_their_source_alive():
    vals = [Val(100), Val(0, alias_of=0), Val(1, keep=True)]
    ops = [Op("x", "VPU", 10, (), (0,)), Op("reshape", "", 0, (0,), (1,)), Op("y", "VPU", 10, (1,), (2,))]
    tl = simulate(ops, vals, UNITS)
    assert tl.peak_bytes == 101


def test_order_must_be_topological():
    ops = [Op("a", "VPU", 1, (), (0,)), Op("b", "VPU", 1, (0,), (1,))]
    with pytest.raises(ValueError, match="produced later"):
        simulate(ops, [Val(1), Val(1)], UNITS, order=[1, 0])


def test_block_timeline_of_graph_ir():
    from nnx.graph_costs import block_timeline
    from nnx.ir_io import make_context, parse_module_text
    from nnx.target import load_target
    from xdsl.dialects.func import FuncOp

    text = """func.func @f(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
      %w = graph.constant dense<1.0> : tensor<64x64xf32>
      %a = graph.relu(%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
      %r = graph.reshape(%a, %s) : (tensor<64x64xf32>, tensor<2xi64>) -> tensor<64x64xf32>
      %h = graph.swap_out(%a) : (tensor<64x64xf32>) -> tensor<64x64xf32>
      %b = graph.matmul(%r, %w) after(%h : tensor<64x64xf32>) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %i = graph.swap_in(%h) : (tensor<64x64xf32>) -> tensor<64x64xf32>
      %y = graph.add(%b, %i) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      func.return %y : tensor<64x64xf32>
    }""".replace("%s)", "%s2)").replace("%a = graph.relu", "%s2 = graph.constant dense<64> : tensor<2xi64>\n      %a = graph.relu")
    m = parse_module_text(text.encode(), "<t>", make_context())
    f = next(o for o in m.walk() if isinstance(o, FuncOp))
    t = load_target()
    bt = block_timeline(f.body.block, t)
    kinds = {o.name: (o.unit, o.cycles) for o in bt.ops}
    assert kinds["graph.swap_out"] == ("D2H", t.host_link.transfer_cycles(64 * 64 * 4))
    assert kinds["graph.reshape"] == ("", 0)
    assert kinds["graph.matmul"][0] == "MPU"
    assert kinds["graph.matmul"][1] >= t.mpu_cycles(64 * 64 * 64)
    tl = simulate(bt.ops, bt.values, bt.units)
    # the matmul waits for the swap-out (its `after` edge)
    names = [o.name for o in bt.ops]
    assert tl.start[names.index("graph.matmul")] >= tl.finish[names.index("graph.swap_out")]
    assert tl.resident_bytes == 64 * 64 * 4 * 2 + 16  # %x, %w and the shape constant
