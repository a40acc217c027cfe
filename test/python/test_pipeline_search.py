"""The layer-pipeline search of the throughput schedule (nnx/mesh/pipeline_search.py):
balanced stages, memory limits, and optimality against brute force on small inputs."""

from __future__ import annotations

import itertools
import random

import pytest

from nnx.mesh.pipeline_search import Layer, Machine, best_pipeline, operands_of, stage_bytes, stage_time

BIG = Machine(ncores=16, budget=1e12, link_bytes_per_cycle=32.0)


def _brute(layers, machine, no_skips=False):
    """The least bottleneck over every partition into groups (no group starting at
    a layer that joins the one before; with `no_skips`, no layer reading a result
    from before the group before its own) and every core count, at most ncores in
    all."""
    L = len(layers)
    best = float("inf")
    for cuts in itertools.product([False, True], repeat=L - 1):
        starts = [0] + [i + 1 for i, c in enumerate(cuts) if c]
        if any(layers[a].joins for a in starts[1:]):
            continue
        groups = list(zip(starts, starts[1:] + [L]))
        group_of = {i: g for g, (a, b) in enumerate(groups) for i in range(a, b)}
        if no_skips and any(p >= 0 and group_of[i] - group_of[p] > 1
                            for i in range(L) for p, _ in operands_of(layers, i)):
            continue
        for ns in itertools.product(range(1, machine.ncores + 1), repeat=len(groups)):
            if sum(ns) > machine.ncores:
                continue
            if any(stage_bytes(layers, a, b, n, machine) > machine.budget for (a, b), n in zip(groups, ns)):
                continue
            best = min(best, max(stage_time(layers, a, b, n, machine) for (a, b), n in zip(groups, ns)))
    return best


def test_equal_layers_get_a_core_each():
    layers = [Layer(10_000.0, max_parts=64) for _ in range(4)]
    pipe = best_pipeline(layers, Machine(4, 1e12, 32.0))
    assert [(a, b) for a, b, _ in pipe.groups] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert pipe.cores == 4
    assert pipe.bottleneck == pytest.approx(stage_time(layers, 0, 1, 1, BIG))


def test_cores_follow_the_work(monkeypatch):
    """A layer of 9x the work gets the cores it can use (12 parts at most), the
    light one enough to keep up and then the spare cores, which make it faster
    (SPARE_TO_GAINING; the first rule gave spare cores to the slowest stage only):
    a pipeline faster than both on all cores."""
    from nnx.mesh import pipeline_search

    layers = [Layer(1_000_000.0, max_parts=12), Layer(9_000_000.0, max_parts=12)]
    pipe = best_pipeline(layers, BIG)
    assert [n for _, _, n in pipe.groups] == [4, 12]
    assert pipe.bottleneck == pytest.approx(9_000_000 / 12 + stage_time([Layer(0.0)], 0, 1, 1, BIG))
    assert pipe.bottleneck < stage_time(layers, 0, 2, 16, BIG)
    monkeypatch.setattr(pipeline_search, "SPARE_TO_GAINING", False)
    assert [n for _, _, n in best_pipeline(layers, BIG).groups] == [2, 12]


def test_whole_layers_are_packed():
    """Small layers that cannot split share a core rather than each taking one."""
    layers = [Layer(100.0) for _ in range(6)] + [Layer(60_000.0, max_parts=70)]
    pipe = best_pipeline(layers, Machine(8, 1e12, 32.0))
    assert pipe.groups[0][:2] == (0, 6) and pipe.groups[0][2] == 1
    assert pipe.groups[-1][2] == 7


def test_received_bytes_cost_their_copy_and_inside_a_group_their_arrival(monkeypatch):
    """A layer split by channels gathers its whole input on every part; from inside
    its group it waits for it over a link, from the group before it arrives while
    the stage works on the input before (only its copy into the part's input
    counts, and its link time bounds the stage: the first model,
    RECEIVE_EXPOSED = 0); split by rows, only its band."""
    from nnx.mesh import pipeline_search

    monkeypatch.setattr(pipeline_search, "RECEIVE_EXPOSED", 0.0)
    x = Layer(10_000.0, max_parts=64, by_rows=True)
    y = Layer(10_000.0, in_bytes=320_000, max_parts=64)
    y_rows = Layer(10_000.0, in_bytes=320_000, max_parts=64, by_rows=True)
    copy = 2 * 320_000 / 64
    gathered = 320_000 * 15 / 16 / 32 + copy
    assert stage_time([x, y], 0, 2, 16, BIG) == pytest.approx(stage_time([x, y_rows], 0, 2, 16, BIG) + gathered)
    # the first layer of a group: its copy counts, one link's worth of input bounds it
    assert stage_time([y], 0, 1, 16, BIG) == pytest.approx(10_000 / 16 + 200 + copy)
    assert stage_time([Layer(100.0, in_bytes=320_000, max_parts=64)], 0, 1, 16, BIG) == \
        pytest.approx(max(100 / 16 + 200 + copy, 320_000 / 32))
    assert stage_time([y_rows], 0, 1, 16, BIG) == pytest.approx(10_000 / 16 + 200 + copy / 16)
    # so the search cuts the pipeline before a channel split with a large input
    pipe = best_pipeline([x, Layer(90_000.0, in_bytes=320_000, max_parts=64)], BIG)
    assert [(a, b) for a, b, _ in pipe.groups] == [(0, 1), (1, 2)]


def test_skip_connection_from_an_earlier_group_is_received_from_outside(monkeypatch):
    """An add reading a value two layers back: from outside its group that operand
    bounds the stage by its link time (the first model, RECEIVE_EXPOSED = 0)."""
    from nnx.mesh import pipeline_search

    monkeypatch.setattr(pipeline_search, "RECEIVE_EXPOSED", 0.0)
    layers = [Layer(1000.0, out_bytes=64_000, max_parts=8, by_rows=True),
              Layer(1000.0, in_bytes=64_000, out_bytes=64_000, max_parts=8, by_rows=True),
              Layer(100.0, in_bytes=128_000, max_parts=8, by_rows=True, joins=True,
                    operands=((0, 64_000), (1, 64_000)))]
    one = stage_time(layers, 1, 3, 1, BIG)
    assert one == pytest.approx(max(1000 + 100 + 2 * 200 + 2 * 64_000 / 64 + 2 * 64_000 / 64, 128_000 / 32))
    assert stage_time(layers, 0, 3, 1, BIG) < one


def test_bytes_received_from_outside_are_waited_for():
    """RECEIVE_EXPOSED: a core waits for the bytes it receives from outside its group
    on top of its work (the lowered core receives them in program order on a DMA
    queue its loads share), so their link time adds to the stage's: a channel
    split's whole input, a row split's band."""
    y = Layer(10_000.0, in_bytes=320_000, max_parts=64)
    y_rows = Layer(10_000.0, in_bytes=320_000, max_parts=64, by_rows=True)
    copy = 2 * 320_000 / 64
    assert stage_time([y], 0, 1, 16, BIG) == pytest.approx(10_000 / 16 + 200 + copy + 320_000 / 32)
    assert stage_time([y_rows], 0, 1, 16, BIG) == pytest.approx(10_000 / 16 + 200 + copy / 16 + 320_000 / 16 / 32)
    # more cores do not shorten a channel split's input: its stage never falls below it
    assert stage_time([y], 0, 1, 64, BIG) > 320_000 / 32


def test_memory_forces_cores_and_cuts():
    """Weights of 3 units per layer on cores of 4: a layer needs its own core
    whatever the time, and a heavy layer as many cores as its weights need."""
    layers = [Layer(100.0, weight_bytes=3, max_parts=8) for _ in range(3)]
    pipe = best_pipeline(layers, Machine(8, 4.0, 32.0))
    assert all(b - a == 1 for a, b, _ in pipe.groups)
    heavy = [Layer(100.0, weight_bytes=30, max_parts=8)]
    assert best_pipeline(heavy, Machine(8, 4.0, 32.0)).groups[0][2] == 8
    with pytest.raises(ValueError):
        best_pipeline(heavy, Machine(7, 4.0, 32.0))


def test_joined_layers_stay_with_their_producer():
    layers = [Layer(50_000.0, max_parts=64), Layer(50_000.0, max_parts=64, joins=True)]
    pipe = best_pipeline(layers, BIG)
    assert pipe.groups == ((0, 2, 16),)


@pytest.mark.parametrize("seed", range(16))
def test_optimal_against_brute_force(seed):
    rng = random.Random(seed)
    L = rng.randint(1, 5)
    layers = [Layer(float(rng.choice([50, 400, 3_000, 20_000, 90_000])), weight_bytes=rng.randint(0, 40),
                    in_bytes=rng.choice([0, 3_200, 64_000]), out_bytes=rng.choice([0, 3_200]),
                    max_parts=rng.choice([1, 2, 3, 8]), by_rows=rng.random() < 0.5,
                    joins=i > 0 and rng.random() < 0.25,
                    operands=tuple((rng.randint(-1, i - 1), rng.choice([0, 3_200, 64_000]))
                                   for _ in range(rng.randint(1, 2))) if rng.random() < 0.5 else ())
              for i in range(L)]
    machine = Machine(rng.randint(L, 7), rng.choice([40_000.0, 70_000.0, 1e9]), 32.0)
    want = _brute(layers, machine)
    if want == float("inf"):
        with pytest.raises(ValueError):
            best_pipeline(layers, machine)
        return
    pipe = best_pipeline(layers, machine, skip_slack=None)
    assert pipe.cores <= machine.ncores
    assert pipe.bottleneck == pytest.approx(want, rel=1e-9)
    # without skipping messages, whenever some partition allows it
    no_skips = _brute(layers, machine, no_skips=True)
    if no_skips < float("inf"):
        assert best_pipeline(layers, machine, skip_slack=float("inf")).bottleneck == pytest.approx(no_skips, rel=1e-9)
    # the reported stage times are the cost model's
    for (a, b, n), t in zip(pipe.groups, pipe.stage_times):
        assert t == pytest.approx(stage_time(layers, a, b, n, machine))
        assert stage_bytes(layers, a, b, n, machine) <= machine.budget


# the memory model (`group_memory`): weights, then the activations live at once


def _chain(halo=False, channels=False):
    """A graph input of 40 bytes -> L0 (rows) -> L1 -> L2, then L3 reads L2 and L0
    (a residual around L1 and L2): on 4 cores a row split holds a quarter of each value."""
    return [Layer(100.0, weight_bytes=10, in_bytes=40, out_bytes=400, max_parts=4, by_rows=True,
                  operands=((-1, 40),)),
            Layer(100.0, weight_bytes=20, out_bytes=400, max_parts=4, by_rows=not channels, halo=halo,
                  operands=((0, 400),)),
            Layer(100.0, weight_bytes=30, out_bytes=400, max_parts=4, by_rows=True, operands=((1, 400),)),
            Layer(100.0, out_bytes=0, max_parts=4, by_rows=True, joins=True, operands=((2, 400), (0, 400)))]


def test_memory_counts_pieces_bands_and_what_stays_live():
    layers = _chain()
    # L0: its piece 100 + the graph input's band 10 received and assembled 10
    assert stage_bytes(layers, 0, 1, 4, BIG) == 10 + 120
    # L1 reads L0's piece on its own core as it is (same cut, no halo): 100 + 100
    assert stage_bytes(layers, 0, 2, 4, BIG) == 10 + 20 + 200
    # L0's piece stays live across L2 (which does not read it) until L3: 200 + 100
    assert stage_bytes(layers, 0, 4, 4, BIG) == 10 + 20 + 30 + 300
    # L1 alone: L0's band received from another group and assembled
    assert stage_bytes(layers, 1, 2, 4, BIG) == 20 + 100 + 2 * 100


def test_memory_assembles_halo_bands_and_whole_inputs_of_channel_splits():
    # a window beyond its own rows (kernel, stride): the band is assembled beside the piece
    assert stage_bytes(_chain(halo=True), 0, 2, 4, BIG) == 10 + 20 + 300
    # a channel split: the whole input received and concatenated, 1/4 of its weights
    assert stage_bytes(_chain(channels=True), 0, 2, 4, BIG) == 10 + 20 / 4 + 100 + 2 * 400
    # on one core everything whole: L2 holds 400 + 400 with L0's 400 live across it
    assert stage_bytes(_chain(), 0, 4, 1, BIG) == 60 + 1200


def test_forwarded_values_are_held_twice_at_the_group_end():
    layers = [Layer(100.0, out_bytes=800, max_parts=4, by_rows=True),
              Layer(100.0, out_bytes=0, max_parts=4, by_rows=True, operands=((0, 800),)),
              Layer(100.0, out_bytes=0, max_parts=4, by_rows=True, operands=((1, 0), (0, 800)))]
    # L1 holds L0's band twice (200 + 200); value 0 passes through group [1, 2) to L2:
    # on 2 cores half of it received and copied (800) is the most
    assert stage_bytes(layers, 1, 2, 4, BIG) == 2 * 200
    assert stage_bytes(layers, 1, 2, 2, BIG) == 2 * 800 / 2


@pytest.mark.parametrize("width,height,band", [(5, 7, 3), (16, 16, 4), (4, 4, 1), (3, 2, 4)])
def test_band_snake_visits_every_core_by_neighbours(width, height, band):
    from nnx.mesh.placement import band_snake

    path = band_snake(width, height, band)
    assert sorted(path) == list(range(width * height))
    for a, b in zip(path, path[1:]):
        step = abs(a % width - b % width) + abs(a // width - b // width)
        # neighbours, but from a band's end to the next band's start with an even width
        assert step == 1 or (width % 2 == 0 and b // width % band == 0 and step == band)
    # a run of 2 x band positions from the start is a block of 2 columns, `band` rows high
    first = path[:2 * min(band, height)]
    assert {c % width for c in first} == {0, 1} and max(c // width for c in first) == min(band, height) - 1


def test_busiest_link_counts_a_multicast_once_per_link():
    from nnx.mesh.placement import busiest_link

    # 4 x 4 mesh; stage s on core cores[s]
    cores = [0, 3, 12, 1, 5]
    # a multicast from core 0 to cores 3 and 12: each link of its tree once (100)
    assert busiest_link(cores, [(0, [1, 2], 100)], 4) == 100
    # link 0->1 also carries a send to core 1 (and core 5: x first, then down)
    assert busiest_link(cores, [(0, [1, 2], 100), (0, [3], 30), (0, [4], 7)], 4) == 137
    # a send to a stage on the same core takes no link
    assert busiest_link([0, 0], [(0, [1], 100)], 4) == 0


def test_followers_of_a_channel_split_read_their_pieces_in_place(monkeypatch):
    """A bias add after a matmul split by output features runs on the matmul's
    pieces where they are: no transfer (`on_pieces`); the first model charged it
    the whole operand's arrival over a link."""
    from nnx.mesh import pipeline_search

    mm = Layer(64_000.0, weight_bytes=64_000, in_bytes=32_000, out_bytes=320_000, max_parts=64)
    add = Layer(1_000.0, in_bytes=320_000, out_bytes=320_000, max_parts=64, joins=True)
    alone = stage_time([mm], 0, 1, 16, BIG)
    assert stage_time([mm, add], 0, 2, 16, BIG) == pytest.approx(alone + 1_000 / 16 + 200)
    monkeypatch.setattr(pipeline_search, "FOLLOWERS_IN_PLACE", False)
    gathered = 320_000 * 15 / 16 / 32 + 2 * 320_000 / 64
    assert stage_time([mm, add], 0, 2, 16, BIG) == pytest.approx(alone + 1_000 / 16 + 200 + gathered)


def test_whole_layer_receives_its_operands_once_in_place(monkeypatch):
    """A whole layer (a residual add, a LayerNorm) whose operands' pieces are
    received in place holds each operand once; the first model counted it twice."""
    from nnx.mesh import pipeline_search

    in_place = Machine(16, 1e12, 32.0, concat_copy=False)
    add = Layer(1_000.0, in_bytes=800, out_bytes=400, operands=((-1, 400), (-1, 400)))
    assert stage_bytes([add], 0, 1, 4, in_place) == 400 + 400 + 400
    monkeypatch.setattr(pipeline_search, "WHOLE_IN_PLACE", False)
    monkeypatch.setattr(pipeline_search, "RECEIVED_ONCE", False)  # which counts it once too
    assert stage_bytes([add], 0, 1, 4, in_place) == 400 + 2 * 400 + 2 * 400


def test_large_input_of_a_channel_split_is_cut_in_2d():
    """With the partitioner's budget (`Machine.split_budget`), a matrix layer whose
    input is more than half of it and whose parts cannot hold it whole is planned
    as the 2-D split over its parts: the fewest input ranges whose parts fit
    (BERT's FFN down-projection on 64 parts of 0.9 x 2 MiB: 2 ranges of its 1.5 MB
    input, 32 output pieces each; on 23: 3 x 7)."""
    from dataclasses import replace

    from nnx.mesh.pipeline_search import block_cut

    budget = 0.9 * 2 * 1024 * 1024
    assert block_cut(1_572_864, 9_437_184, 393_216, 64, budget) == (2, 32)
    assert block_cut(1_000, 64_000, 1_000, 4, 1e12) == (1, 4)  # fits whole: an output split
    down = Layer(1e6, weight_bytes=9_437_184, in_bytes=1_572_864, out_bytes=393_216, max_parts=768,
                 operands=((-1, 1_572_864),))
    cut = Machine(64, budget, 32.0, split_budget=budget)
    assert block_cut(1_572_864, 9_437_184, 393_216, 23, budget) == (3, 7)
    # on 23 cores: the range received and assembled, the weight share (34 of 768
    # columns), three output pieces
    assert stage_bytes([down], 0, 1, 23, cut) == pytest.approx(
        9_437_184 * 34 / 768 + 2 * 1_572_864 / 3 + 3 * 393_216 / 7)
    # on 64 an output split holds the whole input: the first rule's band stands
    assert stage_bytes([down], 0, 1, 64, cut) == stage_bytes([down], 0, 1, 64, replace(cut, split_budget=0.0))


def test_channel_split_holds_its_received_input_once_in_place(monkeypatch):
    """A channel split whose input's pieces are all received (from an earlier group)
    writes them into the input's one buffer when pieces are received in place: the
    input is held once (`RECEIVED_ONCE`); the first model counted it twice, which
    on ResNet-50 gave a 1x1 conv of 8.4 MB weights reading 0.8 MB 32 cores."""
    from nnx.mesh import pipeline_search

    in_place = Machine(16, 1e12, 32.0, concat_copy=False)
    conv = Layer(1e5, weight_bytes=8_000, in_bytes=800, out_bytes=400, max_parts=16, operands=((-1, 800),))
    # 1/4 of the weights and of the result, the whole input once
    assert stage_bytes([conv], 0, 1, 4, in_place) == 2_000 + 800 + 100
    # with the concat copy (pieces not received in place) it is held twice
    assert stage_bytes([conv], 0, 1, 4, BIG) == 2_000 + 2 * 800 + 100
    monkeypatch.setattr(pipeline_search, "RECEIVED_ONCE", False)
    assert stage_bytes([conv], 0, 1, 4, in_place) == 2_000 + 2 * 800 + 100
